"""The in-process backend: `Worker`s in the driver's process, chunks run one after another."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from coevo.policies.base import Policy
from coevo.pool.worker import Worker
from coevo.tasks.task import TaskSpace


class LocalWorkers:
    """Workers in this process, for the local backend."""

    def __init__(self, space: TaskSpace, policy: Policy, num_workers: int, envs_per_worker: int):
        self.num_workers = num_workers
        self.workers = [Worker(space, policy, envs_per_worker) for _ in range(num_workers)]
        self.pids = [worker.ping() for worker in self.workers]
        self.nodes = ["local"] * num_workers
        self.restarts = 0

    def put(self, block: np.ndarray) -> Any:
        """A copy of `block`: the workers read it in this process."""
        return block.copy()

    def put_levels(self, block: tuple[Any, ...]) -> tuple[Any, int]:
        """`block` itself, and 0 bytes: levels are immutable, nothing is copied or pickled."""
        return block, 0

    def run(
        self,
        chunks: Sequence[list[Any]],
        sources_for: Sequence[dict[str, Any]],
        method: str,
        on_done: Callable[[Any, int], None],
        prefer: Sequence[int | None] | None = None,
    ) -> list[tuple[int, str, Any]]:
        """`Worker.<method>(chunk, sources)` for each chunk, on its preferred worker if any;
        (worker, node, result) each."""
        results = []
        for index, chunk in enumerate(chunks):
            wanted = prefer[index] if prefer is not None else None
            if wanted is not None and 0 <= wanted < self.num_workers:
                worker = wanted
            else:
                worker = index % self.num_workers
            result = getattr(self.workers[worker], method)(chunk, sources_for[index])
            on_done(result, len(chunk))
            results.append((worker, "local", result))
        return results

    def info(self) -> list[dict[str, Any]]:
        """Each worker's description."""
        return [worker.info() for worker in self.workers]

    def close(self) -> None:
        """Drop the workers."""
        self.workers = []
