"""report.html: a self-contained page over a run directory's tables and plots."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from coevo.report import plots
from coevo.report.tables import ELIGIBILITY, POPULATION, SUMMARY

REPORT = "report.html"
_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; font-size: 0.85em; margin-bottom: 1.5em; }
td, th { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
th { background: #f0f0f0; }
td.reason, td.task { text-align: left; }
.eligible, .admitted, .passed, .transferred { background: #e6f6e6; }
.ineligible, .rejected, .not_admitted, .archived { background: #fbeaea; }
"""


def write_report(run_dir: Path) -> Path:
    """(Re)build the page from whatever tables exist now; works on a run still going."""
    run_dir = Path(run_dir)
    plot_dir = run_dir / "plots"
    plot_dir.mkdir(exist_ok=True)
    summary = _read(run_dir / SUMMARY)
    eligibility = _read(run_dir / ELIGIBILITY)
    population = _read(run_dir / POPULATION)
    parts = [f"<h1>coevo run: {html.escape(run_dir.name)}</h1>"]
    if summary.empty:
        parts.append("<p>No generation has finished yet.</p>")
    else:
        last = summary.iloc[-1]
        parts.append(
            f"<p>{len(summary)} generations; {int(last['active'])} active and "
            f"{int(last['archived'])} archived pairs; best score {last['best_score']:.1f}; "
            f"{int(summary['env_steps'].sum()):,} env steps.</p>"
        )
        curves = plots.population_curves(summary, plot_dir / "population.png")
        speed = plots.throughput(summary, plot_dir / "throughput.png")
        for image in (curves, speed):
            rel = image.relative_to(run_dir).as_posix()
            parts.append(f'<img src="{rel}" alt="{image.stem}">')
        parts.append("<h2>Summary per generation</h2>")
        parts.append(summary.to_html(index=False, float_format=lambda v: f"{v:.1f}"))
    if not population.empty:
        parts.append("<h2>Population</h2>")
        parts.append(population.to_html(index=False, float_format=lambda v: f"{v:.2f}"))
    if not eligibility.empty:
        parts.append("<h2>Eligibility and rule outcomes</h2>")
        for generation, rows in reversed(list(eligibility.groupby("generation"))):
            parts.append(f"<h3>Generation {generation}</h3>")
            parts.append(_decision_table(rows))
    page = (
        "<!doctype html><html><head><meta charset='utf-8'><title>coevo report</title>"
        f"<style>{_STYLE}</style></head><body>{''.join(parts)}</body></html>"
    )
    path = run_dir / REPORT
    tmp = path.with_suffix(".html.tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(path)
    return path


def _decision_table(rows: pd.DataFrame) -> str:
    columns = ["kind", "pair_id", "parent_id", "task_id", "score", "outcome", "reason"]
    head = "".join(f"<th>{c}</th>" for c in columns)
    body = []
    for _, row in rows.iterrows():
        cells = []
        for column in columns:
            value = row[column]
            if pd.isna(value):
                text = ""
            elif column == "score":
                text = f"{value:.1f}"
            elif column in ("pair_id", "parent_id"):
                text = str(int(value))
            else:
                text = str(value)
            css = ' class="reason"' if column == "reason" else ""
            cells.append(f"<td{css}>{html.escape(text)}</td>")
        body.append(f'<tr class="{html.escape(str(row["outcome"]))}">{"".join(cells)}</tr>')
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _read(path: Path) -> pd.DataFrame:
    if not path.exists() or path.stat().st_size == 0:
        return pd.DataFrame()
    return pd.read_csv(path)
