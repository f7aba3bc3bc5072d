"""The maze claim's table.md, verdict and figure (run.py writes them).

Per arm: IQM and 95 % stratified bootstrap interval over seeds of the named mazes' solved
rate and of the 0.1-CVaR, and the probability of improvement over DR with its interval
(coevo.compare.stats, rliable's definitions). The verdict applies run.py's declared checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from ued_scoring import ALPHA, LAST

from coevo.compare.stats import (
    iqm_with_ci,
    probability_of_improvement,
    probability_of_improvement_ci,
)

BASELINE = "dr"
CURRICULA = ("plr", "accel", "sfl")
ARM_NAMES = {"dr": "DR", "plr": "PLR⊥", "accel": "ACCEL", "sfl": "SFL"}
MEAN, WORST = "named_solved_late", "cvar_late"  # the two figures the claim compares


def improvement(x: np.ndarray, y: np.ndarray, reps: int) -> tuple[float, float, float]:
    """P(X > Y) and its 95 % interval."""
    low, high = probability_of_improvement_ci(x, y, reps=reps)
    return probability_of_improvement(x, y), low, high


def pattern_checks(figures: dict[str, dict[str, np.ndarray]], reps: int) -> dict[str, bool]:
    """Per curriculum: a tie with DR on the mean (the interval of P(X > DR) on the named
    mazes' solved rate holds 0.5) and a lead in the worst 10 % (the interval of P(X > DR) on
    the 0.1-CVaR lies above 0.5)."""
    base = figures[BASELINE]
    checks = {}
    for arm in CURRICULA:
        name = ARM_NAMES[arm]
        _, low, high = improvement(figures[arm][MEAN], base[MEAN], reps)
        checks[f"{name} ties with DR on the mean: P(> DR) in [{low:.2f}, {high:.2f}]"] = (
            low <= 0.5 <= high
        )
        _, low, high = improvement(figures[arm][WORST], base[WORST], reps)
        checks[f"{name} leads DR in the worst 10 %: P(> DR) in [{low:.2f}, {high:.2f}]"] = low > 0.5
    return checks


def verdict(figures: dict[str, dict[str, np.ndarray]], seeds: int, reps: int):
    """(outcome, check lines): 'confirmed' when the pattern holds for every curriculum,
    'partly confirmed' for some, 'not confirmed' for none; 'inconclusive (partial ...)'
    while an arm has fewer runs than declared."""
    needed = (BASELINE, *CURRICULA)
    if any(arm not in figures for arm in needed):
        return "inconclusive (partial: an arm of the claim has no run)", []
    checks = pattern_checks(figures, reps)
    lines = [f"- {'holds' if ok else 'fails'}: {name}" for name, ok in checks.items()]
    runs = {arm: len(figures[arm][MEAN]) for arm in needed}
    if min(runs.values()) < seeds:
        counts = ", ".join(f"{arm} {n}" for arm, n in runs.items())
        return f"inconclusive (partial: runs per arm {counts} of {seeds})", lines
    held = [arm for arm in CURRICULA if all(ok for n, ok in checks.items() if ARM_NAMES[arm] in n)]
    if len(held) == len(CURRICULA):
        return "confirmed", lines
    if held:
        return f"partly confirmed (the pattern holds for {', '.join(held)})", lines
    return "not confirmed", lines


def _cell(values: tuple[float, float, float], digits: int = 1) -> str:
    value, low, high = values
    return f"{value:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def arm_rows(runs: pd.DataFrame, reps: int) -> tuple[list[str], dict[str, dict[str, np.ndarray]]]:
    """The table's rows, and each arm's per-seed figures."""
    figures: dict[str, dict[str, np.ndarray]] = {}
    for arm in ARM_NAMES:
        part = runs[runs["arm"] == arm]
        if not part.empty:
            figures[arm] = {k: np.asarray(part[k], dtype=float) for k in (MEAN, WORST)}
    rows = []
    for arm, values in figures.items():
        part = runs[runs["arm"] == arm]
        better = ["baseline", "baseline"]
        if arm != BASELINE and BASELINE in figures:
            base = figures[BASELINE]
            better = [_cell(improvement(values[k], base[k], reps), 2) for k in (MEAN, WORST)]
        rows.append(
            f"| {ARM_NAMES[arm]} | {len(part)} | {_cell(iqm_with_ci(values[MEAN], reps))} | "
            f"{better[0]} | {_cell(iqm_with_ci(values[WORST], reps))} | {better[1]} | "
            f"{part['named_argmax_late'].mean():.1f} | {part['random_solved_late'].mean():.1f} | "
            f"{part['env_steps'].mean():,.0f} | "
            f"{100 * (part['trained_steps'] / part['env_steps']).mean():.0f} | "
            f"{part['updates'].mean():.0f} | {part['wall_s'].mean():.0f} | "
            f"{part['cpu_s'].mean():.0f} | {part['scoring_cpu_s'].mean():.0f} |"
        )
    return rows, figures


@dataclass(frozen=True)
class Header:
    """What table.md states beside the numbers: the papers' budgets, the declared
    expectation, the code's commit and whether these are the confirmation seeds."""

    papers: str
    expectation: str
    commit: str
    confirming: bool


def table(results: list[dict], mode: Any, wall_s: float, header: Header) -> str:
    """table.md: per arm, IQM [95 % CI] of both figures, P(> DR), and the run figures."""
    runs = pd.DataFrame([r["row"] for r in results])
    seeds = sorted(runs["seed"].unique())
    rows, figures = arm_rows(runs, mode.reps)
    lines = [
        "# UED on mazes: named held-out mazes and the worst 10 % of random mazes",
        "",
        f"Budget: {mode.budget:,} training env steps per run (the papers: {header.papers}); "
        f"seeds {', '.join(map(str, seeds))}; commit {header.commit}. Scored "
        f"{mode.scorings} times; a run's figure is the mean of its last {LAST} scorings. "
        "Named: the 6 named mazes, "
        f"{mode.named_episodes} sampled episodes each, % solved; argmax: one deterministic "
        f"episode each. {ALPHA:g}-CVaR: {mode.random_mazes} random solvable mazes, "
        f"{mode.random_episodes} sampled episodes each, the worst ranked on the even episodes "
        f"and their % solved taken from the odd. IQM [95 % stratified bootstrap CI] over "
        f"seeds; P(> DR): probability of improvement [95 % CI]. Trained on: the share of "
        "env steps in steps that updated the policy (the rest: PLR⊥'s and ACCEL's new "
        "levels, SFL's scoring). CPU s: the run's process; of it scoring: the test "
        f"scorings'. Wall time {wall_s:.0f} s for "
        f"this call (cached runs cost none), {runs['cpu_s'].sum():.0f} CPU s summed over runs.",
        "",
        f"| arm | runs | named solved % | P(> DR) | {ALPHA:g}-CVaR solved % | P(> DR) | "
        "named argmax % (mean) | random mazes solved % (mean) | env steps (mean) | "
        "trained on % | updates (mean) | wall s / run | CPU s / run | of it scoring |",
        "| --- | ---: | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| ---: |",
        *rows,
    ]
    outcome, checks = verdict(figures, len(mode.seeds), mode.reps)
    if not header.confirming:
        outcome = "none: probe seeds (the verdict is --full's, on the confirmation seeds 10..19)"
    lines += ["", f"Expectation (declared before the run): {header.expectation}", "", *checks]
    lines += ["", f"Verdict: **{outcome}**", ""]
    return "\n".join(lines)


def figure(results: list[dict], path: Path) -> None:
    """Both figures against env steps: median and IQR band over seeds per arm."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    panels = (("named_solved", "named mazes: % solved"), ("cvar", "0.1-CVaR: % solved"))
    for ax, (key, label) in zip(axes, panels, strict=True):
        for arm, name in ARM_NAMES.items():
            curves = [r["curve"] for r in results if r["row"]["arm"] == arm]
            if not curves:
                continue
            length = min(len(c) for c in curves)
            values = np.array([[p[key] for p in c[:length]] for c in curves])
            steps = np.array([[p["env_steps"] for p in c[:length]] for c in curves]).mean(axis=0)
            low, median, high = np.percentile(values, [25, 50, 75], axis=0)
            ax.plot(steps, median, marker="o", ms=3, label=name)
            ax.fill_between(steps, low, high, alpha=0.2)
        ax.set_xlabel("training env steps")
        ax.set_ylabel(label)
        ax.set_ylim(-2, 102)
    axes[0].legend(fontsize=8)
    fig.suptitle("PPO on mazes: median and IQR over seeds", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
