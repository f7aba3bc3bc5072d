"""TensorBoard scalars of the per-generation summary (`logger=tensorboard`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any


class ScalarLogger:
    """Writes every numeric summary column as a scalar per generation; `none` does nothing."""

    def __init__(self, run_dir: Path, kind: str = "none"):
        self._writer = None
        if kind == "tensorboard":
            from torch.utils.tensorboard import SummaryWriter

            self._writer = SummaryWriter(log_dir=str(Path(run_dir) / "tensorboard"))

    def log(self, summary: dict[str, Any]) -> None:
        """Write a summary row's finite numbers as scalars at its generation (when enabled)."""
        if self._writer is None:
            return
        step = int(summary["generation"])
        for key, value in summary.items():
            if key != "generation" and isinstance(value, int | float) and math.isfinite(value):
                self._writer.add_scalar(f"coevo/{key}", value, step)
        self._writer.flush()

    def close(self) -> None:
        """Close the writer."""
        if self._writer is not None:
            self._writer.close()
