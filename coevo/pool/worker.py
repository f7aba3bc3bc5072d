"""A worker keeps its envs and a policy skeleton alive and runs batches of episodes.

The same class runs in-process (local backend) and as a Ray actor.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from coevo.policies.base import Policy
from coevo.policies.noise import seed_key, uniforms
from coevo.pool.jobs import EpisodeJob, Perturbed, Stored, perturbation_noise
from coevo.pool.slots import EnvSlots, GymSlots
from coevo.tasks.task import TaskSpace

# Live envs of unfinished trajectory streams a worker keeps between calls, per env slot:
# a PPO rollout's continuing streams of every pair routed here (sticky), with room to spare.
STREAMS_PER_SLOT = 2

# Object-store blocks a worker keeps (each at most store.BLOCK_BYTES): chunks walk through
# the versions in registration order, so the current block and the one before suffice.
_BLOCK_CACHE = 2


@dataclass
class ChunkResult:
    """Returns and lengths of a chunk's episodes, in job order, with the worker's counters."""

    returns: np.ndarray
    lengths: np.ndarray
    errors: dict[int, str]
    stats: dict[str, float] = field(default_factory=dict)


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
        self.obs = np.zeros((num_envs, policy.obs_dim), dtype=np.float32)
        self.state = policy.initial_state(num_envs)
        self.noise_keys = np.zeros(num_envs, dtype=np.uint64)
        self.cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self.cache_size = cache_size
        # Blocks of vectors fetched from the object store, so that the other versions in a
        # block are not fetched again when their turn comes (one fetch per block and worker).
        self.blocks: OrderedDict[str, np.ndarray] = OrderedDict()
        self._noise_seed: tuple[int, int] | None = None
        self._noise = np.zeros(0, dtype=np.float32)
        self.pid = os.getpid()
        self.slot_job = np.full(num_envs, -1, dtype=np.int64)  # each slot's job in `run`
        self.streams: Any = None  # trajectory streams' live envs (a StreamCache), when used

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

    def _weights(self, key: str, sources: Mapping[str, Any], counters: dict[str, float]):
        if key in self.cache:
            self.cache.move_to_end(key)
            counters["cache_hits"] += 1
            return self.cache[key]
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

                    handle = ray.get(handle)
                block = handle
                counters["bytes_loaded"] += block.nbytes
                self.blocks[block_id] = block
                if len(self.blocks) > _BLOCK_CACHE:
                    self.blocks.popitem(last=False)
            else:
                self.blocks.move_to_end(block_id)
            vector = np.array(block[row], dtype=np.float32, copy=True)
        self.cache[key] = vector
        if len(self.cache) > self.cache_size:
            self.cache.popitem(last=False)
        return vector

    def run(self, jobs: Sequence[EpisodeJob], sources: Mapping[str, Any]) -> ChunkResult:
        """Run every job; results in job order.

        `sources` maps each weight key of the jobs to (block id, block or its Ray ObjectRef,
        row), as the pool sends them, or to a bare vector; only cache misses read it.
        """
        started = time.perf_counter()
        cpu_started = time.process_time()
        counters = {"cache_hits": 0.0, "cache_misses": 0.0, "bytes_loaded": 0.0}
        n = len(jobs)
        returns = np.zeros(n, dtype=np.float64)
        lengths = np.zeros(n, dtype=np.int64)
        errors: dict[int, str] = {}
        max_steps = self.space.max_episode_steps
        num_slots = self.slots.num_slots
        # Per-slot episode state; a job's row is written once, when its episode ends.
        # Public so that a watchdog thread can tell which job an env call belongs to.
        slot_job = self.slot_job = np.full(num_slots, -1, dtype=np.int64)
        slot_return = np.zeros(num_slots, dtype=np.float64)
        slot_length = np.zeros(num_slots, dtype=np.int64)
        slot_failed: dict[int, str] = {}
        perturbed: dict[Perturbed, np.ndarray] = {}
        next_job = 0

        def start(slot: int) -> None:
            """Give `slot` the next job, or leave it idle when none is left."""
            nonlocal next_job
            while next_job < n:
                index, job = next_job, jobs[next_job]
                next_job += 1
                slot_job[slot] = index  # already during the reset (see slot_job above)
                try:
                    self.skeleton[slot] = self._params(job, sources, counters, perturbed)
                    self.obs[slot] = self.slots.reset_slot(slot, job.task, job.seed)
                    self.state[slot] = 0.0
                    self.noise_keys[slot] = seed_key(job.seed)
                except Exception:  # an env that fails on a task fails that episode only
                    errors[index] = traceback.format_exc(limit=3)
                    returns[index] = np.nan
                    continue
                slot_job[slot] = index
                slot_return[slot] = 0.0
                slot_length[slot] = 0
                return
            slot_job[slot] = -1

        def finish(slot: int) -> None:
            index = int(slot_job[slot])
            lengths[index] = slot_length[slot]
            message = slot_failed.pop(slot, None)
            if message is None and not np.isfinite(slot_return[slot]):
                # A NaN or infinite return is a broken episode, never a score.
                message = f"non-finite return {slot_return[slot]} after {slot_length[slot]} steps"
            if message is None:
                returns[index] = slot_return[slot]
            else:
                errors[index] = message
                returns[index] = np.nan

        for slot in range(num_slots):
            start(slot)
        policy = self.policy
        noise_dim = policy.noise_dim
        recurrent = policy.state_size > 0
        noise = None
        changed = True
        while True:
            if changed:
                # The batch is rebuilt only when an episode ends; while every slot runs,
                # the skeleton and observations are used in place (no gather copies).
                active = np.flatnonzero(slot_job >= 0)
                if active.size == 0:
                    break
                full = active.size == num_slots
                params = self.skeleton if full else self.skeleton[active]
                changed = False
            if noise_dim:  # a function of (episode seed, step) per slot: batch-independent
                noise = uniforms(self.noise_keys[active], slot_length[active], noise_dim)
            state = self.state[active] if recurrent and not full else self.state
            output = policy.step(params, self.obs if full else self.obs[active], state, noise)
            if recurrent:
                self.state[active] = output.state
            obs, rewards, done, step_errors = self.slots.step_slots(active, output.actions)
            if full:
                self.obs[:] = obs
                slot_return += rewards
                slot_length += 1
                done |= slot_length >= max_steps
            else:
                self.obs[active] = obs
                slot_return[active] += rewards
                slot_length[active] += 1
                done |= slot_length[active] >= max_steps
            for position, message in step_errors.items():
                slot_failed[int(active[position])] = message
                done[position] = True
            if done.any():
                for slot in active[done].tolist():
                    finish(slot)
                    start(slot)
                changed = True
        counters["episodes"] = float(n)
        counters["env_steps"] = float(lengths.sum())
        counters["busy_s"] = time.perf_counter() - started
        # CPU seconds of this process meanwhile: less than busy_s when other processes
        # compete for the cores; steps per cpu_s measures the loop free of that contention.
        counters["cpu_s"] = time.process_time() - cpu_started
        counters["pid"] = float(self.pid)
        return ChunkResult(returns, lengths, errors, counters)

    def collect_trajectories(self, jobs: Sequence[Any], sources: Mapping[str, Any]) -> Any:
        """Run trajectory jobs (coevo/pool/trajectories.py) on this worker's slots; the
        policy must sample with a value head (the actor-critic)."""
        from coevo.pool.trajectories import StreamCache, collect

        started, cpu_started = time.perf_counter(), time.process_time()
        counters = {"cache_hits": 0.0, "cache_misses": 0.0, "bytes_loaded": 0.0}
        if self.streams is None:
            self.streams = StreamCache(STREAMS_PER_SLOT * self.slots.num_slots)
        chunk = collect(
            self.slots,
            self.policy,
            self.space.max_episode_steps,
            jobs,
            lambda job: self._weights(job.params.key, sources, counters),
            self.skeleton,
            self.streams,
        )
        chunk.stats.update(counters)
        chunk.stats["busy_s"] = time.perf_counter() - started
        chunk.stats["cpu_s"] = time.process_time() - cpu_started
        chunk.stats["pid"] = float(self.pid)
        return chunk

    def _params(self, job, sources, counters, perturbed) -> np.ndarray:
        source = job.params
        if isinstance(source, Stored):
            return self._weights(source.key, sources, counters)
        if source not in perturbed:
            perturbed.clear()  # jobs of one perturbation come together; keep one
            theta = self._weights(source.key, sources, counters)
            # A mirrored pair's two signs come one after the other: draw its noise once.
            if self._noise_seed != (source.noise_seed, theta.size):
                self._noise = perturbation_noise(source.noise_seed, theta.size)
                self._noise_seed = (source.noise_seed, theta.size)
            perturbed[source] = source.build(theta, self._noise)
        return perturbed[source]
