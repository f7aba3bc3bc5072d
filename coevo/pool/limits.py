"""Limits on pool workers (Ray backend): a time limit per env call, a memory limit per worker.

- `episode_timeout_s`: a worker whose env call (one slot's reset or step) runs longer than
  this is killed and replaced. That episode fails with "timed out after N s on task ...";
  the other episodes of its chunk run again on whichever worker is free (their results are
  a function of their job, so they come out the same), and the call goes on. The driver
  asks each busy worker about once a second which env call it is in and since when; a
  second thread of the actor answers (its `control` concurrency group), so this works
  while the env sleeps, waits or runs Python. An env stuck in C code that never releases
  the GIL cannot answer either: after 2 x limit + 5 s without an answer its worker is
  replaced and its chunks run again, and a chunk that silences its worker every time fails
  the call after `_CHUNK_RETRIES` re-runs, with a message, instead of hanging it. Only
  `GymSlots` (one gymnasium env per slot: the user's code) are timed, not a space's own
  batched numpy physics.
- `worker_memory_mb`: a worker whose resident memory (RSS) is above this after a chunk is
  replaced by a fresh process before it gets another chunk (a leaky simulator); results do
  not change.

The local backend runs the envs in the driver's own process, where nothing can interrupt an
env call or hand memory back, so either limit with `backend: local` is a ConfigError.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from coevo.errors import ConfigError
from coevo.pool.jobs import EpisodeJob
from coevo.pool.worker import ChunkResult
from coevo.settings import Checked, setting

_NAMES = ("episode_timeout_s", "worker_memory_mb")


def limit_setting(doc: str = "") -> Any:
    """A limit's field: a positive number, or None (no limit). PoolConfig's fields use it
    too, so `pool.X` is refused with one rule and one message from Python and from Hydra."""
    return setting(None, low=0.0, open_low=True, doc=doc)


@dataclass(frozen=True)
class WorkerLimits(Checked):
    """`pool.episode_timeout_s` and `pool.worker_memory_mb`; None: no limit."""

    section = "pool"

    episode_timeout_s: float | None = limit_setting()
    worker_memory_mb: float | None = limit_setting()

    @property
    def any(self) -> bool:
        """Whether any limit is set."""
        return self.episode_timeout_s is not None or self.worker_memory_mb is not None

    def check_backend(self, backend: str) -> None:
        """Refuse limits the backend cannot enforce.

        Args:
            backend: The pool's backend.

        Raises:
            ConfigError: If a limit is set with the local backend.
        """
        if backend != "local":
            return
        for name in _NAMES:
            if getattr(self, name) is not None:
                raise ConfigError(
                    f"pool.{name}",
                    "only the ray backend enforces it: the local backend runs the envs in "
                    "this process, where nothing can interrupt an env call or give memory "
                    "back; use pool.backend=ray or leave it null",
                )


def timeout_message(limit_s: float, job: EpisodeJob) -> str:
    """The error message of an episode that ran past `limit_s`."""
    return (
        f"timed out after {limit_s:g} s on task {job.task!r} (reset seed {job.seed}); "
        "its worker was replaced"
    )


def rss_mb() -> float:
    """Resident memory of this process in MB."""
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def merge_skipped(
    result: ChunkResult, size: int, kept: list[int], skipped: dict[int, str]
) -> ChunkResult:
    """A chunk's result over all `size` jobs: the ones run (`kept`, in order) and the ones
    that timed out earlier (`skipped`: position -> message; NaN return, length 0)."""
    returns = np.full(size, np.nan)
    lengths = np.zeros(size, dtype=np.int64)
    returns[kept] = result.returns
    lengths[kept] = result.lengths
    errors = {kept[i]: message for i, message in result.errors.items()}
    errors.update(skipped)
    return ChunkResult(returns, lengths, errors, result.stats)


class CallWatch:
    """The driver's side of `episode_timeout_s`: asks busy workers which env call runs.

    At most one question per worker is out at a time, and a worker is asked again at most
    every `interval` seconds.
    """

    def __init__(self, limit_s: float):
        self.limit_s = limit_s
        self.interval = min(1.0, limit_s / 2)
        # A question unanswered this long: the worker's Python is stuck (see the module doc).
        self.silence_s = 2 * limit_s + 5.0
        self.asked: dict[Any, tuple[int, float]] = {}  # question ref -> (worker, sent at)
        self._last: dict[int, float] = {}

    def ask(self, busy: Iterable[int], handles: list[Any]) -> None:
        """Ask each busy worker which call it runs (one question out each, `interval` apart)."""
        now = time.monotonic()
        waiting = {worker for worker, _ in self.asked.values()}
        for worker in busy:
            if worker in waiting or now - self._last.get(worker, -1e9) < self.interval:
                continue
            ref = handles[worker].env_call.options(concurrency_group="control").remote()
            self.asked[ref] = (worker, now)
            self._last[worker] = now

    def answer(self, ref: Any) -> tuple[int, tuple[str, int, float] | None]:
        """(worker, its answer); None when it runs no env call or died meanwhile."""
        import ray
        from ray.exceptions import RayError

        worker, _ = self.asked.pop(ref)
        try:
            return worker, ray.get(ref)
        except RayError:
            return worker, None

    def silent(self) -> list[int]:
        """Workers whose question has waited longer than `silence_s`."""
        now = time.monotonic()
        return sorted({w for w, sent in self.asked.values() if now - sent > self.silence_s})

    def forget(self, worker: int) -> None:
        """Drop a worker's outstanding questions and its last-asked time."""
        for ref, (owner, _) in list(self.asked.items()):
            if owner == worker:
                del self.asked[ref]
        self._last.pop(worker, None)
