"""Acrobot whose goal height is a task parameter too: a sparse-reward reaching task.

gymnasium's Acrobot ends an episode (reward 0 instead of -1) once the tip's height above the
pivot, -cos(θ1) - cos(θ1 + θ2) in units of gymnasium's fixed 1 m links, exceeds 1.0. Here that
height is `goal_height`: near -2 (hanging) any motion reaches it, near 2 (upright) only a
policy that pumps a lot of energy into the swing does, and until it does every step costs
-1 alike, so a policy trained on a high goal from scratch sees no difference between its
perturbations. How high the tip gets rises with how well the policy pumps, so lower goals
are stepping stones to higher ones (experiments/stepping_stones).
"""

from __future__ import annotations

from collections.abc import Mapping
from math import cos

import numpy as np

from coevo.tasks.acrobot import AcrobotSlots, TaskAcrobot, acrobot
from coevo.tasks.registry import register
from coevo.tasks.task import Param, TaskSpace

GYMNASIUM_GOAL_HEIGHT = 1.0


class TaskAcrobotReach(TaskAcrobot):
    """gymnasium's Acrobot with settable physics and goal height; applies at the next reset."""

    def __init__(self, task: dict[str, float] | None = None):
        self.goal_height = GYMNASIUM_GOAL_HEIGHT
        super().__init__(task)
        self._task["goal_height"] = self.goal_height

    def _apply_task(self, task: dict[str, float]) -> None:
        super()._apply_task(task)
        self.goal_height = task["goal_height"]

    def _terminal(self) -> bool:
        s = self.state
        assert s is not None, "Call reset before using AcrobotEnv object."
        return bool(-cos(s[0]) - cos(s[1] + s[0]) > self.goal_height)


class AcrobotReachSlots(AcrobotSlots):
    """AcrobotSlots with a per-slot goal height (the last constant)."""

    param_names = (*AcrobotSlots.param_names, "goal_height")
    num_consts = AcrobotSlots.num_consts + 1

    def constants(self, task: Mapping[str, float]) -> tuple[float, ...]:
        """Acrobot's constants, then the goal height."""
        return (*super().constants(task), task["goal_height"])

    def dynamics(
        self, state: np.ndarray, consts: np.ndarray, actions: np.ndarray, slots: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Acrobot's step, ending when the tip rises above the goal height (reward -1 per step)."""
        new, _, _ = super().dynamics(state, consts[:-1], actions, slots)
        terminated = -np.cos(new[0]) - np.cos(new[1] + new[0]) > consts[-1]
        return new, np.where(terminated, 0.0, -1.0), terminated


@register("acrobot_reach")
def acrobot_reach() -> TaskSpace:
    """The task space of AcrobotReach: Acrobot's parameters and the goal height."""
    base = acrobot()
    return TaskSpace(
        name="acrobot_reach",
        params=(
            *base.params,
            Param("goal_height", low=-1.0, high=1.9, init=1.0, step=0.1, round_to=0.01),
        ),
        make_env=TaskAcrobotReach,
        max_episode_steps=base.max_episode_steps,
        solved_score=base.solved_score,
        make_slots=AcrobotReachSlots,
    )
