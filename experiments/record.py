"""Record a finished run's outcome under experiments/<name>/: its tables, plots and figures.

    .venv/bin/python experiments/record.py NAME RUN_DIR "COMMAND" [WALL_SECONDS]

Copies summary.csv, eligibility.csv, population.csv (those present) and the report's
plots, and prints a markdown block of the headline figures for experiments/README.md.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent


def main() -> None:
    name, run_dir, command = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    wall = float(sys.argv[4]) if len(sys.argv) > 4 else None
    out = HERE / name
    out.mkdir(exist_ok=True)
    for table in ("summary.csv", "eligibility.csv", "population.csv", "returns.csv"):
        if (run_dir / table).exists():
            shutil.copy(run_dir / table, out / table)
    for image in (run_dir / "plots").glob("*.png"):
        if not image.name.startswith("task_"):
            shutil.copy(image, out / image.name)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE
    ).stdout.strip()
    summary = pd.read_csv(run_dir / "summary.csv")
    last = summary.iloc[-1]
    lines = [f"### {name}", "", f"Command: `{command}` (commit {commit})", ""]
    if "annecs" in summary:
        lines += [
            f"- generations: {len(summary)}; active {int(last['active'])}, archived "
            f"{int(last['archived'])}; children admitted {int(summary['admitted'].sum())} of "
            f"{int(summary['children_tried'].sum())} tried; transfers "
            f"{int(summary['transfers'].sum())}; ANNECS {int(last['annecs'])}",
            f"- best / median score at the end: {last['best_score']:.1f} / "
            f"{last['median_score']:.1f}",
        ]
    else:
        lines += [f"- pairs judged: {int(last['active'])}; eligible: {int(last['eligible'])}"]
    lines += [
        f"- env steps: {int(summary['env_steps'].sum()):,}; mean pool throughput "
        f"{summary['env_steps'].sum() / summary['wall_s'].sum() / 1000:.1f}k steps/s",
    ]
    if wall is not None:
        lines.append(f"- wall time of the command: {wall:.0f} s")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
