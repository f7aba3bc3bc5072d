"""EvaluationPool: episodes to a set of workers, in-process or as Ray actors."""

from __future__ import annotations

import logging
import math
import os
import time
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from coevo.errors import ConfigError
from coevo.policies.base import Policy
from coevo.pool.jobs import EpisodeJob, Stored, weights_key
from coevo.pool.stats import CHUNK_STAT_KEYS, busy_key, generation_figures
from coevo.pool.worker import ChunkResult, Worker
from coevo.tasks.task import Task, TaskSpace

if TYPE_CHECKING:  # pandas only for cross_evaluate_frame: workers need not import it
    import pandas as pd

logger = logging.getLogger(__name__)


class Backend(StrEnum):
    LOCAL = "local"
    RAY = "ray"


@dataclass
class EvalResult:
    """Per-job returns and lengths in the caller's order; NaN return marks a failed episode."""

    returns: np.ndarray
    lengths: np.ndarray
    errors: dict[int, str]


def error_line(text: str) -> str:
    """The line of a worker's error text that says what happened (a traceback's last)."""
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else "failed"


class EvaluationError(RuntimeError):
    """Episodes failed where the caller asked for scores only (`evaluate`): a failure is
    never handed back as a silent NaN. `returns` (NaN where failed) and `errors` (by pair)
    are attached for callers that want them; `evaluate_detailed` returns them instead."""

    def __init__(self, message: str, returns: np.ndarray, errors: dict[int, str]):
        super().__init__(message)
        self.returns = returns
        self.errors = errors


# Chunks in flight per worker: one running, one queued, so no worker idles between calls.
_IN_FLIGHT_PER_WORKER = 2
# Guided chunking: each chunk takes 1 / (_GUIDED_SHARE x workers) of the unassigned jobs.
_GUIDED_SHARE = 2
# Re-runs of one chunk whose worker died; finite so a chunk that kills its worker every time
# fails the call instead of restarting workers forever.
_CHUNK_RETRIES = 3
# How often, while chunks are out, the driver asks Ray which nodes are alive: a worker on a
# dead node is replaced and its chunks go to the other workers (Ray alone would wait for a
# restart that finds no room when the rest of the cluster is full).
_HEALTH_CHECK_S = 1.0
# Newly registered vectors are put in the object store together, in blocks of at most this
# many bytes: one put costs ~0.5 ms here, so a put per vector would idle the workers. A block
# fills a preallocated staging array and is put as soon as it is full, so the driver holds at
# most one block of copies whatever the number of versions registered.
_BLOCK_BYTES = 4 << 20


class RayWorker(Worker):
    """The Ray actor: a `Worker` that also says which node it runs on."""

    def __init__(self, space: TaskSpace, policy: Policy, num_envs: int = 8):
        super().__init__(space, policy, num_envs)
        import ray

        self.node_id = ray.get_runtime_context().get_node_id()

    def info(self) -> dict[str, Any]:
        """`Worker.info`, plus the OMP_NUM_THREADS Ray gave this process (BLAS threads)."""
        return {**super().info(), "omp_num_threads": os.environ.get("OMP_NUM_THREADS")}

    def where(self) -> tuple[int, str]:
        """(pid, Ray node id) of this worker."""
        return self.pid, self.node_id

    def run_on_node(
        self, jobs: Sequence[Any], sources: dict[str, Any], method: str = "run"
    ) -> tuple[str, Any]:
        """`run` (or another chunk method, e.g. `collect_trajectories`), with the node that
        ran it (a restarted actor may be on another node)."""
        return self.node_id, getattr(self, method)(jobs, sources)


class ProgressListener(Protocol):
    """Told how many episodes a call plans and, chunk by chunk, how many are done."""

    def planned(self, episodes: int) -> None: ...

    def done(self, episodes: int, env_steps: float) -> None: ...


class EvaluationPool:
    """A shared pool of workers that evaluate (parameters, task, seed) episodes.

    Weights are registered once per version (`register`) and referred to by content key;
    on the Ray backend each version is put in the object store once.
    """

    def __init__(
        self,
        space: TaskSpace,
        policy: Policy,
        backend: str | Backend = Backend.RAY,
        num_workers: int = 2,
        envs_per_worker: int = 64,
        address: str | None = None,
        store_size: int = 4096,
    ):
        try:
            self.backend = Backend(backend)
        except ValueError:
            allowed = ", ".join(b.value for b in Backend)
            raise ConfigError(
                "pool.backend", f"unknown backend '{backend}'; allowed: {allowed}"
            ) from None
        if not isinstance(num_workers, int) or num_workers <= 0:
            raise ConfigError(
                "pool.num_workers", f"must be a positive integer, got {num_workers!r}"
            )
        if not isinstance(envs_per_worker, int) or envs_per_worker <= 0:
            raise ConfigError(
                "pool.envs_per_worker", f"must be a positive integer, got {envs_per_worker!r}"
            )
        self.space = space
        self.policy = policy
        self.num_workers = num_workers
        self.envs_per_worker = envs_per_worker
        # key -> (block id, block or its ObjectRef, row), least recently used first.
        self._store: OrderedDict[str, tuple[str, Any, int]] = OrderedDict()
        # Versions registered since the last put: their keys, in the rows of `_staging`.
        self._pending: list[str] = []
        self._pending_keys: set[str] = set()
        self._staging = np.zeros((0, policy.num_params), dtype=np.float32)
        self._store_size = store_size
        self._blocks_made = 0
        self._owns_ray = False
        self.stats = {
            key: 0.0
            for key in (
                *CHUNK_STAT_KEYS,
                "failed_episodes",
                "bytes_shipped",
                "wall_s",
                "worker_restarts",
            )
        }
        self.last_error = ""  # the first error of the most recent call with a failed episode
        self.busy_by_worker = np.zeros(num_workers)
        # Per Ray node id ("local" for the local backend): episodes and busy seconds.
        self._node_stats: dict[str, dict[str, float]] = {}
        # Optional listener for progress displays: planned(n) per call, done(n, steps) per chunk.
        self.progress: ProgressListener | None = None
        self._pids: list[int] = []
        self._nodes: list[str] = ["local"] * num_workers
        # Ray backend: replacements for workers lost with their node, by worker index, with
        # the ref of their first call; a worker gets chunks once that call has answered.
        self._starting: dict[int, Any] = {}
        self._failed_starts: dict[int, int] = {}  # replacements that died before answering
        if self.backend is Backend.LOCAL:
            self._workers: list[Any] = [
                Worker(space, policy, envs_per_worker) for _ in range(num_workers)
            ]
            self._pids = [worker.ping() for worker in self._workers]
        else:
            self._workers = self._start_ray_workers(address)

    # -- lifecycle -----------------------------------------------------------------------
    def _start_ray_workers(self, address: str | None) -> list[Any]:
        import ray

        if not ray.is_initialized():
            if address:
                ray.init(address=address, logging_level="WARNING")
            else:
                ray.init(
                    num_cpus=os.cpu_count() or 1,
                    include_dashboard=False,
                    logging_level="WARNING",
                )
            self._owns_ray = True
        total_cpus = ray.cluster_resources().get("CPU", 1.0)
        cpus_each = min(1.0, total_cpus / self.num_workers)
        # A killed worker process is restarted (its constructor re-run) and the chunks it
        # held are re-run; results are a function of the jobs, so they come out the same.
        # SPREAD: on a cluster, workers go to as many nodes as have room.
        # No per-actor runtime_env: an actor with one cannot use the worker processes Ray
        # prestarts and waits for new ones (+1.3 to 1.7 s at start here). Ray itself gives
        # each actor OMP_NUM_THREADS=1 (numpy's BLAS reads it) unless the user set it.
        self._actor = ray.remote(
            num_cpus=cpus_each, max_restarts=-1, max_task_retries=_CHUNK_RETRIES
        )(RayWorker).options(scheduling_strategy="SPREAD")
        workers = [self._new_actor() for _ in range(self.num_workers)]
        where = ray.get([w.where.remote() for w in workers])
        self._pids = [pid for pid, _ in where]
        self._nodes = [node for _, node in where]
        return workers

    def _new_actor(self) -> Any:
        return self._actor.remote(self.space, self.policy, self.envs_per_worker)

    @property
    def workers(self) -> list[Any]:
        """The `Worker`s (local backend) or their Ray actor handles, by worker index."""
        return list(self._workers)

    def worker_info(self) -> list[dict[str, Any]]:
        """Each worker's pid, slots implementation and number of env slots (a replacement
        still waiting for room on the cluster: `{"pid": None}`)."""
        if self.backend is Backend.LOCAL:
            return [worker.info() for worker in self._workers]
        import ray

        ready = [w for w in range(self.num_workers) if w not in self._starting]
        answers = ray.get([self._workers[w].info.remote() for w in ready])
        infos = dict(zip(ready, answers, strict=True))
        return [infos.get(w, {"pid": None}) for w in range(self.num_workers)]

    def worker_nodes(self) -> list[str]:
        """The Ray node id each worker last ran on, by worker index ("local" for the local
        backend)."""
        return list(self._nodes)

    def node_stats(self) -> dict[str, dict[str, float]]:
        """Episodes and busy seconds per Ray node id since the pool started."""
        return {node: dict(stats) for node, stats in self._node_stats.items()}

    def close(self) -> None:
        if self.backend is Backend.RAY:
            import ray

            for worker in self._workers:
                ray.kill(worker)
            self._starting.clear()
            if self._owns_ray:
                ray.shutdown()
        self._workers = []
        self._store.clear()
        self._pending.clear()
        self._pending_keys.clear()

    def __enter__(self) -> EvaluationPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- weights ---------------------------------------------------------------------------
    def register(self, vector: np.ndarray) -> str:
        """Register a parameter vector (once per version) and return its key.

        The vector is copied into a staging block, put in the object store with the other
        versions of its block at the next `run` (or as soon as the block is full): one put
        per block of versions, never one per vector or per job.
        """
        vector = np.ascontiguousarray(vector, dtype=np.float32)
        if vector.shape != (self.policy.num_params,):
            raise ValueError(
                f"parameter vector has shape {vector.shape}, policy needs "
                f"({self.policy.num_params},)"
            )
        key = weights_key(vector)
        if key in self._store:
            self._store.move_to_end(key)
        elif key not in self._pending_keys:
            if not self._pending:
                rows = max(1, _BLOCK_BYTES // vector.nbytes)
                self._staging = np.empty((rows, vector.size), dtype=np.float32)
            self._staging[len(self._pending)] = vector
            self._pending.append(key)
            self._pending_keys.add(key)
            if len(self._pending) == len(self._staging):
                self._ship_pending()
        return key

    def _ship_pending(self) -> None:
        """Put the staged versions in the object store as one block."""
        if not self._pending:
            return
        block = self._staging[: len(self._pending)]
        block_id = f"{id(self):x}.{self._blocks_made}"
        self._blocks_made += 1
        if self.backend is Backend.RAY:
            import ray

            handle: Any = ray.put(block)  # copied into the store; the staging array is free
        else:
            handle = block.copy()
        self.stats["bytes_shipped"] += block.nbytes
        for row, key in enumerate(self._pending):
            self._store[key] = (block_id, handle, row)
        self._pending = []
        self._pending_keys = set()
        self._staging = np.zeros((0, self.policy.num_params), dtype=np.float32)

    def _evict(self) -> None:
        # After a call, never during one: a call may use more versions than the bound.
        while len(self._store) > self._store_size:
            self._store.popitem(last=False)

    # -- evaluation ------------------------------------------------------------------------
    def run(self, jobs: Sequence[EpisodeJob]) -> EvalResult:
        """Run episode jobs on the workers; results come back in the jobs' order."""
        if len(jobs) == 0:
            return EvalResult(np.zeros(0), np.zeros(0, dtype=np.int64), {})
        results = self.run_chunks(jobs, "run")
        returns = np.concatenate([result.returns for result in results])
        lengths = np.concatenate([result.lengths for result in results])
        errors: dict[int, str] = {}
        offset = 0
        for result in results:
            errors.update({offset + i: msg for i, msg in result.errors.items()})
            offset += len(result.returns)
        self.stats["failed_episodes"] += len(errors)
        if errors:
            self.last_error = error_line(errors[min(errors)])
        return EvalResult(returns, lengths, errors)

    def run_chunks(self, jobs: Sequence[Any], method: str = "run") -> list[Any]:
        """Cut `jobs` into chunks and run `Worker.<method>(chunk, sources)` for each on the
        workers (pipelined, retried after worker loss); the chunks' results in job order.

        Episode jobs use `run`; trajectory jobs `collect_trajectories`. Each chunk's
        counters (`result.stats`) are added to the pool's statistics.
        """
        n = len(jobs)
        if n == 0:
            return []
        started = time.perf_counter()
        self._ship_pending()
        sizes = self.chunk_sizes(n)
        starts = [0, *np.cumsum(sizes)[:-1].tolist()]
        chunks = [list(jobs[i : i + size]) for i, size in zip(starts, sizes, strict=True)]
        sources_for = [self._sources(c) for c in chunks]
        if self.progress is not None:
            self.progress.planned(n)
        if self.backend is Backend.LOCAL:
            results = []
            for index, jobs_chunk in enumerate(chunks):
                worker = index % self.num_workers
                result = getattr(self._workers[worker], method)(jobs_chunk, sources_for[index])
                self._report(result, len(jobs_chunk))
                results.append((worker, "local", result))
        else:
            results = self._run_ray(chunks, sources_for, method)
        # `results` is in chunk order.
        for chunk, (worker, node, result) in zip(chunks, results, strict=True):
            for key in CHUNK_STAT_KEYS:
                self.stats[key] += result.stats.get(key, 0.0)
            busy = result.stats.get("busy_s", 0.0)
            self.busy_by_worker[worker] += busy
            on_node = self._node_stats.setdefault(node, {"episodes": 0.0, "busy_s": 0.0})
            on_node["episodes"] += len(chunk)
            on_node["busy_s"] += busy
            self._note_pid(worker, int(result.stats.get("pid", 0)))
        self._evict()
        self.stats["wall_s"] += time.perf_counter() - started
        return [result for _, _, result in results]

    def dispatch(self, jobs: Sequence[Any]) -> list[Any]:
        """Jobs of any registered kind (see `coevo.pool.dispatch`) in one call; one result
        per job, in order. `EpisodeJob`s give `EpisodeResult`s."""
        from coevo.pool.dispatch import dispatch

        return dispatch(self, jobs)

    def chunk_sizes(self, n: int) -> list[int]:
        """How a call of `n` jobs is cut into chunks (one Ray call each), in job order.

        A call that fits in one batch per worker is split evenly, one chunk per worker.
        A larger one is cut in decreasing chunks (guided scheduling): each takes
        1 / (2 x workers) of the jobs still unassigned, rounded up to whole batches, and at
        least one batch. The first chunks are large (a Ray call is amortized over many
        episodes), the last ones small (workers finish together even when episodes or
        cores differ in speed), and fixed-length episodes never leave a batch half empty.
        """
        workers, batch = self.num_workers, self.envs_per_worker
        if math.ceil(n / workers) <= batch:
            even, extra = divmod(n, workers)
            return [even + (i < extra) for i in range(workers) if even + (i < extra) > 0]
        sizes: list[int] = []
        remaining = n
        while remaining > 0:
            size = batch * math.ceil(remaining / (_GUIDED_SHARE * workers * batch))
            sizes.append(min(size, remaining))
            remaining -= sizes[-1]
        return sizes

    def _report(self, result: Any, jobs: int) -> None:
        if self.progress is not None:
            self.progress.done(jobs, float(result.stats.get("env_steps", 0.0)))

    def _note_pid(self, worker: int, pid: int) -> None:
        # A chunk answered by another process than the last one means Ray restarted it.
        if pid and worker < len(self._pids) and pid != self._pids[worker]:
            self._pids[worker] = pid
            self.stats["worker_restarts"] += 1

    def _sources(self, jobs: Sequence[EpisodeJob]) -> dict[str, tuple[str, Any, int]]:
        keys = {job.params.key for job in jobs}
        missing = keys - self._store.keys()
        if missing:
            raise KeyError(f"weights not registered with this pool: {sorted(missing)[:3]}")
        return {key: self._store[key] for key in keys}

    def _run_ray(self, chunks, sources_for, method: str) -> list[tuple[int, str, Any]]:
        import ray
        from ray.exceptions import RayActorError

        results: list[tuple[int, str, ChunkResult] | None] = [None] * len(chunks)
        todo = deque(range(len(chunks)))
        attempts = [0] * len(chunks)
        pending: dict[Any, tuple[int, int]] = {}  # chunk ref -> (chunk, worker)
        in_flight = [0] * self.num_workers
        checked = time.monotonic()

        def feed() -> None:
            # Round robin, each ready worker up to _IN_FLIGHT_PER_WORKER chunks (one running,
            # one queued); the worker that finished first gets the next chunk.
            for _ in range(_IN_FLIGHT_PER_WORKER):
                for worker in range(self.num_workers):
                    if todo and worker not in self._starting:
                        if in_flight[worker] < _IN_FLIGHT_PER_WORKER:
                            index = todo.popleft()
                            ref = self._workers[worker].run_on_node.remote(
                                chunks[index], sources_for[index], method
                            )
                            pending[ref] = (index, worker)
                            in_flight[worker] += 1

        def replace(worker: int, why: str) -> None:
            # The worker's chunks go back to the queue for the others (their refs dropped).
            self._replace_worker(worker, why)
            for ref, (index, owner) in list(pending.items()):
                if owner == worker:
                    del pending[ref]
                    todo.appendleft(index)
            in_flight[worker] = 0

        feed()
        while todo or pending:
            starting = {ref: worker for worker, ref in self._starting.items()}
            done, _ = ray.wait([*pending, *starting], num_returns=1, timeout=_HEALTH_CHECK_S)
            if not done or time.monotonic() - checked >= _HEALTH_CHECK_S:
                checked = time.monotonic()
                for worker in self._workers_on_dead_nodes():
                    replace(worker, f"its node {self._nodes[worker][:8]} is gone")
            if done and done[0] in starting:
                self._replacement_ready(starting[done[0]])
            elif done and done[0] in pending:
                index, worker = pending.pop(done[0])
                in_flight[worker] -= 1
                try:
                    node, result = ray.get(done[0])
                except RayActorError as error:
                    # Ray's own restarts and task retries did not bring the worker back
                    # (it keeps dying, or its node is unreachable): a new worker, and the
                    # chunk again, on whichever worker is free; finitely often.
                    attempts[index] += 1
                    if attempts[index] > _CHUNK_RETRIES:
                        raise RuntimeError(
                            f"a chunk of {len(chunks[index])} episodes failed "
                            f"{attempts[index]} times, its worker lost each time: {error}"
                        ) from error
                    todo.appendleft(index)
                    replace(worker, f"it failed a chunk ({type(error).__name__})")
                else:
                    results[index] = (worker, node, result)
                    self._nodes[worker] = node
                    self._report(result, len(chunks[index]))
            feed()
        return results  # type: ignore[return-value]

    def _workers_on_dead_nodes(self) -> list[int]:
        import ray

        alive = {node["NodeID"] for node in ray.nodes() if node.get("Alive")}
        return [
            worker
            for worker in range(self.num_workers)
            if worker not in self._starting and self._nodes[worker] not in alive
        ]

    def _replace_worker(self, worker: int, why: str) -> None:
        """Kill a worker for good and start a new actor in its place, wherever the cluster
        has room (maybe not at once: it gets chunks once it answers)."""
        import ray

        logger.warning(
            "pool: worker %d replaced (%s); its chunks go to the other workers",
            worker,
            why,
        )
        # Ray would restart it itself, but only where one fits (never, on a full cluster
        # that lost a node); meanwhile the other workers take its work.
        ray.kill(self._workers[worker], no_restart=True)
        self._workers[worker] = self._new_actor()
        self._starting[worker] = self._workers[worker].where.remote()
        self.stats["worker_restarts"] += 1

    def _replacement_ready(self, worker: int) -> None:
        import ray

        ref = self._starting.pop(worker)
        try:
            self._pids[worker], self._nodes[worker] = ray.get(ref)
        except ray.exceptions.RayActorError as error:  # it died before it answered
            self._failed_starts[worker] = self._failed_starts.get(worker, 0) + 1
            if self._failed_starts[worker] > _CHUNK_RETRIES:
                raise RuntimeError(
                    f"worker {worker}'s replacements died {self._failed_starts[worker]} times "
                    f"before they started: {error}"
                ) from error
            self._workers[worker] = self._new_actor()
            self._starting[worker] = self._workers[worker].where.remote()
        else:
            self._failed_starts.pop(worker, None)

    def evaluate(
        self,
        pairs: Sequence[tuple[np.ndarray, Task]],
        episodes: int = 1,
        seed: int = 0,
    ) -> np.ndarray:
        """Returns [len(pairs), episodes]: each (parameters, task) on seeds seed..seed+K-1.

        Raises `EvaluationError` naming the first error if any episode failed; use
        `evaluate_detailed` to get NaN returns and the errors instead."""
        returns, errors = self.evaluate_detailed(pairs, episodes, seed)
        if errors:
            first = min(errors)
            raise EvaluationError(
                f"{len(errors)} of {len(pairs)} evaluations failed; first (pair {first}): "
                f"{errors[first]}",
                returns,
                errors,
            )
        return returns

    def evaluate_detailed(
        self,
        pairs: Sequence[tuple[np.ndarray, Task]],
        episodes: int = 1,
        seed: int = 0,
    ) -> tuple[np.ndarray, dict[int, str]]:
        """`evaluate`, plus for each pair with a failed episode its first error's last line."""
        jobs = []
        for theta, task in pairs:
            key = self.register(theta)
            jobs.extend(EpisodeJob(Stored(key), task, seed + k) for k in range(episodes))
        result = self.run(jobs)
        errors: dict[int, str] = {}
        for job_index in sorted(result.errors):
            errors.setdefault(job_index // episodes, error_line(result.errors[job_index]))
        return result.returns.reshape(len(pairs), episodes), errors

    def cross_evaluate(
        self,
        policies: Sequence[np.ndarray],
        tasks: Sequence[Task],
        episodes: int = 1,
        seed: int = 0,
    ) -> np.ndarray:
        """Mean return of every policy on every task: an array [len(policies), len(tasks)];
        raises `EvaluationError` if an episode failed."""
        pairs = [(theta, task) for theta in policies for task in tasks]
        scores = self.evaluate(pairs, episodes, seed).mean(axis=1)
        return scores.reshape(len(policies), len(tasks))

    def cross_evaluate_frame(
        self,
        policies: dict[str, np.ndarray],
        tasks: dict[str, Task],
        episodes: int = 1,
        seed: int = 0,
    ) -> pd.DataFrame:
        """`cross_evaluate` as a frame indexed by policy name with one column per task name."""
        import pandas as pd

        matrix = self.cross_evaluate(list(policies.values()), list(tasks.values()), episodes, seed)
        return pd.DataFrame(matrix, index=list(policies), columns=list(tasks))

    def stats_snapshot(self) -> dict[str, float]:
        """Cumulative counters since the pool started, plus derived rates.

        Keys: episodes, env_steps, cache_hits, cache_misses (weight-vector cache of the
        workers, per job), bytes_shipped (driver to object store), bytes_loaded (object store
        to workers), busy_s (summed over workers) and busy_s_worker_0..N-1 (each worker's
        time inside `Worker.run`), cpu_s (the workers' CPU time meanwhile), worker_restarts,
        wall_s (time inside `run`), steps_per_s.
        """
        snapshot = dict(self.stats)
        for worker, busy in enumerate(self.busy_by_worker):
            snapshot[busy_key(worker)] = float(busy)
        wall = snapshot["wall_s"]
        snapshot["steps_per_s"] = snapshot["env_steps"] / wall if wall > 0 else 0.0
        return snapshot

    def stats_since(self, before: dict[str, float]) -> dict[str, float]:
        """The pool's figures since the snapshot `before` (summary.csv's pool columns)."""
        return generation_figures(before, self.stats_snapshot())
