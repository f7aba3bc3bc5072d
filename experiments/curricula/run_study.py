"""Curricula side by side: DR, PLR⊥, ACCEL, ALP-GMM, POET and Enhanced POET on one task space,
the same budget of training env steps, several seeds; "% of held-out test tasks mastered".

    python experiments/curricula/run_study.py                # the recorded study
    python experiments/curricula/run_study.py --quick        # the same pipeline in minutes
    python experiments/curricula/run_study.py --smoke        # seconds: the test suite's check

Each (curriculum, optimizer, seed) run steps its curriculum until its training env steps
reach the budget (test episodes are counted apart, as in summary.csv), scoring the held-out
test set (coevo.tasks.test_sets: 100 tasks sorted easy to hard, mastered = return >= the
space's solved_score) at 10 evenly spaced marks of training env steps, the last at the
budget. Runs are independent: `--jobs` runs them in parallel processes, each with its own
in-process pool (small curricula steps cost more in Ray round trips than in physics).
Writes, under --out: runs.csv (one row per run), curves.csv (test mastery against env
steps), table.csv and table.md (mean ± std per curriculum) and curves.png.
"""

from __future__ import annotations

import argparse
import dataclasses
import multiprocessing
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from coevo import runner
from coevo.config import parse_config
from coevo.pool import EvaluationPool
from coevo.tasks.test_sets import TestSetConfig, make_test_set, measure

HERE = Path(__file__).resolve().parent
CURRICULA = ("dr", "plr", "accel", "alp_gmm", "poet", "enhanced_poet")
# Study-wide settings per curriculum beyond its config file's defaults, and why.
OVERRIDES = {
    # dcd's buffer of 4000 levels replays nothing before 2000 are scored: far beyond these
    # budgets (the config file says so too), so a buffer this budget can fill.
    "plr": {"buffer_size": 64},
    "accel": {"buffer_size": 64},
    # ES has no critic: PLR's level score is the return-based proxy (named, not a fallback).
    # With PPO, the config files' score (positive value loss, PLR's own) stands.
    "plr+es": {"score": "return_regret"},
    "accel+es": {"score": "return_regret"},
}
# POET's thresholds are returns: its config files' (200, 50, 475) are CartPole's, on [0, 500].
# Acrobot's returns lie on [-500, 0]; the same thresholds mapped linearly onto that range.
_ACROBOT_POET = {"repro_threshold": -300.0, "mc_lower": -450.0, "mc_upper": -25.0}
SPACE_OVERRIDES = {
    "acrobot_reach": {"poet": _ACROBOT_POET, "enhanced_poet": _ACROBOT_POET},
}
POLICY_FOR = {"es": "mlp", "ppo": "actor_critic"}
TABLE_COLUMNS = [
    "task_space",
    "curriculum",
    "optimizer",
    "seeds",
    "test_mastered_mean",
    "test_mastered_std",
    "env_steps",
    "generations",
    "wall_s_mean",
    "seeds_started",
]
# What a curriculum does before its own rule applies: ALP-GMM draws uniform tasks (DR) until
# its first mixture fit, PLR⊥ and ACCEL train nothing before their first replay. A run in
# which that never came is counted apart in the table, so its figure is not read as the
# curriculum's.
STARTED_BY = {"alp_gmm": "fits", "plr": "replays", "accel": "replays"}


@dataclass(frozen=True)
class Scale:
    budget: int  # training env steps per run
    seeds: int
    test_size: int
    test_points: int  # test-set scorings per run, evenly spaced in training env steps


SCALES = {
    "full": Scale(budget=5_000_000, seeds=3, test_size=100, test_points=10),
    "quick": Scale(budget=300_000, seeds=3, test_size=50, test_points=5),
    "smoke": Scale(budget=20_000, seeds=1, test_size=10, test_points=2),
}


def run_one(job: tuple[str, str, str, int, Scale]) -> tuple[dict, list[dict]]:
    """One curriculum run to the budget on its own in-process pool; (its row, its curve)."""
    space_name, curriculum, optimizer, seed, scale = job
    config = study_config(space_name, curriculum, optimizer, seed)
    space, policy = runner.prepare(config)
    with EvaluationPool(space, policy, "local", 1) as pool:
        return _run(pool, space_name, curriculum, optimizer, seed, scale)


def study_config(space_name: str, curriculum: str, optimizer: str, seed: int):
    """The run's config: the config files' defaults plus the study's overrides."""
    return parse_config(
        {
            "seed": seed,
            "task": {"name": space_name},
            "optimizer": {"name": optimizer},
            # PPO trains an actor-critic (its value head is the critic); ES the default MLP.
            "policy": {"name": POLICY_FOR[optimizer]},
            "curriculum": {
                "name": curriculum,
                "generations": 10**6,
                **OVERRIDES.get(curriculum, {}),
                **OVERRIDES.get(f"{curriculum}+{optimizer}", {}),
                **SPACE_OVERRIDES.get(space_name, {}).get(curriculum, {}),
            },
        }
    )


def _run(
    pool: EvaluationPool,
    space_name: str,
    curriculum: str,
    optimizer: str,
    seed: int,
    scale: Scale,
) -> tuple[dict, list[dict]]:
    config = study_config(space_name, curriculum, optimizer, seed)
    # Scored at env-step marks, not every N generations: curricula's generations differ in
    # size by 100x (a PLR round is 4 levels, a POET generation every pair's ES steps).
    tests = TestSetConfig(size=scale.test_size, seed=0)
    marks = [scale.budget * (k + 1) / scale.test_points for k in range(scale.test_points)]
    test_set = make_test_set(pool.space, tests.size, tests.seed)
    built = runner.build(config, pool.space, pool)
    started = time.perf_counter()
    steps = 0.0
    curve = []
    started_count = 0.0  # fits or replays (STARTED_BY)
    while steps < scale.budget:
        result = built.step()
        steps += result.summary["env_steps"]
        started_count += result.summary.get(STARTED_BY.get(curriculum, ""), 0) or 0
        if steps >= marks[0]:
            while marks and steps >= marks[0]:
                marks.pop(0)
            mastered = measure(built, test_set, tests)["test_mastered"]
            curve.append(
                {"generation": built.generation, "env_steps": steps, "test_mastered": mastered}
            )
    wall = time.perf_counter() - started
    row = {
        "task_space": space_name,
        "curriculum": curriculum,
        "optimizer": optimizer,
        "seed": seed,
        "generations": built.generation,
        "env_steps": steps,
        "test_mastered": curve[-1]["test_mastered"],
        "wall_s": wall,
        # No warm-up to wait for (DR, POET): started from the first generation.
        "started": curriculum not in STARTED_BY or started_count > 0,
    }
    tag = {k: row[k] for k in ("task_space", "curriculum", "optimizer", "seed")}
    return row, [{**tag, **point} for point in curve]


def summarise(runs: pd.DataFrame) -> pd.DataFrame:
    grouped = runs.groupby(["task_space", "curriculum", "optimizer"], sort=False)
    table = grouped.agg(
        seeds=("seed", "count"),
        test_mastered_mean=("test_mastered", "mean"),
        test_mastered_std=("test_mastered", lambda v: float(np.std(v, ddof=0))),
        env_steps=("env_steps", "mean"),
        generations=("generations", "mean"),
        wall_s_mean=("wall_s", "mean"),
        seeds_started=("started", "sum"),
    ).reset_index()
    return table[TABLE_COLUMNS]


def markdown(table: pd.DataFrame) -> str:
    lines = [
        "| task space | curriculum | optimizer | seeds | % test tasks mastered (mean ± std "
        "over seeds, ddof 0) | env steps | generations | wall s / run | seeds started |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in table.itertuples():
        lines.append(
            f"| {r.task_space} | {r.curriculum} | {r.optimizer} | {r.seeds} | "
            f"{100 * r.test_mastered_mean:.1f} ± {100 * r.test_mastered_std:.1f} | "
            f"{r.env_steps:,.0f} | {r.generations:.0f} | {r.wall_s_mean:.0f} | "
            f"{r.seeds_started:.0f} of {r.seeds} |"
        )
    return "\n".join(lines) + "\n"


def plot(curves: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    spaces = list(dict.fromkeys(curves["task_space"]))
    fig, axes = plt.subplots(1, len(spaces), figsize=(6 * len(spaces), 4), squeeze=False)
    for ax, space in zip(axes[0], spaces, strict=True):
        part = curves[curves["task_space"] == space]
        for (curriculum, optimizer), rows in part.groupby(["curriculum", "optimizer"], sort=False):
            # Seeds reach the budget in different generations: bin by env steps.
            edges = np.linspace(0, rows["env_steps"].max(), 11)
            bins = np.digitize(rows["env_steps"], edges[1:-1])
            mean = rows.groupby(bins)["test_mastered"].mean()
            x = [edges[b + 1] for b in mean.index]
            ax.plot(x, 100 * mean.to_numpy(), marker=".", label=f"{curriculum} ({optimizer})")
        ax.set_title(space)
        ax.set_xlabel("training env steps")
        ax.set_ylabel("test tasks mastered (%), mean over seeds")
        ax.set_ylim(-3, 103)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv: list[str] | None = None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="small budget (minutes)")
    size.add_argument("--smoke", action="store_true", help="tiny budget, one seed (seconds)")
    parser.add_argument("--spaces", default="cartpole", help="comma-separated task spaces")
    parser.add_argument("--curricula", default=",".join(CURRICULA))
    parser.add_argument("--optimizers", default="es", help="es; ppo needs policy=actor_critic")
    parser.add_argument("--budget", type=int, default=None, help="training env steps per run")
    parser.add_argument("--seeds", type=int, default=None, help="seeds per curriculum")
    parser.add_argument("--jobs", type=int, default=2, help="runs in parallel (processes)")
    parser.add_argument("--out", type=Path, default=None, help="default: beside this script")
    args = parser.parse_args(argv)
    scale = SCALES["quick" if args.quick else "smoke" if args.smoke else "full"]
    if args.budget is not None:
        scale = dataclasses.replace(scale, budget=args.budget)
    if args.seeds is not None:
        scale = dataclasses.replace(scale, seeds=args.seeds)
    out = args.out or HERE / ("quick" if args.quick else "smoke" if args.smoke else "results")
    out.mkdir(parents=True, exist_ok=True)
    jobs = [
        (space_name, curriculum, optimizer, seed, scale)
        for space_name in args.spaces.split(",")
        for optimizer in args.optimizers.split(",")
        for curriculum in args.curricula.split(",")
        for seed in range(scale.seeds)
    ]
    rows, points = [], []
    started = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(args.jobs) as workers:
        for row, curve in workers.imap(run_one, jobs):  # in job order, whatever finishes first
            rows.append(row)
            points.extend(curve)
            print(
                f"{row['task_space']} {row['curriculum']} {row['optimizer']} seed {row['seed']}: "
                f"{100 * row['test_mastered']:.0f}% mastered after {row['env_steps']:,.0f} "
                f"steps, {row['generations']} generations, {row['wall_s']:.0f} s",
                flush=True,
            )
            # Written after every run: a long study stopped early keeps what it finished.
            runs, curves = pd.DataFrame(rows), pd.DataFrame(points)
            runs.to_csv(out / "runs.csv", index=False)
            curves.to_csv(out / "curves.csv", index=False)
    table = summarise(runs)
    table.to_csv(out / "table.csv", index=False)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE
    ).stdout.strip()
    (out / "table.md").write_text(
        markdown(table)
        + f"\nBudget {scale.budget:,} training env steps per run; test set of {scale.test_size}"
        f" tasks; commit {commit}; {time.perf_counter() - started:.0f} s in all. Seeds"
        " started: runs in which ALP-GMM fitted a mixture, PLR⊥ / ACCEL replayed a level (before"
        " that ALP-GMM is DR and PLR⊥ / ACCEL train nothing); DR and POET always.\n"
    )
    plot(curves, out / "curves.png")
    print(markdown(table))
    return table


if __name__ == "__main__":
    main()
