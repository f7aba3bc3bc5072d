"""report.html: a self-contained page over a run directory's tables and plots.

Rebuilt from files alone (`coevo-report RUN_DIR`), so it works on a run still going or one
that crashed. Plots are PNG files in `plots/` beside the page.
"""

from __future__ import annotations

import ctypes
import html
import io
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from coevo.report import plots
from coevo.report.tables import CROSS_SCORES, ELIGIBILITY, POPULATION, SUMMARY

REPORT = "report.html"
_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1400px; }
table { border-collapse: collapse; font-size: 0.85em; margin-bottom: 1.5em; }
td, th { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
th { background: #f0f0f0; position: sticky; top: 0; }
td.text { text-align: left; }
tr.eligible, tr.admitted, tr.transferred { background: #e6f6e6; }
tr.ineligible, tr.rejected, tr.not_admitted, tr.archived { background: #fbeaea; }
.filters { margin: 0.5em 0; } .filters * { margin-right: 0.8em; }
.scroll { overflow-x: auto; }
figure { display: inline-block; margin: 0 1em 1em 0; vertical-align: top; }
"""
_FILTER_SCRIPT = """
function filterRows() {
  const get = id => document.getElementById(id).value;
  const text = get('f-text').toLowerCase();
  let shown = 0;
  for (const row of document.querySelectorAll('#eligibility tbody tr')) {
    const ok = (get('f-gen') === '' || row.dataset.generation === get('f-gen'))
      && (get('f-kind') === '' || row.dataset.kind === get('f-kind'))
      && (get('f-outcome') === '' || row.dataset.outcome === get('f-outcome'))
      && (text === '' || row.textContent.toLowerCase().includes(text));
    row.style.display = ok ? '' : 'none';
    shown += ok ? 1 : 0;
  }
  document.getElementById('f-count').textContent = shown + ' rows';
}
document.addEventListener('DOMContentLoaded', filterRows);
"""

# Optional hook: a task renderer (task dict -> PNG path) for the run's task space.
TaskRenderer = Callable[[dict, Path], Path]


def write_report(run_dir: Path, render_task: TaskRenderer | None = None) -> Path:
    """(Re)build report.html from whatever tables exist now."""
    run_dir = Path(run_dir)
    plot_dir = run_dir / "plots"
    plot_dir.mkdir(exist_ok=True)
    summary = _read(run_dir / SUMMARY)
    eligibility = _read(run_dir / ELIGIBILITY)
    population = _read(run_dir / POPULATION)
    cross = _read(run_dir / CROSS_SCORES)
    parts = [f"<h1>coevo run: {html.escape(run_dir.name)}</h1>"]
    if summary.empty:
        parts.append("<p>No generation has finished yet.</p>")
    else:
        parts.append(_headline(summary))
        figures = [
            (
                "Population, scores and throughput per generation",
                plots.population_curves(summary, plot_dir / "curves.png"),
            )
        ]
        if not cross.empty:
            last = int(cross["generation"].max())
            figures.append(
                (
                    f"Scores of policies on tasks (generation {last})",
                    plots.score_heatmap(
                        cross[cross["generation"] == last], plot_dir / "heatmap.png"
                    ),
                )
            )
        if {"pair_id", "parent_id", "born"} <= set(population.columns):  # a lineage
            figures.append(
                ("Lineage of tasks", plots.lineage_tree(population, plot_dir / "lineage.png"))
            )
        parts.append("".join(_figure(run_dir, caption, path) for caption, path in figures))
    if render_task is not None and not population.empty:
        parts.append(_task_pictures(run_dir, population, render_task))
    if not summary.empty:
        parts.append("<h2>Summary per generation</h2>")
        table = summary.to_html(index=False, float_format=lambda v: f"{v:.1f}")
        parts.append(f'<div class="scroll">{table}</div>')
    if not population.empty:
        parts.append("<h2>Population</h2>")
        table = population.to_html(index=False, float_format=lambda v: f"{v:.2f}")
        parts.append(f'<div class="scroll">{table}</div>')
    if not eligibility.empty:
        parts.append("<h2>Eligibility and rule outcomes</h2>")
        parts.append(_eligibility_table(eligibility))
    page = (
        "<!doctype html><html><head><meta charset='utf-8'><title>coevo report</title>"
        f"<style>{_STYLE}</style><script>{_FILTER_SCRIPT}</script></head>"
        f"<body>{''.join(parts)}</body></html>"
    )
    path = run_dir / REPORT
    tmp = path.with_suffix(".html.tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(path)
    _return_freed_memory()
    return path


def _return_freed_memory() -> None:
    """Hand the page's freed buffers back to the OS: glibc keeps them otherwise, and a long
    run's driver then grows by the size of its largest report (measured by benchmarks/soak.py)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to do
        pass


def _headline(summary: pd.DataFrame) -> str:
    # Any curriculum's summary: each part only when its column is there.
    last = summary.iloc[-1]
    parts = [f"{len(summary)} generations"]
    if {"active", "archived"} <= set(summary.columns):
        parts.append(f"{int(last['active'])} active and {int(last['archived'])} archived pairs")
    if "annecs" in summary:
        parts.append(f"ANNECS {int(last['annecs'])}")
    if "best_score" in summary:
        parts.append(f"best score {last['best_score']:.1f}")
    if "env_steps" in summary:
        parts.append(f"{int(summary['env_steps'].sum()):,} env steps")
    return f"<p>{'; '.join(parts)}.</p>"


def _figure(run_dir: Path, caption: str, image: Path) -> str:
    rel = html.escape(image.relative_to(run_dir).as_posix())
    return (
        f'<figure><img src="{rel}" alt="{html.escape(caption)}">'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"
    )


# A PLR level buffer holds thousands of tasks and a terrain picture takes ~0.1 s: draw the
# first rows only (curricula list their most relevant tasks first).
MAX_TASK_PICTURES = 48


def _task_pictures(run_dir: Path, population: pd.DataFrame, render: TaskRenderer) -> str:
    out = ["<h2>Tasks</h2>"]
    if len(population) > MAX_TASK_PICTURES:
        out.append(f"<p>The first {MAX_TASK_PICTURES} of {len(population)} tasks.</p>")
    task_columns = [c for c in population.columns if c.startswith("task.")]
    for _, row in population.head(MAX_TASK_PICTURES).iterrows():
        task = {c.removeprefix("task."): float(row[c]) for c in task_columns}
        image = render(task, run_dir / "plots" / f"task_{row['task_id']}.png")
        if "pair_id" in row:
            caption = f"pair {int(row['pair_id'])} ({row['status']})"
        else:
            caption = f"task {row['task_id']}"
        out.append(_figure(run_dir, caption, image))
    return "".join(out)


def _eligibility_table(rows: pd.DataFrame) -> str:
    columns = [
        "generation",
        "kind",
        "pair_id",
        "parent_id",
        "task_id",
        "score",
        "novelty",
        "outcome",
        "reason",
    ]
    selects = []
    for key, label in (("gen", "generation"), ("kind", "kind"), ("outcome", "outcome")):
        options = "".join(
            f'<option value="{html.escape(str(v))}">{html.escape(str(v))}</option>'
            for v in sorted(rows[label].dropna().unique())
        )
        selects.append(
            f'<label>{label} <select id="f-{key}" onchange="filterRows()">'
            f'<option value="">all</option>{options}</select></label>'
        )
    filters = (
        f'<div class="filters">{"".join(selects)}<label>search '
        '<input id="f-text" oninput="filterRows()"></label><span id="f-count"></span></div>'
    )
    head = "".join(f"<th>{c}</th>" for c in columns)
    body = []
    for _, row in rows.iloc[::-1].iterrows():  # newest generation first
        cells = "".join(_cell(column, row[column]) for column in columns)
        data = " ".join(
            f'data-{key}="{html.escape(str(row[col]))}"'
            for key, col in (("generation", "generation"), ("kind", "kind"), ("outcome", "outcome"))
        )
        body.append(f'<tr class="{html.escape(str(row["outcome"]))}" {data}>{cells}</tr>')
    return (
        f'{filters}<table id="eligibility"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _cell(column: str, value: object) -> str:
    if pd.isna(value):
        text = ""
    elif column in ("score", "novelty"):
        text = f"{value:.1f}" if column == "score" else f"{value:.3f}"
    elif column in ("pair_id", "parent_id", "generation"):
        text = str(int(value))
    else:
        text = str(value)
    css = ' class="text"' if column in ("reason", "kind", "outcome", "task_id") else ""
    return f"<td{css}>{html.escape(text)}</td>"


def _read(path: Path) -> pd.DataFrame:
    if not path.exists() or path.stat().st_size == 0:
        return pd.DataFrame()
    text = path.read_text(encoding="utf-8")
    if not text.endswith("\n"):
        # A crash mid-append leaves the last line unterminated: keep the rows before it.
        text = text[: text.rfind("\n") + 1]
    if not text.strip():
        return pd.DataFrame()
    return pd.read_csv(io.StringIO(text))
