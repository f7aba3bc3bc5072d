"""CartPole whose physics (pole length, masses, force, gravity) is the task."""

from __future__ import annotations

from gymnasium.envs.classic_control.cartpole import CartPoleEnv

from coevo.tasks.protocol import PendingTaskMixin
from coevo.tasks.registry import register
from coevo.tasks.task import Param, TaskSpace


class TaskCartPole(PendingTaskMixin, CartPoleEnv):
    """gymnasium's CartPole with settable physics; the task applies at the next reset."""

    def __init__(self, task: dict[str, float] | None = None):
        super().__init__()
        self._task = {
            "pole_length": self.length,
            "pole_mass": self.masspole,
            "cart_mass": self.masscart,
            "force_mag": self.force_mag,
            "gravity": self.gravity,
        }
        if task:
            self.set_task(task)
            self._apply_pending_task()

    def _apply_task(self, task: dict[str, float]) -> None:
        self.length = task["pole_length"]
        self.masspole = task["pole_mass"]
        self.masscart = task["cart_mass"]
        self.force_mag = task["force_mag"]
        self.gravity = task["gravity"]
        # Derived quantities CartPoleEnv computes once in __init__.
        self.total_mass = self.masspole + self.masscart
        self.polemass_length = self.masspole * self.length

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self._apply_pending_task()
        return super().reset(seed=seed, options=options)


@register("cartpole")
def cartpole() -> TaskSpace:
    return TaskSpace(
        name="cartpole",
        params=(
            Param("pole_length", low=0.05, high=2.0, init=0.5, step=0.3, round_to=0.01),
            Param("pole_mass", low=0.02, high=1.0, init=0.1, step=0.1, round_to=0.01),
            Param("cart_mass", low=0.2, high=5.0, init=1.0, step=0.6, round_to=0.01),
            Param("force_mag", low=2.0, high=30.0, init=10.0, step=3.0, round_to=0.1),
            Param("gravity", low=2.0, high=30.0, init=9.8, step=3.0, round_to=0.1),
        ),
        make_env=TaskCartPole,
        max_episode_steps=500,
        solved_score=475.0,
    )
