"""EvaluationPool: episodes to a set of workers, in-process or as Ray actors.

This module is the pool's face: validation, weights (`store.WeightStore`), levels by
content id (`levels.LevelStore`), chunking
(`scheduling`), the backend that runs chunks (`local_backend.LocalWorkers` or
`ray_backend.RayWorkers`, which also handles worker and node loss; `handover.HandoverWorkers`
while a Ray this pool starts is starting), statistics (`stats`),
jobs of several kinds (`dispatch`) and the evaluation helpers.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from coevo.errors import ConfigError
from coevo.policies.base import Policy
from coevo.pool.jobs import EpisodeJob, ParamSource, Stored
from coevo.pool.levels import LEVEL_SOURCES, LevelStore
from coevo.pool.limits import WorkerLimits
from coevo.pool.results import EvalResult, EvaluationError, error_line
from coevo.pool.scheduling import chunk_sizes
from coevo.pool.stats import CHUNK_STAT_KEYS, busy_key, generation_figures
from coevo.pool.store import WeightStore
from coevo.settings import is_count
from coevo.tasks.task import Task, TaskSpace

if TYPE_CHECKING:  # pandas only for cross_evaluate_frame: workers need not import it
    import pandas as pd

__all__ = ["Backend", "EvalResult", "EvaluationError", "EvaluationPool", "ProgressListener"]

# The worker methods whose jobs name their level by content id on the way (each puts the
# levels back with its `LevelCache`): episodes, and PPO trajectory streams.
LEVEL_METHODS = frozenset({"run", "collect_trajectories"})

CLOSED = "EvaluationPool is closed; create a new one (a pool closes when its `with` block ends)"


class Backend(StrEnum):
    """Where the pool's workers run: in this process, or as Ray actors."""

    LOCAL = "local"
    RAY = "ray"


class ProgressListener(Protocol):
    """Told how many episodes a call plans and, chunk by chunk, how many are done."""

    def planned(self, episodes: int) -> None:
        """Add `episodes` to those the call plans."""
        ...

    def done(self, episodes: int, env_steps: float) -> None:
        """Count `episodes` finished, with their `env_steps`."""
        ...


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
        episode_timeout_s: float | None = None,
        worker_memory_mb: float | None = None,
    ):
        # Before anything touches them: swapped arguments failed with an AttributeError.
        if not isinstance(space, TaskSpace) or not isinstance(policy, Policy):
            raise TypeError(_argument_types_message(space, policy))
        self.backend = _backend_named(backend)
        _check_counts(num_workers, envs_per_worker)
        # Checked before Ray starts; coevo/pool/limits.py says what each limit does.
        self.limits = WorkerLimits(episode_timeout_s, worker_memory_mb)
        self.limits.check_backend(self.backend.value)
        _check_fits(space, policy)
        self.space = space
        self.policy = policy
        self.num_workers = num_workers
        self.envs_per_worker = envs_per_worker
        self._start_counters()
        self._backend: Any = _start_backend(
            self.backend, space, policy, num_workers, envs_per_worker, address, self.limits
        )
        self.store = WeightStore(policy.num_params, self._backend.put, store_size)
        self.levels = LevelStore(self._backend.put_levels)
        self._closed = False

    def _start_counters(self) -> None:
        """The pool's statistics, errors and stream homes, all empty."""
        self.stats = {
            key: 0.0
            for key in (
                *CHUNK_STAT_KEYS,
                "jobs",
                "failed_episodes",
                "bytes_shipped",
                "level_bytes_shipped",
                "wall_s",
                "worker_restarts",
            )
        }
        self.last_error = ""  # the first error of the most recent call with a failed episode
        # The first failed episode's whole error text (a traceback: the env's file and line).
        self.first_error_text = ""
        self._ray_restarts = 0  # restarts seen as a new pid answering (Ray's own)
        self._replaced_pids: set[int] = set()  # processes a restart replaced (see _note_pid)
        self.busy_by_worker = np.zeros(self.num_workers)
        # Per Ray node id ("local" for the local backend): episodes and busy seconds.
        self._node_stats: dict[str, dict[str, float]] = {}
        # Optional listener for progress displays: planned(n) per call, done(n, steps) per chunk.
        self.progress: ProgressListener | None = None
        # The worker holding each unfinished trajectory stream's live env, by the stream's
        # key (coevo/pool/trajectories.py): its next chunk goes there (a hint, not a rule).
        self.stream_homes: dict[Any, int] = {}

    # -- lifecycle -----------------------------------------------------------------------
    @property
    def workers(self) -> list[Any]:
        """The `Worker`s (local backend) or their Ray actor handles, by worker index."""
        return list(self._backend.workers)

    def worker_info(self) -> list[dict[str, Any]]:
        """Each worker's pid, slots implementation and number of env slots (a replacement
        still waiting for room on the cluster: `{"pid": None}`)."""
        self._check_open()
        return self._backend.info()

    def worker_nodes(self) -> list[str]:
        """The Ray node id each worker last ran on, by worker index ("local" for the local
        backend)."""
        return list(self._backend.nodes)

    def node_stats(self) -> dict[str, dict[str, float]]:
        """Episodes and busy seconds per Ray node id since the pool started."""
        return {node: dict(stats) for node, stats in self._node_stats.items()}

    @property
    def serving(self) -> str:
        """Where calls run now: "local", "ray", or "local (ray starting)" while a Ray this
        pool starts is not ready yet (coevo/pool/handover.py)."""
        if self.backend is Backend.LOCAL:
            return "local"
        ready = getattr(self._backend, "ready", True)
        return "ray" if ready else "local (ray starting)"

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Block until the workers of the chosen backend serve (Ray started and its actors
        answering); True when they do. Raises what Ray's start raised."""
        self._check_open()
        wait = getattr(self._backend, "wait_ready", None)
        return True if wait is None else bool(wait(timeout))

    def close(self) -> None:
        """Stop the workers (and a Ray this pool started); a second close does nothing."""
        if self._closed:
            return
        self._closed = True  # even if the backend's close raises: its workers may be gone
        try:
            self._backend.close()
        finally:
            self.store.clear()
            self.levels.clear()

    @property
    def closed(self) -> bool:
        """Whether the pool has been closed."""
        return self._closed

    def __repr__(self) -> str:
        policy = type(self.policy).__name__
        module = getattr(self.policy, "module", None)  # a torch policy: which nn.Module
        if module is not None:
            policy += f"({type(module).__name__})"
        return (
            f"EvaluationPool(backend={self.backend.value}, workers={self.num_workers}, "
            f"envs_per_worker={self.envs_per_worker}, space={self.space.name}, "
            f"policy={policy}, num_params={self.policy.num_params}"
            f"{', closed' if self._closed else ''})"
        )

    def _check_open(self) -> None:
        # A closed backend has no workers: a call would fail deep inside (IndexError).
        if self._closed:
            raise RuntimeError(CLOSED)

    def __enter__(self) -> EvaluationPool:
        self._check_open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- weights ---------------------------------------------------------------------------
    def register(self, vector: np.ndarray) -> str:
        """Register a parameter vector (once per version) and return its key.

        The vector is copied into a staging block, put in the object store with the other
        versions of its block at the next call (or as soon as the block is full): one put
        per block of versions, never one per vector or per job.
        """
        self._check_open()
        key = self.store.register(vector)
        self.stats["bytes_shipped"] = float(self.store.bytes_shipped)  # a full block ships
        return key

    # -- evaluation ------------------------------------------------------------------------
    def run(self, jobs: Sequence[EpisodeJob]) -> EvalResult:
        """Run episode jobs on the workers; results come back in the jobs' order."""
        self._check_open()
        for index, job in enumerate(jobs):
            self._check_job(index, job)
        return self.run_checked(jobs)

    def run_checked(self, jobs: Sequence[EpisodeJob]) -> EvalResult:
        """`run` for jobs already checked (`evaluate`'s own, `dispatch`'s): not again."""
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
        self.note_results(len(jobs), errors)
        return EvalResult(returns, lengths, errors)

    def _check_job(self, index: int, job: Any) -> None:
        # A hand-built job's mistakes failed each episode deep in a worker (a dict task's
        # AttributeError, gymnasium's seed error) or raised an AttributeError here.
        label = f"jobs[{index}]"
        if not isinstance(job, EpisodeJob):
            raise TypeError(
                f"{label}: expected an EpisodeJob(params, task, seed), got {_described(job)}"
            )
        if not isinstance(job.params, ParamSource):
            raise TypeError(
                f"{label}.params: expected Stored(key) or Perturbed(...), got "
                f"{_described(job.params)}; register a vector first: Stored(pool.register(theta))"
            )
        self._check_task(f"{label}.task", job.task)
        if not is_count(job.seed, 0):
            raise ValueError(f"{label}.seed must be an integer >= 0, got {job.seed!r}")

    def note_results(self, jobs: int, errors: dict[int, str]) -> None:
        """Count a call's jobs (episodes, or PPO streams) in `jobs` and its failed ones (by
        job index) in `failed_episodes`, and keep the first one's error line in
        `last_error`: what `GenerationFailed` compares and reports."""
        self.stats["jobs"] += jobs
        self.stats["failed_episodes"] += len(errors)
        if errors:
            first = errors[min(errors)]
            self.last_error = error_line(first)
            if not self.first_error_text:
                self.first_error_text = first

    def run_chunks(self, jobs: Sequence[Any], method: str = "run") -> list[Any]:
        """Cut `jobs` into chunks and run `Worker.<method>(chunk, sources)` for each on the
        workers (pipelined, retried after worker loss); the chunks' results in job order.

        Episode jobs use `run`; trajectory jobs `collect_trajectories`. Each chunk's
        counters (`result.stats`) are added to the pool's statistics.
        """
        n = len(jobs)
        if n == 0:
            return []
        sizes = self.chunk_sizes(n)
        starts = [0, *np.cumsum(sizes)[:-1].tolist()]
        chunks = [list(jobs[i : i + size]) for i, size in zip(starts, sizes, strict=True)]
        return [result for _, result in self.run_placed(chunks, [None] * len(chunks), method)]

    def run_placed(
        self, chunks: Sequence[list[Any]], prefer: Sequence[int | None], method: str
    ) -> list[tuple[int, Any]]:
        """Run chunks already cut, each on its preferred worker where one is given and
        alive (None: any); (worker that ran it, result) per chunk, in chunk order. Results
        never depend on the worker: preferring one only lets it reuse what it kept."""
        self._check_open()
        if not chunks:
            return []
        started = time.perf_counter()
        self._ship()
        sources_for = [self.store.sources(job.params.key for job in c) for c in chunks]
        sent = self._with_level_ids(chunks, sources_for) if method in LEVEL_METHODS else chunks
        if self.progress is not None:
            self.progress.planned(sum(len(c) for c in chunks))
        results = self._backend.run(sent, sources_for, method, self._report, prefer)
        self.stats["worker_restarts"] = self._backend.restarts + self._ray_restarts
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
        self.store.evict()
        self.levels.evict()
        self.stats["wall_s"] += time.perf_counter() - started
        return [(worker, result) for worker, _, result in results]

    def _ship(self) -> None:
        self.store.ship()
        self.stats["bytes_shipped"] = float(self.store.bytes_shipped)

    def _with_level_ids(
        self, chunks: Sequence[list[Any]], sources_for: list[dict[str, Any]]
    ) -> list[list[Any]]:
        """Chunks as they travel: each job's level named by its content id, the
        levels' sources added to each chunk's (see `coevo.pool.levels`)."""
        sent, level_sources = self.levels.send(chunks)
        for sources, levels in zip(sources_for, level_sources, strict=True):
            sources[LEVEL_SOURCES] = levels
        self.stats["level_bytes_shipped"] = float(self.levels.bytes_shipped)
        return sent

    def dispatch(self, jobs: Sequence[Any]) -> list[Any]:
        """Jobs of any registered kind (see `coevo.pool.dispatch`) in one call; one result
        per job, in order. `EpisodeJob`s give `EpisodeResult`s."""
        from coevo.pool.dispatch import dispatch

        self._check_open()
        for index, job in enumerate(jobs):  # named by their place in the caller's list
            if isinstance(job, EpisodeJob):
                self._check_job(index, job)
        return dispatch(self, jobs)

    def chunk_sizes(self, n: int) -> list[int]:
        """How a call of `n` jobs is cut into chunks (see `scheduling.chunk_sizes`)."""
        return chunk_sizes(n, self.num_workers, self.envs_per_worker)

    def _report(self, result: Any, jobs: int) -> None:
        if self.progress is not None:
            self.progress.done(jobs, float(result.stats.get("env_steps", 0.0)))

    def _note_pid(self, worker: int, pid: int) -> None:
        # A chunk answered by another process than the last one means Ray restarted it;
        # unless that process is one already replaced: a worker's two overlapping chunks
        # can finish out of chunk order, so an answer of the old process may come later.
        pids = self._backend.pids  # as last seen (the backend's own list, kept up to date)
        if pid and worker < len(pids) and pid != pids[worker]:
            if pid in self._replaced_pids:
                return
            self._replaced_pids.add(pids[worker])
            pids[worker] = pid
            self._ray_restarts += 1
            self.stats["worker_restarts"] += 1

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
        if not is_count(episodes, 1):
            raise ValueError(f"episodes must be a positive integer, got {episodes!r}")
        if not is_count(seed, 0):
            # Reset seeds seed..seed+episodes-1; gymnasium refuses a negative one per episode.
            raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
        self._check_open()
        checked = [self._checked_pair(index, pair) for index, pair in enumerate(pairs)]
        jobs = []
        for index, (theta, task) in enumerate(checked):
            try:
                key = self.register(theta)
            except (TypeError, ValueError) as error:  # not numbers at all
                raise type(error)(f"pairs[{index}]: {error}") from None
            jobs.extend(EpisodeJob(Stored(key), task, seed + k) for k in range(episodes))
        result = self.run_checked(jobs)  # built here from checked pairs
        errors: dict[int, str] = {}
        for job_index in sorted(result.errors):
            errors.setdefault(job_index // episodes, error_line(result.errors[job_index]))
        return result.returns.reshape(len(pairs), episodes), errors

    def _checked_pair(self, index: int, pair: Any) -> tuple[Any, Task]:
        """`pairs[index]` as (parameters, task), or an error saying what is wrong with it."""
        try:
            theta, task = pair
        except (TypeError, ValueError):
            raise TypeError(
                f"pairs[{index}]: expected a (parameters, task) pair, got {_described(pair)}; "
                "evaluate takes a list of pairs, e.g. [(theta, space.initial_task())]"
            ) from None
        if isinstance(theta, Task) and not isinstance(task, Task):
            raise TypeError(
                f"pairs[{index}]: a (task, parameters) pair; evaluate takes (parameters, task), "
                "e.g. [(theta, space.initial_task())]"
            )
        self._check_params(f"pairs[{index}]", theta)
        self._check_task(f"pairs[{index}]", task)
        return theta, task

    def _check_params(self, label: str, theta: Any) -> None:
        size = self.policy.num_params
        try:
            shape = tuple(np.shape(theta))
        except ValueError:  # ragged nested lists
            shape = None
        if shape != (size,):
            got = f"shape {shape}" if shape is not None else "no array shape (ragged)"
            raise ValueError(
                f"{label}: the parameter vector has {got}; the policy has {size} parameters"
            )

    def _check_task(self, label: str, task: Any) -> None:
        # A dict task failed each of its episodes with "'dict' object has no attribute".
        # A level kind's space says what its tasks are (a MazeSpace's: Maze levels).
        if not isinstance(task, getattr(self.space, "level_type", Task)):
            example = "name=value, ..."
            if isinstance(task, Mapping) and task and all(isinstance(k, str) for k in task):
                example = ", ".join(f"{name}={value!r}" for name, value in task.items())
            raise TypeError(
                f"{label}: the task must be a coevo Task, got {_described(task)}; build tasks "
                f"with the pool's space: pool.space.task({example}) (parameters left out keep "
                "their initial value) or pool.space.initial_task()"
            )
        # Another space's task failed each episode with a KeyError on its parameters. A level
        # of a kind names its kind, not the space: a `MazeSpace(name="small_maze")` runs Maze
        # levels (whose `space` is "maze"), and the isinstance check above is the kind's.
        if isinstance(task, Task) and task.space != self.space.name:
            raise ValueError(
                f"{label}: a task of space '{task.space}'; this pool runs '{self.space.name}' "
                "(build tasks with pool.space)"
            )

    def cross_evaluate(
        self,
        policies: Sequence[np.ndarray],
        tasks: Sequence[Task],
        episodes: int = 1,
        seed: int = 0,
    ) -> np.ndarray:
        """Mean return of every policy on every task: an array [len(policies), len(tasks)];
        raises `EvaluationError` if an episode failed."""
        self._check_open()
        for index, theta in enumerate(policies):  # named here: `pairs` would be ours
            self._check_params(f"policies[{index}]", theta)
        for index, task in enumerate(tasks):
            self._check_task(f"tasks[{index}]", task)
        pairs = [(theta, task) for theta in policies for task in tasks]
        scores = self.evaluate(pairs, episodes, seed).mean(axis=1)
        return scores.reshape(len(policies), len(tasks))

    def cross_evaluate_frame(
        self,
        policies: Mapping[str, np.ndarray] | Sequence[np.ndarray],
        tasks: Mapping[str, Task] | Sequence[Task],
        episodes: int = 1,
        seed: int = 0,
    ) -> pd.DataFrame:
        """`cross_evaluate` as a frame indexed by policy name with one column per task name
        (names: a mapping's keys, or positions in a list)."""
        from coevo.pool.frames import cross_evaluate_frame

        return cross_evaluate_frame(self, policies, tasks, episodes, seed)

    def stats_snapshot(self) -> dict[str, float]:
        """Cumulative counters since the pool started, plus derived rates.

        Keys: episodes, env_steps, cache_hits, cache_misses (weight-vector cache of the
        workers, per job), bytes_shipped (driver to object store), bytes_loaded (object store
        to workers), level_bytes_shipped and level_bytes_loaded (the same for levels, Ray
        backend: in-process nothing is pickled), levels_loaded (levels the workers took into
        their level caches: once per level and worker while kept), busy_s (summed over
        workers) and busy_s_worker_0..N-1 (each worker's time inside `Worker.run`), cpu_s
        (the workers' CPU time meanwhile), overlap_starts (episodes started while another
        chunk's still ran on that worker), worker_restarts, wall_s (time inside `run`),
        steps_per_s.
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


def _described(value: Any) -> str:
    """A value's type, with its shape or a short repr: what an error says it got."""
    shape = getattr(value, "shape", None)
    if shape is not None:
        return f"{type(value).__name__} of shape {tuple(shape)}"
    return f"{type(value).__name__} {value!r:.60}"


def _argument_types_message(space: Any, policy: Any) -> str:
    got = f"got {type(space).__name__} and {type(policy).__name__}"
    if isinstance(space, Policy) and isinstance(policy, TaskSpace):
        got += " (swapped)"
    elif hasattr(policy, "policy") and hasattr(policy, "theta"):  # a LoadedPolicy
        got += f"; pass the loaded {type(policy).__name__}'s .policy (its .theta is a vector)"
    return (
        "EvaluationPool(space, policy, ...) takes a task space first (a TaskSpace, e.g. "
        "coevo.tasks.get('cartpole')) and a policy second (a Policy, e.g. from "
        f"coevo.make_policy(...)); {got}"
    )


def _ray_running() -> bool:
    """Whether this process is connected to Ray (without importing ray when it is not)."""
    ray = sys.modules.get("ray")
    return ray is not None and ray.is_initialized()


def _backend_named(backend: str | Backend) -> Backend:
    """`pool.backend` as a `Backend`, or a ConfigError naming the allowed ones."""
    try:
        return Backend(backend)
    except ValueError:
        allowed = ", ".join(b.value for b in Backend)
        raise ConfigError(
            "pool.backend", f"unknown backend '{backend}'; allowed: {allowed}"
        ) from None


def _check_counts(num_workers: Any, envs_per_worker: Any) -> None:
    """ConfigError unless both counts are positive integers (True is not a count)."""
    for path, value in (
        ("pool.num_workers", num_workers),
        ("pool.envs_per_worker", envs_per_worker),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ConfigError(path, f"must be a positive integer, got {value!r}")


def _check_fits(space: TaskSpace, policy: Policy) -> None:
    """The policy against one env's spaces, made in this process and closed after."""
    env = space.make_env()
    try:
        policy.check_fits(env.observation_space, env.action_space, f"task space '{space.name}'")
    finally:
        close = getattr(env, "close", None)  # a task-settable class need not have one
        if close is not None:
            close()


def _start_backend(
    backend: Backend,
    space: TaskSpace,
    policy: Policy,
    num_workers: int,
    envs_per_worker: int,
    address: str | None,
    limits: WorkerLimits,
) -> Any:
    """The workers: in this process, on a Ray this pool starts (served in-process until
    Ray's are ready), or on a running Ray or cluster."""
    if backend is Backend.LOCAL:
        from coevo.pool.local_backend import LocalWorkers

        return LocalWorkers(space, policy, num_workers, envs_per_worker)
    if address is None and not limits.any and not _ray_running():
        # This pool starts Ray: one in-process worker answers until Ray's are ready.
        from coevo.pool.handover import HandoverWorkers

        return HandoverWorkers(space, policy, num_workers, envs_per_worker, limits)
    from coevo.pool.ray_backend import RayWorkers

    return RayWorkers(space, policy, num_workers, envs_per_worker, address, limits)
