"""What an evaluation call gives back: returns, lengths and errors per job."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class EvalResult:
    """Per-job returns and lengths in the caller's order; NaN return marks a failed episode."""

    returns: np.ndarray
    lengths: np.ndarray
    errors: dict[int, str]


def error_line(text: str) -> str:
    """The line of a worker's error text that says what happened (a traceback's last)."""
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else "failed"


class WorkerStartError(RuntimeError):
    """Ray's worker processes could not build the pool's env or policy (which the driver
    could): most often a module on the driver's sys.path but not on PYTHONPATH."""


class EvaluationError(RuntimeError):
    """Episodes failed where the caller asked for scores only (`evaluate`): a failure is
    never handed back as a silent NaN. `returns` (NaN where failed) and `errors` (by pair)
    are attached for callers that want them; `evaluate_detailed` returns them instead."""

    def __init__(self, message: str, returns: np.ndarray, errors: dict[int, str]):
        super().__init__(message)
        self.returns = returns
        self.errors = errors
