"""GRU against MLP on CartPole with its velocities hidden: best score per generation.

    .venv/bin/python experiments/cartpole_pomdp/compare.py GRU_RUN_DIR MLP_RUN_DIR

Writes experiments/cartpole_pomdp/compare.png from the two runs' summary.csv.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

HERE = Path(__file__).resolve().parent


def main() -> None:
    figure, axis = plt.subplots(figsize=(7, 3.5))
    for label, run in zip(("policy=gru", "policy=mlp"), sys.argv[1:3], strict=True):
        summary = pd.read_csv(Path(run) / "summary.csv")
        axis.plot(summary["generation"], summary["best_score"], label=f"{label} best")
        axis.plot(summary["generation"], summary["median_score"], "--", label=f"{label} median")
    axis.set_xlabel("generation")
    axis.set_ylabel("score (mean of 3 episodes)")
    axis.set_title("cartpole_pomdp (velocities hidden), POET + ES, seed 0")
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(HERE / "compare.png", dpi=100)
    print(HERE / "compare.png")


if __name__ == "__main__":
    main()
