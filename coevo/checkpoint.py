"""Atomic save and load of a run's state: written to a temporary name, then renamed."""

from __future__ import annotations

import os
import pickle
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

_NAME = re.compile(r"^gen_(\d{6})\.pkl$")
FORMAT_VERSION = 1


class CheckpointError(RuntimeError):
    pass


def checkpoint_path(directory: Path, generation: int) -> Path:
    return Path(directory) / f"gen_{generation:06d}.pkl"


def save(directory: Path, generation: int, state: dict[str, Any], keep: int = 3) -> Path:
    """Write `state` for `generation`; a crash mid-write leaves the previous ones intact."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = checkpoint_path(directory, generation)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as handle:
        pickle.dump({"format": FORMAT_VERSION, "generation": generation, "state": state}, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    for old in list_checkpoints(directory)[:-keep]:
        old.unlink(missing_ok=True)
    return path


def list_checkpoints(directory: Path) -> list[Path]:
    directory = Path(directory)
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if _NAME.match(p.name))


def load(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            payload = pickle.load(handle)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ValueError) as error:
        raise CheckpointError(f"checkpoint {path} is unreadable: {error}") from error
    if not isinstance(payload, dict) or payload.get("format") != FORMAT_VERSION:
        raise CheckpointError(
            f"checkpoint {path} is not a coevo checkpoint (format {FORMAT_VERSION})"
        )
    return payload["state"]


def load_latest(
    directory: Path, on_skip: Callable[[str], None] | None = None
) -> tuple[int, dict[str, Any]]:
    """The newest readable checkpoint as (generation, state); unreadable ones are skipped
    (each reported to `on_skip`) in favour of the one before."""
    problems = []
    for path in reversed(list_checkpoints(directory)):
        try:
            return int(_NAME.match(path.name).group(1)), load(path)
        except CheckpointError as error:
            problems.append(str(error))
            if on_skip:
                on_skip(f"{error}; trying the previous checkpoint")
    detail = "; ".join(problems) if problems else "none found"
    raise CheckpointError(f"no usable checkpoint in {directory}: {detail}")
