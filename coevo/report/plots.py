"""PNG plots of a run's tables (matplotlib, no display needed).

Figures are matplotlib `Figure`s drawn by the Agg canvas, not pyplot's: pyplot's backend, its
figure registry and their import (about half a second) are left to whoever uses them, and a
process that never draws a report never imports matplotlib."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from coevo import frames
from coevo.pool.stats import is_pool_column
from coevo.report.data import levels_played, task_states  # noqa: F401 - plotted views

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.axis import Axis
    from matplotlib.figure import Figure

# Every figure is drawn at the dpi its PNG is saved at: text is laid out once, at that size.
DPI = 90


def _figure(figsize: tuple[float, float]) -> Figure:
    """An empty figure of `figsize` inches on an Agg canvas (PNG), outside pyplot."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, dpi=DPI)
    FigureCanvasAgg(fig)
    return fig


def _integer_ticks(axis: Axis, **kwargs) -> None:
    """Ticks on whole numbers only (no generation 2.5)."""
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True, **kwargs))


def _save(fig: Figure, path: Path) -> Path:
    """Lay the figure out so that labels, legends and colour bars beyond the axes stay inside
    it, and write it: one layout pass and one drawing. (A `bbox_inches="tight"` save draws
    twice more; so does any save of a figure that keeps a layout engine, which
    `tight_layout` leaves behind as a placeholder: its work is done, so none is kept.)"""
    fig.tight_layout()
    fig.set_layout_engine(None)
    fig.savefig(path)
    return path


# Counts of any curriculum's population, and its scores, drawn where its summary has them.
POPULATION_COLUMNS = ("active", "archived", "tasks", "policies", "pairs")
SCORE_COLUMNS = ("best_score", "median_score")
# Every column `population_curves` draws (the curriculum's own figure leaves them out).
CURVES_COLUMNS = (*POPULATION_COLUMNS, "annecs", "annecs_reference", "admitted", *SCORE_COLUMNS)


def population_curves(summary: pd.DataFrame, path: Path) -> Path:
    """Active, archived, ANNECS; best and median score; env steps/s, per generation."""
    fig = _figure((7, 7.5))
    pairs, scores, speed = fig.subplots(3, 1, sharex=True)
    gens = summary["generation"]
    # Columns of any curriculum: each curve only where its column is there.
    for column in POPULATION_COLUMNS:
        if column in summary:
            pairs.plot(gens, summary[column], label=column, marker=".")
    if "annecs" in summary:
        pairs.plot(gens, summary["annecs"], label="ANNECS (admitted, later solved)", marker=".")
    if "annecs_reference" in summary:
        pairs.plot(
            gens,
            summary["annecs_reference"],
            label="ANNECS, reference code (MC vs archive at admission)",
            marker=".",
            linestyle="--",
        )
    if "admitted" in summary:
        pairs.bar(gens, summary["admitted"], alpha=0.3, label="admitted this generation")
    population = [c for c in ("active", "archived", "pairs") if c in summary]
    played = [c for c in ("tasks", "policies") if c in summary]
    pairs.set_ylabel(" / ".join(["pairs"] * bool(population) + played) or "count")
    if pairs.get_legend_handles_labels()[0]:  # a plug-in curriculum may have none of these
        pairs.legend(loc="upper left", fontsize=8)
    else:
        pairs.text(
            0.5,
            0.5,
            "no population columns in summary.csv",
            ha="center",
            va="center",
            transform=pairs.transAxes,
            color="0.5",
        )
    for column in SCORE_COLUMNS:
        if column in summary:
            scores.plot(gens, summary[column], label=column.replace("_", " "), marker=".")
    scores.set_ylabel("score")
    if scores.get_legend_handles_labels()[0]:
        scores.legend(loc="lower right", fontsize=8)
    speed.plot(gens, summary["steps_per_s"], marker=".", color="tab:gray")
    speed.set_ylabel("env steps / s")
    speed.set_xlabel("generation")
    _integer_ticks(speed.xaxis)  # no generation 2.5
    return _save(fig, path)


def score_heatmap(
    cross: pd.DataFrame, path: Path, task_labels: Mapping[int, str] | None = None
) -> Path:
    """Scores of policies (rows) on tasks (columns), labelled by pair id; task columns also
    by their parameters when `task_labels` (pair id -> text) is given."""
    matrix = cross.pivot_table(index="policy_pair_id", columns="task_pair_id", values="score")
    labels = {k: v.replace(", ", "\n") for k, v in (task_labels or {}).items()}
    lines = max((labels.get(int(c), "").count("\n") + 1 for c in matrix.columns), default=1)
    width = max(4.0, (1.4 if labels else 0.5) * matrix.shape[1] + 2)
    height = max(3.0, 0.5 * matrix.shape[0] + 2) + (0.13 * lines if labels else 0)
    fig = _figure((width, height))
    ax = fig.subplots()
    image = ax.imshow(matrix.to_numpy(), cmap="viridis", aspect="auto")
    ax.set_xticks(
        range(matrix.shape[1]),
        [_with_label(int(c), labels, "\n") for c in matrix.columns],
        fontsize=7 if labels else None,
    )
    ax.set_yticks(range(matrix.shape[0]), [str(int(r)) for r in matrix.index])
    ax.set_xlabel("task of pair")
    ax.set_ylabel("policy of pair")
    if max(matrix.shape) <= 12:
        values = matrix.to_numpy()
        middle = np.nanmin(values) + 0.5 * (np.nanmax(values) - np.nanmin(values))
        digits = value_digits(values)
        for (i, j), value in np.ndenumerate(values):
            color = "black" if value > middle else "white"  # readable on viridis
            text = f"{value:.{digits}f}"
            ax.text(j, i, text, ha="center", va="center", color=color, fontsize=7)
    fig.colorbar(image, ax=ax, label="mean return")
    return _save(fig, path)


def value_digits(values: np.ndarray) -> int:
    """Decimals for the score heatmap's cells: 2 where every return is within 10 of 0 (a
    maze's 0 to 1, where 0.91 would read as 1), else none (CartPole's 500)."""
    return 2 if np.nanmax(np.abs(values)) < 10 else 0


def _with_label(pair_id: int, labels: Mapping[int, str], separator: str = ": ") -> str:
    label = labels.get(pair_id)
    return f"{pair_id}{separator}{label}" if label else str(pair_id)


# A task picture beside its lineage node: this many pixels high (at the saved 90 dpi).
THUMBNAIL_PIXELS = 48


def lineage_tree(
    population: pd.DataFrame,
    path: Path,
    task_labels: Mapping[int, str] | None = None,
    pictures: Mapping[int, Path] | None = None,
) -> Path:
    """Each task as a node at its birth generation, linked to its parent's task; labelled by
    pair id and, when `task_labels` (pair id -> text) is given, what its task is; with
    `pictures` (pair id -> PNG, a level kind's drawings), each task's picture beside it."""
    labels = task_labels or {}
    thumbnails = _thumbnails(pictures or {})
    frame = population.sort_values(["born", "pair_id"]).reset_index(drop=True)
    y = {int(pid): index for index, pid in enumerate(frame["pair_id"])}
    records = frame.to_dict("records")
    row_inches = 0.7 if thumbnails else 0.35
    fig = _figure((7, max(2.5, row_inches * len(frame) + 1)))
    ax = fig.subplots()
    _draw_links(ax, frame, records, y)
    _draw_nodes(ax, frame, y)
    for row in records:
        ax.annotate(
            " " + _with_label(int(row["pair_id"]), labels),
            (row["born"], y[int(row["pair_id"])]),
            fontsize=8,
            va="center",
            annotation_clip=False,
        )
    ax.set_yticks([])
    ax.set_xlabel("generation created")
    _integer_ticks(ax.xaxis)
    label_inches = _pictures_beside_labels(ax, frame, records, y, labels, thumbnails)
    _room_for_labels(ax, frame, label_inches)
    # Above the axes: inside, "best" still covered the newest task's picture or label.
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), fontsize=8, ncol=2, frameon=False)
    return _save(fig, path)


def _draw_links(ax: Axes, frame: pd.DataFrame, records: list[dict], y: dict[int, int]) -> None:
    """A line from each task's parent's node to its node (a parent not in the table: none)."""
    for row in records:
        if pd.notna(row["parent_id"]) and int(row["parent_id"]) in y:
            parent = frame[frame["pair_id"] == row["parent_id"]].iloc[0]
            ax.plot(
                [parent["born"], row["born"]],
                [y[int(parent["pair_id"])], y[int(row["pair_id"])]],
                color="0.6",
                zorder=1,
            )


def _draw_nodes(ax: Axes, frame: pd.DataFrame, y: dict[int, int]) -> None:
    """Each task's node, coloured by whether its pair is active or archived."""
    archived = frame["status"] == "archived"
    for mask, color, label in (
        (~archived, "tab:green", "active"),
        (archived, "tab:red", "archived"),
    ):
        part = frame[mask]
        ax.scatter(
            part["born"], [y[int(p)] for p in part["pair_id"]], color=color, label=label, zorder=2
        )


def _pictures_beside_labels(
    ax: Axes,
    frame: pd.DataFrame,
    records: list[dict],
    y: dict[int, int],
    labels: Mapping[int, str],
    thumbnails: Mapping[int, np.ndarray],
) -> float:
    """The tasks' pictures to the right of their labels; returns the inches that the
    widest label (and picture) take to the right of a node."""
    longest = max((len(_with_label(int(p), labels)) + 1 for p in frame["pair_id"]), default=0)
    label_inches = longest * 8 * 0.55 / 72  # 8 pt text, ~0.55 em per character
    if thumbnails:
        label_points = longest * 8 * 0.55
        for row in records:
            image = thumbnails.get(int(row["pair_id"]))
            if image is not None:
                _place_thumbnail(ax, image, (row["born"], y[int(row["pair_id"])]), label_points)
        widest = max(image.shape[1] * _zoom(image) for image in thumbnails.values())
        label_inches += (widest + 12) / DPI
    return label_inches


def _room_for_labels(ax: Axes, frame: pd.DataFrame, label_inches: float) -> None:
    """Widen the x axis to the right so that the latest tasks' labels (and pictures), drawn
    beside their nodes, stay inside it (outside, they squeezed the plot or were cut off)."""
    axes_inches = 7 * 0.8
    share = min(label_inches / axes_inches, 0.7)
    born = frames.column(frame, "born")
    low, high = float(born.min()), float(born.max())
    span = max(high - low, 1.0)
    ax.set_xlim(low - 0.05 * span, high + (span * 1.05) * share / (1 - share) + 0.05 * span)


def _thumbnails(pictures: Mapping[int, Path]) -> dict[int, np.ndarray]:
    """The pictures that exist, read as image arrays."""
    from matplotlib.image import imread

    return {pair: imread(str(png)) for pair, png in pictures.items() if Path(png).is_file()}


def _zoom(image: np.ndarray) -> float:
    return THUMBNAIL_PIXELS / image.shape[0]


def _place_thumbnail(ax, image: np.ndarray, node: tuple, after_points: float) -> None:
    """`image`, scaled to THUMBNAIL_PIXELS high, to the right of a node and its label."""
    from matplotlib.offsetbox import AnnotationBbox, OffsetImage

    box = OffsetImage(image, zoom=_zoom(image) * 72 / DPI)  # points: the figure draws at 72
    ax.add_artist(
        AnnotationBbox(
            box,
            node,
            xybox=(after_points + 6, 0),
            xycoords="data",
            boxcoords="offset points",
            box_alignment=(0, 0.5),
            frameon=False,
            annotation_clip=False,
        )
    )


# Colours of a task's state in the parameter plot.
_STATE_COLOURS = {"active": "tab:green", "solved": "tab:blue", "archived": "tab:red"}


def task_parameters(population: pd.DataFrame, last_generation: int, path: Path) -> Path:
    """One panel per task parameter: each task's value over the generations it existed,
    coloured by its state (active, solved, archived)."""
    params = [c for c in population.columns if c.startswith("task.")]
    states = task_states(population, last_generation)
    fig = _figure((7, 1.9 * len(params) + 0.6))
    axes = fig.subplots(len(params), 1, sharex=True, squeeze=False)
    for ax, column in zip(axes[:, 0], params, strict=True):
        for _, rows in states.groupby("pair_id", sort=True):
            ax.plot(rows["generation"], rows[column], color="0.8", linewidth=0.8, zorder=1)
        for state, colour in _STATE_COLOURS.items():
            part = states[states["state"] == state]
            ax.scatter(part["generation"], part[column], s=10, color=colour, label=state, zorder=2)
        ax.set_ylabel(column.removeprefix("task."), fontsize=8)
    axes[0, 0].legend(loc="upper left", fontsize=7, ncol=3)
    axes[-1, 0].set_xlabel("generation")
    _integer_ticks(axes[-1, 0].xaxis)
    return _save(fig, path)


# A gradient optimizer's per-update figures (PPO's: SB3's train/* names), if the summary has
# them: one panel each.
LEARNER_COLUMNS = (
    "policy_loss",
    "value_loss",
    "entropy",
    "approx_kl",
    "clip_fraction",
    "explained_variance",
    "std",
)


def learned_columns(summary: pd.DataFrame) -> list[str]:
    """The optimizer's own figures the summary holds (PPO's losses, KL, clip fraction)."""
    return [c for c in LEARNER_COLUMNS if c in summary and bool(summary[c].notna().any())]


def curriculum_columns(summary: pd.DataFrame) -> list[str]:
    """The curriculum's own numeric columns (POET's rule counts, PLR's buffer, ALP-GMM's
    fits, a plug-in's), in summary order: neither the pool's, the optimizer's, the test
    set's, nor those the population curves draw."""
    return [
        c
        for c in summary.columns
        if c != "generation"
        and c not in CURVES_COLUMNS
        and c not in LEARNER_COLUMNS
        and not c.startswith("test_")
        and not is_pool_column(c)
        and pd.api.types.is_numeric_dtype(summary[c])
        and bool(summary[c].notna().any())
    ]


def panel_curves(summary: pd.DataFrame, columns: list[str], path: Path) -> Path:
    """Summary columns per generation, one small panel each, two side by side."""
    rows = (len(columns) + 1) // 2
    fig = _figure((7, 1.8 * rows + 0.6))
    axes = fig.subplots(rows, 2, sharex=True, squeeze=False)
    for ax, column in zip(axes.flat, columns, strict=False):
        ax.plot(summary["generation"], summary[column], marker=".", markersize=3)
        ax.set_title(column.replace("_", " "), fontsize=9)
        ax.tick_params(labelsize=8)
        if pd.api.types.is_integer_dtype(summary[column]):  # a count: no 0.5 tick
            _integer_ticks(ax.yaxis, min_n_ticks=1)
    for ax in list(axes.flat)[len(columns) :]:
        ax.set_visible(False)
    for column in range(2):  # each column's lowest panel shown carries the axis
        shown = [ax for ax in axes[:, column] if ax.get_visible()]
        if shown:
            shown[-1].tick_params(labelbottom=True)
            shown[-1].set_xlabel("generation", fontsize=8)
            _integer_ticks(shown[-1].xaxis)
    return _save(fig, path)


def mastery_curve(summary: pd.DataFrame, path: Path) -> Path:
    """Share of the held-out test set mastered, per generation where it was measured."""
    measured = summary[summary["test_mastered"].notna()]
    fig = _figure((7, 3))
    ax = fig.subplots()
    ax.plot(measured["generation"], 100 * measured["test_mastered"], marker="o")
    ax.set_ylim(-3, 103)
    ax.set_ylabel("test tasks mastered (%)")
    ax.set_xlabel("generation")
    _integer_ticks(ax.xaxis)
    ax.grid(alpha=0.3)
    return _save(fig, path)


_RULE_COLOURS = {
    "new_level": "tab:green",
    "replay": "tab:blue",
    "edit": "tab:orange",
    "gmm": "tab:purple",
    "random": "tab:olive",
    "bootstrap": "tab:brown",
}
_RULE_WORDS = {  # rule -> (the caption's words, colour's name); others: tasks trained on
    "new_level": ("new levels", "green"),
    "replay": ("replayed levels", "blue"),
    "edit": ("edited levels", "orange"),
    "gmm": ("tasks drawn from the GMM", "purple"),
    "random": ("uniform tasks of the random share", "olive"),
    "bootstrap": ("bootstrap tasks, before the first fit", "brown"),
}


def rule_legend(played: pd.DataFrame) -> str:
    """The figure's colours in words, for the rules present only (DR has none of PLR's)."""
    rules = set(played["rule"])
    parts = [
        f"{words} ({colour})" for rule, (words, colour) in _RULE_WORDS.items() if rule in rules
    ]
    if rules - set(_RULE_WORDS):
        parts.append("tasks trained on (grey)")
    return ", ".join(parts)


def levels_over_generations(played: pd.DataFrame, path: Path) -> Path:
    """One panel per task parameter: the tasks the curriculum played each generation,
    coloured by why (a new level, a replay, an edit, plain training)."""
    params = [c for c in played.columns if c not in ("generation", "rule")]
    fig = _figure((7, 1.9 * len(params) + 0.6))
    axes = fig.subplots(len(params), 1, sharex=True, squeeze=False)
    for ax, name in zip(axes[:, 0], params, strict=True):
        for rule, part in played.groupby("rule", sort=True):
            colour = _RULE_COLOURS.get(str(rule), "tab:gray")
            ax.scatter(part["generation"], part[name], s=8, alpha=0.6, color=colour, label=rule)
        ax.set_ylabel(name, fontsize=8)
    # Above the top panel: inside it, the legend hid the points under it.
    axes[0, 0].legend(loc="lower left", bbox_to_anchor=(0, 1.0), fontsize=7, ncol=4, frameon=False)
    axes[-1, 0].set_xlabel("generation")
    _integer_ticks(axes[-1, 0].xaxis)  # no generation 1.25
    return _save(fig, path)


def eligible_pairs(returns: pd.DataFrame, eligibility: pd.DataFrame, path: Path) -> Path:
    """eligible_parents mode: each pair's mean return (bar, green when eligible) with its
    episodes' returns (dots), against the threshold (dashed line)."""
    chosen = frames.rows(eligibility, frames.column(eligibility, "rule") == "eligibility")
    rows = chosen.sort_values("pair_id")
    episodes = returns[[c for c in returns.columns if c.startswith("episode_")]]
    names = returns["name"].astype(str).tolist()
    fig = _figure((7, 0.45 * len(names) + 1.2))
    ax = fig.subplots()
    positions = np.arange(len(names))[::-1]  # the pairs file's first pair on top
    colours = ["tab:green" if o == "eligible" else "tab:red" for o in rows["outcome"]]
    ax.barh(positions, rows["score"].to_numpy(dtype=float), color=colours, alpha=0.6)
    for position, (_, values) in zip(positions, episodes.iterrows(), strict=True):
        ax.scatter(values.to_numpy(dtype=float), [position] * len(values), s=10, color="k")
    threshold = float(rows["threshold"].iloc[0])
    ax.axvline(threshold, color="0.3", linestyle="--", label=f"threshold {threshold:g}")
    ax.set_yticks(positions, names, fontsize=8)
    ax.set_xlabel("return")
    ax.legend(loc="lower right", fontsize=8)
    return _save(fig, path)
