"""A worker keeps its envs and a policy skeleton alive and runs batches of episodes.

The same class runs in-process (local backend) and as a Ray actor.
"""

from __future__ import annotations

import time
import traceback
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from coevo.policy import PolicySpec
from coevo.pool.jobs import EpisodeJob, Perturbed, Stored
from coevo.pool.slots import EnvSlots, GymSlots
from coevo.tasks.task import TaskSpace


@dataclass
class ChunkResult:
    """Returns and lengths of a chunk's episodes, in job order, with the worker's counters."""

    returns: np.ndarray
    lengths: np.ndarray
    errors: dict[int, str]
    stats: dict[str, float] = field(default_factory=dict)


class Worker:
    """Runs episodes `num_envs` at a time: one batched forward pass per step for all of them.

    Each slot holds an env (task swapped with `set_task`) and a row of the parameter
    skeleton (weights copied in place). Finished episodes free their slot for the next job.
    """

    def __init__(
        self, space: TaskSpace, policy: PolicySpec, num_envs: int = 8, cache_size: int = 64
    ):
        torch.set_num_threads(1)
        self.space = space
        self.policy = policy
        self.slots: EnvSlots = (
            space.make_slots(num_envs)
            if space.make_slots is not None
            else GymSlots(space.make_env, num_envs, policy.discrete)
        )
        self.skeleton = np.zeros((num_envs, policy.num_params), dtype=np.float32)
        self.obs = np.zeros((num_envs, policy.obs_dim), dtype=np.float32)
        self.cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self.cache_size = cache_size
        self.pid = _pid()

    def ping(self) -> int:
        return self.pid

    def _weights(self, key: str, sources: Mapping[str, Any], counters: dict[str, float]):
        if key in self.cache:
            self.cache.move_to_end(key)
            counters["cache_hits"] += 1
            return self.cache[key]
        counters["cache_misses"] += 1
        value = sources[key]
        if not isinstance(value, np.ndarray):
            import ray  # only a Ray actor is handed object refs

            value = ray.get(value)
        vector = np.array(value, dtype=np.float32, copy=True)
        counters["bytes_loaded"] += vector.nbytes
        self.cache[key] = vector
        if len(self.cache) > self.cache_size:
            self.cache.popitem(last=False)
        return vector

    def run(self, jobs: Sequence[EpisodeJob], sources: Mapping[str, Any]) -> ChunkResult:
        """Run every job; `sources` maps weight keys to arrays or Ray object refs."""
        started = time.perf_counter()
        counters = {"cache_hits": 0.0, "cache_misses": 0.0, "bytes_loaded": 0.0}
        n = len(jobs)
        returns = np.zeros(n, dtype=np.float64)
        lengths = np.zeros(n, dtype=np.int64)
        errors: dict[int, str] = {}
        max_steps = self.space.max_episode_steps
        slot_job = np.full(self.slots.num_slots, -1)
        perturbed: dict[Perturbed, np.ndarray] = {}
        next_job = 0

        def fail(index: int, message: str) -> None:
            errors[index] = message
            returns[index] = np.nan

        def start(slot: int) -> None:
            """Give `slot` the next job, or leave it idle when none is left."""
            nonlocal next_job
            while next_job < n:
                index, job = next_job, jobs[next_job]
                next_job += 1
                try:
                    self.skeleton[slot] = self._params(job, sources, counters, perturbed)
                    self.obs[slot] = self.slots.reset_slot(slot, job.task, job.seed)
                except Exception:  # an env that fails on a task fails that episode only
                    fail(index, traceback.format_exc(limit=3))
                    continue
                slot_job[slot] = index
                return
            slot_job[slot] = -1

        for slot in range(self.slots.num_slots):
            start(slot)
        while True:
            active = np.flatnonzero(slot_job >= 0)
            if active.size == 0:
                break
            actions = self.policy.act(self.skeleton[active], self.obs[active])
            obs, rewards, done, step_errors = self.slots.step_slots(active, actions)
            indices = slot_job[active]
            returns[indices] += rewards
            lengths[indices] += 1
            self.obs[active] = obs
            done |= lengths[indices] >= max_steps
            for position, message in step_errors.items():
                fail(int(indices[position]), message)
            for slot in active[done]:
                start(int(slot))
        counters["episodes"] = float(n)
        counters["env_steps"] = float(lengths.sum())
        counters["busy_s"] = time.perf_counter() - started
        counters["pid"] = float(self.pid)
        return ChunkResult(returns, lengths, errors, counters)

    def _params(self, job, sources, counters, perturbed) -> np.ndarray:
        source = job.params
        if isinstance(source, Stored):
            return self._weights(source.key, sources, counters)
        if source not in perturbed:
            perturbed.clear()  # jobs of one perturbation come together; keep one
            perturbed[source] = source.build(self._weights(source.key, sources, counters))
        return perturbed[source]


def _pid() -> int:
    import os

    return os.getpid()
