"""Continuous LunarLander whose gravity, wind power and turbulence power are the task.

Wind and turbulence are on whenever their power is above zero. gymnasium rebuilds its Box2D
world at every reset from `self.gravity`, so the task takes effect there.
"""

from __future__ import annotations

from gymnasium.envs.box2d.lunar_lander import LunarLander

from coevo.tasks.protocol import PendingTaskMixin
from coevo.tasks.registry import register
from coevo.tasks.task import Param, TaskSpace


class TaskLunarLander(PendingTaskMixin, LunarLander):
    """gymnasium's LunarLander (continuous actions) with settable gravity and wind."""

    def __init__(self, task: dict[str, float] | None = None):
        super().__init__(continuous=True, enable_wind=False, wind_power=0.0, turbulence_power=0.0)
        self._task = {
            "gravity": self.gravity,
            "wind_power": self.wind_power,
            "turbulence_power": self.turbulence_power,
        }
        if task:
            self.set_task(task)
            self._apply_pending_task()

    def _apply_task(self, task: dict[str, float]) -> None:
        if not -12.0 < task["gravity"] < 0.0:  # gymnasium's own rule for its constructor
            raise ValueError(f"gravity must be in (-12, 0), got {task['gravity']:g}")
        self.gravity = task["gravity"]
        self.wind_power = task["wind_power"]
        self.turbulence_power = task["turbulence_power"]
        self.enable_wind = self.wind_power > 0 or self.turbulence_power > 0


@register("lunar_lander")
def lunar_lander() -> TaskSpace:
    """The task space of LunarLander: gravity, wind and turbulence."""
    return TaskSpace(
        name="lunar_lander",
        params=(
            Param("gravity", low=-11.9, high=-1.0, init=-10.0, step=0.8, round_to=0.1),
            Param("wind_power", low=0.0, high=20.0, init=0.0, step=1.5, round_to=0.1),
            Param("turbulence_power", low=0.0, high=2.0, init=0.0, step=0.15, round_to=0.01),
        ),
        make_env=TaskLunarLander,
        max_episode_steps=1000,
        solved_score=200.0,
    )
