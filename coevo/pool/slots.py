"""Env slots: the worker's view of its environments, one episode per slot.

`GymSlots` wraps one gymnasium env per slot. A task space may instead provide a batched
implementation (`TaskSpace.make_slots`) that steps all slots in one numpy call; the worker's
rollout loop is the same for both.
"""

from __future__ import annotations

import traceback
from typing import Any, Protocol

import numpy as np

from coevo.tasks.task import Task


class EnvSlots(Protocol):
    """N episodes side by side; each slot has its own task."""

    num_slots: int

    def reset_slot(self, slot: int, task: Task, seed: int) -> np.ndarray:
        """Start an episode of `task` in `slot` from reset seed `seed`; returns the obs."""
        ...

    def step_slots(
        self, slots: np.ndarray, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, str]]:
        """Step the given slots; returns (obs, rewards, done, errors by position)."""
        ...


class GymSlots:
    """One task-settable gymnasium env per slot; tasks are swapped with `set_task`."""

    def __init__(self, make_env: Any, num_slots: int, discrete: bool):
        self.num_slots = num_slots
        self.envs = [make_env() for _ in range(num_slots)]
        self.discrete = discrete
        shape = self.envs[0].observation_space.shape
        self.obs_dim = int(np.prod(shape))
        self._flat_obs = len(shape) == 1  # flat obs are copied as they come, no reshape
        self._tasks: list[Task | None] = [None] * num_slots

    def reset_slot(self, slot: int, task: Task, seed: int) -> np.ndarray:
        env = self.envs[slot]
        if self._tasks[slot] != task:
            self._tasks[slot] = None  # unknown until set_task succeeds
            env.set_task(task.as_dict())
            self._tasks[slot] = task
        obs, _ = env.reset(seed=seed)
        return np.asarray(obs, dtype=np.float32).ravel()

    def step_slots(
        self, slots: np.ndarray, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, str]]:
        # This loop runs once per env step: plain ints and list lookups, results written
        # straight into preallocated arrays (the env's own step is the cost to approach).
        count = len(slots)
        obs = np.zeros((count, self.obs_dim), dtype=np.float32)
        rewards = [0.0] * count
        done = [False] * count
        errors: dict[int, str] = {}
        envs = self.envs
        flat = self._flat_obs
        # Discrete envs get Python ints; continuous ones a float32 row per slot.
        moves = actions.tolist() if self.discrete else list(actions)
        for position, slot in enumerate(slots.tolist()):
            try:
                ob, reward, terminated, truncated, _ = envs[slot].step(moves[position])
                obs[position] = ob if flat else np.ravel(ob)
            except Exception:  # an env that fails on a task fails that episode only
                errors[position] = traceback.format_exc(limit=3)
                self._tasks[slot] = None
                done[position] = True
                continue
            rewards[position] = reward
            done[position] = terminated or truncated
        return obs, np.array(rewards, dtype=np.float64), np.array(done, dtype=bool), errors
