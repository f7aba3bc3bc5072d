"""The run directory's tables: summary.csv, eligibility.csv and population.csv.

Rows are appended every generation, so a crash loses at most the generation in progress.
The recorder also keeps the rows for the checkpoint: on resume the tables are rewritten
from the checkpoint, so a line torn by a crash mid-append cannot survive.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from coevo.evolve.coevolution import GenerationResult
from coevo.evolve.population import Population
from coevo.evolve.rules import Decision

SUMMARY = "summary.csv"
ELIGIBILITY = "eligibility.csv"
POPULATION = "population.csv"
CROSS_SCORES = "cross_scores.csv"
CROSS_SCORE_COLUMNS = ["generation", "policy_pair_id", "task_pair_id", "score"]
ELIGIBILITY_COLUMNS = [f.name for f in Decision.__dataclass_fields__.values()]


class RunRecorder:
    """Writes each generation's rows to the run directory's CSV files."""

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.summary_rows: list[dict[str, Any]] = []
        self.eligibility_rows: list[dict[str, Any]] = []
        self.cross_rows: list[dict[str, Any]] = []

    def record(self, result: GenerationResult, population: Population) -> None:
        decisions = [d.as_row() for d in result.decisions]
        self.summary_rows.append(result.summary)
        self.eligibility_rows.extend(decisions)
        _append(self.run_dir / SUMMARY, [result.summary], list(result.summary))
        _append(self.run_dir / ELIGIBILITY, decisions, ELIGIBILITY_COLUMNS)
        cross = [
            dict(zip(CROSS_SCORE_COLUMNS, (result.generation, *row), strict=True))
            for row in result.cross_scores
        ]
        self.cross_rows.extend(cross)
        _append(self.run_dir / CROSS_SCORES, cross, CROSS_SCORE_COLUMNS)
        population.to_frame().to_csv(self.run_dir / POPULATION, index=False)

    def state_dict(self) -> dict[str, Any]:
        return {
            "summary": list(self.summary_rows),
            "eligibility": list(self.eligibility_rows),
            "cross_scores": list(self.cross_rows),
        }

    def load_state_dict(self, state: dict[str, Any], population: Population) -> None:
        """Rewrite every table from checkpointed rows, dropping anything written after."""
        self.summary_rows = list(state["summary"])
        self.eligibility_rows = list(state["eligibility"])
        self.cross_rows = list(state["cross_scores"])
        columns = list(self.summary_rows[0]) if self.summary_rows else []
        _write(self.run_dir / SUMMARY, self.summary_rows, columns)
        _write(self.run_dir / ELIGIBILITY, self.eligibility_rows, ELIGIBILITY_COLUMNS)
        _write(self.run_dir / CROSS_SCORES, self.cross_rows, CROSS_SCORE_COLUMNS)
        population.to_frame().to_csv(self.run_dir / POPULATION, index=False)


def _write(path: Path, rows: list[dict], columns: list[str]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    pd.DataFrame(rows, columns=columns).to_csv(tmp, index=False)
    tmp.replace(path)


def _append(path: Path, rows: Iterable[dict], columns: list[str]) -> None:
    frame = pd.DataFrame(list(rows), columns=columns)
    new = not path.exists() or path.stat().st_size == 0
    if frame.empty and not new:
        return
    frame.to_csv(path, mode="w" if new else "a", header=new, index=False)
