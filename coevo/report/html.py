"""report.html: a self-contained page over a run directory's tables and plots.

Rebuilt from files alone (`coevo-report RUN_DIR`), so it works on a run still going or one
that crashed. Plots are PNG files in `plots/` beside the page.
"""

from __future__ import annotations

import ctypes
import html
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import SupportsFloat, TypeGuard, cast

import numpy as np
import pandas as pd

from coevo import frames
from coevo.report import plots
from coevo.report.data import ReportError, RunData, levels_played, load_run
from coevo.run_files import REPORT
from coevo.tasks.task import TaskSpace

__all__ = ["REPORT", "ParamFormat", "ReportError", "TaskRenderer", "drawing_once", "write_report"]

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1400px; }
.stopped { color: #a40000; }
table { border-collapse: collapse; font-size: 0.85em; margin-bottom: 1.5em; }
td, th { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
th { background: #f0f0f0; position: sticky; top: 0; }
td.text { text-align: left; }
tr.eligible, tr.admitted, tr.transferred { background: #e6f6e6; }
tr.ineligible, tr.rejected, tr.not_admitted, tr.archived { background: #fbeaea; }
.filters { margin: 0.5em 0; } .filters * { margin-right: 0.8em; }
.scroll { overflow-x: auto; }
figure { display: block; margin: 0 0 1.5em 0; }
figcaption { font-size: 0.9em; color: #444; max-width: 700px; }
figure.task { display: inline-block; margin: 0 1em 1em 0; vertical-align: top; }
pre.config { background: #f7f7f7; padding: 0.8em; font-size: 0.85em; max-height: 30em;
  overflow: auto; }
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


def drawing_once(render: TaskRenderer | None) -> TaskRenderer | None:
    """`render`, drawing each picture file once: the report names a task's picture by the
    task's id, a hash of its content, so a page rebuilt by the same process (a run's report
    every `report_every_s`) keeps the pictures drawn for the pages before it."""
    if render is None:
        return None
    drawn: dict[Path, Path] = {}

    def render_once(task: dict, path: Path) -> Path:
        image = drawn.get(path)
        if image is None or not image.is_file():
            image = drawn[path] = render(task, path)
        return image

    return render_once


def write_report(
    run_dir: Path, render_task: TaskRenderer | None = None, space: TaskSpace | None = None
) -> Path:
    """(Re)build report.html from whatever tables exist now.

    `space` (the run's task space) gives each task parameter its rounding; without it the
    space is rebuilt from the run's config.yaml when possible.
    """
    data = load_run(run_dir, space)
    plot_dir = data.run_dir / "plots"
    plot_dir.mkdir(exist_ok=True)
    page = _page(data, plot_dir, render_task)
    path = data.run_dir / REPORT
    tmp = path.with_suffix(".html.tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(path)
    _return_freed_memory()
    return path


def _page(data: RunData, plot_dir: Path, render_task: TaskRenderer | None) -> str:
    """The page's body: headline, figures, task pictures, tables and config."""
    fmt = ParamFormat(data.space)
    summary, population, eligibility = data.summary, data.population, data.eligibility
    parts = [f"<h1>coevo run: {html.escape(data.run_dir.name)}</h1>"]
    if data.stopped is not None:  # a run that ended before its last generation says why first
        parts.append(f'<p class="stopped"><strong>{html.escape(data.stopped)}</strong></p>')
    pictures = []
    if render_task is not None and not population.empty:
        pictures = _task_images(data.run_dir, population, render_task, eligibility)
    if summary.empty:
        parts.append("<p>No generation has finished yet.</p>")
    else:
        stopped = data.stopped is not None
        parts.append(_headline(summary, data.planned_generations, stopped))
        labels = _task_labels(population, fmt)
        figures = _figures(
            summary,
            population,
            data.cross,
            labels,
            plot_dir,
            eligibility,
            data.test_set,
            data.returns,
            data.test_origin,
            _lineage_pictures(population, pictures),
        )
        parts.append("".join(_figure(data.run_dir, *f) for f in figures))
    if render_task is not None and not population.empty:
        parts.append(_task_section(data.run_dir, population, pictures))
    if not summary.empty:
        parts.append("<h2>Summary per generation</h2>")
        parts.append(_table(summary, fmt, "summary"))
    if not population.empty:
        parts.append("<h2>Population</h2>")
        parts.append(_table(population, fmt, "population"))
    if not eligibility.empty:
        parts.append("<h2>Eligibility and rule outcomes</h2>")
        parts.append(_eligibility_table(eligibility))
    if data.config_text:
        parts.append(
            "<h2>Configuration</h2><p>The run's resolved config.yaml:</p>"
            f'<pre class="config" id="config">{html.escape(data.config_text)}</pre>'
        )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>coevo report</title>"
        f"<style>{_STYLE}</style><script>{_FILTER_SCRIPT}</script></head>"
        f"<body>{''.join(parts)}</body></html>"
    )


# A figure of the page: (id, caption, image).
_Figure = tuple[str, str, Path]


def _figures(
    summary: pd.DataFrame,
    population: pd.DataFrame,
    cross: pd.DataFrame,
    labels: dict[int, str],
    plot_dir: Path,
    eligibility: pd.DataFrame | None = None,
    test_set: pd.DataFrame | None = None,
    returns: pd.DataFrame | None = None,
    test_origin: str = "drawn uniformly within the task space's bounds",
    lineage_pictures: dict[int, Path] | None = None,
) -> list[_Figure]:
    """(id, caption, image) of each figure the tables allow; `lineage_pictures` (pair id ->
    its task's picture) are drawn beside the lineage's nodes."""
    eligibility = pd.DataFrame() if eligibility is None else eligibility
    if returns is not None and "name" in returns and "pairs" in summary and len(summary) == 1:
        return [_eligible_figure(returns, eligibility, plot_dir)]
    # In page order; each draws its plot only where its tables allow it.
    figures = [
        _curves_figure(summary, plot_dir),
        _curriculum_figure(summary, plot_dir),
        _learner_figure(summary, plot_dir),
        _mastery_figure(summary, plot_dir, test_set, test_origin),
        _task_parameters_figure(summary, population, plot_dir),
        _levels_figure(summary, eligibility, plot_dir),
        _heatmap_figure(cross, labels, plot_dir),
        _lineage_figure(population, labels, plot_dir, lineage_pictures),
    ]
    return [figure for figure in figures if figure is not None]


def _eligible_figure(returns: pd.DataFrame, eligibility: pd.DataFrame, plot_dir: Path) -> _Figure:
    """The eligible-parents mode's one figure: each pair's returns against the threshold."""
    episodes = sum(c.startswith("episode_") for c in returns.columns)
    return (
        "fig-eligible",
        f"Each pair's mean return over its {episodes} episodes (bar: green eligible, "
        "red not; dots: the episodes, returns.csv) against eligible.threshold "
        "(dashed).",
        plots.eligible_pairs(returns, eligibility, plot_dir / "eligible.png"),
    )


def _curves_figure(summary: pd.DataFrame, plot_dir: Path) -> _Figure | None:
    """Population, scores and throughput per generation."""
    if len(summary) <= 1:  # one row (the eligible-parents mode) is no curve
        return None
    return (
        "fig-curves",
        "Population, scores and throughput per generation (env steps per second of "
        "the generation's wall time, the driver's work included: a generation that "
        "refits a model or writes a large checkpoint shows a dip).",
        plots.population_curves(summary, plot_dir / "curves.png"),
    )


def _curriculum_figure(summary: pd.DataFrame, plot_dir: Path) -> _Figure | None:
    """The curriculum's own summary columns per generation."""
    own = plots.curriculum_columns(summary)
    if not (own and len(summary) > 1):
        return None
    return (
        "fig-curriculum",
        "The curriculum's own figures per generation (summary.csv columns of the "
        "same names; the README's run-directory table says what each counts).",
        plots.panel_curves(summary, own, plot_dir / "curriculum.png"),
    )


def _learner_figure(summary: pd.DataFrame, plot_dir: Path) -> _Figure | None:
    """The optimizer's update figures per generation."""
    learned = plots.learned_columns(summary)
    if not (learned and len(summary) > 1):
        return None
    return (
        "fig-learner",
        "The optimizer's update figures per generation, the means over the "
        "generation's updates of Stable-Baselines3's train/* figures (entropy is "
        "minus its entropy_loss; approx_kl is each update's last epoch).",
        plots.panel_curves(summary, learned, plot_dir / "learner.png"),
    )


def _mastery_figure(
    summary: pd.DataFrame, plot_dir: Path, test_set: pd.DataFrame | None, test_origin: str
) -> _Figure | None:
    """The share of the test set mastered per generation."""
    if not ("test_mastered" in summary and bool(summary["test_mastered"].notna().any())):
        return None
    seeds = int(summary["policies"].iloc[-1]) if "policies" in summary else 0
    if not seeds:  # POET: its active policies, the best of them per task
        by = "by the best active policy on each task"
    else:
        by = "by the policy" + (f" (the mean over its {seeds} seeds)" if seeds > 1 else "")
    return (
        "fig-test-mastery",
        _mastery_caption(test_set, by, test_origin),
        plots.mastery_curve(summary, plot_dir / "test_mastery.png"),
    )


def _task_parameters_figure(
    summary: pd.DataFrame, population: pd.DataFrame, plot_dir: Path
) -> _Figure | None:
    """Each task's parameters from the generation it was created."""
    params = [c for c in population.columns if c.startswith("task.")]
    if not (params and "born" in population and len(summary) > 1):
        return None
    last = int(frames.column(summary, "generation").max())
    return (
        "fig-task-parameters",
        "Task parameters over generations, one panel per parameter: each task from "
        "the generation it was created, green while active and unsolved, blue once "
        "solved, red once archived; grey lines join a task's points.",
        plots.task_parameters(population, last, plot_dir / "task_parameters.png"),
    )


def _levels_figure(
    summary: pd.DataFrame, eligibility: pd.DataFrame, plot_dir: Path
) -> _Figure | None:
    """The levels a single-policy curriculum played each generation."""
    played = (
        levels_played(eligibility)
        if {"kind", "task", "rule"} <= set(eligibility.columns)
        else pd.DataFrame()
    )
    if not (len(played.columns) > 2 and len(summary) > 1):  # a single-policy curriculum's levels
        return None
    return (
        "fig-levels",
        "Tasks the curriculum played each generation, one panel per parameter: "
        f"{plots.rule_legend(played)}; the reasons are in the eligibility table below.",
        plots.levels_over_generations(played, plot_dir / "levels.png"),
    )


def _heatmap_figure(cross: pd.DataFrame, labels: dict[int, str], plot_dir: Path) -> _Figure | None:
    """Each active policy's return on each active task at the last transfer."""
    if cross.empty:
        return None
    last = int(frames.column(cross, "generation").max())
    columns = "pair id and task parameters" if labels else "pair id"  # a maze has none
    return (
        "fig-heatmap",
        f"Mean return of each active policy (rows, by pair id) on each active task "
        f"(columns: {columns}) at the last transfer, generation {last}.",
        plots.score_heatmap(
            frames.rows(cross, frames.column(cross, "generation") == last),
            plot_dir / "heatmap.png",
            labels,
        ),
    )


def _lineage_figure(
    population: pd.DataFrame,
    labels: dict[int, str],
    plot_dir: Path,
    lineage_pictures: dict[int, Path] | None,
) -> _Figure | None:
    """The tasks' lineage tree."""
    if not {"pair_id", "parent_id", "born"} <= set(population.columns):  # no lineage
        return None
    return (
        "fig-lineage",
        "Lineage of tasks: each task at the generation it was created, joined to its "
        "parent, labelled by pair id and "
        + (
            "drawn beside it."
            if lineage_pictures
            else "the parameters that differ from its parent's."
        ),
        plots.lineage_tree(population, plot_dir / "lineage.png", labels, lineage_pictures),
    )


class ParamFormat:
    """Numbers as a person reads them: task parameters to their `round_to`, counts as
    integers, scores to one decimal, shares to two; never a -inf or nan."""

    def __init__(self, space: TaskSpace | None):
        self.decimals: dict[str, int] = {}
        if space is not None:
            for p in space.params:
                if p.round_to:
                    self.decimals[p.name] = _decimals(p.round_to)

    def param(self, name: str, value: object) -> str:
        """A task parameter's value, with that parameter's decimals."""
        if not _finite(value):
            return _missing(value)
        decimals = self.decimals.get(name)
        if decimals is None:
            return f"{float(value):.4g}"
        return f"{float(value):.{decimals}f}"

    def column(self, column: str) -> Callable[[object], str]:
        """The formatter of a table column's values."""
        if column.startswith("task."):
            name = column.removeprefix("task.")
            return lambda v: self.param(name, v)
        if column in _SHARE_COLUMNS:
            return lambda v: f"{float(v):.2f}" if _finite(v) else _missing(v)
        return _number


_SHARE_COLUMNS = ("test_mastered",)


def _number(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value)
    if not _finite(value):
        return _missing(value)
    number = float(value)
    if number == int(number) and abs(number) < 1e15:
        return f"{int(number):,}" if abs(number) >= 10_000 else str(int(number))
    return f"{number:.1f}" if abs(number) >= 1 else f"{number:.3g}"


def _as_float(value: object) -> float | None:
    """`value` as a float; None where float() refuses it (a word, None, a list)."""
    try:
        return float(cast(SupportsFloat, value))  # any object: float() checks it at run time
    except (TypeError, ValueError):
        return None


def _finite(value: object) -> TypeGuard[frames.Number | str]:
    """Whether `value` is a finite number (or a string float() reads as one)."""
    number = _as_float(value)
    return number is not None and bool(np.isfinite(number))


def _missing(value: object) -> str:
    """An empty cell for a missing number; a word for an infinite one (never '-inf')."""
    number = _as_float(value)
    if number is None:
        return html.escape(str(value))
    if np.isnan(number):
        return ""
    return "none yet" if number < 0 else "unbounded"


def _decimals(step: float) -> int:
    """Decimal places that show every multiple of `step` exactly (0.01 -> 2, 0.25 -> 2)."""
    for places in range(12):
        scaled = step * 10**places
        if abs(scaled - round(scaled)) < 1e-9 * max(1.0, scaled):
            return places
    return 12


def _table(frame: pd.DataFrame, fmt: ParamFormat, table_id: str) -> str:
    formatters = {column: fmt.column(column) for column in frame.columns}
    table = frame.to_html(
        index=False, formatters=formatters, na_rep="", table_id=table_id, escape=True
    )
    return f'<div class="scroll">{table}</div>'


def _task_labels(population: pd.DataFrame, fmt: ParamFormat) -> dict[int, str]:
    """Pair id -> its task's parameters that differ from its parent's (all for a root)."""
    params = [c for c in population.columns if c.startswith("task.")]
    if population.empty or not params or "pair_id" not in population:
        return {}
    rows = {int(frames.number(r, "pair_id")): r for _, r in population.iterrows()}
    labels = {}
    for pair_id, row in rows.items():
        parent = row.get("parent_id")
        parent_row = rows.get(int(parent)) if _finite(parent) else None
        shown = [
            c
            for c in params
            if parent_row is None or fmt.param(c[5:], row[c]) != fmt.param(c[5:], parent_row[c])
        ]
        labels[pair_id] = ", ".join(f"{c[5:]}={fmt.param(c[5:], row[c])}" for c in shown)
    return labels


def _return_freed_memory() -> None:
    """Hand the page's freed buffers back to the OS: glibc keeps them otherwise, and a long
    run's driver then grows by the size of its largest report (measured by benchmarks/soak.py)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to do
        pass


def _mastery_caption(
    test_set: pd.DataFrame | None,
    by: str,
    test_origin: str = "drawn uniformly within the task space's bounds",
) -> str:
    """What "% mastered" counts: the test set's size, threshold and episodes per task (from
    test_set.csv; a run from before that file had none, and says less)."""
    if test_set is None or not {"test_task", "threshold", "episodes"} <= set(test_set.columns):
        return (
            "Share of the held-out test tasks mastered (return at or above the mastery "
            f"threshold), {by}, at each generation it was measured."
        )
    episodes = int(test_set["episodes"].iloc[0])
    return (
        f"Share of the {len(test_set)} held-out test tasks mastered, {by}, at each generation "
        f"it was measured. The tasks are {test_origin} "
        f"(test_set.csv); a task is mastered by a mean return of at least "
        f"{test_set['threshold'].iloc[0]:g} over {episodes} "
        f"episode{'s' if episodes != 1 else ''}. The returns counted, per task: "
        "test_scores.csv."
    )


def _headline(summary: pd.DataFrame, planned: int | None = None, stopped: bool = False) -> str:
    # Any curriculum's summary: each part only when its column is there.
    last = summary.iloc[-1]
    done = len(summary)  # one row per generation
    if "pairs" in summary and "eligible" in summary:  # eligible_parents mode: no generations
        parts = ["one evaluation of the pairs file"]
    elif planned is not None and done < planned:
        # No stopped.txt: the run still goes on, or ended without a word (SIGKILL, power).
        unsaid = "" if stopped else " (no end recorded: still running, or killed)"
        parts = [f"{done} of {planned} generations{unsaid}"]
    else:
        parts = [f"{done} generations"]
    if "active" in summary and "archived" in summary:
        parts.append(f"{int(last['active'])} active and {int(last['archived'])} archived pairs")
    if "pairs" in summary and "eligible" in summary:  # eligible_parents mode
        parts.append(f"{int(last['eligible'])} of {int(last['pairs'])} pairs eligible")
    if "annecs" in summary:
        parts.append(f"ANNECS {int(last['annecs'])}")
    if "test_mastered" in summary and bool(summary["test_mastered"].notna().any()):
        measured = summary[summary["test_mastered"].notna()].iloc[-1]
        parts.append(
            f"{100 * measured['test_mastered']:.0f}% of test tasks mastered "
            f"(generation {int(frames.number(measured, 'generation'))})"
        )
    if "best_score" in summary and _finite(last["best_score"]):
        parts.append(f"best score {last['best_score']:.1f} in the last generation")
    if "env_steps" in summary:
        parts.append(f"{int(frames.column(summary, 'env_steps').sum()):,} env steps")
    return f"<p>{'; '.join(parts)}.</p>"


def _figure(run_dir: Path, figure_id: str, caption: str, image: Path, css: str = "") -> str:
    rel = html.escape(image.relative_to(run_dir).as_posix())
    cls = f' class="{css}"' if css else ""
    return (
        f'<figure id="{figure_id}"{cls}><img src="{rel}" alt="{html.escape(caption)}">'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"
    )


# A PLR level buffer holds thousands of tasks and a terrain picture takes ~0.1 s: draw the
# first rows only (curricula list their most relevant tasks first).
MAX_TASK_PICTURES = 48


# A picture: (figure id, caption, image, the pair it shows or None).
_Picture = tuple[str, str, Path, int | None]


def _task_images(
    run_dir: Path, population: pd.DataFrame, render: TaskRenderer, eligibility: pd.DataFrame
) -> list[_Picture]:
    """Each task's picture (the first MAX_TASK_PICTURES rows), drawn into plots/."""
    task_columns = [c for c in population.columns if c.startswith("task.")]
    # A level kind's tables (mazes) name its levels by id; the decisions hold their JSON.
    forms = {} if task_columns else _level_forms(eligibility)
    out: list[_Picture] = []
    for _, row in population.head(MAX_TASK_PICTURES).iterrows():
        if task_columns:
            task = {c.removeprefix("task."): float(frames.number(row, c)) for c in task_columns}
        elif str(row["task_id"]) in forms:
            task = forms[str(row["task_id"])]
        else:
            continue
        image = render(task, run_dir / "plots" / f"task_{row['task_id']}.png")
        if "pair_id" in row:
            pair = int(frames.number(row, "pair_id"))
            out.append((f"task-{pair}", f"pair {pair} ({row['status']})", image, pair))
        else:
            out.append((f"task-{row['task_id']}", f"task {row['task_id']}", image, None))
    return out


def _lineage_pictures(population: pd.DataFrame, pictures: list[_Picture]) -> dict[int, Path]:
    """Pair id -> picture, for a level kind's lineage (its tasks have no parameters to
    label the nodes with); none for numeric tasks."""
    if any(c.startswith("task.") for c in population.columns):
        return {}
    return {pair: image for _, _, image, pair in pictures if pair is not None}


def _task_section(run_dir: Path, population: pd.DataFrame, pictures: list[_Picture]) -> str:
    out = ["<h2>Tasks</h2>"]
    if len(population) > MAX_TASK_PICTURES:
        out.append(f"<p>The first {MAX_TASK_PICTURES} of {len(population)} tasks.</p>")
    for figure_id, caption, image, _ in pictures:
        out.append(_figure(run_dir, figure_id, caption, image, "task"))
    return "".join(out)


def _level_forms(eligibility: pd.DataFrame) -> dict[str, dict]:
    """Each task id's JSON form (a dict) as the decisions table holds it."""
    if eligibility.empty or not {"task_id", "task"} <= set(eligibility.columns):
        return {}
    rows = eligibility.dropna(subset=["task"]).drop_duplicates("task_id")
    return {str(i): json.loads(t) for i, t in zip(rows["task_id"], rows["task"], strict=True)}


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
    if not isinstance(value, str) and not _finite(value):
        text = _missing(value)
    elif column in ("score", "novelty"):
        text = f"{value:.1f}" if column == "score" else f"{value:.3f}"
    elif column in ("pair_id", "parent_id", "generation"):
        text = str(int(value))
    elif column == "reason":
        text = _readable_reason(str(value))
    else:
        text = str(value)
    css = ' class="text"' if column in ("reason", "kind", "outcome", "task_id") else ""
    return f"<td{css}>{html.escape(text)}</td>"


def _readable_reason(reason: str) -> str:
    """A reason as a person reads it: no 'scores -inf' (no finite score yet) or 'nan'."""
    reason = re.sub(r"(?<![\w.])-inf\b", "none yet", reason)
    return re.sub(r"(?<![\w.])nan\b", "failed", reason)
