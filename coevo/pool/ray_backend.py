"""The Ray backend: workers as Ray actors, chunks pipelined with `ray.wait`, and the pool's
own fault handling.

A killed worker process is restarted by Ray (its constructor re-run) and its chunks re-run;
results are a function of the jobs, so they come out the same. Ray alone restarts an actor
only where one fits, so after a node loss on a full cluster its chunks would wait forever:
a worker whose chunk fails after Ray's own retries, or whose node Ray lists as dead (asked
every `HEALTH_CHECK_S` while chunks are out), is killed for good, its chunks go to the other
workers, and a replacement starts where there is room.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from coevo.errors import ConfigError
from coevo.policies.base import Policy
from coevo.pool.limits import CallWatch, WorkerLimits, merge_skipped, rss_mb, timeout_message
from coevo.pool.results import WorkerStartError
from coevo.pool.scheduling import IN_FLIGHT_PER_WORKER
from coevo.pool.slots import GymSlots
from coevo.pool.worker import ChunkResult, Worker
from coevo.tasks.task import TaskSpace

logger = logging.getLogger(__name__)

# Re-runs of one chunk whose worker died; finite so a chunk that kills its worker every time
# fails the call instead of restarting workers forever.
CHUNK_RETRIES = 3
# How often, while chunks are out, the driver asks Ray which nodes are alive.
HEALTH_CHECK_S = 1.0


class RayWorker(Worker):
    """The Ray actor: a `Worker` that also says which node it runs on."""

    def __init__(
        self,
        space: TaskSpace,
        policy: Policy,
        num_envs: int = 8,
        limits: WorkerLimits | None = None,
    ):
        super().__init__(space, policy, num_envs)
        import ray

        self.node_id = ray.get_runtime_context().get_node_id()
        self.limits = limits or WorkerLimits()
        timed = self.limits.episode_timeout_s is not None
        self._clock = self.slots.watch() if timed and isinstance(self.slots, GymSlots) else None

    def info(self) -> dict[str, Any]:
        """`Worker.info`, plus the OMP_NUM_THREADS Ray gave this process (BLAS threads) and
        its resident memory in MB."""
        return {
            **super().info(),
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
            "rss_mb": rss_mb(),
        }

    def where(self) -> tuple[int, str]:
        """(pid, Ray node id) of this worker."""
        return self.pid, self.node_id

    def run_on_node(
        self,
        jobs: Sequence[Any],
        sources: dict[str, Any],
        method: str = "run",
        token: str = "",
    ) -> tuple[str, Any]:
        """`run` (or another chunk method, e.g. `collect_trajectories`), with the node that
        ran it (a restarted actor may be on another node).

        `token` names the chunk in `env_call`'s answers; with `worker_memory_mb` a
        `ChunkResult`'s stats carry this process's resident memory (`rss_mb`) after it.
        Two calls may run at once (`max_concurrency`): `run` chunks share the rows, another
        method waits for the rows to be free (see `Worker.run`).
        """
        result = getattr(self, method)(jobs, sources, token)
        stats = getattr(result, "stats", None)
        if self.limits.worker_memory_mb is not None and isinstance(stats, dict):
            stats["rss_mb"] = rss_mb()
        return self.node_id, result

    def env_call(self) -> tuple[str, int, float] | None:
        """(chunk token, job position in the chunk, seconds so far) of the env call running
        now, or None. Served by the actor's `control` thread while a chunk runs."""
        running = self._clock.running() if self._clock is not None else None
        if running is None:
            return None
        slot, seconds = running
        rollouts = self.rollouts
        if self._token:  # a trajectory chunk holds the slots: no single job to name
            return self._token, 0, seconds
        return rollouts.slot_token[slot], int(rollouts.slot_job[slot]), seconds


def _start_failure(error: BaseException, address: str | None = None) -> str:
    """What a worker's failed start says, in one line, and the usual cause."""
    lines = [line.strip() for line in str(error).splitlines()]
    raised = [line for line in lines if re.match(r"^[\w.]*(Error|Exception): ", line)]
    said = raised[-1] if raised else lines[0] if lines else type(error).__name__
    start = (
        f"Ray's workers could not build the pool's env or policy, which this process could: {said}."
    )
    if address:  # a cluster's workers take the environment of `ray start` on their node
        return (
            f"{start} On a cluster, Ray's workers import your modules with the environment "
            "of `ray start` on each node, not this process's: start Ray there with the "
            "modules' directory on PYTHONPATH, or install the package on every node"
        )
    return (
        f"{start} Code imported from a directory on this process's sys.path but not on "
        "PYTHONPATH (which Ray's worker processes inherit) is the usual cause: set PYTHONPATH, "
        "install the package, or use backend='local' (pool=local)"
    )


def _quiet_default_token_notice() -> None:
    """Ray turns on token authentication for a cluster it starts and warns that it did, at
    the end of every run's output; the cluster stays protected, without the notice. (Setting
    RAY_AUTH_MODE here instead is too late: Ray has read it at import.)"""
    logger = logging.getLogger("ray._private.authentication.authentication_token_setup")
    if not any(isinstance(f, _DefaultTokenNotice) for f in logger.filters):
        logger.addFilter(_DefaultTokenNotice())


class _DefaultTokenNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Token authentication is enabled")


# Seconds to wait for a cluster's head to accept a connection before calling it unreachable.
CONNECT_TIMEOUT_S = 10.0


def check_reachable(address: str) -> None:
    """ConfigError unless a HOST:PORT address accepts a TCP connection (its GCS port): Ray's
    own connect to a wrong port or host retries for ever, quietly but for its log lines.
    `auto` is left to Ray (it reads the address `ray start` left on this machine)."""
    import socket

    if address == "auto":
        return
    host, _, port = address.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")  # an IPv6 host: [::1]:6379
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as error:
        why = error.strerror or str(error) or type(error).__name__
        raise ConfigError(
            "pool.address",
            f"no Ray cluster answers at {address} ({why}); start one there with `ray start "
            "--head --port=PORT`, or check the host and port (`ray status` on the head "
            "prints them)",
        ) from None


def _start_ray(address: str | None) -> None:
    """Connect to the cluster at `address`, or start a Ray of this process's own."""
    import ray

    # ray.init in the main thread installs its own SIGTERM handler (sys.exit): the caller's
    # is put back after (coevo-run stops a run with its report on SIGTERM).
    main = threading.current_thread() is threading.main_thread()
    sigterm = signal.getsignal(signal.SIGTERM) if main else None
    if not (callable(sigterm) or sigterm is signal.SIG_IGN):
        sigterm = None  # none of the caller's own: Ray's (a clean exit) stays
    try:
        if address:
            check_reachable(address)
            try:
                ray.init(address=address, logging_level=logging.WARNING)
            except ConnectionError as error:
                raise ConfigError("pool.address", _connect_failure(address, error)) from None
        else:
            _quiet_default_token_notice()
            ray.init(
                # A Ray instance of its own: without "local", ray.init joins a cluster that
                # RAY_ADDRESS or a `ray start` on this machine names, and refuses num_cpus
                # there (the run died generations in, at the handover).
                address="local",
                num_cpus=os.cpu_count() or 1,
                include_dashboard=False,
                logging_level=logging.WARNING,
            )
    finally:
        if sigterm is not None:
            signal.signal(signal.SIGTERM, sigterm)


def _connect_failure(address: str, error: ConnectionError) -> str:
    """Why connecting to a cluster that answers failed: most often Ray's token
    authentication (on by default for `ray start` since Ray 2.60), which an explicit
    address never turns on in the driver by itself."""
    text = f"cannot connect to the Ray cluster at {address}: {error}"
    # `auto` with no cluster on this machine is no authentication problem; a HOST:PORT that
    # answered (check_reachable) and refused most often is.
    if address != "auto" and os.environ.get("RAY_AUTH_MODE") is None:
        text += (
            "; a cluster started by `ray start` uses token authentication: run with "
            "RAY_AUTH_MODE=token (the token from ~/.ray/auth_token or RAY_AUTH_TOKEN, as on "
            "the head)"
        )
    return text


class RayWorkers:
    """Workers as Ray actors, on an embedded Ray or an existing cluster."""

    def __init__(
        self,
        space: TaskSpace,
        policy: Policy,
        num_workers: int,
        envs_per_worker: int,
        address: str | None = None,
        limits: WorkerLimits | None = None,
    ):
        import ray

        self.space, self.policy = space, policy
        self.num_workers, self.envs_per_worker = num_workers, envs_per_worker
        self.restarts = 0  # workers replaced by the pool (not Ray's own restarts)
        self.limits = limits or WorkerLimits()
        self._calls = 0
        self.owns_ray = False
        # Replacements by worker index, with the ref of their first call; a worker gets
        # chunks once that call has answered.
        self.starting: dict[int, Any] = {}
        self._failed_starts: dict[int, int] = {}  # replacements that died before answering
        if not ray.is_initialized():
            _start_ray(address)
            self.owns_ray = True
        total_cpus = ray.cluster_resources().get("CPU", 1.0)
        cpus_each = min(1.0, total_cpus / num_workers)
        # SPREAD: on a cluster, workers go to as many nodes as have room.
        # No per-actor runtime_env: an actor with one cannot use the worker processes Ray
        # prestarts and waits for new ones (+1.3 to 1.7 s at start here). Ray itself gives
        # each actor OMP_NUM_THREADS=1 (numpy's BLAS reads it) unless the user set it.
        # The `control` group: a second thread answers `env_call` while a chunk runs.
        # Two chunk calls at once (the one running, the one queued behind it): the queued
        # chunk's episodes fill the rows the running one's last episodes leave free.
        # Ray types remote(**options) with task options only; the actor options
        # (max_concurrency, concurrency_groups) are taken at run time.
        self._actor = ray.remote(  # pyright: ignore[reportCallIssue]
            num_cpus=cpus_each,
            max_restarts=-1,
            max_task_retries=CHUNK_RETRIES,
            max_concurrency=IN_FLIGHT_PER_WORKER,
            concurrency_groups={"control": 1},
        )(RayWorker).options(scheduling_strategy="SPREAD")
        self.workers = [self._new_actor() for _ in range(num_workers)]
        try:
            # No retry here: an actor whose constructor fails (the user's env not importable
            # in Ray's workers) would be restarted and asked again for ever.
            where = ray.get([w.where.options(max_task_retries=0).remote() for w in self.workers])
        except Exception as error:  # noqa: BLE001 - the actor's own error, whatever it is
            self.close()
            raise WorkerStartError(_start_failure(error, address)) from None
        self.pids = [pid for pid, _ in where]
        self.nodes = [node for _, node in where]

    def _new_actor(self) -> Any:
        return self._actor.remote(self.space, self.policy, self.envs_per_worker, self.limits)

    def put(self, block: np.ndarray) -> Any:
        """Put `block` in Ray's object store and return its reference."""
        import ray

        return ray.put(block)

    def put_levels(self, block: tuple[Any, ...]) -> tuple[Any, int]:
        """Put a block of levels in the object store, pickled here as Ray pickles (modules
        registered by value with Ray stay so) and its size known: its reference and size."""
        import ray
        import ray.cloudpickle.cloudpickle as cloudpickle

        data = cloudpickle.dumps(block)
        return ray.put(data), len(data)

    def info(self) -> list[dict[str, Any]]:
        """Each worker's description (only the pid, None, for a worker still starting)."""
        import ray

        ready = [w for w in range(self.num_workers) if w not in self.starting]
        answers = ray.get([self.workers[w].info.remote() for w in ready])
        infos = dict(zip(ready, answers, strict=True))
        return [infos.get(w, {"pid": None}) for w in range(self.num_workers)]

    def close(self) -> None:
        """Kill the workers, and shut Ray down if the pool started it."""
        import ray

        for worker in self.workers:
            ray.kill(worker)
        self.starting.clear()
        if self.owns_ray:
            ray.shutdown()
        self.workers = []

    def run(
        self,
        chunks: Sequence[list[Any]],
        sources_for: Sequence[dict[str, Any]],
        method: str,
        on_done: Callable[[Any, int], None],
        prefer: Sequence[int | None] | None = None,
    ) -> list[tuple[int, str, Any]]:
        """Each chunk on some worker, `IN_FLIGHT_PER_WORKER` per worker, retried after worker
        loss; (worker, node, result) per chunk, in chunk order. A chunk with a preferred
        worker waits for it, unless that worker is being replaced (then any worker takes it)."""
        return _ChunkCall(self, chunks, sources_for, method, on_done, prefer).run()

    def _workers_on_dead_nodes(self) -> list[int]:
        import ray

        alive = {node["NodeID"] for node in ray.nodes() if node.get("Alive")}
        return [
            worker
            for worker in range(self.num_workers)
            if worker not in self.starting and self.nodes[worker] not in alive
        ]

    def _replace_worker(self, worker: int, why: str) -> None:
        """Kill a worker for good and start a new actor in its place, wherever the cluster
        has room (maybe not at once: it gets chunks once it answers)."""
        import ray

        logger.warning(
            "pool: worker %d replaced (%s); its chunks go to the other workers", worker, why
        )
        # Ray would restart it itself, but only where one fits (never, on a full cluster
        # that lost a node); meanwhile the other workers take its work.
        ray.kill(self.workers[worker], no_restart=True)
        self.workers[worker] = self._new_actor()
        self.starting[worker] = self.workers[worker].where.remote()
        self.restarts += 1

    def _replacement_ready(self, worker: int) -> None:
        import ray
        from ray.exceptions import RayActorError

        ref = self.starting.pop(worker)
        try:
            self.pids[worker], self.nodes[worker] = ray.get(ref)
        except RayActorError as error:  # it died before it answered
            self._failed_starts[worker] = self._failed_starts.get(worker, 0) + 1
            if self._failed_starts[worker] > CHUNK_RETRIES:
                raise RuntimeError(
                    f"worker {worker}'s replacements died {self._failed_starts[worker]} times "
                    f"before they started: {error}"
                ) from error
            self.workers[worker] = self._new_actor()
            self.starting[worker] = self.workers[worker].where.remote()
        else:
            self._failed_starts.pop(worker, None)


class _ChunkCall:
    """One `RayWorkers.run` call: its chunks sent to the workers, answered, and sent again
    after a worker loss or an env call past `pool.episode_timeout_s`."""

    def __init__(
        self,
        pool: RayWorkers,
        chunks: Sequence[list[Any]],
        sources_for: Sequence[dict[str, Any]],
        method: str,
        on_done: Callable[[Any, int], None],
        prefer: Sequence[int | None] | None,
    ):
        self.pool = pool
        self.chunks, self.sources_for, self.method = chunks, sources_for, method
        self.on_done, self.prefer = on_done, prefer
        self.results: list[tuple[int, str, Any] | None] = [None] * len(chunks)
        self.todo = deque(range(len(chunks)))
        self.attempts = [0] * len(chunks)
        self.pending: dict[Any, tuple[int, int]] = {}  # chunk ref -> (chunk, worker)
        self.in_flight = [0] * pool.num_workers
        self.checked = time.monotonic()
        limits = pool.limits
        self.watch = CallWatch(limits.episode_timeout_s) if limits.episode_timeout_s else None
        pool._calls += 1
        self.call = f"{id(pool):x}.{pool._calls}"
        # Jobs that timed out, by chunk: position -> message; a chunk sent again leaves
        # them out (`kept`: the positions it was last sent with).
        self.skipped: dict[int, dict[int, str]] = {}
        self.kept: dict[int, list[int]] = {}

    def run(self) -> list[tuple[int, str, Any]]:
        """Send, wait, answer, until every chunk has its result."""
        self._feed()
        while self.todo or self.pending:
            starting = {ref: worker for worker, ref in self.pool.starting.items()}
            done = self._wait(starting)
            if not done or time.monotonic() - self.checked >= HEALTH_CHECK_S:
                self._check_health()
            if done and self.watch is not None and done[0] in self.watch.asked:
                self._timed_out(self.watch.limit_s, *self.watch.answer(done[0]))
            elif done and done[0] in starting:
                self.pool._replacement_ready(starting[done[0]])
            elif done and done[0] in self.pending:
                self._finished(done[0])
            self._feed()
        return self.results  # type: ignore[return-value]

    def _takes(self, worker: int, index: int) -> bool:
        """Whether this worker may run chunk `index` (its preferred one, or any)."""
        wanted = self.prefer[index] if self.prefer is not None else None
        if wanted is None or not 0 <= wanted < self.pool.num_workers:
            return True
        return wanted == worker or wanted in self.pool.starting

    def _take(self, worker: int) -> int | None:
        """The first queued chunk this worker may run (sticky chunks wait for theirs)."""
        for position, index in enumerate(self.todo):
            if self._takes(worker, index):
                del self.todo[position]
                return index
        return None

    def _feed(self) -> None:
        """Queued chunks to the ready workers."""
        # Round robin, each ready worker up to IN_FLIGHT_PER_WORKER chunks (one running,
        # one queued); the worker that finished first gets the next chunk.
        for _ in range(IN_FLIGHT_PER_WORKER):
            for worker in range(self.pool.num_workers):
                if self.todo and worker not in self.pool.starting:
                    if self.in_flight[worker] < IN_FLIGHT_PER_WORKER:
                        index = self._take(worker)
                        if index is None:
                            continue
                        self._send(worker, index)

    def _send(self, worker: int, index: int) -> None:
        """Chunk `index` to `worker`, less its jobs that timed out before."""
        left_out = self.skipped.get(index, {})
        self.kept[index] = [i for i in range(len(self.chunks[index])) if i not in left_out]
        if not self.kept[index]:  # every job of the chunk timed out
            empty = ChunkResult(np.zeros(0), np.zeros(0, np.int64), {})
            merged = merge_skipped(empty, len(self.chunks[index]), [], left_out)
            self.results[index] = (worker, self.pool.nodes[worker], merged)
            self.on_done(merged, len(self.chunks[index]))
            return
        ref = self.pool.workers[worker].run_on_node.remote(
            [self.chunks[index][i] for i in self.kept[index]],
            self.sources_for[index],
            self.method,
            f"{self.call}:{index}",
        )
        self.pending[ref] = (index, worker)
        self.in_flight[worker] += 1

    def _wait(self, starting: dict[Any, int]) -> list[Any]:
        """The first chunk, replacement or env-call answer to come back (none: timed out)."""
        import ray

        questions: list[Any] = []
        wait_s = HEALTH_CHECK_S
        if self.watch is not None:
            busy = {w for _, w in self.pending.values() if w not in self.pool.starting}
            self.watch.ask(busy, self.pool.workers)
            questions, wait_s = list(self.watch.asked), self.watch.interval
        done, _ = ray.wait([*self.pending, *starting, *questions], num_returns=1, timeout=wait_s)
        return done

    def _check_health(self) -> None:
        """Replace the workers on dead nodes, and rerun those that stopped answering."""
        self.checked = time.monotonic()
        for worker in self.pool._workers_on_dead_nodes():
            self._replace(worker, f"its node {self.pool.nodes[worker][:8]} is gone")
        if self.watch is not None:
            for worker in self.watch.silent():
                self._rerun(
                    worker,
                    f"it did not answer for {self.watch.silence_s:g} s (an env call that "
                    "never releases Python's GIL?)",
                )

    def _replace(self, worker: int, why: str) -> None:
        """A new worker in this one's place; its chunks back to the queue."""
        # The worker's chunks go back to the queue for the others (their refs dropped).
        self.pool._replace_worker(worker, why)
        if self.watch is not None:
            self.watch.forget(worker)
        for ref, (index, owner) in list(self.pending.items()):
            if owner == worker:
                del self.pending[ref]
                self.todo.appendleft(index)
        self.in_flight[worker] = 0

    def _rerun(self, worker: int, why: str) -> None:
        """Replace a stuck worker, its chunks counted as tried once more."""
        # The stuck job is unknown (or has no episode to fail): the worker's chunks run
        # again elsewhere, finitely often, then the call fails saying why.
        for index, owner in self.pending.values():
            if owner == worker:
                self.attempts[index] += 1
                if self.attempts[index] > CHUNK_RETRIES:
                    raise RuntimeError(
                        f"a chunk of {len(self.chunks[index])} jobs stopped its worker "
                        f"{self.attempts[index]} times with pool.episode_timeout_s set: {why}"
                    )
        self._replace(worker, why)

    def _timed_out(
        self, limit_s: float, worker: int, answer: tuple[str, int, float] | None
    ) -> None:
        """A worker's env call ran past the limit: fail its episode, replace it."""
        if answer is None or answer[2] < limit_s:
            return
        token, position, _ = answer
        owner_call, _, chunk = token.rpartition(":")
        if owner_call != self.call or position < 0:
            return  # a question about an earlier call, or a slot between jobs
        index = int(chunk)
        if not any(i == index and w == worker for i, w in self.pending.values()):
            return  # that chunk is no longer this worker's
        if self.method != "run":  # trajectory streams: no single episode to fail
            why = f"an env call ran past pool.episode_timeout_s in a {self.method} chunk"
            self._rerun(worker, why)
            return
        original = self.kept[index][position]
        message = timeout_message(limit_s, self.chunks[index][original])
        self.skipped.setdefault(index, {})[original] = message
        self._replace(worker, f"an env call ran past pool.episode_timeout_s: {message}")

    def _finished(self, ref: Any) -> None:
        """A chunk's answer: its result kept, or, its worker lost, the chunk queued again."""
        import ray
        from ray.exceptions import RayActorError

        index, worker = self.pending.pop(ref)
        self.in_flight[worker] -= 1
        try:
            node, result = ray.get(ref)
        except RayActorError as error:
            # Ray's own restarts and task retries did not bring the worker back
            # (it keeps dying, or its node is unreachable): a new worker, and the
            # chunk again, on whichever worker is free; finitely often.
            self.attempts[index] += 1
            if self.attempts[index] > CHUNK_RETRIES:
                raise RuntimeError(
                    f"a chunk of {len(self.chunks[index])} episodes failed "
                    f"{self.attempts[index]} times, its worker lost each time: {error}"
                ) from error
            self.todo.appendleft(index)
            self._replace(worker, f"it failed a chunk ({type(error).__name__})")
        else:
            self._keep(index, worker, node, result)

    def _keep(self, index: int, worker: int, node: str, result: Any) -> None:
        """A chunk's result stored and reported; its worker replaced if over its memory."""
        if index in self.skipped:
            result = merge_skipped(
                result, len(self.chunks[index]), self.kept[index], self.skipped[index]
            )
        self.results[index] = (worker, node, result)
        self.pool.nodes[worker] = node
        self.on_done(result, len(self.chunks[index]))
        rss = result.stats.get("rss_mb", 0.0) if hasattr(result, "stats") else 0.0
        memory_mb = self.pool.limits.worker_memory_mb
        if memory_mb is not None and rss > memory_mb:
            # Between chunks: its queued chunk goes to a worker that is free.
            self._replace(
                worker, f"its memory {rss:.0f} MB passed pool.worker_memory_mb ({memory_mb:g})"
            )
