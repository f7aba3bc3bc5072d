"""Each study test set's ceiling: how many of its tasks can be mastered at all (issue 29).

A curriculum's "% mastered" only means something beside what is reachable. Two estimates
of the reachable share, per task space, on the study's own test set (100 tasks, seed 0,
2 episodes per task, the space's solved score as the threshold: exactly what every arm is
scored on):

- **Per-task controllers.** For each test task, the best of a fixed family of simple
  controllers, each a linear map from observation to action logits (argmax): the bang-bang
  rules on one observation (push one way when the observation is positive, the other way
  when it is negative; on Acrobot, torque along a joint's velocity is the textbook energy
  pump), and `--random` maps with N(0, 1) weights drawn from a fixed seed; then, per task
  not yet mastered, `--rounds` of random search around that task's best map (`--tries`
  Gaussian perturbations a round, the best kept when it scores higher). A task counts when
  any of them masters it, so the figure is what a per-task search reaches.
- **Any run.** A task counts when any finished run of the study's cells on that space
  (every arm, optimizer and seed under `--studies`, scored on this same test set) mastered
  it at a test scoring inside its budget. Many noisy tries make this figure optimistic; it
  bounds what the trained policies showed, not what one policy does.

Both are lower bounds of what some controller masters on these test episodes, and
optimistic as a target for one policy: the per-task search picks its maps on the very
episodes it is scored on, from thousands of tries per task. The ceiling is their union.
The study's headline (IQM of "% mastered") sits below it, and the gap is the headroom a
curriculum could claim.

    .venv/bin/python experiments/curricula/ceiling.py                     # both spaces
    .venv/bin/python experiments/curricula/ceiling.py --spaces cartpole --random 16

Writes protocol/ceiling/<space>.csv (per test task: which controller masters it, and how
many runs did) and protocol/ceiling/ceiling.md (the table).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # run_study.py, the study's settings

from run_study import RUN_RECORD, SCALES, TEST_EPISODES  # noqa: E402

from coevo import tasks  # noqa: E402
from coevo.policies.mlp import MLPPolicy  # noqa: E402
from coevo.pool import EvaluationPool  # noqa: E402
from coevo.tasks.test_sets import DEFAULT_SEED, TestSet, make_test_set, score_test_set  # noqa: E402

PROTOCOL = HERE / "protocol"
SPACES = ("cartpole", "acrobot_reach")
# The study's test set (run_study.py: the config's test_set section, 2 episodes per task).
TEST_SIZE, TEST_SEED = SCALES["full"].test_size, DEFAULT_SEED
RANDOM_SEED = 2029


def candidates(policy: MLPPolicy, random: int, seed: int) -> tuple[list[str], np.ndarray]:
    """The controller family as parameter vectors of a linear policy (no hidden layer):
    bang-bang on each observation (both signs), then `random` N(0, 1) maps."""
    obs_dim, act_dim = policy.obs_dim, policy.act_dim
    names, thetas = [], []
    for index in range(obs_dim):
        for sign in (1.0, -1.0):
            weight = np.zeros((act_dim, obs_dim))
            # The last action is the "positive" push, the first the "negative" one; a
            # middle action (Acrobot's zero torque) is never picked: its logit stays 0.
            weight[-1, index], weight[0, index] = sign, -sign
            names.append(f"bang_bang(obs[{index}], {'+' if sign > 0 else '-'})")
            thetas.append(np.concatenate([weight.ravel(), np.zeros(act_dim)]))
    rng = np.random.default_rng(seed)
    for index in range(random):
        names.append(f"random_linear_{index}")
        thetas.append(rng.standard_normal(policy.num_network_params))
    return names, np.asarray(thetas, dtype=np.float32)


def controller_table(
    space_name: str, random: int, workers: int, search_plan: tuple[int, int, float]
) -> tuple[TestSet, pd.DataFrame]:
    """Per test task: the best controller's return, whether it masters the task, and which
    one that is (empty: none does)."""
    space = tasks.get(space_name)
    test_set = make_test_set(space, TEST_SIZE, TEST_SEED)
    env = space.make_env()
    policy = MLPPolicy.for_spaces(env.observation_space, env.action_space, hidden=())
    env.close()
    names, thetas = candidates(policy, random, RANDOM_SEED)
    with EvaluationPool(space, policy, "local", num_workers=workers) as pool:
        score = score_test_set(pool, list(thetas), test_set, TEST_EPISODES, TEST_SEED)
        best = np.argmax(np.nan_to_num(score.scores, nan=-np.inf), axis=0)
        found = [names[i] if score.mastered[i, t] else "" for t, i in enumerate(best)]
        incumbents = thetas[best].astype(np.float64)
        returns = np.nan_to_num(score.returns, nan=-np.inf)
        refined = search(pool, test_set, incumbents, returns, search_plan)
    for task, round_found in refined.items():
        found[task] = f"search round {round_found}"
    table = pd.DataFrame(
        {
            "test_task": range(len(test_set)),
            "task_id": [task.id for task in test_set.tasks],
            "controller": found,
            "best_controller_return": returns,
            "controller_mastered": returns >= test_set.threshold,
        }
    )
    return test_set, table


def cached_controllers(
    out: Path, space_name: str, random: int, workers: int, search_plan: tuple[int, int, float]
) -> tuple[TestSet, pd.DataFrame]:
    """`controller_table`, read back from `out` when it already ran with this script and
    these settings (the search is deterministic; only the runs' column changes as a study
    grows). Delete the cache to search again after a change elsewhere (an env's dynamics)."""
    test_set = make_test_set(tasks.get(space_name), TEST_SIZE, TEST_SEED)
    key = f"{random} {search_plan} {test_set.threshold} {TEST_EPISODES} {TEST_SEED}"
    digest = hashlib.sha256(Path(__file__).read_bytes() + key.encode()).hexdigest()[:12]
    cache = out / f"{space_name}_controllers_{digest}.csv"
    if cache.exists():
        table = pd.read_csv(cache, dtype={"controller": str}, keep_default_na=False)
        if table["task_id"].tolist() == [task.id for task in test_set.tasks]:
            table["controller_mastered"] = table["best_controller_return"] >= test_set.threshold
            return test_set, table
    test_set, table = controller_table(space_name, random, workers, search_plan)
    table.to_csv(cache, index=False)
    return test_set, table


def search(
    pool: EvaluationPool,
    test_set: TestSet,
    incumbents: np.ndarray,
    returns: np.ndarray,
    plan: tuple[int, int, float],
) -> dict[int, int]:
    """Random search per unmastered task around its incumbent map, on the test episodes
    themselves (the runs are scored on those too). Updates `incumbents` and `returns` in
    place; returns {task: round} for the tasks it mastered."""
    rounds, tries, sigma = plan
    rng = np.random.default_rng(RANDOM_SEED + 1)
    mastered_in: dict[int, int] = {}
    for round_index in range(1, rounds + 1):
        open_tasks = np.flatnonzero(returns < test_set.threshold)
        if not open_tasks.size:
            break
        noise = rng.standard_normal((open_tasks.size, tries, incumbents.shape[1])) * sigma
        tried = incumbents[open_tasks, None, :] + noise
        pairs = [
            (tried[i, j].astype(np.float32), test_set.tasks[task])
            for i, task in enumerate(open_tasks)
            for j in range(tries)
        ]
        got, _ = pool.evaluate_detailed(pairs, TEST_EPISODES, TEST_SEED)
        means = np.nan_to_num(got.mean(axis=1), nan=-np.inf).reshape(open_tasks.size, tries)
        for i, task in enumerate(open_tasks):
            j = int(np.argmax(means[i]))
            if means[i, j] > returns[task]:
                incumbents[task], returns[task] = tried[i, j], means[i, j]
                if returns[task] >= test_set.threshold:
                    mastered_in[int(task)] = round_index
    return mastered_in


def study_runs(space_name: str, studies: list[Path], test_set: TestSet) -> list[Path]:
    """The finished runs (a study_run.yaml) of `space_name` under the study folders that
    were scored on this very test set: the same tasks in the same order, the same mastery
    threshold and episodes per task."""
    pattern = f"arms/task={space_name},*/seed=*/{RUN_RECORD}"
    ids = [task.id for task in test_set.tasks]
    kept = []
    for record in sorted(path for study in studies for path in study.glob(pattern)):
        recorded = pd.read_csv(record.parent / "test_set.csv")
        if (
            recorded["task_id"].tolist() == ids
            and (recorded["threshold"] == test_set.threshold).all()
            and (recorded["episodes"] == TEST_EPISODES).all()
        ):
            kept.append(record.parent)
    return kept


def runs_mastered(runs: list[Path], tasks_count: int) -> pd.Series:
    """Per test task: how many of `runs` mastered it at one scoring or more inside the
    run's budget of training env steps (its study_run.yaml)."""
    counts = pd.Series(0, index=range(tasks_count), name="runs_mastered")
    for run in runs:
        budget = yaml.safe_load((run / RUN_RECORD).read_text())["budget"]
        summary = pd.read_csv(run / "summary.csv")
        inside = summary.loc[summary["env_steps"].cumsum() <= budget, "generation"]
        frame = pd.read_csv(run / "test_scores.csv")
        frame = frame[frame["generation"].isin(inside)]
        mastered = frame.groupby("test_task")["mastered"].any()
        counts = counts.add(mastered.reindex(counts.index, fill_value=False).astype(int))
    return counts


def markdown(rows: list[dict[str, object]]) -> str:
    lines = [
        "| task space | test tasks | per-task controllers | any run | ceiling (either) "
        "| runs read |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        lines.append(
            f"| {row['space']} | {row['tasks']} | {row['controllers']:.0%} | "
            f"{row['any_run']:.0%} | {row['ceiling']:.0%} | {row['runs']} |"
        )
    return "\n".join(lines) + "\n"


def _shown(path: Path) -> str:
    return str(path.relative_to(HERE)) if path.is_relative_to(HERE) else str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--spaces", default=",".join(SPACES))
    parser.add_argument("--random", type=int, default=64, help="random linear maps per space")
    parser.add_argument("--rounds", type=int, default=100, help="search rounds per task")
    parser.add_argument("--tries", type=int, default=32, help="perturbations per round")
    parser.add_argument("--sigma", type=float, default=0.5, help="perturbation scale")
    parser.add_argument("--workers", type=int, default=1, help="in-process pool workers")
    parser.add_argument(
        "--studies",
        nargs="*",
        type=Path,
        default=sorted(p for p in PROTOCOL.glob("*_500k") if p.is_dir()),
        help="study output folders whose runs count (default: protocol/*_500k)",
    )
    parser.add_argument("--out", type=Path, default=PROTOCOL / "ceiling")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for space_name in args.spaces.split(","):
        start = time.monotonic()
        test_set, table = cached_controllers(
            args.out, space_name, args.random, args.workers, (args.rounds, args.tries, args.sigma)
        )
        counted = study_runs(space_name, args.studies, test_set)
        table["runs_mastered"] = runs_mastered(counted, len(test_set)).to_numpy()
        runs = len(counted)
        table.to_csv(args.out / f"{space_name}.csv", index=False)
        either = table["controller_mastered"] | (table["runs_mastered"] > 0)
        rows.append(
            {
                "space": space_name,
                "tasks": len(table),
                "controllers": table["controller_mastered"].mean(),
                "any_run": (table["runs_mastered"] > 0).mean(),
                "ceiling": either.mean(),
                "runs": runs,
            }
        )
        print(
            f"{space_name}: controllers {rows[-1]['controllers']:.0%}, any of {runs} runs "
            f"{rows[-1]['any_run']:.0%}, ceiling {rows[-1]['ceiling']:.0%} "
            f"({time.monotonic() - start:.0f} s)",
            flush=True,
        )
    text = markdown(rows)
    (args.out / "ceiling.md").write_text(
        text + f"\nControllers: 2 bang-bang rules per observation, {args.random} random "
        f"linear maps (seed {RANDOM_SEED}), then {args.rounds} rounds x {args.tries} tries "
        f"(sigma {args.sigma}) of random search per unmastered task; runs from: "
        + ", ".join(_shown(study) for study in args.studies)
        + " (finished runs scored on the same test set; scorings inside each run's budget)\n"
    )
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
