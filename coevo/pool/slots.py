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

    def __init__(self, make_env: Any, num_slots: int, discrete: bool, env_task: Any = Task.as_dict):
        self.num_slots = num_slots
        self.env_task = env_task  # Task -> what set_task takes (TaskSpace.env_task)
        self.envs = [make_env() for _ in range(num_slots)]
        self.discrete = discrete
        shape = self.envs[0].observation_space.shape
        self.obs_dim = int(np.prod(shape))
        # Bound methods looked up once per episode, not per step (see step_slots).
        self._step = [env.step for env in self.envs]
        self._tasks: list[Task | None] = [None] * num_slots

    def reset_slot(self, slot: int, task: Task, seed: int) -> np.ndarray:
        env = self.envs[slot]
        if self._tasks[slot] != task:
            self._tasks[slot] = None  # unknown until set_task succeeds
            env.set_task(self.env_task(task))
            self._tasks[slot] = task
        obs, _ = env.reset(seed=seed)
        self._step[slot] = env.step  # looked up again per episode: an env may rebind it
        return np.asarray(obs, dtype=np.float32).ravel()

    def step_slots(
        self, slots: np.ndarray, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, str]]:
        # Once per env step, so only list work here: observations, rewards and flags are
        # gathered in lists and turned into arrays once per call (a numpy row assignment per
        # slot cost more than the list appends and one conversion).
        step = self._step
        # Discrete envs get Python ints; continuous ones a float32 row per slot.
        moves = actions.tolist() if self.discrete else list(actions)
        observations: list[Any] = []
        rewards: list[float] = []
        done: list[bool] = []
        errors: dict[int, str] | None = None
        for position, slot in enumerate(slots.tolist()):
            try:
                ob, reward, terminated, truncated, _ = step[slot](moves[position])
            except Exception:  # an env that fails on a task fails that episode only
                errors = errors or {}
                errors[position] = traceback.format_exc(limit=3)
                self._tasks[slot] = None
                ob, reward, terminated, truncated = None, 0.0, True, False
            observations.append(ob)
            rewards.append(reward)
            done.append(terminated or truncated)
        return (
            self._stack(observations),
            np.array(rewards, dtype=np.float64),
            np.array(done, dtype=bool),
            errors or {},
        )

    def _stack(self, observations: list[Any]) -> np.ndarray:
        count = len(observations)
        try:
            stacked = np.array(observations, dtype=np.float32)
        except (TypeError, ValueError):  # a failed slot's None, or ragged observations
            stacked = None
        if stacked is not None and stacked.size == count * self.obs_dim:
            return stacked.reshape(count, self.obs_dim)  # no copy for flat observations
        out = np.zeros((count, self.obs_dim), dtype=np.float32)
        for position, ob in enumerate(observations):
            if ob is not None:
                out[position] = np.ravel(ob)
        return out
