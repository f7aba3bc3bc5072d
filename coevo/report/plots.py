"""PNG plots of a run's tables (matplotlib, no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def population_curves(summary: pd.DataFrame, path: Path) -> Path:
    """Active, archived, ANNECS; best and median score; env steps/s, per generation."""
    fig, (pairs, scores, speed) = plt.subplots(3, 1, figsize=(7, 7.5), sharex=True)
    gens = summary["generation"]
    # Columns of any curriculum: each curve only where its column is there.
    for column in ("active", "archived", "tasks", "policies"):
        if column in summary:
            pairs.plot(gens, summary[column], label=column, marker=".")
    if "annecs" in summary:
        pairs.plot(gens, summary["annecs"], label="ANNECS", marker=".")
    if "admitted" in summary:
        pairs.bar(gens, summary["admitted"], alpha=0.3, label="admitted this generation")
    pairs.set_ylabel("pairs / tasks")
    pairs.legend(loc="upper left", fontsize=8)
    for column in ("best_score", "median_score"):
        if column in summary:
            scores.plot(gens, summary[column], label=column.replace("_", " "), marker=".")
    scores.set_ylabel("score")
    scores.legend(loc="lower right", fontsize=8)
    speed.plot(gens, summary["steps_per_s"], marker=".", color="tab:gray")
    speed.set_ylabel("env steps / s")
    speed.set_xlabel("generation")
    return _save(fig, path)


def score_heatmap(cross: pd.DataFrame, path: Path) -> Path:
    """Scores of policies (rows) on tasks (columns), labelled by pair id."""
    matrix = cross.pivot_table(index="policy_pair_id", columns="task_pair_id", values="score")
    size = max(3.0, 0.5 * max(matrix.shape) + 2)
    fig, ax = plt.subplots(figsize=(size + 1, size))
    image = ax.imshow(matrix.to_numpy(), cmap="viridis", aspect="auto")
    ax.set_xticks(range(matrix.shape[1]), [str(c) for c in matrix.columns])
    ax.set_yticks(range(matrix.shape[0]), [str(r) for r in matrix.index])
    ax.set_xlabel("task of pair")
    ax.set_ylabel("policy of pair")
    if max(matrix.shape) <= 12:
        values = matrix.to_numpy()
        middle = np.nanmin(values) + 0.5 * (np.nanmax(values) - np.nanmin(values))
        for (i, j), value in np.ndenumerate(values):
            color = "black" if value > middle else "white"  # readable on viridis
            ax.text(j, i, f"{value:.0f}", ha="center", va="center", color=color, fontsize=7)
    fig.colorbar(image, ax=ax, label="mean return")
    return _save(fig, path)


def lineage_tree(population: pd.DataFrame, path: Path) -> Path:
    """Each task as a node at its birth generation, linked to its parent's task."""
    frame = population.sort_values(["born", "pair_id"]).reset_index(drop=True)
    y = {int(pid): index for index, pid in enumerate(frame["pair_id"])}
    fig, ax = plt.subplots(figsize=(7, max(2.5, 0.35 * len(frame) + 1)))
    for _, row in frame.iterrows():
        if pd.notna(row["parent_id"]) and int(row["parent_id"]) in y:
            parent = frame[frame["pair_id"] == row["parent_id"]].iloc[0]
            ax.plot(
                [parent["born"], row["born"]],
                [y[int(parent["pair_id"])], y[int(row["pair_id"])]],
                color="0.6",
                zorder=1,
            )
    archived = frame["status"] == "archived"
    for mask, color, label in (
        (~archived, "tab:green", "active"),
        (archived, "tab:red", "archived"),
    ):
        part = frame[mask]
        ax.scatter(
            part["born"], [y[int(p)] for p in part["pair_id"]], color=color, label=label, zorder=2
        )
    for _, row in frame.iterrows():
        ax.annotate(
            f" {int(row['pair_id'])}",
            (row["born"], y[int(row["pair_id"])]),
            fontsize=8,
            va="center",
        )
    ax.set_yticks([])
    ax.set_xlabel("generation created")
    ax.legend(loc="lower right", fontsize=8)
    return _save(fig, path)
