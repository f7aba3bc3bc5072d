"""Each run's headline figure inside a budget, and each group's statistics over its seeds.

The figure of a run is the mean of its last `last` held-out test scorings whose training env
steps (summary.csv's env_steps, summed from the start) and updates (optimizer_steps) lie
inside the budget: one scoring is one point of a curve that swings tens of points between
scorings, so the last few are averaged (issue 29's protocol).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import cast

import numpy as np
import pandas as pd

from coevo.compare import stats
from coevo.compare.runs import ENV_STEPS, UPDATES, CompareError, Run
from coevo.frames import column, rows
from coevo.resume_rules import allowed_on_resume, leaf_values

DEFAULT_LAST = 3
DEFAULT_ALPHA = 0.1
# test_scores.csv's two independent scorings of each row: its return on the even-numbered
# test episodes ranks the tasks for α-CVaR, its return on the odd-numbered ones is reported.
RANKED = "return_even"
RESCORED = "return_odd"


@dataclass(frozen=True)
class Budget:
    """Training env steps and updates a scoring may have used; None: no limit."""

    env_steps: float | None = None
    updates: float | None = None

    def describe(self) -> str:
        """The budget in words, for the printed table and the page."""
        parts = []
        if self.env_steps is not None:
            parts.append(f"{self.env_steps:,.0f} training env steps")
        if self.updates is not None:
            parts.append(f"{self.updates:,.0f} updates")
        return " and ".join(parts) if parts else "none (every scoring counts)"


@dataclass(frozen=True)
class RunFigure:
    """One run's figure and what it was computed from."""

    run: Run
    group: str
    value: float  # NaN: no scoring inside the budget
    scorings: tuple[float, ...]  # the scorings averaged, oldest first
    generations: tuple[int, ...]  # their generations
    env_steps: float  # training env steps at the last scoring used
    updates: float  # updates at the last scoring used (NaN: no optimizer_steps column)
    reached_budget: bool  # the run's steps (or updates) got to the budget
    cvar: float  # α-CVaR over test tasks, ranked and rescored apart (`task_cvar`; NaN: none)
    cvar_same_episodes: float  # ranked and reported on the same returns (biased low)


@dataclass(frozen=True)
class GroupStats:
    """A group's figures over its runs."""

    label: str
    runs: list[RunFigure]
    iqm: float
    iqm_ci: tuple[float, float]
    cvar_iqm: float
    cvar_ci: tuple[float, float]
    improvement: float = math.nan  # P(this group > baseline); NaN: no baseline or the baseline
    improvement_ci: tuple[float, float] = (math.nan, math.nan)
    notes: list[str] = field(default_factory=list)

    @property
    def values(self) -> np.ndarray:
        """The finite values of the group's runs."""
        return np.array([r.value for r in self.runs if np.isfinite(r.value)])


def progress(summary: pd.DataFrame) -> pd.DataFrame:
    """summary.csv with `steps_so_far` (training env steps summed) and `updates_so_far`
    (optimizer_steps, NaN where the run does not record it)."""
    frame = summary.copy()
    steps = frame[ENV_STEPS] if ENV_STEPS in frame else pd.Series(np.nan, index=frame.index)
    frame["steps_so_far"] = steps.fillna(0).cumsum()
    frame["updates_so_far"] = frame[UPDATES] if UPDATES in frame else np.nan
    return frame


def within(frame: pd.DataFrame, budget: Budget) -> pd.Series:
    """Which rows of `progress(summary)` lie inside the budget (every limit that is set)."""
    inside = pd.Series(True, index=frame.index)
    if budget.env_steps is not None:
        inside &= frame["steps_so_far"] <= budget.env_steps
    if budget.updates is not None:
        inside &= frame["updates_so_far"] <= budget.updates
    return inside


def run_figure(
    run: Run, group: str, metric: str, budget: Budget, last: int, alpha: float
) -> RunFigure:
    """A run's headline figure: the mean of its last `last` finite scorings inside the budget.

    Args:
        run: the run.
        group: the group it is counted in (`group_label`).
        metric: a test column of summary.csv (`test_mastered`, `test_mean_return`).
        budget: the training env steps and/or updates a scoring may have used.
        last: how many scorings to average.
        alpha: the α of the run's α-CVaR over test tasks.

    Returns:
        The `RunFigure`; its value is NaN when no scoring lies inside the budget.

    Raises:
        CompareError: summary.csv lacks `metric`, or a budget in updates is asked of a run
            that records no optimizer_steps.
    """
    if metric not in run.summary:
        raise CompareError(
            f"{run.path}: summary.csv has no {metric} column (is a test set scored? "
            "test_set.every > 0)"
        )
    frame = progress(run.summary)
    inside = within(frame, budget) & np.isfinite(frame[metric])
    scored = rows(frame, inside).tail(last)
    if budget.updates is not None and bool(frame["updates_so_far"].isna().all()):
        raise CompareError(f"{run.path}: no {UPDATES} column, so no budget in updates")
    reached = (budget.env_steps is None or frame["steps_so_far"].max() >= budget.env_steps) and (
        budget.updates is None or frame["updates_so_far"].max() >= budget.updates
    )
    generations = tuple(int(g) for g in scored["generation"])
    return RunFigure(
        run=run,
        group=group,
        value=float(column(scored, metric).mean()) if len(scored) else math.nan,
        scorings=tuple(float(v) for v in scored[metric]),
        generations=generations,
        env_steps=float(column(scored, "steps_so_far").iloc[-1]) if len(scored) else math.nan,
        updates=float(column(scored, "updates_so_far").iloc[-1]) if len(scored) else math.nan,
        reached_budget=bool(reached),
        cvar=task_cvar(run.test_scores, generations, alpha),
        cvar_same_episodes=same_episodes_cvar(run.test_scores, generations, alpha),
    )


def _per_task(test_scores: pd.DataFrame, generations: tuple[int, ...], columns: list[str]):
    """Each test task's mean of `columns` over the given scorings and the policies scored
    there (test_scores.csv's rows: a population's best policy per task, or each of several
    seeds' policies); tasks with a NaN left out."""
    scorings = test_scores[test_scores["generation"].isin(generations)]
    return cast(pd.DataFrame, scorings.groupby("test_task")[columns].mean()).dropna()


def task_cvar(
    test_scores: pd.DataFrame | None, generations: tuple[int, ...], alpha: float
) -> float:
    """α-CVaR over test tasks as SFL's evaluation takes it (Rutherford et al. 2024): the
    worst ⌈α·n⌉ tasks ranked on one scoring and their mean return taken from an independent
    one. Here the two are each task's return on the even-numbered test episodes (the rank)
    and on the odd-numbered ones (the figure), averaged over the given scorings; ranking and
    reporting on the same returns would pick the tasks whose episodes happened to go badly,
    and report exactly that bad luck.

    NaN without test_scores.csv or scorings, or without a second episode per task: a run
    needs `test_set.episodes` >= 2 (and coevo from the version that wrote the halves)."""
    if test_scores is None or not generations or RESCORED not in test_scores:
        return math.nan
    per_task = _per_task(test_scores, generations, [RANKED, RESCORED])
    if not len(per_task):
        return math.nan
    return stats.cvar(per_task[RANKED].to_numpy(), alpha, rescore=per_task[RESCORED].to_numpy())


def same_episodes_cvar(
    test_scores: pd.DataFrame | None, generations: tuple[int, ...], alpha: float
) -> float:
    """The mean `return` of the worst ⌈α·n⌉ test tasks ranked on that same return: biased
    low by the selection (`task_cvar` is the one compared); NaN without test_scores.csv or
    scorings. Kept in compare_runs.csv to show the bias, and for runs with one episode."""
    if test_scores is None or not generations:
        return math.nan
    per_task = _per_task(test_scores, generations, ["return"])
    return stats.cvar(per_task["return"].to_numpy(), alpha) if len(per_task) else math.nan


def cvar_gap(run: Run) -> str:
    """Why a run has no α-CVaR, in words (for the notes); "" when it has one or no scorings."""
    if run.test_scores is None:
        return "no test_scores.csv"
    if RESCORED not in run.test_scores:
        return "its test_scores.csv has no return_odd (written by an older coevo)"
    if (run.config.get("test_set") or {}).get("episodes") == 1:
        return "one episode per test task (test_set.episodes=1)"
    return "no test task with finite returns on both halves in the scorings used"


def _iqm_and_ci(values: np.ndarray, reps: int, seed: int) -> tuple[float, tuple[float, float]]:
    if not len(values):
        return math.nan, (math.nan, math.nan)
    return stats.iqm(values), stats.stratified_bootstrap_ci(values, reps=reps, seed=seed)


def group_stats(
    figures: list[RunFigure], baseline: str | None, reps: int, seed: int, last: int = DEFAULT_LAST
) -> list[GroupStats]:
    """Each group's IQM (and interval) of its runs' figures and of their α-CVaR, and its
    probability of improvement over the baseline group; groups in first-seen order."""
    labels = list(dict.fromkeys(f.group for f in figures))
    if baseline is not None and baseline not in labels:
        raise CompareError(f"baseline '{baseline}' is none of the groups: {', '.join(labels)}")
    out = []
    for label in labels:
        runs = [f for f in figures if f.group == label]
        values = np.array([r.value for r in runs if np.isfinite(r.value)])
        cvars = np.array([r.cvar for r in runs if np.isfinite(r.cvar)])
        iqm, ci = _iqm_and_ci(values, reps, seed)
        cvar_iqm, cvar_ci = _iqm_and_ci(cvars, reps, seed)
        out.append(GroupStats(label, runs, iqm, ci, cvar_iqm, cvar_ci, notes=_notes(runs, last)))
    if baseline is not None:
        base = next(g for g in out if g.label == baseline).values
        for i, group in enumerate(out):
            if group.label == baseline or not len(group.values) or not len(base):
                continue
            out[i] = _with_improvement(group, base, reps, seed)
    return out


def _with_improvement(group: GroupStats, base: np.ndarray, reps: int, seed: int) -> GroupStats:
    return replace(
        group,
        improvement=stats.probability_of_improvement(group.values, base),
        improvement_ci=stats.probability_of_improvement_ci(group.values, base, reps, seed=seed),
    )


def _notes(runs: list[RunFigure], last: int) -> list[str]:
    notes = []
    unscored = [r.run.name for r in runs if not np.isfinite(r.value)]
    if unscored:
        notes.append(f"no test scoring inside the budget, left out: {', '.join(unscored)}")
    short = [r.run.name for r in runs if not r.reached_budget]
    if short:
        notes.append(f"stopped before the budget: {', '.join(short)}")
    seeds = [r.run.seed for r in runs]
    repeated = sorted({str(s) for s in seeds if seeds.count(s) > 1})
    if repeated:
        notes.append(f"the same seed in several runs: {', '.join(repeated)}")
    differ = _differing_settings([r.run for r in runs])
    if differ:
        notes.append(f"runs differ in more than the seed: {', '.join(differ)}")
    few = [r.run.name for r in runs if 0 < len(r.scorings) < last]
    if few:
        notes.append(f"fewer than {last} scorings averaged: {', '.join(few)}")
    gaps = [f"{r.run.name} ({cvar_gap(r.run)})" for r in runs if _lacks_cvar(r)]
    if gaps:
        notes.append(
            "no α-CVaR (it ranks test tasks on the even-numbered test episodes and reports "
            f"their return on the odd, so needs test_set.episodes >= 2): {', '.join(gaps)}"
        )
    return notes


def _lacks_cvar(figure: RunFigure) -> bool:
    return bool(figure.scorings) and not np.isfinite(figure.cvar)


def _differing_settings(runs: list[Run]) -> list[str]:
    """Config keys (dotted) whose values differ between a group's runs, the seed and the
    settings that change no result aside (those resume may change: generations, the pool's):
    a group should differ only by seed, or the comparison says what else."""
    leaves = [leaf_values(run.config) for run in runs]
    keys = sorted(set().union(*leaves)) if leaves else []
    varying = [k for k in keys if len({repr(leaf.get(k)) for leaf in leaves}) > 1]
    return [k for k in varying if k != "seed" and not allowed_on_resume(k)]
