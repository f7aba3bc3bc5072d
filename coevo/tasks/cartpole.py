"""CartPole whose physics (pole length, masses, force, gravity) is the task."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from gymnasium.envs.classic_control.cartpole import CartPoleEnv

from coevo.tasks.batched import BatchedSlots
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


class CartPoleSlots(BatchedSlots):
    """N CartPole episodes in numpy, each with its own physics; same arithmetic as gymnasium."""

    param_names = ("pole_length", "pole_mass", "cart_mass", "force_mag", "gravity")
    state_size = 4
    # length, masspole, total_mass, polemass_length, force_mag, -force_mag, gravity
    num_consts = 7
    tau = 0.02
    x_threshold = 2.4
    theta_threshold = 12 * 2 * math.pi / 360

    def constants(self, task: Mapping[str, float]) -> tuple[float, ...]:
        """The task's constants, in the order `dynamics` reads them."""
        length, masspole, masscart = task["pole_length"], task["pole_mass"], task["cart_mass"]
        total_mass = masspole + masscart  # as TaskCartPole._apply_task computes them
        force = task["force_mag"]
        return (length, masspole, total_mass, masspole * length, force, -force, task["gravity"])

    def initial_state(self, rng: np.random.Generator) -> np.ndarray:
        """Four state values drawn in [-0.05, 0.05], as gymnasium draws them."""
        return rng.uniform(low=-0.05, high=0.05, size=(4,))

    def observe(self, state: np.ndarray) -> np.ndarray:
        """The states as float32 observations."""
        return state.T.astype(np.float32)

    def dynamics(
        self, state: np.ndarray, consts: np.ndarray, actions: np.ndarray, slots: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One step of every given slot: new states, rewards and terminations."""
        # Fewer, larger numpy calls where the bits allow it: numpy's per-call cost is what
        # a small batch pays for.
        x_dot, theta, theta_dot = state[1], state[2], state[3]
        length, masspole, total_mass, polemass_length, push, pull, gravity = consts
        force = np.where(actions == 1, push, pull)
        costheta = np.cos(theta)
        sintheta = np.sin(theta)
        temp = (force + polemass_length * np.square(theta_dot) * sintheta) / total_mass
        rates = np.empty_like(state)
        rates[0] = x_dot
        rates[2] = theta_dot
        rates[3] = (gravity * sintheta - costheta * temp) / (
            length * (4.0 / 3.0 - masspole * np.square(costheta) / total_mass)
        )
        rates[1] = temp - polemass_length * rates[3] * costheta / total_mass
        new = state + self.tau * rates  # Euler, as gymnasium's default integrator
        # |x| > t is gymnasium's x < -t or x > t (NaN fails both).
        terminated = (np.abs(new[0]) > self.x_threshold) | (np.abs(new[2]) > self.theta_threshold)
        return new, np.ones(state.shape[1]), terminated


@register("cartpole")
def cartpole() -> TaskSpace:
    """The task space of CartPole: pole length and mass, cart mass, force and gravity."""
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
        make_slots=CartPoleSlots,
    )
