"""The run directory's tables: summary.csv, eligibility.csv, population.csv and any extra
tables a curriculum returns (POET: cross_scores.csv).

Rows are appended every generation, so a crash loses at most the generation in progress.
The recorder also keeps the rows for the checkpoint: on resume the tables are rewritten
from the checkpoint, so a line torn by a crash mid-append cannot survive.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from coevo.curricula.base import Decision, GenerationResult
from coevo.run_files import ELIGIBILITY, POPULATION, SUMMARY

ELIGIBILITY_COLUMNS = [f.name for f in Decision.__dataclass_fields__.values()]


class RunRecorder:
    """Writes each generation's rows to the run directory's CSV files."""

    def __init__(self, run_dir: Path, tables: tuple[str, ...] = ()):
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.summary_rows: list[dict[str, Any]] = []
        self.eligibility_rows: list[dict[str, Any]] = []
        # File stem -> rows. `tables` are known from the start (not from their first rows):
        # a checkpoint taken before a table's first rows then carries it, empty, and a
        # resume from it removes rows written after it instead of appending to them.
        self.tables = tables
        self.extra_rows: dict[str, list[dict[str, Any]]] = {stem: [] for stem in tables}
        # Table (SUMMARY or a stem) -> the columns of its rows so far, kept as rows come
        # (not found again by scanning every row each generation).
        self.columns: dict[str, list[str]] = {}

    def _grow(self, table: str, rows: list[dict[str, Any]]) -> bool:
        """Add `rows`' new columns to `table`'s; True when there were any."""
        columns = self.columns.setdefault(table, [])
        new = [column for column in _columns(rows) if column not in columns]
        columns.extend(new)
        return bool(new)

    def record(self, result: GenerationResult, population: pd.DataFrame) -> None:
        """Append a generation's rows; `population` is the curriculum's population table."""
        decisions = [d.as_row() for d in result.decisions]
        self.summary_rows.append(result.summary)
        self.eligibility_rows.extend(decisions)
        if self._grow(SUMMARY, [result.summary]):
            # A column that earlier generations did not have (e.g. PPO's losses once PLR
            # first trains): the table is written again with it, empty in those rows.
            _write(self.run_dir / SUMMARY, self.summary_rows, self.columns[SUMMARY])
        else:
            _append(self.run_dir / SUMMARY, [result.summary], self.columns[SUMMARY])
        _append(self.run_dir / ELIGIBILITY, decisions, ELIGIBILITY_COLUMNS)
        for stem, rows in result.tables.items():
            kept = self.extra_rows.setdefault(stem, [])
            first = not kept
            kept.extend(rows)
            grew = self._grow(stem, rows)
            if not kept:
                continue
            if first or grew:
                # Written whole: a file already there was written after the checkpoint this
                # run resumed from (a plug-in's table its state did not know yet), or a new
                # column (test_scores' error after a resume of an older run's) joins.
                _write(self.run_dir / f"{stem}.csv", kept, self.columns[stem])
            else:
                _append(self.run_dir / f"{stem}.csv", rows, self.columns[stem])
        integer_ids(population).to_csv(self.run_dir / POPULATION, index=False)

    def state_dict(self) -> dict[str, Any]:
        """The rows recorded so far, for checkpoints."""
        return {
            "summary": list(self.summary_rows),
            "eligibility": list(self.eligibility_rows),
            "extra": {stem: list(rows) for stem, rows in self.extra_rows.items()},
        }

    def load_state_dict(self, state: dict[str, Any], population: pd.DataFrame) -> None:
        """Rewrite every table from checkpointed rows, dropping anything written after."""
        self.summary_rows = list(state["summary"])
        self.eligibility_rows = list(state["eligibility"])
        # The known tables too: a checkpoint written before they were known lacks them.
        self.extra_rows = {
            **{stem: [] for stem in self.tables},
            **{stem: list(rows) for stem, rows in state["extra"].items()},
        }
        self.columns = {
            SUMMARY: _columns(self.summary_rows),
            **{stem: _columns(rows) for stem, rows in self.extra_rows.items()},
        }
        _write(self.run_dir / SUMMARY, self.summary_rows, self.columns[SUMMARY])
        _write(self.run_dir / ELIGIBILITY, self.eligibility_rows, ELIGIBILITY_COLUMNS)
        for stem, rows in self.extra_rows.items():
            if rows:
                _write(self.run_dir / f"{stem}.csv", rows, self.columns[stem])
            else:  # nothing recorded yet: anything there was written after the checkpoint
                (self.run_dir / f"{stem}.csv").unlink(missing_ok=True)
        integer_ids(population).to_csv(self.run_dir / POPULATION, index=False)


def integer_ids(frame: pd.DataFrame) -> pd.DataFrame:
    """Id columns (`*_id`) as integers, empty where missing: pandas makes a column with a
    missing value float, and the CSV would then say `parent_id 1.0` in some rows, `1` in
    others (each generation's rows are appended on their own). Task parameters (`task.*`)
    are the task's values, whatever their name: left as they are."""
    converted = {}
    for column in frame.columns:
        values = frame[column]
        name = str(column)
        if name.endswith("_id") and not name.startswith("task.") and values.dtype.kind == "f":
            present = values.dropna()
            if bool((present == present.round()).all()):
                converted[column] = values.astype("Int64")
    return frame.assign(**converted) if converted else frame  # the caller's frame unchanged


def _columns(rows: Iterable[dict]) -> list[str]:
    """Every key of the rows, in the order they first appear."""
    return list(dict.fromkeys(key for row in rows for key in row))


def _write(path: Path, rows: list[dict], columns: list[str]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    integer_ids(pd.DataFrame(rows, columns=columns)).to_csv(tmp, index=False)
    tmp.replace(path)


def _append(path: Path, rows: Iterable[dict], columns: list[str]) -> None:
    frame = integer_ids(pd.DataFrame(list(rows), columns=columns))
    new = not path.exists() or path.stat().st_size == 0
    if frame.empty and not new:
        return
    frame.to_csv(path, mode="w" if new else "a", header=new, index=False)
