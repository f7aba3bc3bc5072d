"""Finding coevo run directories under the paths given and reading what a comparison needs.

A run directory holds config.yaml (the run's resolved config, as coevo-run writes it) and
summary.csv (one row per generation); a Hydra multirun holds numbered run directories, and
any folder may hold several of either at any depth.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from coevo.run_files import CONFIG_FILE, SUMMARY, TEST_SCORES

# summary.csv's columns that a comparison reads: training env steps per generation (test
# episodes are counted apart, in test_env_steps), the single-policy curricula's optimizer
# steps since the run began (the policy updates), and the held-out test set's figures.
ENV_STEPS = "env_steps"
UPDATES = "optimizer_steps"
TEST_COLUMNS = ("test_mastered", "test_mean_return")


class CompareError(ValueError):
    """Input that cannot be compared; the message says what was expected."""


@dataclass(frozen=True)
class Run:
    """One run directory's config and tables."""

    path: Path
    config: dict[str, Any]
    summary: pd.DataFrame
    test_scores: pd.DataFrame | None  # None: the run has no test_scores.csv

    def value(self, key: str) -> Any:
        """The config's value at a dotted key (`curriculum.name`); KeyError if absent."""
        node: Any = self.config
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                raise KeyError(key)
            node = node[part]
        return node

    @property
    def name(self) -> str:
        """The run's path, relative to the working directory where it lies below it."""
        try:
            return str(self.path.resolve().relative_to(Path.cwd().resolve()))
        except ValueError:
            return str(self.path)

    @property
    def seed(self) -> Any:
        return self.config.get("seed")


def is_run_dir(path: Path) -> bool:
    """Whether `path` holds a coevo run (both config.yaml and summary.csv)."""
    return (path / CONFIG_FILE).is_file() and (path / SUMMARY).is_file()


def find_run_dirs(paths: list[Path]) -> list[Path]:
    """Every run directory at or under each path, in path order, then sorted within it
    (numbered Hydra jobs in numeric order). Raises CompareError for a path that does not
    exist or holds no run."""
    found: list[Path] = []
    for path in paths:
        if not path.exists():
            raise CompareError(f"{path} does not exist")
        if not path.is_dir():
            raise CompareError(f"{path} is not a directory: give run or sweep directories")
        here = [path] if is_run_dir(path) else _runs_below(path)
        if not here:
            raise CompareError(
                f"{path} holds no coevo run: expected a run directory (with {CONFIG_FILE} and "
                f"{SUMMARY}, as coevo-run writes them) or a folder of them (a multirun's "
                "numbered job directories)"
            )
        found += [run for run in here if run not in found]
    return found


def _runs_below(path: Path) -> list[Path]:
    runs = {summary.parent for summary in path.rglob(SUMMARY) if is_run_dir(summary.parent)}
    return sorted(runs, key=_natural_key)


def _natural_key(path: Path) -> tuple:
    return tuple(int(part) if part.isdigit() else part for part in path.parts)


def load_run(path: Path) -> Run:
    """A run directory's config.yaml, summary.csv and, where scored, test_scores.csv.

    Args:
        path: a directory for which `is_run_dir` holds.

    Returns:
        The `Run`; an empty summary.csv gives an empty frame, a missing test_scores.csv None.
    """
    config = yaml.safe_load((path / CONFIG_FILE).read_text()) or {}
    try:
        summary = pd.read_csv(path / SUMMARY)
    except pd.errors.EmptyDataError:
        summary = pd.DataFrame()
    scores_file = path / f"{TEST_SCORES}.csv"
    test_scores = pd.read_csv(scores_file) if scores_file.is_file() else None
    return Run(path, config, summary, test_scores)
