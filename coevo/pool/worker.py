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

        The running episodes always fill a prefix of the per-row arrays (parameters,
        observations, state, noise keys, return, length): row r runs in env slot
        `env_slot[r]`. An episode that ends hands its row to the next job; when no job is
        left, the last running row moves into it. So every step works on views `[:n]` (no
        gather or scatter copies while a chunk drains), and a row's numbers never depend on
        the rows around it, so where an episode runs does not change its result.
        """
        started = time.perf_counter()
        cpu_started = time.process_time()
        counters = {"cache_hits": 0.0, "cache_misses": 0.0, "bytes_loaded": 0.0}
        n_jobs = len(jobs)
        returns = np.zeros(n_jobs, dtype=np.float64)
        lengths = np.zeros(n_jobs, dtype=np.int64)
        errors: dict[int, str] = {}
        max_steps = self.space.max_episode_steps
        num_slots = self.slots.num_slots
        # Each env slot's job; public so that a watchdog thread can tell which job an env
        # call belongs to (set already during the reset).
        slot_job = self.slot_job = np.full(num_slots, -1, dtype=np.int64)
        env_slot = np.arange(num_slots, dtype=np.int64)  # row -> env slot
        row_job = np.full(num_slots, -1, dtype=np.int64)  # row -> job
        row_return = np.zeros(num_slots, dtype=np.float64)
        row_length = np.zeros(num_slots, dtype=np.int64)
        row_failed: dict[int, str] = {}  # by job
        perturbed: dict[Perturbed, np.ndarray] = {}
        skeleton, obs_rows, state_rows, keys = self.skeleton, self.obs, self.state, self.noise_keys
        next_job = 0

        def start(row: int) -> bool:
            """Give `row` (its env slot) the next job; False when none is left."""
            nonlocal next_job
            slot = int(env_slot[row])
            while next_job < n_jobs:
                index, job = next_job, jobs[next_job]
                next_job += 1
                slot_job[slot] = index
                try:
                    skeleton[row] = self._params(job, sources, counters, perturbed)
                    obs_rows[row] = self.slots.reset_slot(slot, job.task, job.seed)
                    state_rows[row] = 0.0
                    keys[row] = seed_key(job.seed)
                except Exception:  # an env that fails on a task fails that episode only
                    errors[index] = traceback.format_exc(limit=3)
                    returns[index] = np.nan
                    continue
                row_job[row] = index
                row_return[row] = 0.0
                row_length[row] = 0
                return True
            slot_job[slot] = -1
            return False

        def finish(row: int) -> None:
            index = int(row_job[row])
            total, length = float(row_return[row]), int(row_length[row])
            lengths[index] = length
            message = row_failed.pop(index, None)
            if message is None and not np.isfinite(total):
                # A NaN or infinite return is a broken episode, never a score.
                message = f"non-finite return {total} after {length} steps"
            if message is None:
                returns[index] = total
            else:
                errors[index] = message
                returns[index] = np.nan

        def move(source: int, target: int) -> None:
            """Row `source`'s running episode continues in row `target`."""
            for array in (skeleton, obs_rows, state_rows, keys, env_slot, row_job):
                array[target] = array[source]
            row_return[target] = row_return[source]
            row_length[target] = row_length[source]

        running = 0  # rows [0, running) hold running episodes
        while running < num_slots and start(running):
            running += 1
        policy, step_slots = self.policy, self.slots.step_slots
        noise_dim = policy.noise_dim
        recurrent = policy.state_size > 0
        noise = None
        changed = True
        while running:
            if changed:  # views rebuilt only when the number of running rows changes
                params, obs, state = skeleton[:running], obs_rows[:running], state_rows[:running]
                slots, total, length = (
                    env_slot[:running],
                    row_return[:running],
                    row_length[:running],
                )
                changed = False
            if noise_dim:  # a function of (episode seed, step) per row: batch-independent
                noise = uniforms(keys[:running], length, noise_dim)
            output = policy.step(params, obs, state, noise)
            if recurrent:
                state[:] = output.state
            next_obs, rewards, done, step_errors = step_slots(slots, output.actions)
            obs[:] = next_obs
            total += rewards
            length += 1
            done |= length >= max_steps
            for position, message in step_errors.items():
                row_failed[int(row_job[position])] = message
                done[position] = True
            if done.any():
                # Highest rows first: a row moved down from the end is then never one whose
                # episode ended this step.
                for row in np.flatnonzero(done)[::-1].tolist():
                    finish(row)
                    if not start(row):
                        running -= 1
                        if row != running:
                            move(running, row)
                        changed = True
        counters["episodes"] = float(n_jobs)
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
