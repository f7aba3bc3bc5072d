"""What a report shows, read from a run directory's files alone: its tables, config.yaml,
stopped.txt and the task space the config names, and the views of the tables the plots
draw. Reads; never renders (html.py and plots.py do)."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import yaml

from coevo.errors import ConfigError
from coevo.run_files import (
    CONFIG_FILE,
    CROSS_SCORES,
    ELIGIBILITY,
    POPULATION,
    RETURNS,
    STOPPED,
    SUMMARY,
    TEST_SET,
)
from coevo.tasks.task import TaskSpace
from coevo.tasks.test_sets import bounds_text


class ReportError(ValueError):
    """A run directory's table the report cannot read: the message names the file."""


@dataclass(frozen=True)
class RunData:
    """A run directory as its files are now (a table not there yet: an empty frame)."""

    run_dir: Path
    summary: pd.DataFrame
    eligibility: pd.DataFrame
    population: pd.DataFrame
    cross: pd.DataFrame  # POET's cross_scores.csv
    test_set: pd.DataFrame
    returns: pd.DataFrame  # eligible_parents mode
    config_text: str  # config.yaml as written ("" when there is none)
    stopped: str | None  # why the run stopped before its last generation (stopped.txt)
    space: TaskSpace | None  # the run's task space, when it can be rebuilt here

    @property
    def planned_generations(self) -> int | None:
        """curriculum.generations of the run's config, or None."""
        planned = _config_section(self.config_text, "curriculum").get("generations")
        return planned if isinstance(planned, int) else None

    @property
    def test_origin(self) -> str:
        """Where the test tasks come from, as the report's caption says it: a space's own
        held-out set (`test_tasks`: mazes, CPPN terrains, the point-mass gate's target), or
        uniform draws within test_set.params' bounds or the training space's."""
        if self.space is not None and getattr(self.space, "test_tasks", None) is not None:
            return (
                f"the held-out set of task space '{self.space.name}', from "
                f"{type(self.space).__name__}.test_tasks, not uniform draws"
            )
        return f"drawn uniformly within {self.test_bounds}"

    @property
    def test_bounds(self) -> str:
        """Where uniformly drawn test tasks come from: test_set.params' bounds (as drawn in
        the run's space), or the training space's."""
        bounds = _config_section(self.config_text, "test_set").get("params") or {}
        if not bounds:
            return "the task space's bounds, the ones the curriculum trains within"
        try:  # as the run drew them (a bound left out is the space's)
            given = bounds_text(self.space, bounds) if self.space is not None else None
        except ConfigError:
            given = None
        if given is None:  # the space cannot be rebuilt here: the config's words
            given = "; ".join(
                f"{name} {', '.join(f'{k} {v}' for k, v in fields.items())}"
                for name, fields in bounds.items()
            )
        return f"test_set.params' bounds ({given}), the task space's for the other parameters"


def load_run(run_dir: Path, space: TaskSpace | None = None) -> RunData:
    """The run directory's files; `space` (the run's task space) or else the one its
    config.yaml names, rebuilt when possible."""
    run_dir = Path(run_dir)
    config_text = _config_text(run_dir)
    stopped = run_dir / STOPPED
    return RunData(
        run_dir=run_dir,
        summary=read_table(run_dir / SUMMARY),
        eligibility=read_table(run_dir / ELIGIBILITY),
        population=read_table(run_dir / POPULATION),
        cross=read_table(run_dir / CROSS_SCORES),
        test_set=read_table(run_dir / TEST_SET),
        returns=read_table(run_dir / RETURNS),
        config_text=config_text,
        stopped=(
            stopped.read_text(encoding="utf-8", errors="replace").strip()
            if stopped.is_file()
            else None
        ),
        space=space if space is not None else space_of(config_text),
    )


def read_table(path: Path) -> pd.DataFrame:
    """A CSV table of the run (empty when not there yet); ReportError naming a damaged one."""
    if not path.exists() or path.stat().st_size == 0:
        return pd.DataFrame()
    text = path.read_text(encoding="utf-8")
    if not text.endswith("\n"):
        # A crash mid-append leaves the last line unterminated: keep the rows before it.
        text = text[: text.rfind("\n") + 1]
    if not text.strip():
        return pd.DataFrame()
    try:
        return pd.read_csv(io.StringIO(text))
    except (pd.errors.ParserError, UnicodeDecodeError) as error:  # edited or damaged by hand
        raise ReportError(f"{path}: cannot be read as a table ({error})") from None


def _config_text(run_dir: Path) -> str:
    path = run_dir / CONFIG_FILE
    return path.read_text(encoding="utf-8") if path.exists() else ""


def _config_section(config_text: str, section: str) -> dict:
    """One section of the run's config.yaml ({} when missing or unreadable)."""
    try:
        found = (yaml.safe_load(config_text) or {}).get(section, {})
    except (yaml.YAMLError, AttributeError):
        return {}
    return found if isinstance(found, dict) else {}


def space_of(config_text: str) -> TaskSpace | None:
    """The run's task space from its config, or None when it cannot be rebuilt here."""
    if not config_text:
        return None
    try:
        from coevo.tasks.generic import space_from_config

        task = yaml.safe_load(config_text).get("task") or {}
        fields = ("name", "params", "max_episode_steps", "env_id", "entry_point")
        fields += ("env_kwargs", "env_config")
        return space_from_config(SimpleNamespace(**{f: task.get(f) for f in fields}))
    except Exception:  # noqa: BLE001 - a report without rounding beats no report
        return None


# -- views of the tables that the plots draw --------------------------------------------------
ALP_GMM_ORIGINS = ("gmm", "random", "bootstrap")


def _generation(cell: Any) -> int | None:
    """A population cell that holds a generation (born, archived_at, solved_at): None where
    it is empty (NaN, NA) or the column is absent."""
    return None if cell is None or pd.isna(cell) else int(cell)


def task_states(population: pd.DataFrame, last_generation: int) -> pd.DataFrame:
    """One row per (task, generation) the task existed: its parameters and its state then:
    archived from `archived_at`, else solved from `solved_at`, else active."""
    rows = []
    params = [c for c in population.columns if c.startswith("task.")]
    for _, row in population.iterrows():
        born = _generation(row.get("born"))
        archived = _generation(row.get("archived_at"))
        solved = _generation(row.get("solved_at"))
        for generation in range(0 if born is None else born, last_generation + 1):
            if archived is not None and generation >= archived:
                state = "archived"
            elif solved is not None and generation >= solved:
                state = "solved"
            else:
                state = "active"
            rows.append(
                {
                    "pair_id": row.get("pair_id"),
                    "generation": generation,
                    "state": state,
                    **{c: row[c] for c in params},
                }
            )
    return pd.DataFrame(rows)


def levels_played(eligibility: pd.DataFrame) -> pd.DataFrame:
    """A single-policy curriculum's tasks per generation from its level rows: generation,
    rule (new_level, replay, edit, train) and one column per task parameter."""
    rows = eligibility[(eligibility["kind"] == "level") & eligibility["task"].notna()]
    records = []
    for generation, rule, outcome, text in zip(
        rows["generation"], rows["rule"], rows["outcome"], rows["task"], strict=True
    ):
        if not isinstance(text, str) or not text:
            continue
        params = json.loads(text).get("params", {})
        # ALP-GMM's sampled tasks: coloured by where they came from (the row's outcome).
        shown = outcome if rule == "sample" and outcome in ALP_GMM_ORIGINS else rule
        records.append({"generation": generation, "rule": shown, **params})
    return pd.DataFrame(records)
