"""A teacher on a gate (issue 31, claim 2): PPO on the point-mass gate of Klink et al.'s SPDL
(NeurIPS 2020) and CurrOT (ICML 2022) papers, trained directly on the target (narrow gates),
by domain randomisation, ALP-GMM, PLR⊥ and SFL; success on the target measured as it trains.

    python experiments/gate/run.py --quick            # a smoke test (1 probe seed, seconds)
    python experiments/gate/run.py --full --jobs 2    # 10 confirmation seeds x 5 arms
    python experiments/gate/run.py --pilot dr --seed 1000   # one arm, one probe seed, full budget

Every arm is the config `coevo-run` composes from its overrides (conf/, Hydra), run in this
process for `budget` training env steps (every episode a curriculum plays, levels scored
without training included; test episodes counted apart). Every `budget / SCORINGS` steps the
policy is scored on the held-out test set: `TEST_SIZE` tasks drawn from the target
(`point_mass_gate`'s `test_tasks`), one deterministic episode each; success = the episode
reached the goal (return >= the space's solved_score). A run's figure is the mean success
of its last 3 scorings. Per arm: IQM and a 95 % stratified bootstrap interval over seeds
(coevo.compare.stats).

Writes under --out (default: results/ for --full, results/pilot_<arm>_<seed>/ for a pilot,
a temp dir for --quick): runs.csv, curves.csv, table.md (IQM, interval, budget, wall and
CPU time, the expectation and the verdict), success.png and configs/<arm>.yaml (each arm's
resolved config). Finished runs are cached (--cache), so a stopped study resumes.
"""

from __future__ import annotations

import os

# One BLAS / torch thread per process: the machine is shared, and runs go side by side.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, replace  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import yaml  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))  # gate_target:TargetTasks, the direct arm's curriculum
sys.path.insert(0, str(HERE.parent))  # claim_runs, shared by the claims

from claim_runs import cached, commit, finished  # noqa: E402
from gate_target import NAME as TARGET_CURRICULUM  # noqa: E402

from coevo import hydra_configs, run_setup  # noqa: E402
from coevo.compare.stats import iqm_with_ci  # noqa: E402
from coevo.config import RunConfig, parse_config  # noqa: E402
from coevo.curricula.base import Curriculum  # noqa: E402
from coevo.pool import EvaluationPool  # noqa: E402
from coevo.tasks.task import TaskSpace  # noqa: E402
from coevo.tasks.test_sets import (  # noqa: E402
    TestSet,
    make_test_set,
    mastery_threshold,
    score_test_set,
)

CONF_DIR = ROOT / "conf"
# The papers' budgets: CurrOT (point_mass_2d, PPO) 200 updates x 4096 steps = 819,200 env
# steps; SPDL (point_mass, TRPO, a 3-D task with friction) 1000 x 2048 = 2,048,000.
PAPER_BUDGETS = "CurrOT 819,200 (PPO); SPDL 2,048,000 (TRPO)"
BUDGET = 1_000_000
SCORINGS = 10  # test scorings inside the budget (CurrOT evaluates every 5 of its 200 updates)
LAST = 3  # a run's figure: the mean success of its last LAST scorings
TEST_SIZE = 100  # CurrOT scores 100 target episodes
TEST_SEED = 0  # the test tasks; their episodes' seeds are TEST_EPISODE_SEED onwards
TEST_EPISODE_SEED = 10_000
# Seeds: probes (the pilot, --quick) from 1000 up; the confirming --full run 0..9, never probed.
PROBE_SEED_START = 1000
CONFIRM_SEEDS = tuple(range(10))
CACHE_FORMAT = 3  # what a cached run records; a new one makes runs recorded before run again
# (3: PPO streams take a new level at every reset, e13ac73; runs cached before are stale)

# The expectation, committed before the confirming seeds were run.
EXPECTATION = (
    "At 1 M training env steps (10 confirmation seeds per arm; figure: success rate on 100 "
    "target test tasks, mean of the last 3 scorings): direct and DR mostly fail, IQM success "
    "<= 25 % each; ALP-GMM and SFL each succeed more often than both, their 95 % stratified "
    "bootstrap interval entirely above direct's and DR's intervals. PLR⊥ is reported with "
    "no expectation (a baseline in CurrOT; not a teacher of this claim)."
)
BASELINES_AT_MOST = 25.0  # % success, IQM, for direct and DR
BASELINES = ("direct", "dr")
TEACHERS = ("alp_gmm", "sfl")

# PPO as CurrOT's point_mass_2d experiment runs it (SB3 PPO: gamma 0.95, gae_lambda 0.99,
# 4096 steps per update, batch 128, three tanh layers of 128; the rest SB3's defaults:
# lr 3e-4, 10 epochs, clip 0.2, no entropy bonus, which are PPOConfig's too). Here 32
# streams x 128 steps make the 4096, so that each stream's episode (<= 100 steps) mostly gets
# a task of its own, as CurrOT's one env draws a context per episode. conf/optimizer/ppo.yaml
# (n_envs 2, n_steps 512, batch 256, gamma 0.98, gae_lambda 0.8, lr 1e-3) is overridden on
# each of those; nothing else of it is changed.
PPO = (
    "optimizer=ppo",
    "optimizer.n_envs=32",
    "optimizer.n_steps=128",
    "optimizer.batch_size=128",
    "optimizer.gamma=0.95",
    "optimizer.gae_lambda=0.99",
    "optimizer.learning_rate=0.0003",
    "policy.hidden=[128,128,128]",
    "curriculum.tasks_per_step=32",
)
COMMON = ("task=point_mass_gate", "pool=local", "curriculum.generations=1000000", *PPO)
ARMS: dict[str, tuple[str, ...]] = {
    # The target itself (the papers' "default"): see gate_target.py.
    "direct": ("curriculum=dr", f"curriculum.name={TARGET_CURRICULUM}"),
    "dr": ("curriculum=dr",),
    # CurrOT's ALP-GMM for PPO: fit every 100 tasks (bootstrap = fit rate, as TeachMyAgent),
    # 10 % random tasks, raw ALP. Its ALP history window (max_size 500) has no coevo setting:
    # coevo's ALP looks at the whole history.
    "alp_gmm": (
        "curriculum=alp_gmm",
        "curriculum.fit_rate=100",
        "curriculum.bootstrap=100",
        "curriculum.random_ratio=0.1",
        "curriculum.alp_scale=none",
    ),
    # PLR⊥ as coevo runs it for PPO (conf/curriculum/plr.yaml: positive value loss, buffer 64,
    # replay 0.5, temperature 0.3, staleness 0.3); CurrOT's tuned PLR differs (replay 0.85,
    # buffer 100, beta 0.45, rho 0.15) and is not this arm.
    "plr": ("curriculum=plr",),
    # SFL: 50 levels x 10 episodes scored per refresh (the curricula study's sample); a
    # refresh costs at most 50,000 env steps, about what 12 updates of 4096 train on.
    "sfl": ("curriculum=sfl", "curriculum.levels_sampled=50", "curriculum.refresh_every=12"),
}


@dataclass(frozen=True)
class Mode:
    """A scale: budget, test set, seeds, and overrides that shrink the arms (quick only)."""

    budget: int
    test_size: int
    scorings: int
    seeds: tuple[int, ...]
    shrink: tuple[str, ...] = ()


QUICK_SHRINK = (
    "optimizer.n_envs=4",
    "optimizer.n_steps=100",
    "curriculum.tasks_per_step=4",
    "policy.hidden=[16]",
)
QUICK_ARM_SHRINK = {
    "alp_gmm": ("curriculum.fit_rate=10", "curriculum.bootstrap=10"),
    "plr": ("curriculum.buffer_size=8",),
    "sfl": (
        "curriculum.levels_sampled=4",
        "curriculum.eval_episodes=2",
        "curriculum.buffer_size=2",
    ),
}
MODES = {
    "quick": Mode(2_000, 4, 2, (PROBE_SEED_START,), QUICK_SHRINK),
    "full": Mode(BUDGET, TEST_SIZE, SCORINGS, CONFIRM_SEEDS),
    "pilot": Mode(BUDGET, TEST_SIZE, SCORINGS, ()),
}


def overrides(arm: str, mode: Mode) -> list[str]:
    """The Hydra overrides of an arm at a scale (the seed apart)."""
    shrink = [*mode.shrink, *QUICK_ARM_SHRINK.get(arm, ())] if mode.shrink else []
    return [*COMMON, *ARMS[arm], *shrink]


def arm_config(arm: str, seed: int, mode: Mode) -> RunConfig:
    """The config coevo-run composes for the arm, checked."""
    return parse_config(hydra_configs.compose(CONF_DIR, [*overrides(arm, mode), f"seed={seed}"]))


def uniform_tasks(space: TaskSpace, size: int) -> TestSet:
    """A diagnostic set beside the target: `size` tasks drawn uniformly from the whole
    space (DR's distribution, mostly wide gates), seeded apart from the test set."""
    rng = np.random.default_rng([TEST_SEED, 7])
    tasks = tuple(space.sample(rng) for _ in range(size))
    return TestSet(space.name, tasks, mastery_threshold(space), TEST_SEED)


def scoring(pool: EvaluationPool, built: Curriculum, sets: dict[str, TestSet]) -> dict:
    """The curriculum's test policies on each set: % solved (and the target's mean return)."""
    policies = list(built.policies_for_testing().policies.values())
    out = {}
    for name, tasks in sets.items():
        score = score_test_set(pool, policies, tasks, 1, TEST_EPISODE_SEED)
        out[name] = 100.0 * score.share_mastered
        if name == "success":
            out["mean_return"] = float(np.nanmean(score.returns))
    return out


def run_one(arm: str, seed: int, mode: Mode) -> dict:
    """One run to the budget, scored on the target test set at `mode.scorings` marks (and,
    as a diagnostic, on uniform tasks: `uniform_success`)."""
    config = arm_config(arm, seed, mode)
    started, cpu = time.perf_counter(), time.process_time()
    space, policy = run_setup.prepare(config)
    sets = {
        "success": make_test_set(space, mode.test_size, TEST_SEED),
        "uniform_success": uniform_tasks(space, mode.test_size),
    }
    marks = [mode.budget * (k + 1) / mode.scorings for k in range(mode.scorings)]
    curve, steps, updates = [], 0.0, 0
    with EvaluationPool(space, policy, "local", 1) as pool:
        built = run_setup.build(config, space, pool)
        while steps < mode.budget:
            summary = built.step().summary
            steps += summary["env_steps"]
            updates = int(summary.get("optimizer_steps", updates))
            if steps < marks[0]:
                continue
            while marks and steps >= marks[0]:
                marks.pop(0)
            curve.append({"env_steps": steps, "updates": updates, **scoring(pool, built, sets)})
    late = float(np.mean([point["success"] for point in curve[-LAST:]]))
    row = {
        "arm": arm,
        "seed": seed,
        "budget": mode.budget,
        "env_steps": steps,
        "updates": updates,
        "success_late": late,
        "success_final": curve[-1]["success"],
        "uniform_final": curve[-1]["uniform_success"],
        "wall_s": round(time.perf_counter() - started, 1),
        "cpu_s": round(time.process_time() - cpu, 1),
    }
    return {"row": row, "curve": curve}


def _key(arm: str, seed: int, mode: Mode) -> str:
    settings = [
        CACHE_FORMAT,
        overrides(arm, mode),
        seed,
        mode.budget,
        mode.test_size,
        mode.scorings,
    ]
    text = json.dumps(settings)
    return f"{arm}_{seed}_{hashlib.sha1(text.encode()).hexdigest()[:10]}.json"


def cached_run(job: tuple[str, int, Mode, Path]) -> dict:
    """One run, or its saved result: runs are deterministic, so a stopped study resumes."""
    arm, seed, mode, cache = job
    return cached(cache / _key(arm, seed, mode), lambda: run_one(arm, seed, mode))


def run_all(arms: list[str], mode: Mode, jobs: int, cache: Path) -> list[dict]:
    """Every (arm, seed) run, a line per finished one; in-process when `jobs` is 1."""
    work = [(arm, seed, mode, cache) for seed in mode.seeds for arm in arms]
    done = []

    def report(result: dict) -> None:
        done.append(result)
        row = result["row"]
        trace = " ".join(f"{p['success']:.0f}" for p in result["curve"])
        print(
            f"{row['arm']} seed {row['seed']}: {row['success_late']:.1f} % late "
            f"({row['env_steps']:,.0f} steps, {row['updates']} updates, {row['wall_s']:.0f} s, "
            f"{row['cpu_s']:.0f} CPU s); curve {trace}",
            flush=True,
        )

    for result in finished(cached_run, work, jobs):
        report(result)
    order = {(arm, seed): i for i, (arm, seed, _, _) in enumerate(work)}
    return sorted(done, key=lambda r: order[(r["row"]["arm"], r["row"]["seed"])])


def verdict(late: dict[str, np.ndarray], seeds: int) -> tuple[str, list[str]]:
    """'confirmed' when every declared check holds, else 'not confirmed', with each check;
    'inconclusive (partial)' while an arm of the claim has fewer runs than declared."""
    needed = (*BASELINES, *TEACHERS)
    if any(len(late.get(arm, ())) == 0 for arm in needed):
        return "inconclusive (partial: an arm of the claim has no run)", []
    stats = {arm: iqm_with_ci(late[arm]) for arm in needed}
    checks = {}
    for arm in BASELINES:
        value = stats[arm][0]
        checks[f"{arm}'s IQM <= {BASELINES_AT_MOST:g} % ({value:.1f})"] = value <= BASELINES_AT_MOST
    for teacher in TEACHERS:
        low = stats[teacher][1]
        for base in BASELINES:
            high = stats[base][2]
            checks[f"{teacher}'s interval above {base}'s ({low:.1f} > {high:.1f})"] = low > high
    lines = [f"- {'holds' if ok else 'fails'}: {name}" for name, ok in checks.items()]
    if min(len(late[arm]) for arm in needed) < seeds:
        counts = ", ".join(f"{arm} {len(late[arm])}" for arm in needed)
        return f"inconclusive (partial: runs per arm {counts} of {seeds})", lines
    return ("confirmed" if all(checks.values()) else "not confirmed"), lines


def table(results: list[dict], mode: Mode, wall_s: float) -> str:
    """table.md: per arm, IQM [95 % CI] of the late success, and the run figures."""
    runs = pd.DataFrame([r["row"] for r in results])
    seeds = sorted(runs["seed"].unique())
    lines = [
        "# A teacher on a gate: success on the target gates (% of test tasks, IQM [95 % CI])",
        "",
        f"Budget: {mode.budget:,} training env steps per run (the papers: {PAPER_BUDGETS}); "
        f"seeds {', '.join(map(str, seeds))}; test set: {mode.test_size} target tasks, one "
        f"deterministic episode each, scored {mode.scorings} times; figure: the mean of the "
        f"last {LAST} scorings. Wall time {wall_s:.0f} s for this call (cached runs cost "
        f"none), {runs['wall_s'].sum():.0f} s and {runs['cpu_s'].sum():.0f} CPU s summed over "
        "runs. Uniform tasks: a diagnostic, the same number of tasks drawn uniformly from the "
        "whole space (mostly wide gates), scored alike.",
        "",
        "| arm | runs | success, last 3 scorings | at the last scoring (mean) | uniform tasks "
        "solved, last scoring (mean) | env steps (mean) | updates (mean) | wall s / run | "
        "CPU s / run |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    late = {}
    for arm in ARMS:
        part = runs[runs["arm"] == arm]
        if part.empty:
            continue
        late[arm] = np.asarray(part["success_late"], dtype=float)
        value, low, high = iqm_with_ci(late[arm])
        lines.append(
            f"| {arm} | {len(part)} | {value:.1f} [{low:.1f}, {high:.1f}] | "
            f"{part['success_final'].mean():.1f} | {part['uniform_final'].mean():.1f} | "
            f"{part['env_steps'].mean():,.0f} | "
            f"{part['updates'].mean():.0f} | {part['wall_s'].mean():.0f} | "
            f"{part['cpu_s'].mean():.0f} |"
        )
    outcome, checks = verdict(late, len(mode.seeds))
    if mode.seeds != CONFIRM_SEEDS:
        outcome = "none: probe seeds (the verdict is --full's, on the confirmation seeds 0..9)"
    lines += ["", f"Expectation (declared before the run): {EXPECTATION}", "", *checks]
    lines += ["", f"Verdict: **{outcome}**", ""]
    return "\n".join(lines)


def figure(results: list[dict], path: Path) -> None:
    """Success on the target against env steps: median and IQR band over seeds per arm."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for arm in ARMS:
        curves = [r["curve"] for r in results if r["row"]["arm"] == arm]
        if not curves:
            continue
        length = min(len(c) for c in curves)
        success = np.array([[p["success"] for p in c[:length]] for c in curves])
        steps = np.array([[p["env_steps"] for p in c[:length]] for c in curves]).mean(axis=0)
        low, median, high = np.percentile(success, [25, 50, 75], axis=0)
        ax.plot(steps, median, marker="o", ms=3, label=arm)
        ax.fill_between(steps, low, high, alpha=0.2)
    ax.set_xlabel("training env steps")
    ax.set_ylabel("% of target test tasks solved")
    ax.set_ylim(-2, 102)
    ax.set_title("point-mass gate: median and IQR over seeds", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write(results: list[dict], arms: list[str], mode: Mode, wall_s: float, out: Path) -> None:
    """runs.csv, curves.csv, table.md, success.png and every arm's resolved config."""
    (out / "configs").mkdir(parents=True, exist_ok=True)
    code = commit()
    runs = pd.DataFrame([{**r["row"], "commit": code} for r in results])
    runs.to_csv(out / "runs.csv", index=False)
    curves = pd.DataFrame(
        [
            {"arm": r["row"]["arm"], "seed": r["row"]["seed"], **p}
            for r in results
            for p in r["curve"]
        ]
    )
    curves.to_csv(out / "curves.csv", index=False)
    for arm in arms:
        resolved = run_setup.config_to_dict(arm_config(arm, 0, mode))
        resolved["seed"] = "per run (runs.csv)"
        text = yaml.safe_dump(
            {"overrides": overrides(arm, mode), "config": resolved},
            sort_keys=False,
            allow_unicode=True,
        )
        (out / "configs" / f"{arm}.yaml").write_text(text)
    (out / "table.md").write_text(table(results, mode, wall_s))
    figure(results, out / "success.png")


def main(argv: list[str] | None = None) -> Path:
    """Parse the command line, run (or load) the runs, write the results; their folder."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--quick", action="store_true", help="tiny budget, 1 probe seed")
    group.add_argument("--full", action="store_true", help="1 M steps, seeds 0..9")
    group.add_argument("--pilot", choices=sorted(ARMS), help="one arm at the full budget")
    parser.add_argument("--seed", type=int, default=PROBE_SEED_START, help="--pilot's seed")
    parser.add_argument("--arms", default=",".join(ARMS), help="comma-separated arms")
    parser.add_argument("--jobs", type=int, default=1, help="processes (the machine is shared)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(tempfile.gettempdir()) / "gate_runs",
        help="finished runs are kept here, so a stopped study resumes",
    )
    args = parser.parse_args(argv)
    if args.pilot and args.seed in CONFIRM_SEEDS:
        parser.error(f"--seed {args.seed} is a confirmation seed; probe seeds are >= 1000")
    if args.pilot:
        arms, mode = [args.pilot], replace(MODES["pilot"], seeds=(args.seed,))
        out = args.out or HERE / "results" / f"pilot_{args.pilot}_{args.seed}"
    else:
        arms = [a for a in args.arms.split(",") if a]
        unknown = [a for a in arms if a not in ARMS]
        if unknown:
            parser.error(f"unknown arm {unknown[0]}; allowed: {', '.join(ARMS)}")
        mode = MODES["full" if args.full else "quick"]
        out = args.out or (HERE / "results" if args.full else Path(tempfile.mkdtemp("gate")))
    name = "pilot" if args.pilot else "full" if args.full else "quick"
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    results = run_all(arms, mode, args.jobs, args.cache / name)
    write(results, arms, mode, time.perf_counter() - started, out)
    print((out / "table.md").read_text())
    print(f"wrote {out}")
    return out


if __name__ == "__main__":
    main()
