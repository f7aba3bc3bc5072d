"""Curricula side by side: DR, PLR⊥, ACCEL, ALP-GMM, POET and Enhanced POET on one task space,
the same budget of training env steps, several seeds; "% of held-out test tasks mastered".

    python experiments/curricula/run_study.py                # the recorded study
    python experiments/curricula/run_study.py --quick        # the same pipeline in minutes
    python experiments/curricula/run_study.py --smoke        # seconds: the test suite's check
    python experiments/curricula/run_study.py --replot experiments/curricula/results

Each (curriculum, optimizer, seed) run steps its curriculum until its training env steps
reach the budget (test episodes are counted apart, as in summary.csv), scoring the held-out
test set (coevo.tasks.test_sets: 100 tasks sorted easy to hard, mastered = return >= the
space's solved_score) at 10 evenly spaced marks of training env steps, the last at the
budget. Runs are independent: `--jobs` runs them in parallel processes, each with its own
in-process pool (small curricula steps cost more in Ray round trips than in physics).
Writes, under --out: runs.csv (one row per run), curves.csv (one row per test-set scoring:
test mastery against env steps), table.csv and table.md (mean ± std over seeds per
curriculum; the population std, ddof 0; none with one seed) and curves.png. Without --out
the results go beside this script: results/ (the full study), quick/ (--quick) and smoke/
(--smoke, git-ignored); results/ and quick/ hold the committed results, which a run
overwrites.

curves.png averages each curriculum's runs mark by mark: a run's value at a mark is its first
scoring at or after that mark (a run is scored once a step crosses a mark; one large step, a
POET generation, can cross several marks, and that one scoring stands for each of them), and
the point is the mean over seeds, plotted at the mark. The last mark is the budget, so the
last point is the table's figure.

--replot DIR re-renders DIR/curves.png from DIR/curves.csv and DIR/table.md / table.csv from
DIR/runs.csv, running nothing. The marks come from table.md's footer (its budget and, since
it is written there, the number of marks; else the most scorings of any run) or from
--budget / --test-points. A runs.csv from before the `started` column gives "seeds started"
only where it holds by definition (DR, POET, Enhanced POET: always) and n/a elsewhere.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import multiprocessing
import re
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


def _std_over_seeds(values: pd.Series) -> float:
    """The population std (ddof 0) over seeds; none (NaN) for one seed, which has no spread."""
    return float(np.std(values, ddof=0)) if len(values) > 1 else math.nan


def _count_started(values: pd.Series) -> float:
    """Runs in which the curriculum started; NaN where a run's `started` is not known."""
    return float(values.astype(bool).sum()) if values.notna().all() else math.nan


def summarise(runs: pd.DataFrame) -> pd.DataFrame:
    if "started" not in runs:
        # A runs.csv from before the column: known only where it holds by definition.
        runs = runs.assign(
            started=[True if c not in STARTED_BY else None for c in runs["curriculum"]]
        )
    grouped = runs.groupby(["task_space", "curriculum", "optimizer"], sort=False)
    table = grouped.agg(
        seeds=("seed", "count"),
        test_mastered_mean=("test_mastered", "mean"),
        test_mastered_std=("test_mastered", _std_over_seeds),
        env_steps=("env_steps", "mean"),
        generations=("generations", "mean"),
        wall_s_mean=("wall_s", "mean"),
        seeds_started=("started", _count_started),
    ).reset_index()
    table["seeds_started"] = table["seeds_started"].astype("Int64")  # NA where not known
    return table[TABLE_COLUMNS]


def markdown(table: pd.DataFrame) -> str:
    lines = [
        "| task space | curriculum | optimizer | seeds | % test tasks mastered (mean ± std "
        "over seeds, ddof 0) | env steps | generations | wall s / run | seeds started |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in table.itertuples():
        std = "n/a" if pd.isna(r.test_mastered_std) else f"{100 * r.test_mastered_std:.1f}"
        started = "n/a" if pd.isna(r.seeds_started) else f"{r.seeds_started:.0f} of {r.seeds}"
        lines.append(
            f"| {r.task_space} | {r.curriculum} | {r.optimizer} | {r.seeds} | "
            f"{100 * r.test_mastered_mean:.1f} ± {std} | "
            f"{r.env_steps:,.0f} | {r.generations:.0f} | {r.wall_s_mean:.0f} | {started} |"
        )
    return "\n".join(lines) + "\n"


def marks_of(budget: float, test_points: int) -> list[float]:
    """The env-step marks at which a run is scored (as _run computes them), the last the budget."""
    return [budget * (k + 1) / test_points for k in range(test_points)]


def per_mark(curves: pd.DataFrame, budget: float, test_points: int) -> pd.DataFrame:
    """Each curriculum's test mastery at each mark, the mean over its seeds.

    A run's value at a mark is its first scoring at or after the mark: the scoring that the
    mark triggered (one scoring stands for every mark one step crossed). One row per
    (task_space, curriculum, optimizer, mark): mark (0-based), mark_steps (the nominal env
    steps), env_steps (the mean over seeds of the scorings' own env steps), test_mastered
    (the mean over seeds) and seeds.
    """
    marks = marks_of(budget, test_points)
    keys = ["task_space", "curriculum", "optimizer"]
    rows = []
    for key, runs in curves.groupby(keys, sort=False):
        for k, mark in enumerate(marks):
            at = []
            for _, run in runs.groupby("seed", sort=False):
                after = run[run["env_steps"] >= mark]
                if len(after):
                    at.append(after.iloc[0])
            if not at:
                continue
            rows.append(
                {
                    **dict(zip(keys, key, strict=True)),
                    "mark": k,
                    "mark_steps": mark,
                    "env_steps": float(np.mean([p["env_steps"] for p in at])),
                    "test_mastered": float(np.mean([p["test_mastered"] for p in at])),
                    "seeds": len(at),
                }
            )
    return pd.DataFrame(
        rows, columns=[*keys, "mark", "mark_steps", "env_steps", "test_mastered", "seeds"]
    )


def plot(curves: pd.DataFrame, path: Path, budget: float, test_points: int) -> None:
    """Test mastery at each mark, the mean over seeds (per_mark), plotted at the mark."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    means = per_mark(curves, budget, test_points)
    spaces = list(dict.fromkeys(means["task_space"]))
    fig, axes = plt.subplots(1, len(spaces), figsize=(6 * len(spaces), 4), squeeze=False)
    for ax, space in zip(axes[0], spaces, strict=True):
        part = means[means["task_space"] == space]
        for (curriculum, optimizer), rows in part.groupby(["curriculum", "optimizer"], sort=False):
            ax.plot(
                rows["mark_steps"],
                100 * rows["test_mastered"],
                marker=".",
                label=f"{curriculum} ({optimizer})",
            )
        ax.set_title(space)
        ax.set_xlabel(f"training env steps (the {test_points} scoring marks)")
        ax.set_ylabel("test tasks mastered (%), mean over seeds")
        ax.set_ylim(-3, 103)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


SEEDS_STARTED_NOTE = (
    "Seeds started: runs in which ALP-GMM fitted a mixture, PLR⊥ / ACCEL replayed a level (before"
    " that ALP-GMM is DR and PLR⊥ / ACCEL train nothing); DR and POET always."
)


def replot(out: Path, budget: int | None = None, test_points: int | None = None) -> pd.DataFrame:
    """Re-render out/curves.png, table.csv and table.md from out/curves.csv and runs.csv."""
    curves = pd.read_csv(out / "curves.csv")
    runs = pd.read_csv(out / "runs.csv")
    old = (out / "table.md").read_text() if (out / "table.md").exists() else ""
    # The footer's facts (budget, test set, marks, commit, time) are the recording's: kept.
    kept = ("Budget ", "Test set scored at ")
    footer = [line for line in old.splitlines() if line.startswith(kept)]
    if budget is None:
        found = re.search(r"Budget ([\d,]+) training env steps", old)
        if not found:
            raise SystemExit(f"{out / 'table.md'} names no budget: pass --budget")
        budget = int(found.group(1).replace(",", ""))
    if test_points is None:
        found = re.search(r"scored at (\d+) marks", old)
        if found:
            test_points = int(found.group(1))
        else:  # a run whose steps are small is scored once at every mark
            run_keys = ["task_space", "curriculum", "optimizer", "seed"]
            test_points = int(curves.groupby(run_keys).size().max())
            footer.append(
                f"Test set scored at {test_points} marks (not recorded by this study's run: the"
                " most scorings of any run)."
            )
    _check_marks(curves, budget, test_points)
    table = summarise(runs)
    table.to_csv(out / "table.csv", index=False)
    notes = [*footer, SEEDS_STARTED_NOTE, "Re-rendered from runs.csv by `run_study.py --replot`."]
    if "started" not in runs:
        notes[-1] += (
            " This runs.csv predates the `started` column: seeds started is given for DR, POET"
            " and Enhanced POET (always, by definition) and n/a for PLR⊥, ACCEL and ALP-GMM (not"
            " recorded)."
        )
    (out / "table.md").write_text(markdown(table) + "\n" + "\n".join(notes) + "\n")
    plot(curves, out / "curves.png", budget, test_points)
    return table


def _check_marks(curves: pd.DataFrame, budget: float, test_points: int) -> None:
    """Each run's scorings fall on distinct marks and its last on the budget, or the marks are
    not the run's."""
    marks = marks_of(budget, test_points)
    for key, run in curves.groupby(["task_space", "curriculum", "optimizer", "seed"], sort=False):
        passed = [sum(steps >= m for m in marks) for steps in run["env_steps"]]
        if min(passed) < 1 or len(set(passed)) != len(passed) or passed[-1] != len(marks):
            raise SystemExit(
                f"run {key}: its scorings do not fit {test_points} marks up to {budget:,.0f}"
                " steps: pass --budget / --test-points"
            )


def main(argv: list[str] | None = None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    size = parser.add_mutually_exclusive_group()
    size.add_argument(
        "--quick",
        action="store_true",
        help="small budget (minutes); without --out it overwrites the committed quick/ results",
    )
    size.add_argument(
        "--smoke",
        action="store_true",
        help="tiny budget, one seed (seconds); default --out smoke/ (git-ignored)",
    )
    size.add_argument(
        "--replot",
        type=Path,
        metavar="DIR",
        help="run nothing: re-render DIR's curves.png, table.csv and table.md from its CSVs",
    )
    parser.add_argument("--spaces", default="cartpole", help="comma-separated task spaces")
    parser.add_argument("--curricula", default=",".join(CURRICULA))
    parser.add_argument("--optimizers", default="es", help="es; ppo needs policy=actor_critic")
    parser.add_argument(
        "--budget",
        type=int,
        default=None,
        help="training env steps per run (--replot: the recorded one, where table.md lacks it)",
    )
    parser.add_argument("--seeds", type=int, default=None, help="seeds per curriculum")
    parser.add_argument("--jobs", type=int, default=2, help="runs in parallel (processes)")
    parser.add_argument(
        "--test-points", type=int, default=None, help="scoring marks per run (--replot only)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="default: beside this script (results/, quick/, smoke/); the full study and "
        "--quick overwrite the committed results there",
    )
    args = parser.parse_args(argv)
    if args.replot is not None:
        return replot(args.replot, args.budget, args.test_points)
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
        f" tasks scored at {scale.test_points} marks; commit {commit};"
        f" {time.perf_counter() - started:.0f} s in all.\n{SEEDS_STARTED_NOTE}\n"
    )
    plot(curves, out / "curves.png", scale.budget, scale.test_points)
    print(markdown(table))
    return table


if __name__ == "__main__":
    main()
