"""Can the gate claim's learner steer? The arms' PPO (run.py's `PPO`) trained on one fixed
gate for 200 k env steps, scored on that gate: a check beside claim 2, not one of its arms.

    python experiments/gate/steer_check.py 2 2 OUT      # an off-centre gate of width 2 at x = 2
    python experiments/gate/steer_check.py 3 0.5 OUT    # one narrow target gate

Runs `coevo-run` (curriculum=dr with both parameters' bounds collapsed to the gate, for the
training and the test set) into OUT; its console's `test` column is the success on the gate.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import PPO  # noqa: E402  (the arms' PPO settings: one source)

GENERATIONS = 50  # one PPO update of 4096 steps each: about 200 k env steps
SEED = 7


def command(position: float, width: float, out: Path) -> list[str]:
    """The coevo-run command line of the check on the gate (position, width)."""
    gate = {"gate_position": position, "gate_width": width}
    bounds = [
        f"+{group}.params.{name}.{end}={value}"
        for group in ("task", "test_set")
        for name, value in gate.items()
        for end in ("low", "high")
    ]
    inits = [f"+task.params.{name}.init={value}" for name, value in gate.items()]
    coevo_run = shutil.which("coevo-run") or str(Path(sys.executable).parent / "coevo-run")
    return [
        coevo_run,
        "task=point_mass_gate",
        "pool=local",
        "curriculum=dr",
        *PPO,
        *bounds,
        *inits,
        f"curriculum.generations={GENERATIONS}",
        "test_set.every=10",
        "test_set.size=20",
        f"seed={SEED}",
        f"hydra.run.dir={out}",
    ]


def main(argv: list[str] | None = None) -> int:
    """Run the check; coevo-run's exit code."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("position", type=float)
    parser.add_argument("width", type=float)
    parser.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    return subprocess.call(command(args.position, args.width, args.out))


if __name__ == "__main__":
    sys.exit(main())
