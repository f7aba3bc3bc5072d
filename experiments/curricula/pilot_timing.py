"""Timing pilot for the curricula study (issue 29): one DR run per (task space, optimizer) to
a budget of training env steps, run as the study runs its arms (run_study.py's legs of
`coevo-run`, `pool=local`, one process), and its env steps per second, so the full study can
be sized. No test scorings (`test_set.every=0`): their cost is a test set's episodes at each
scoring, estimated apart from the mean episode length printed here.

    python experiments/curricula/pilot_timing.py                  # 200k steps, 4 cells
    python experiments/curricula/pilot_timing.py --budget 50000 --spaces cartpole

Three rates per run: `gen steps/s` (env steps over the generations' own wall_s,
summary.csv), `process steps/s` (over the wall-clock of every leg's coevo-run, start-up,
checkpoints and the report included) and `steps/cpu s` (over those processes' CPU time,
user + system: what the run costs a core, whatever else the machine was doing). Writes
OUT/timing.md (default: pilot/ beside this script) and the run directories under OUT/runs/.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

import pandas as pd

from coevo.frames import column

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run_study import Arm, Scale, _commit, run_to_budget  # noqa: E402  (a script beside it)

DEFAULT_BUDGET = 200_000
COLUMNS = (
    "task | optimizer | env steps | generations | legs | episodes | mean episode length | "
    "gen wall s | process wall s | process cpu s | gen steps/s | process steps/s | steps/cpu s"
)


def time_cell(space: str, optimizer: str, budget: int, out: Path) -> dict[str, object]:
    """One DR run of (space, optimizer) to `budget` env steps, timed; its row of figures."""
    arm = Arm(space, optimizer, "dr")
    run_dir = out / "runs" / arm.name
    if run_dir.exists():
        raise SystemExit(f"{run_dir} exists: give another --out or remove it")
    scale = Scale(budget=budget, seeds=1, test_size=1, test_points=1, first_generations=20)
    started, cpu_before = time.perf_counter(), _children_cpu_s()
    legs = run_to_budget([*arm.overrides, "seed=0", "test_set.every=0"], run_dir, scale)
    process_s, cpu_s = time.perf_counter() - started, _children_cpu_s() - cpu_before
    summary = pd.read_csv(run_dir / "summary.csv")
    steps, episodes, gen_s = (
        float(column(summary, name).sum()) for name in ("env_steps", "episodes", "wall_s")
    )
    return {
        "task": space,
        "optimizer": optimizer,
        "env steps": int(steps),
        "generations": len(summary),
        "legs": len(legs),
        "episodes": int(episodes),
        "mean episode length": round(steps / episodes, 1),
        "gen wall s": round(gen_s, 1),
        "process wall s": round(process_s, 1),
        "process cpu s": round(cpu_s, 1),
        "gen steps/s": round(steps / gen_s),
        "process steps/s": round(steps / process_s),
        "steps/cpu s": round(steps / cpu_s),
    }


def _children_cpu_s() -> float:
    """User + system CPU seconds of the finished child processes (the coevo-run legs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def table(rows: list[dict[str, object]]) -> str:
    """The rows as a markdown table."""
    lines = [f"| {COLUMNS} |", "|" + " --- |" * len(COLUMNS.split(" | "))]
    lines += ["| " + " | ".join(str(v) for v in row.values()) + " |" for row in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> str:
    """Time every cell, print and write the table."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help="training env steps")
    p.add_argument("--spaces", default="cartpole,acrobot_reach")
    p.add_argument("--optimizers", default="es,ppo")
    p.add_argument("--out", type=Path, default=HERE / "pilot")
    args = p.parse_args(argv)
    rows, load_before = [], os.getloadavg()[0]
    for space in args.spaces.split(","):
        for optimizer in args.optimizers.split(","):
            rows.append(time_cell(space, optimizer, args.budget, args.out))
            print(table(rows[-1:]).splitlines()[-1], flush=True)
    text = (
        f"DR, seed 0, pool=local, no test scorings, to {args.budget:,} training env steps; "
        f"commit {_commit()[:10]}, {os.cpu_count()} CPUs, load average {load_before:.1f} at "
        f"the start and {os.getloadavg()[0]:.1f} at the end.\n\n{table(rows)}"
    )
    (args.out / "timing.md").write_text(text + "\n")
    print(text)
    return text


if __name__ == "__main__":
    main()
