"""PNG plots of a run's tables (matplotlib, no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402


def population_curves(summary: pd.DataFrame, path: Path) -> Path:
    """Active and archived pairs, and best/median score, per generation."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    gens = summary["generation"]
    top.plot(gens, summary["active"], label="active", marker=".")
    top.plot(gens, summary["archived"], label="archived", marker=".")
    if "admitted" in summary:
        top.bar(gens, summary["admitted"], alpha=0.3, label="admitted this generation")
    top.set_ylabel("pairs")
    top.legend(loc="upper left")
    bottom.plot(gens, summary["best_score"], label="best score", marker=".")
    bottom.plot(gens, summary["median_score"], label="median score", marker=".")
    bottom.set_xlabel("generation")
    bottom.set_ylabel("score")
    bottom.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def throughput(summary: pd.DataFrame, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(7, 2.6))
    ax.plot(summary["generation"], summary["steps_per_s"], marker=".")
    ax.set_xlabel("generation")
    ax.set_ylabel("env steps / s")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
