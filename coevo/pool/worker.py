"""A worker keeps its envs and a policy skeleton alive and runs batches of episodes.

The same class runs in-process (local backend) and as a Ray actor.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, cast

import numpy as np

from coevo.policies.base import Policy
from coevo.pool.jobs import EpisodeJob, Stored, perturbation_noise
from coevo.pool.levels import LevelCache
from coevo.pool.rollout import Chunk, ChunkResult, Rollouts, timed
from coevo.pool.slots import EnvSlots, GymSlots
from coevo.tasks.task import TaskSpace

# Live envs of unfinished trajectory streams a worker keeps between calls, per env slot:
# a PPO rollout's continuing streams of every pair routed here (sticky), with room to spare.
STREAMS_PER_SLOT = 2

# Object-store blocks a worker keeps (each at most store.BLOCK_BYTES): chunks walk through
# the versions in registration order, so the current block and the one before suffice.
_BLOCK_CACHE = 2


class Worker:
    """Runs episodes `num_envs` at a time: one batched forward pass per step for all of them.

    Each slot holds an env (task swapped with `set_task`), a row of the parameter skeleton
    (weights copied in place), a row of recurrent state (zeroed at episode start) and the
    key of its episode's action noise (the episode's seed). Finished episodes free their
    slot for the next job.
    """

    def __init__(self, space: TaskSpace, policy: Policy, num_envs: int = 8, cache_size: int = 64):
        self.space = space
        self.policy = policy
        self.slots: EnvSlots = (
            space.make_slots(num_envs)
            if space.make_slots is not None
            else GymSlots(space.make_env, num_envs, policy.discrete, space.env_task)
        )
        if "torch" in sys.modules:  # a torch policy or env: one thread per worker
            sys.modules["torch"].set_num_threads(1)
        self.skeleton = np.zeros((num_envs, policy.num_params), dtype=np.float32)
        self.rollouts = Rollouts(
            self.slots, policy, space.max_episode_steps, self.skeleton, self._params
        )
        # Whose turn it is to drive the rollouts (calls may overlap on a Ray actor).
        self._turn = threading.Condition()
        self._driving = False
        self._exclusive = False  # a trajectory chunk holds the slots
        self.cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self.cache_size = cache_size
        # Keys in `cache` whose vector holds NaN or infinity: how many such values. Counted
        # once per load, so a job pays a dict lookup only while such a version is cached.
        self._nonfinite: dict[str, int] = {}
        # Blocks of vectors fetched from the object store, so that the other versions in a
        # block are not fetched again when their turn comes (one fetch per block and worker).
        self.blocks: OrderedDict[str, np.ndarray] = OrderedDict()
        # Levels by content id: a pool's jobs name them by id (coevo/pool/levels.py).
        self.level_cache = LevelCache()
        self._noise_seed: tuple[int, int] | None = None
        self._noise = np.zeros(0, dtype=np.float32)
        self.pid = os.getpid()
        self.streams: Any = None  # trajectory streams' live envs (a StreamCache), when used
        self._token = ""  # the trajectory chunk holding the slots (see RayWorker.env_call)

    def ping(self) -> int:
        """This worker's process id (a restarted Ray actor answers with a new one)."""
        return self.pid

    def info(self) -> dict[str, Any]:
        """pid, the slots implementation (e.g. `coevo.pool.slots.GymSlots`) and slot count."""
        kind = type(self.slots)
        return {
            "pid": self.pid,
            "slots": f"{kind.__module__}.{kind.__qualname__}",
            "num_envs": self.slots.num_slots,
        }

    def _weights(
        self, key: str, sources: Mapping[str, Any], counters: dict[str, float]
    ) -> np.ndarray:
        """The vector of `key` (cached); raises for one with NaN or infinite values, which
        fails that job's episode: a discrete policy's argmax over NaN logits would still
        pick an action and score."""
        if key in self.cache:
            self.cache.move_to_end(key)
            counters["cache_hits"] += 1
            vector = self.cache[key]
        else:
            vector = self._load(key, sources, counters)
        if self._nonfinite:
            bad = self._nonfinite.get(key)
            if bad:
                raise ValueError(nonfinite_message(bad, vector.size))
        return vector

    def _load(self, key: str, sources: Mapping[str, Any], counters: dict[str, float]) -> np.ndarray:
        counters["cache_misses"] += 1
        value = sources[key]
        if isinstance(value, np.ndarray):  # a bare vector (direct use of a Worker)
            vector = np.array(value, dtype=np.float32, copy=True)
            counters["bytes_loaded"] += vector.nbytes
        else:
            block_id, handle, row = value
            block = self.blocks.get(block_id)
            if block is None:
                if not isinstance(handle, np.ndarray):
                    import ray  # only a Ray actor is handed object refs

                    handle = cast(np.ndarray, ray.get(handle))  # the block's object ref
                block = handle
                counters["bytes_loaded"] += block.nbytes
                self.blocks[block_id] = block
                if len(self.blocks) > _BLOCK_CACHE:
                    self.blocks.popitem(last=False)
            else:
                self.blocks.move_to_end(block_id)
            vector = np.array(block[row], dtype=np.float32, copy=True)
        self.cache[key] = vector
        bad = vector.size - int(np.count_nonzero(np.isfinite(vector)))
        if bad:
            self._nonfinite[key] = bad
        if len(self.cache) > self.cache_size:
            evicted, _ = self.cache.popitem(last=False)
            self._nonfinite.pop(evicted, None)
        return vector

    def run(
        self, jobs: Sequence[EpisodeJob], sources: Mapping[str, Any], token: str = ""
    ) -> ChunkResult:
        """Run every job; results in job order.

        `sources` maps each weight key of the jobs to (block id, block or its Ray ObjectRef,
        row), as the pool sends them, or to a bare vector; only cache misses read it. Jobs
        from a pool name their levels by id, found through `sources["levels"]` (see
        `coevo.pool.levels`); jobs given their levels are run as they are.
        `token` names the chunk in `env_call`'s answers (Ray backend).

        Calls may overlap (a Ray actor takes two at once): the chunk joins the queue of
        `rollouts`, and one calling thread at a time drives the rows, whichever chunks
        their episodes belong to, until its own chunk is done; then a thread whose chunk is
        not done yet takes over. So a second call's episodes fill the rows the first one's
        last episodes leave free, and each call still returns exactly its own results.
        """
        chunk = Chunk(jobs, sources, token)
        chunk.jobs = self.level_cache.resolve(jobs, sources, chunk.counters)
        with self._turn:
            self.rollouts.add(chunk)
            while not chunk.done and (self._driving or self._exclusive):
                self._turn.wait()
            if not chunk.done:
                self._driving = True
        if not chunk.done:
            started, cpu_started = time.perf_counter(), time.process_time()
            try:
                self.rollouts.drive(chunk, self._chunk_done)
            except BaseException as error:  # the loop itself broke: fail every chunk in it
                with self._turn:
                    self.rollouts.abandon(error)
                raise
            finally:
                timed(chunk, started, cpu_started)
                with self._turn:
                    self._driving = False
                    self._turn.notify_all()
        if chunk.failure is not None:
            raise RuntimeError(f"the worker's rollout loop failed: {chunk.failure!r}")
        return chunk.result(self.pid)

    def _chunk_done(self, chunk: Chunk) -> None:
        with self._turn:
            self._turn.notify_all()

    @contextlib.contextmanager
    def _exclusive_turn(self) -> Iterator[None]:
        """Wait until no episode runs, then hold the slots alone (trajectory chunks)."""
        with self._turn:
            while self._driving or self._exclusive or not self.rollouts.idle:
                self._turn.wait()
            self._exclusive = True
        try:
            yield
        finally:
            with self._turn:
                self._exclusive = False
                self._turn.notify_all()

    def collect_trajectories(
        self, jobs: Sequence[Any], sources: Mapping[str, Any], token: str = ""
    ) -> Any:
        """Run trajectory jobs (coevo/pool/trajectories.py) on this worker's slots; the
        policy must sample with a value head (the actor-critic). It waits for the slots to
        be free of `run` chunks and holds them alone; `token` names it meanwhile. Jobs from
        a pool name their levels by id, as `run`'s do."""
        from coevo.pool.trajectories import StreamCache, collect

        counters: dict[str, float] = dict.fromkeys(
            ("cache_hits", "cache_misses", "bytes_loaded", "levels_loaded", "level_bytes_loaded"),
            0.0,
        )
        jobs = self.level_cache.resolve(jobs, sources, counters)
        if self.streams is None:
            self.streams = StreamCache(STREAMS_PER_SLOT * self.slots.num_slots)
        with self._exclusive_turn():
            self._token = token
            started, cpu_started = time.perf_counter(), time.process_time()
            try:
                chunk = collect(
                    self.slots,
                    self.policy,
                    self.space.max_episode_steps,
                    jobs,
                    lambda job: self._weights(job.params.key, sources, counters),
                    self.skeleton,
                    self.streams,
                )
            finally:  # a stale token would hide later run chunks' stuck env calls
                self._token = ""
        chunk.stats.update(counters)
        chunk.stats["busy_s"] = time.perf_counter() - started
        chunk.stats["cpu_s"] = time.process_time() - cpu_started
        chunk.stats["pid"] = float(self.pid)
        return chunk

    def _params(self, job: EpisodeJob, chunk: Chunk) -> np.ndarray:
        source, sources, counters = job.params, chunk.sources, chunk.counters
        perturbed = chunk.perturbed
        if isinstance(source, Stored):
            return self._weights(source.key, sources, counters)
        if source not in perturbed:
            perturbed.clear()  # jobs of one perturbation come together; keep one
            theta = self._weights(source.key, sources, counters)
            # A mirrored pair's two signs come one after the other: draw its noise once.
            if self._noise_seed != (source.noise_seed, theta.size):
                self._noise = perturbation_noise(source.noise_seed, theta.size)
                self._noise_seed = (source.noise_seed, theta.size)
            vector = source.build(theta, self._noise)
            # Once per perturbation: a finite theta plus a huge sigma can overflow.
            bad = vector.size - int(np.count_nonzero(np.isfinite(vector)))
            if bad:
                raise ValueError(nonfinite_message(bad, vector.size))
            perturbed[source] = vector
        return perturbed[source]


def nonfinite_message(bad: int, size: int) -> str:
    """Why a job with a non-finite parameter vector failed (its episode's error text)."""
    values = "value" if bad == 1 else "values"
    return f"policy parameters contain {bad} non-finite {values} (nan/inf) of {size}"
