"""coevo-compare's outputs: the console table, the CSVs and compare.html (figures embedded)."""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from coevo.compare.analysis import Budget, GroupStats, progress
from coevo.compare.runs import UPDATES

HTML = "compare.html"
GROUPS_CSV = "compare.csv"
RUNS_CSV = "compare_runs.csv"


def _num(value: float, digits: int = 3) -> str:
    return "n/a" if not np.isfinite(value) else f"{value:.{digits}g}"


def _interval(ci: tuple[float, float]) -> str:
    return "n/a" if not all(np.isfinite(ci)) else f"[{_num(ci[0])}, {_num(ci[1])}]"


def group_frame(groups: Sequence[GroupStats], by: str, baseline: str | None) -> pd.DataFrame:
    """One row per group: compare.csv."""
    rows = []
    for g in groups:
        rows.append(
            {
                by: g.label,
                "runs": len(g.runs),
                "runs_scored": len(g.values),
                "iqm": g.iqm,
                "iqm_ci_low": g.iqm_ci[0],
                "iqm_ci_high": g.iqm_ci[1],
                "mean": float(g.values.mean()) if len(g.values) else math.nan,
                "cvar_iqm": g.cvar_iqm,
                "cvar_ci_low": g.cvar_ci[0],
                "cvar_ci_high": g.cvar_ci[1],
                f"p_improvement_over_{baseline or 'baseline'}": g.improvement,
                "p_improvement_ci_low": g.improvement_ci[0],
                "p_improvement_ci_high": g.improvement_ci[1],
                "notes": "; ".join(g.notes),
            }
        )
    return pd.DataFrame(rows)


def run_frame(groups: Sequence[GroupStats], by: str) -> pd.DataFrame:
    """One row per run: compare_runs.csv."""
    rows = []
    for g in groups:
        for r in g.runs:
            rows.append(
                {
                    by: g.label,
                    "seed": r.run.seed,
                    "value": r.value,
                    "scorings": " ".join(f"{v:.6g}" for v in r.scorings),
                    "generations": " ".join(str(x) for x in r.generations),
                    "env_steps": r.env_steps,
                    "updates": r.updates,
                    "reached_budget": r.reached_budget,
                    "cvar": r.cvar,
                    "cvar_same_episodes": r.cvar_same_episodes,
                    "run_dir": r.run.name,
                }
            )
    return pd.DataFrame(rows)


def console_table(
    groups: Sequence[GroupStats], by: str, metric: str, baseline: str | None, alpha: float
) -> str:
    """The groups side by side: per-seed values, IQM with its 95 % interval, α-CVaR
    (ranked and rescored apart, `analysis.task_cvar`) and P(improvement) over the baseline."""
    lines = [
        f"{by} | seeds | per-seed {metric} | IQM [95% CI] | {alpha:g}-CVaR (rescored) IQM [95% CI]"
    ]
    if baseline is not None:
        lines[0] += f" | P(> {baseline}) [95% CI]"
    for g in groups:
        seeds = " ".join(
            f"{r.run.seed}:{_num(r.value)}" for r in sorted(g.runs, key=lambda r: str(r.run.seed))
        )
        line = (
            f"{g.label} | {len(g.values)} | {seeds} | {_num(g.iqm)} {_interval(g.iqm_ci)} | "
            f"{_num(g.cvar_iqm)} {_interval(g.cvar_ci)}"
        )
        if baseline is not None:
            shown = "baseline" if g.label == baseline else _num(g.improvement)
            line += f" | {shown} {_interval(g.improvement_ci) if g.label != baseline else ''}"
        lines.append(line.rstrip())
        lines += [f"  note: {note}" for note in g.notes]
    return "\n".join(lines)


def curves_png(groups: Sequence[GroupStats], metric: str, budget: Budget) -> tuple[bytes, str]:
    """The metric at every scoring against training env steps and against updates, one line
    per run, one colour per group; and a line saying what could not be drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    without = [g.label for g in groups if not any(UPDATES in r.run.summary for r in g.runs)]
    panels = [("steps_so_far", "training env steps", budget.env_steps)]
    missing = ""
    if len(without) < len(groups):
        panels.append(("updates_so_far", "updates (optimizer steps)", budget.updates))
    if without:  # POET's summary.csv has no run-wide count of updates (population.csv has)
        missing = f"no {UPDATES} column (updates) in summary.csv, so no curve against updates: "
        missing += ", ".join(without)
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4), squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (column, name, limit) in zip(axes[0], panels, strict=True):
        for index, g in enumerate(groups):
            colour = colours[index % len(colours)]
            for k, r in enumerate(g.runs):
                frame = progress(r.run.summary)
                frame = frame[np.isfinite(frame[metric])] if metric in frame else frame[:0]
                ax.plot(
                    frame[column],
                    frame[metric],
                    marker=".",
                    color=colour,
                    alpha=0.7,
                    label=g.label if k == 0 else None,
                )
        if limit is not None:
            ax.axvline(limit, color="grey", linestyle="--", label="budget")
        ax.set_xlabel(name)
        ax.set_ylabel(metric)
        ax.legend(fontsize=7)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80)
    plt.close(fig)
    return buffer.getvalue(), missing


def _frame_html(frame: pd.DataFrame) -> str:
    return frame.to_html(index=False, na_rep="n/a", float_format=lambda v: f"{v:.4g}", border=0)


def write_html(
    path: Path,
    groups: Sequence[GroupStats],
    by: str,
    metric: str,
    baseline: str | None,
    budget: Budget,
    last: int,
    alpha: float,
    sources: Sequence[Path],
) -> None:
    """compare.html: one file, the figure embedded as a data URI."""
    png, missing = curves_png(groups, metric, budget)
    image = base64.b64encode(png).decode()
    definition = (
        f"Each run's figure: the mean of its last {last} held-out test scorings ({metric}) "
        f"inside the budget ({html.escape(budget.describe())}). IQM: the 25 % trimmed mean over "
        "runs; intervals: 95 % stratified bootstrap, percentile method (rliable's definitions). "
        f"{alpha:g}-CVaR, per run, as SFL's evaluation takes it (Rutherford et al. 2024): the "
        f"worst {alpha:.0%} of test tasks ranked on one scoring and their mean test return "
        "taken from an independent one, here each task's return on the even-numbered and on "
        "the odd-numbered test episodes of the scorings averaged (test_scores.csv's "
        "return_even and return_odd; test_set.episodes must be 2 or more). compare_runs.csv's "
        "cvar_same_episodes ranks and reports on the same returns: biased low, for reference."
    )
    if baseline is not None:
        definition += f" P(improvement): the probability that a run beats one of {baseline}'s."
    notes = [f"{g.label}: {n}" for g in groups for n in g.notes] + ([missing] if missing else [])
    body = [
        "<!doctype html><html><head><meta charset='utf-8'><title>coevo-compare</title>",
        "<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}"
        "td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}</style>",
        "</head><body><h1>coevo-compare</h1>",
        f"<p>Runs from: {html.escape(', '.join(str(s) for s in sources))}; grouped by "
        f"{html.escape(by)}.</p>",
        f"<p id='definition'>{definition}</p>",
        "<h2>Groups</h2>",
        _frame_html(group_frame(groups, by, baseline)),
        "<h2>Runs</h2>",
        _frame_html(run_frame(groups, by)),
        "<h2>Curves</h2>",
        f"<img id='curves' alt='{html.escape(metric)} against training env steps and updates' "
        f"src='data:image/png;base64,{image}'>",
    ]
    if notes:
        body += ["<h2>Notes</h2><ul>", *[f"<li>{html.escape(n)}</li>" for n in notes], "</ul>"]
    body.append("</body></html>")
    path.write_text("\n".join(body))
