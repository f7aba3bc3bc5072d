"""A live progress bar for one generation's evaluations (done/total episodes, steps/s).

On a terminal the bar redraws in place; otherwise nothing is drawn and the runner's one line
per generation is all that is printed.
"""

from __future__ import annotations

import sys
import time

from tqdm import tqdm


class GenerationProgress:
    """A `ProgressListener` for the pool: one bar per generation."""

    def __init__(self, enabled: bool | None = None):
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._bar: tqdm | None = None
        self._steps = 0.0
        self._started = 0.0

    def start(self, generation: int, total: int) -> None:
        """Open the progress bar of a generation (when enabled)."""
        if not self.enabled:
            return
        self._steps, self._started = 0.0, time.perf_counter()
        self._bar = tqdm(
            total=0,
            desc=f"gen {generation}/{total}",
            unit="ep",
            leave=False,
            file=sys.stderr,
            dynamic_ncols=True,
        )

    def planned(self, episodes: int) -> None:
        """Add `episodes` to the bar's total."""
        if self._bar is not None:
            self._bar.total += episodes
            self._bar.refresh()

    def done(self, episodes: int, env_steps: float) -> None:
        """Count finished episodes and their steps, and show the steps per second."""
        if self._bar is None:
            return
        self._steps += env_steps
        elapsed = max(time.perf_counter() - self._started, 1e-9)
        self._bar.set_postfix_str(f"{self._steps / elapsed / 1000:.1f}k steps/s", refresh=False)
        self._bar.update(episodes)

    def finish(self) -> None:
        """Close the bar."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
