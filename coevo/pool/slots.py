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
        self._tasks: list[Task | None] = [None] * num_slots

    def reset_slot(self, slot: int, task: Task, seed: int) -> np.ndarray:
        env = self.envs[slot]
        if self._tasks[slot] != task:
            self._tasks[slot] = None  # unknown until set_task succeeds
            env.set_task(task.as_dict())
            self._tasks[slot] = task
        obs, _ = env.reset(seed=seed)
        return np.asarray(obs, dtype=np.float32).ravel()

    def step_slots(self, slots, actions):
        obs = []
        rewards = np.zeros(len(slots))
        done = np.zeros(len(slots), dtype=bool)
        errors: dict[int, str] = {}
        for position, (slot, action) in enumerate(zip(slots, actions, strict=True)):
            try:
                ob, reward, terminated, truncated, _ = self.envs[slot].step(
                    int(action) if self.discrete else action
                )
            except Exception:  # an env that fails on a task fails that episode only
                errors[position] = traceback.format_exc(limit=3)
                self._tasks[slot] = None
                obs.append(None)
                done[position] = True
                continue
            obs.append(np.asarray(ob, dtype=np.float32).ravel())
            rewards[position] = reward
            done[position] = terminated or truncated
        if errors:
            width = next((o.size for o in obs if o is not None), 0)
            obs = [o if o is not None else np.zeros(width, np.float32) for o in obs]
        return np.stack(obs) if obs else np.zeros((0, 0), np.float32), rewards, done, errors
