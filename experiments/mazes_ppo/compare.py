"""The maze runs' held-out "% solved" against env steps, conv against MLP, seeds apart.

    .venv/bin/python experiments/mazes_ppo/compare.py OUT_DIR RANDOM_PERCENT

OUT_DIR is run_all.sh's (runs `<policy>_seed<n>`); RANDOM_PERCENT the random policy's
"% solved" that baseline.py printed (drawn as a line). Writes experiments/mazes_ppo/
curves.png and curves.csv (each run's test rows: generation, env steps, % solved, mean
return) and prints a markdown table of the figures.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

HERE = Path(__file__).resolve().parent
POLICIES = {"conv_actor_critic": "conv actor-critic", "actor_critic": "MLP actor-critic [64, 64]"}


def test_rows(run: Path) -> pd.DataFrame:
    """A run's generations with a test measurement: steps so far, % solved, mean return."""
    summary = pd.read_csv(run / "summary.csv")
    summary["env_steps_total"] = summary["env_steps"].cumsum()
    rows = summary.dropna(subset=["test_mastered"])
    out = rows[["generation", "env_steps_total", "test_mastered", "test_mean_return"]].copy()
    out["test_solved_percent"] = 100 * out.pop("test_mastered")
    out.insert(0, "run", run.name)
    return out


def main() -> None:
    out_dir, random_percent = Path(sys.argv[1]), float(sys.argv[2])
    tables = [test_rows(run) for run in sorted(out_dir.iterdir()) if run.is_dir()]
    curves = pd.concat(tables, ignore_index=True)
    curves.to_csv(HERE / "curves.csv", index=False, float_format="%.4f")
    figure, axis = plt.subplots(figsize=(7, 3.8))
    colors = {"conv_actor_critic": "tab:blue", "actor_critic": "tab:orange"}
    for run, rows in curves.groupby("run"):
        policy = str(run).rsplit("_seed", 1)[0]
        axis.plot(
            rows["env_steps_total"] / 1e6,
            rows["test_solved_percent"],
            color=colors[policy],
            label=f"{POLICIES[policy]}, {str(run).rsplit('_', 1)[1]}",
            alpha=0.8,
        )
    axis.axhline(random_percent, color="gray", linestyle="--", label="random policy")
    axis.set_xlabel("env steps (M)")
    axis.set_ylabel("% of 100 held-out mazes solved")
    axis.set_title("task=maze, PPO + DR, deterministic test episodes")
    axis.legend(fontsize=7, ncol=2)
    figure.tight_layout()
    figure.savefig(HERE / "curves.png", dpi=100)
    print("| run | first test (0.08 M steps) | at 1.0 M steps | last (2.05 M) | best |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for run, rows in curves.groupby("run"):
        solved = rows["test_solved_percent"].to_numpy()
        steps = rows["env_steps_total"].to_numpy()
        middle = solved[abs(steps - 1_000_000).argmin()]
        print(f"| {run} | {solved[0]:.0f} | {middle:.0f} | {solved[-1]:.0f} | {solved.max():.0f} |")


if __name__ == "__main__":
    main()
