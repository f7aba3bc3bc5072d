"""Answer at once while Ray starts: an in-process worker serves the first calls, Ray's
actors take over once they answer.

Starting an embedded Ray takes 3.5 s on an idle 2-core machine and 5 to 9 s under load
(GCS, raylet, agents and prestarted workers are processes of their own;
docs/benchmarks-history.md). A pool that starts Ray itself (no address, Ray not running, no
worker limits) therefore starts it in a background thread and runs calls on one in-process
`Worker` until Ray's workers are ready; each call runs wholly on one side. Results are a
function of the jobs, whatever the backend and number of workers (tested), so the handover
changes no result. With `episode_timeout_s` or `worker_memory_mb` the pool waits for Ray
instead: an env call in this process cannot be cut off.

The thread that starts Ray stays alive, blocked, until the pool closes: Ray's daemons are
started with a parent-death signal bound to the starting thread, and would die with it.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from coevo.policies.base import Policy
from coevo.pool.limits import WorkerLimits
from coevo.pool.local_backend import LocalWorkers
from coevo.tasks.task import TaskSpace


class _NotMainThread(logging.Filter):
    """Drops Ray's warning that a driver started outside the main thread sets no SIGTERM
    handler: expected here, and the pool's close shuts Ray down."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "SIGTERM handler is not set" not in record.getMessage()


@contextlib.contextmanager
def _driver_torch_threads(threads: int | None = None) -> Iterator[None]:
    """Run with `threads` torch threads (None: leave as is), then give the driver back its
    own setting: a Ray-backend run must not change the driver's torch (e.g. a learner)."""
    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    try:
        if threads is not None and torch is not None:
            torch.set_num_threads(threads)
        yield
    finally:
        torch = sys.modules.get("torch")
        if torch is not None and before is not None and torch.get_num_threads() != before:
            torch.set_num_threads(before)


class HandoverWorkers:
    """The backend of a pool whose embedded Ray is still starting (see the module doc)."""

    def __init__(
        self,
        space: TaskSpace,
        policy: Policy,
        num_workers: int,
        envs_per_worker: int,
        limits: WorkerLimits | None = None,
    ):
        self.num_workers = num_workers
        with _driver_torch_threads():  # the Worker sets one torch thread, as in an actor
            self.local = LocalWorkers(space, policy, 1, envs_per_worker)
        self.ray: Any = None
        self._served: Any = None  # the side that took the last call (see `pids`)
        self._error: BaseException | None = None
        self._started = threading.Event()
        self._closing = threading.Event()
        # Ray's start pickles its own copy: the local worker may be running the caller's
        # policy meanwhile, and vmap swaps a torch module's parameters while it runs.
        ray_policy = copy.deepcopy(policy)
        arguments = (space, ray_policy, num_workers, envs_per_worker, None, limits)  # no address
        self._thread = threading.Thread(
            target=self._start_ray, args=arguments, name="coevo-ray-start", daemon=True
        )
        self._thread.start()

    def _start_ray(self, *arguments: Any) -> None:
        from coevo.pool.ray_backend import RayWorkers

        ray_worker_logger = logging.getLogger("ray._private.worker")
        if not any(isinstance(f, _NotMainThread) for f in ray_worker_logger.filters):
            ray_worker_logger.addFilter(_NotMainThread())
        try:
            self.ray = RayWorkers(*arguments)
        except BaseException as error:  # raised in the caller's thread at its next call
            self._error = error
        finally:
            self._started.set()
        self._closing.wait()  # Ray's daemons live as long as this thread (module doc)

    # -- state -----------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        """Ray's workers have answered: calls run on them from now on."""
        return self._started.is_set() and self.ray is not None

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Block until Ray's start has ended (ready or failed); True once Ray serves."""
        self._started.wait(timeout)
        self._raise_start_error()
        return self.ready

    def _raise_start_error(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    @property
    def current(self) -> Any:
        """The Ray workers once ready, else the local worker.

        Raises:
            Exception: The error Ray's start raised, if it failed (raised once).
        """
        self._raise_start_error()
        return self.ray if self.ready else self.local

    # -- the backend interface -------------------------------------------------------------
    @property
    def workers(self) -> list[Any]:
        """The current side's workers."""
        return self.current.workers

    @property
    def pids(self) -> list[int]:
        """The process ids of the side that served the last call."""
        # The process ids of the side that served the last call: the pool compares that
        # call's answers with them, and Ray may have become ready while the call ran here
        # (Ray's pids then would read as a restart of every worker that answered).
        return (self._served or self.current).pids

    @property
    def nodes(self) -> list[str]:
        """The current side's nodes."""
        return self.current.nodes

    @property
    def restarts(self) -> int:
        """The current side's count of worker restarts."""
        return self.current.restarts

    def put(self, block: np.ndarray) -> Any:
        """Store a block of parameters on the current side."""
        # Blocks put before the handover stay numpy arrays; Ray workers take those too.
        return self.current.put(block)

    def put_levels(self, block: tuple[Any, ...]) -> tuple[Any, int]:
        """Store a block of levels on the current side (Ray workers take a local one too)."""
        return self.current.put_levels(block)

    def info(self) -> list[dict[str, Any]]:
        """The current side's worker descriptions."""
        return self.current.info()

    def run(
        self,
        chunks: Sequence[list[Any]],
        sources_for: Sequence[dict[str, Any]],
        method: str,
        on_done: Callable[[Any, int], None],
        prefer: Sequence[int | None] | None = None,
    ) -> list[tuple[int, str, Any]]:
        """Run chunks of jobs on the current side (before the handover: locally, one thread)."""
        # A preferred worker only lets a chunk reuse what that worker kept (never changes a
        # result): before the handover, the one local worker takes every chunk.
        backend = self.current
        self._served = backend
        # The in-process worker runs on one torch thread, as Ray's workers do.
        local = backend is not self.ray
        with _driver_torch_threads(1) if local else contextlib.nullcontext():
            return backend.run(chunks, sources_for, method, on_done, prefer)

    def close(self) -> None:
        """Wait for Ray's start to end, shut Ray down and stop the handover thread."""
        self._started.wait()  # a Ray still starting is shut down, not left behind
        try:
            if self.ray is not None:
                self.ray.close()
        finally:
            self._closing.set()
            self._thread.join()
            self.local.close()
