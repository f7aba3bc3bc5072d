"""Atomic save and load of a run's state: written to a temporary name, then renamed.

A checkpoint file is a header line, the SHA-256 of the pickled state, and the pickled state:
a file damaged after it was written (a flipped bit, a block of zeros, a cut) fails the check
and is refused with a message, instead of unpickling into wrong numbers or a traceback.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from coevo.run_files import CHECKPOINTS

_NAME = re.compile(r"^gen_(\d{6})\.pkl$")
FORMAT_VERSION = 2
_MAGIC = b"coevo-checkpoint 2 sha256 "


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be saved or read."""

    pass


def checkpoint_path(directory: Path, generation: int) -> Path:
    """The path of generation `generation`'s checkpoint in `directory`."""
    return Path(directory) / f"gen_{generation:06d}.pkl"


def save(directory: Path, generation: int, state: dict[str, Any], keep: int = 3) -> Path:
    """Write `state` for `generation`; a crash mid-write leaves the previous ones intact."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = checkpoint_path(directory, generation)
    tmp = path.with_name(path.name + ".tmp")
    try:
        payload = pickle.dumps(
            {"format": FORMAT_VERSION, "generation": generation, "state": state},
            protocol=pickle.HIGHEST_PROTOCOL,
        )
    except Exception as error:  # noqa: BLE001 - a plug-in's state may hold anything
        where = _unpicklable_part(state, "state")
        raise CheckpointError(
            f"the run's state after generation {generation} cannot be checkpointed: {where} "
            f"does not pickle ({type(error).__name__}: {error}). A curriculum's state_dict "
            "(curriculum_state) and an optimizer's states must be plain data pickle can "
            "save: no lambdas, local functions, open files or locks"
        ) from error
    with open(tmp, "wb") as handle:
        handle.write(_MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n")
        handle.write(payload)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    for old in list_checkpoints(directory)[:-keep]:
        old.unlink(missing_ok=True)
    return path


def _unpicklable_part(value: Any, path: str) -> str:
    """The deepest entry of nested dicts, lists and tuples under `path` that does not pickle
    (e.g. "state['curriculum']['students'][0]"), to name in the error."""
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list | tuple)
        else ()
    )
    for key, item in items:
        try:
            pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - any failure points here
            return _unpicklable_part(item, f"{path}[{key!r}]")
    return path


def list_checkpoints(directory: Path) -> list[Path]:
    """The checkpoint files in `directory`, sorted by generation (none if it is missing)."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if _NAME.match(p.name))


def generation_of(path: Path) -> int:
    """The generation a checkpoint file is named for (gen_000012.pkl -> 12)."""
    match = _NAME.match(Path(path).name)
    if match is None:
        raise CheckpointError(f"{path} is not a checkpoint file (gen_NNNNNN.pkl)")
    return int(match.group(1))


def load(path: Path) -> dict[str, Any]:
    """The state saved in `path`; CheckpointError if it is unreadable, damaged or foreign."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise CheckpointError(f"checkpoint {path} is unreadable: {error}") from error
    if not data:
        raise CheckpointError(f"checkpoint {path} is unreadable: the file is empty")
    if _MAGIC.startswith(data[:16]):  # "coevo-checkpoint", or a file cut inside it
        header, _, payload = data.partition(b"\n")
        digest = hashlib.sha256(payload).hexdigest().encode()
        if header != _MAGIC + digest:
            raise CheckpointError(
                f"checkpoint {path} is unreadable: corrupt, its content does not match its "
                f"checksum (damaged or cut short after it was written; {len(data)} bytes)"
            )
    elif data.startswith(b"\x80"):  # a pickle: format 1, written without a checksum
        payload = data
    else:
        raise CheckpointError(f"checkpoint {path} is not a coevo checkpoint")
    try:
        content = pickle.loads(payload)
    except Exception as error:  # a damaged format-1 file can raise almost anything
        raise CheckpointError(f"checkpoint {path} is unreadable: {error!r}") from error
    if not isinstance(content, dict) or content.get("format") not in (1, FORMAT_VERSION):
        raise CheckpointError(
            f"checkpoint {path} is not a coevo checkpoint (format {FORMAT_VERSION})"
        )
    return content["state"]


def load_latest(
    directory: Path, on_skip: Callable[[str], None] | None = None
) -> tuple[int, dict[str, Any]]:
    """The newest readable checkpoint as (generation, state); unreadable ones are skipped
    (each reported to `on_skip`) in favour of the one before."""
    problems = []
    for path in reversed(list_checkpoints(directory)):
        try:
            return generation_of(path), load(path)
        except CheckpointError as error:
            problems.append(str(error))
            if on_skip:
                on_skip(f"{error}; trying the previous checkpoint")
    detail = "; ".join(problems) if problems else "none found"
    raise CheckpointError(f"no usable checkpoint in {directory}: {detail}")


def load_run_or_file(
    path: Path, on_skip: Callable[[str], None] | None = None
) -> tuple[Path, dict[str, Any]]:
    """(checkpoint file, state) of a run directory (its newest readable checkpoint; damaged
    newer ones reported to `on_skip`) or of a checkpoint file: what `coevo-eval`,
    `policy.start_from` and a pairs file's `checkpoint:` all take. FileNotFoundError when
    `path` is neither; CheckpointError when nothing there loads."""
    path = Path(path)
    if path.is_dir():
        directory = path / CHECKPOINTS
        generation, state = load_latest(directory, on_skip)
        return checkpoint_path(directory, generation), state
    if path.is_file():
        return path, load(path)
    raise FileNotFoundError(f"{path} is neither a run directory nor a checkpoint file")
