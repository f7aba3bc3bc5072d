"""Running coevo's console scripts as a user does: a subprocess in the repository root."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
COEVO_RUN = str(BIN / "coevo-run")


def cli(program: str, *args: object, timeout: float = 300, **kwargs) -> subprocess.CompletedProcess:
    """Run `program` (coevo-run, coevo-report, coevo-eval) to completion, output captured."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **kwargs.pop("env", {})}
    return subprocess.run(
        [str(BIN / program), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=kwargs.pop("cwd", ROOT),
        timeout=timeout,
        env=env,
        **kwargs,
    )
