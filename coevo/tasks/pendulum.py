"""Pendulum whose gravity, mass and length are the task."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from gymnasium.envs.classic_control.pendulum import PendulumEnv

from coevo.tasks.batched import BatchedSlots
from coevo.tasks.protocol import PendingTaskMixin
from coevo.tasks.registry import register
from coevo.tasks.task import Param, TaskSpace


class TaskPendulum(PendingTaskMixin, PendulumEnv):
    """gymnasium's Pendulum with settable physics; the task applies at the next reset."""

    def __init__(self, task: dict[str, float] | None = None):
        super().__init__()
        self._task = {"gravity": self.g, "mass": self.m, "length": self.l}
        if task:
            self.set_task(task)
            self._apply_pending_task()

    def _apply_task(self, task: dict[str, float]) -> None:
        self.g = task["gravity"]
        self.m = task["mass"]
        self.l = task["length"]


class PendulumSlots(BatchedSlots):
    """N Pendulum episodes in numpy, each with its own physics; same arithmetic as gymnasium.

    gymnasium computes the torque terms in float32 (the action is float32 and Python floats
    adopt its type), the rest in float64; so does this.
    """

    param_names = ("gravity", "mass", "length")
    state_size = 2
    num_consts = 2  # 3 g / (2 l), 3 / (m l^2)
    max_speed = 8
    max_torque = 2.0
    dt = 0.05

    def constants(self, task: Mapping[str, float]) -> tuple[float, ...]:
        """The gravity term and torque coefficient of the task."""
        g, m, length = task["gravity"], task["mass"], task["length"]
        return (3 * g / (2 * length), 3.0 / (m * length**2))

    def initial_state(self, rng: np.random.Generator) -> np.ndarray:
        """An angle in [-pi, pi] and velocity in [-1, 1], as gymnasium draws them."""
        high = np.array([np.pi, 1.0])
        return rng.uniform(low=-high, high=high)

    def observe(self, state: np.ndarray) -> np.ndarray:
        """The states as (cos, sin, angular velocity)."""
        th, thdot = state
        return np.stack([np.cos(th), np.sin(th), thdot], axis=1).astype(np.float32)

    def dynamics(
        self, state: np.ndarray, consts: np.ndarray, actions: np.ndarray, slots: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One step of every given slot: new states, rewards and terminations."""
        th, thdot = state
        gravity_term, torque_coef = consts
        u = np.clip(actions[:, 0].astype(np.float32), -self.max_torque, self.max_torque)
        normalized = ((th + np.pi) % (2 * np.pi)) - np.pi
        costs = normalized**2 + 0.1 * thdot**2 + 0.001 * (u**2)
        torque = torque_coef.astype(np.float32) * u
        newthdot = thdot + (gravity_term * np.sin(th) + torque) * self.dt
        newthdot = np.clip(newthdot, -self.max_speed, self.max_speed)
        newth = th + newthdot * self.dt
        return np.stack([newth, newthdot]), -costs, np.zeros(state.shape[1], dtype=bool)


@register("pendulum")
def pendulum() -> TaskSpace:
    """The task space of Pendulum: gravity, mass and length."""
    return TaskSpace(
        name="pendulum",
        params=(
            Param("gravity", low=2.0, high=20.0, init=10.0, step=1.5, round_to=0.1),
            Param("mass", low=0.2, high=3.0, init=1.0, step=0.2, round_to=0.01),
            Param("length", low=0.3, high=2.0, init=1.0, step=0.15, round_to=0.01),
        ),
        make_env=TaskPendulum,
        max_episode_steps=200,
        solved_score=-200.0,
        make_slots=PendulumSlots,
    )
