"""Pendulum whose gravity, mass and length are the task."""

from __future__ import annotations

from gymnasium.envs.classic_control.pendulum import PendulumEnv

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

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self._apply_pending_task()
        return super().reset(seed=seed, options=options)


@register("pendulum")
def pendulum() -> TaskSpace:
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
    )
