"""The stepping-stones experiment's tests, table and figure: seeds reaching the hard task at
the last scoring (one-sided Fisher exact tests of POET against each control), the mean of the
last 3 scorings (one-sided Mann-Whitney, secondary), and the hard-task return over steps."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import numpy as np
import pandas as pd

CONTROLS = ("direct", "dr", "dr_x6")  # the primary test: POET above each of these
MECHANISM = "poet_no_transfer"  # the mechanism control: POET above it, reported apart
ALPHA = 0.05


def column(runs: pd.DataFrame, arm: str, name: str, dtype: type = float) -> np.ndarray:
    """One arm's values of a runs.csv column, in seed order of the table."""
    return runs.loc[runs["arm"] == arm, name].to_numpy(dtype=dtype)


def present(runs: pd.DataFrame, arms: tuple[str, ...]) -> list[str]:
    """The arms of `arms` with at least one finished run."""
    return [arm for arm in arms if (runs["arm"] == arm).to_numpy().any()]


def others(runs: pd.DataFrame) -> list[tuple[str, str]]:
    """(arm, role) of every arm POET is compared with: the controls, the mechanism control,
    then any extra arm that ran."""
    extra = tuple(a for a in dict.fromkeys(runs["arm"]) if a not in ("poet", *CONTROLS, MECHANISM))
    roles = {arm: "control" for arm in CONTROLS} | {MECHANISM: "mechanism control"}
    return [(arm, roles.get(arm, "extra arm")) for arm in present(runs, (*roles, *extra))]


def fisher_greater(ours: np.ndarray, theirs: np.ndarray) -> float:
    """One-sided Fisher exact p of 'ours reaches on a larger share of seeds than theirs'
    (boolean arrays: did each seed reach the hard task)."""
    from scipy.stats import fisher_exact

    table = [[int(ours.sum()), int((~ours).sum())], [int(theirs.sum()), int((~theirs).sum())]]
    result = fisher_exact(table, alternative="greater")  # (odds ratio, p)
    return float(cast(float, result[1]))


def fisher_lines(
    runs: pd.DataFrame, reached: str = "reached"
) -> tuple[dict[str, float], list[str]]:
    """POET against each control and the mechanism control, on a column of runs.csv that
    says whether each seed reached the hard task: p-values and a line each."""
    if not present(runs, ("poet",)):
        return {}, []
    poet = column(runs, "poet", reached, bool)
    p_values, lines = {}, []
    for other, role in others(runs):
        theirs = column(runs, other, reached, bool)
        p_values[other] = p = fisher_greater(poet, theirs)
        lines.append(
            f"- poet > {other} ({role}): {poet.sum()} of {len(poet)} vs {theirs.sum()} of "
            f"{len(theirs)}, one-sided Fisher exact p = {p:.4f}"
        )
    return p_values, lines


def mann_whitney_lines(runs: pd.DataFrame) -> list[str]:
    """Secondary: one-sided Mann-Whitney U of POET's mean of the last 3 scorings above each
    other arm's (scipy's, asymptotic with ties: the controls often tie at the floor)."""
    from scipy.stats import mannwhitneyu

    if not present(runs, ("poet",)):
        return []
    lines = []
    ours = column(runs, "poet", "late_return")
    for other, _ in others(runs):
        theirs = column(runs, other, "late_return")
        if np.ptp(np.concatenate([ours, theirs])) == 0:
            lines.append(f"- poet > {other}: all seeds equal, no test")
            continue
        test = mannwhitneyu(ours, theirs, alternative="greater")
        lines.append(
            f"- poet > {other}: U = {test.statistic:.1f}, one-sided p = {test.pvalue:.4f} "
            f"({len(ours)} vs {len(theirs)} seeds)"
        )
    return lines


def arm_table(runs: pd.DataFrame, arms: list[str]) -> list[str]:
    """Per arm: seeds reaching the hard task (last scoring, any scoring), returns, wall time."""
    lines = [
        "| arm | seeds reaching the hard task (last scoring) | at any scoring | return at the "
        "last scoring (mean ± std) | mean of the last 3 scorings (mean ± std) | training env "
        "steps (mean) | wall s / run |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for arm in arms:
        if not present(runs, (arm,)):
            lines.append(f"| {arm} | no run yet | | | | | |")
            continue
        reached, at_any = column(runs, arm, "reached", bool), column(runs, arm, "reached_any", bool)
        last, late = column(runs, arm, "hard_return"), column(runs, arm, "late_return")
        n = len(last)
        lines.append(
            f"| {arm} | {reached.sum()} of {n} | {at_any.sum()} of {n} | "
            f"{last.mean():.1f} ± {last.std():.1f} | {late.mean():.1f} ± {late.std():.1f} | "
            f"{column(runs, arm, 'env_steps').mean():,.0f} | "
            f"{column(runs, arm, 'wall_s').mean():.0f} |"
        )
    return lines


def archive_line(runs: pd.DataFrame) -> str:
    """How much counting archived pairs matters at the last scoring, and how often the best
    pair is the first one (pair_0, trained on the initial task before it was archived)."""
    lines = []
    for arm in present(runs, ("poet", MECHANISM, "easy")):
        archived = column(runs, arm, "best_archived", bool)
        active = column(runs, arm, "reached_active_only", bool)
        line = (
            f"{arm}: best pair archived on {archived.sum()} of {len(archived)} seeds; active "
            f"pairs alone reach the hard task on {active.sum()} of {len(active)}"
        )
        if "best_policy" in runs:
            first = column(runs, arm, "best_policy", str) == "pair_0"
            line += f"; the best pair is the first pair (pair_0) on {first.sum()}"
        lines.append(line)
    return "At the last scoring: " + "; ".join(lines) + "." if lines else ""


def verdict(
    runs: pd.DataFrame, p_values: dict[str, float], declared: int
) -> tuple[str, str, list[str]]:
    """(primary verdict, mechanism verdict, one line per declared check). Fewer runs than
    declared in an arm: inconclusive (partial)."""
    arms = ("poet", *CONTROLS, MECHANISM)
    counts = {arm: len(column(runs, arm, "reached", bool)) for arm in arms}
    reached = {arm: int(column(runs, arm, "reached", bool).sum()) for arm in arms}
    primary = {
        f"poet above {arm} (p = {p_values.get(arm, float('nan')):.4f} < {ALPHA})": (
            p_values.get(arm, 1.0) < ALPHA
        )
        for arm in CONTROLS
    }
    mechanism = {
        f"the paper's mechanism: poet_no_transfer on fewer seeds than poet ({reached[MECHANISM]} < "
        f"{reached['poet']})": reached[MECHANISM] < reached["poet"]
    }
    checks = primary | mechanism
    lines = [f"- {'holds' if ok else 'fails'}: {name}" for name, ok in checks.items()]
    if min(counts.values()) < declared:
        partial = ", ".join(f"{arm} {n}" for arm, n in counts.items())
        text = f"inconclusive (partial: runs per arm {partial} of {declared})"
        return text, "inconclusive (partial)", lines
    return (
        "confirmed" if all(primary.values()) else "not confirmed",
        "holds" if all(mechanism.values()) else "does not hold",
        lines,
    )


def figure(curves: pd.DataFrame, threshold: float, title: str, path: Path) -> None:
    """Hard-task return against training env steps: each seed thin, the seeds' mean thick."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for k, (arm, rows) in enumerate(curves.groupby("arm", sort=False)):
        colour = f"C{k}"
        seeds = [part[["env_steps", "hard_return"]].to_numpy() for _, part in rows.groupby("seed")]
        for points in seeds:
            ax.plot(points[:, 0], points[:, 1], color=colour, lw=0.6)
        # Seeds reach the k-th mark at slightly different steps: average by mark.
        marks = range(max(len(points) for points in seeds))
        mean = np.array([np.mean([p[m] for p in seeds if len(p) > m], axis=0) for m in marks])
        ax.plot(mean[:, 0], mean[:, 1], color=colour, lw=2.2, label=arm)
    ax.axhline(threshold, color="k", ls="--", lw=1, label=f"threshold {threshold:g}")
    ax.set_xlabel("training env steps")
    ax.set_ylabel("hard-task return (best policy)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
