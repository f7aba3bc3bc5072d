"""Continuous MountainCar whose engine power, speed limit and goal position are the task."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from gymnasium.envs.classic_control.continuous_mountain_car import Continuous_MountainCarEnv

from coevo.tasks.batched import BatchedSlots
from coevo.tasks.protocol import PendingTaskMixin
from coevo.tasks.registry import register
from coevo.tasks.task import Param, TaskSpace


class TaskMountainCarContinuous(PendingTaskMixin, Continuous_MountainCarEnv):
    """gymnasium's continuous MountainCar with settable physics; applies at the next reset."""

    def __init__(self, task: dict[str, float] | None = None):
        super().__init__()
        self._task = {
            "power": self.power,
            "max_speed": self.max_speed,
            "goal_position": self.goal_position,
        }
        if task:
            self.set_task(task)
            self._apply_pending_task()

    def _apply_task(self, task: dict[str, float]) -> None:
        self.power = task["power"]
        self.max_speed = task["max_speed"]
        self.goal_position = task["goal_position"]


class MountainCarContinuousSlots(BatchedSlots):
    """N continuous MountainCar episodes in numpy; same arithmetic as gymnasium.

    gymnasium keeps the state in float32 after the first step, but the first step starts from
    a float64 position: Python constants then adopt float64 in the first step and float32
    after it. Slots at their first step take the float64 path, the others the float32 one.
    Actions are assumed inside [-1, 1] (the policy's tanh head guarantees it).
    """

    param_names = ("power", "max_speed", "goal_position")
    state_size = 2
    num_consts = 3  # power, max_speed, goal_position
    slot_arrays = ("first_step",)
    min_position = -1.2
    max_position = 0.6
    goal_velocity = 0.0

    def __init__(self, num_slots: int):
        super().__init__(num_slots)
        self.first_step = np.zeros(num_slots, dtype=bool)

    def constants(self, task: Mapping[str, float]) -> tuple[float, ...]:
        """The task's power, max speed and goal position."""
        return (task["power"], task["max_speed"], task["goal_position"])

    def initial_state(self, rng: np.random.Generator) -> np.ndarray:
        """A start position in [-0.6, -0.4] at rest, as gymnasium draws it."""
        return np.array([rng.uniform(low=-0.6, high=-0.4), 0.0])

    def on_reset(self, slot: int) -> None:
        """Mark the slot's next step as its episode's first."""
        self.first_step[slot] = True

    def observe(self, state: np.ndarray) -> np.ndarray:
        """The states as float32 observations."""
        return state.T.astype(np.float32)

    def dynamics(
        self, state: np.ndarray, consts: np.ndarray, actions: np.ndarray, slots: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One step of every given slot: new states, rewards and terminations."""
        power, max_speed, goal_position = consts
        force = np.clip(actions[:, 0].astype(np.float32), -1.0, 1.0)
        push = force * power.astype(np.float32)  # float32 * Python float stays float32
        position, velocity, terminated = self._path(
            state, push, max_speed, goal_position, np.float32
        )
        first = np.flatnonzero(self.first_step[slots])
        if first.size:  # episodes at their first step take the float64 path
            wide = self._path(
                state[:, first], push[first], max_speed[first], goal_position[first], np.float64
            )
            position[first], velocity[first], terminated[first] = wide
            self.first_step[slots[first]] = False
        action64 = actions[:, 0].astype(np.float64)
        rewards = np.where(terminated, 100.0, 0.0) - action64 * action64 * 0.1
        new = np.stack([position, velocity]).astype(np.float32).astype(np.float64)
        return new, rewards, terminated

    def _path(
        self,
        state: np.ndarray,
        push: np.ndarray,
        max_speed: np.ndarray,
        goal_position: np.ndarray,
        dtype: type,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """gymnasium's step with position/velocity of `dtype` (constants adopt that dtype)."""
        position = state[0].astype(dtype)
        velocity = state[1].astype(dtype)
        hill = 0.0025 * np.cos((3 * position).astype(np.float64))
        velocity = velocity + (push - hill.astype(np.float32)).astype(dtype)
        limit = max_speed.astype(dtype)
        velocity = np.minimum(np.maximum(velocity, -limit), limit)
        position = position + velocity
        low, high = np.asarray(self.min_position, dtype), np.asarray(self.max_position, dtype)
        position = np.minimum(np.maximum(position, low), high)
        velocity = np.where((position == low) & (velocity < 0), dtype(0), velocity)
        terminated = (position >= goal_position.astype(dtype)) & (
            velocity >= dtype(self.goal_velocity)
        )
        return position.astype(np.float64), velocity.astype(np.float64), terminated


@register("mountain_car_continuous")
def mountain_car_continuous() -> TaskSpace:
    """The task space of MountainCarContinuous: power, max speed and goal position."""
    return TaskSpace(
        name="mountain_car_continuous",
        params=(
            Param("power", low=0.0005, high=0.003, init=0.0015, step=0.0002, round_to=0.00001),
            Param("max_speed", low=0.04, high=0.1, init=0.07, step=0.005, round_to=0.001),
            Param("goal_position", low=0.2, high=0.55, init=0.45, step=0.03, round_to=0.01),
        ),
        make_env=TaskMountainCarContinuous,
        max_episode_steps=999,
        solved_score=90.0,
        make_slots=MountainCarContinuousSlots,
    )
