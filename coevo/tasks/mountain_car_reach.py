"""MountainCar as a sparse-reward reaching task: the goal position is the task.

gymnasium's continuous MountainCar physics (engine `power`, speed limit 0.07), but the
reward is -1 per step until the car is at or past `goal_position` moving right (which ends
the episode), as in gymnasium's discrete MountainCar: the return is minus the episode's
length, and a policy that never reaches the goal sees a flat -999 whatever it does.
With a weak engine a goal just right of the valley takes one small swing (or none, from
some starts), and each further goal more energy pumped into the swing: the same skill, done
better, so near goals are stepping stones to far ones (experiments/stepping_stones).

Observations are scaled into [-1, 1] (position over the track, velocity over the speed
limit): gymnasium's raw velocity is within +-0.07, too small for an MLP's inputs to use.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from gymnasium import spaces

from coevo.tasks.mountain_car import MountainCarContinuousSlots, TaskMountainCarContinuous
from coevo.tasks.registry import register
from coevo.tasks.task import Param, TaskSpace

MAX_SPEED = 0.07  # gymnasium's speed limit, fixed here (the scaling of velocity uses it)
# The track [-1.2, 0.6] maps onto [-1, 1].
POSITION_CENTRE = -0.3
POSITION_HALF_RANGE = 0.9


def scaled_observation(state: np.ndarray) -> np.ndarray:
    """Observations [n, 2] float32 of (position, velocity) columns [2, n], in [-1, 1]."""
    state = np.asarray(state, dtype=np.float64)
    position = (state[0] - POSITION_CENTRE) / POSITION_HALF_RANGE
    return np.stack([position, state[1] / MAX_SPEED], axis=-1).astype(np.float32)


class TaskMountainCarReach(TaskMountainCarContinuous):
    """gymnasium's continuous MountainCar with settable engine power and goal position,
    reward -1 per step and scaled observations; the task applies at the next reset."""

    def __init__(self, task: dict[str, float] | None = None):
        super().__init__()
        self._task = {"power": self.power, "goal_position": self.goal_position}
        one = np.ones(2, dtype=np.float32)
        self.observation_space = spaces.Box(low=-one, high=one, dtype=np.float32)
        if task:
            self.set_task(task)
            self._apply_pending_task()

    def _apply_task(self, task: dict[str, float]) -> None:
        self.power = task["power"]
        self.goal_position = task["goal_position"]

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Reset; the observation is the state scaled to [-1, 1]."""
        _, info = super().reset(seed=seed, options=options)
        return scaled_observation(self.state), info

    def step(self, action):
        """Step; the observation is scaled and every step's reward is -1."""
        _, _, terminated, truncated, info = super().step(action)
        return scaled_observation(self.state), -1.0, terminated, truncated, info


class MountainCarReachSlots(MountainCarContinuousSlots):
    """N MountainCarReach episodes in numpy: MountainCarContinuousSlots' physics with the
    speed limit fixed, reward -1 per step and the same scaled observations as the env."""

    param_names = ("power", "goal_position")

    def constants(self, task: Mapping[str, float]) -> tuple[float, ...]:
        """The task's power, the max speed and the goal position."""
        return (task["power"], MAX_SPEED, task["goal_position"])

    def observe(self, state: np.ndarray) -> np.ndarray:
        """The states scaled to [-1, 1]."""
        return scaled_observation(state)

    def dynamics(
        self, state: np.ndarray, consts: np.ndarray, actions: np.ndarray, slots: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The continuous car's step with a reward of -1 per step."""
        new, _, terminated = super().dynamics(state, consts, actions, slots)
        return new, np.full(terminated.shape, -1.0), terminated


@register("mountain_car_reach")
def mountain_car_reach() -> TaskSpace:
    """The task space of MountainCarReach: engine power and goal position."""
    return TaskSpace(
        name="mountain_car_reach",
        params=(
            # gymnasium's power is 0.0015; below ~0.0006 a random MLP policy (almost) never
            # reaches the hilltop in 999 steps, while pumping along the velocity still does.
            Param("power", low=0.0003, high=0.0015, init=0.0015, step=0.0001, round_to=0.00001),
            # From just right of the valley (-0.52) to near the right end of the track (0.6).
            Param("goal_position", low=-0.4, high=0.5, init=0.45, step=0.05, round_to=0.01),
        ),
        make_env=TaskMountainCarReach,
        max_episode_steps=999,
        # Mastered: a mean return >= -500, the goal reached within half the horizon on
        # average; as a failed episode costs -999, that needs the goal in >= ~70 % of episodes
        # even at the speed of pumping along the velocity (~300 steps at the weakest engines).
        solved_score=-500.0,
        make_slots=MountainCarReachSlots,
    )
