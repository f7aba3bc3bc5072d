"""The run directory's tables: summary.csv, eligibility.csv and population.csv.

Rows are appended every generation, so a crash loses at most the generation in progress.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from coevo.evolve.coevolution import GenerationResult
from coevo.evolve.population import Population
from coevo.evolve.rules import Decision

SUMMARY = "summary.csv"
ELIGIBILITY = "eligibility.csv"
POPULATION = "population.csv"
ELIGIBILITY_COLUMNS = [f.name for f in Decision.__dataclass_fields__.values()]


class RunRecorder:
    """Writes each generation's rows to the run directory's CSV files."""

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)

    def record(self, result: GenerationResult, population: Population) -> None:
        _append(self.run_dir / SUMMARY, [result.summary], list(result.summary))
        _append(
            self.run_dir / ELIGIBILITY,
            [d.as_row() for d in result.decisions],
            ELIGIBILITY_COLUMNS,
        )
        population.to_frame().to_csv(self.run_dir / POPULATION, index=False)

    def truncate_after(self, generation: int) -> None:
        """Drop rows of generations after `generation` (used when resuming a run)."""
        for name in (SUMMARY, ELIGIBILITY):
            path = self.run_dir / name
            if path.exists() and path.stat().st_size > 0:
                frame = pd.read_csv(path)
                frame[frame["generation"] <= generation].to_csv(path, index=False)


def _append(path: Path, rows: Iterable[dict], columns: list[str]) -> None:
    frame = pd.DataFrame(list(rows), columns=columns)
    new = not path.exists() or path.stat().st_size == 0
    if frame.empty and not new:
        return
    frame.to_csv(path, mode="w" if new else "a", header=new, index=False)
