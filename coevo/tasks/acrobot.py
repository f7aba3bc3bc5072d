"""Acrobot whose link lengths, link masses and motor torque are the task.

A link's centre of mass stays at its middle (gymnasium's default links are 1 m with the
centre at 0.5 m), so changing a length changes the dynamics consistently. gymnasium's
termination test uses unit link lengths whatever these are; we keep that rule.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from gymnasium.envs.classic_control.acrobot import AcrobotEnv

from coevo.tasks.batched import BatchedSlots
from coevo.tasks.protocol import PendingTaskMixin
from coevo.tasks.registry import register
from coevo.tasks.task import Param, TaskSpace


class TaskAcrobot(PendingTaskMixin, AcrobotEnv):
    """gymnasium's Acrobot with settable physics; the task applies at the next reset."""

    def __init__(self, task: dict[str, float] | None = None):
        super().__init__()
        self._task = {
            "link_length_1": self.LINK_LENGTH_1,
            "link_length_2": self.LINK_LENGTH_2,
            "link_mass_1": self.LINK_MASS_1,
            "link_mass_2": self.LINK_MASS_2,
            "torque": float(self.AVAIL_TORQUE[2]),
        }
        if task:
            self.set_task(task)
            self._apply_pending_task()

    def _apply_task(self, task: dict[str, float]) -> None:
        # Instance attributes shadow AcrobotEnv's class constants, which _dsdt reads.
        self.LINK_LENGTH_1 = task["link_length_1"]
        self.LINK_LENGTH_2 = task["link_length_2"]
        self.LINK_COM_POS_1 = task["link_length_1"] / 2
        self.LINK_COM_POS_2 = task["link_length_2"] / 2
        self.LINK_MASS_1 = task["link_mass_1"]
        self.LINK_MASS_2 = task["link_mass_2"]
        self.AVAIL_TORQUE = [-task["torque"], 0.0, task["torque"]]


class AcrobotSlots(BatchedSlots):
    """N Acrobot episodes in numpy (RK4, 'book' dynamics); same arithmetic as gymnasium."""

    param_names = ("link_length_1", "link_length_2", "link_mass_1", "link_mass_2", "torque")
    state_size = 4
    num_consts = 14
    dt = 0.2
    moment_of_inertia = 1.0
    gravity = 9.8
    max_vel_1 = 4 * math.pi
    max_vel_2 = 9 * math.pi

    def constants(self, task: Mapping[str, float]) -> tuple[float, ...]:
        """The parameter-only terms of the Acrobot's equations, in `dynamics`' order."""
        # Each is a parameter-only subexpression of AcrobotEnv._dsdt, in its evaluation order.
        m1, m2 = task["link_mass_1"], task["link_mass_2"]
        l1 = task["link_length_1"]
        lc1, lc2 = task["link_length_1"] / 2, task["link_length_2"] / 2
        inertia, g = self.moment_of_inertia, self.gravity
        return (
            m1 * lc1**2,  # d1 head
            m2,
            l1**2 + lc2**2,
            2 * l1 * lc2,
            inertia,
            lc2**2,  # d2
            l1 * lc2,
            m2 * lc2 * g,  # phi2
            -m2 * l1 * lc2,  # phi1
            2 * m2 * l1 * lc2,
            (m1 * lc1 + m2 * l1) * g,
            m2 * l1 * lc2,  # ddtheta2
            m2 * lc2**2 + inertia,
            task["torque"],
        )

    def initial_state(self, rng: np.random.Generator) -> np.ndarray:
        """Four angles and velocities drawn in [-0.1, 0.1], as gymnasium draws them."""
        return rng.uniform(low=-0.1, high=0.1, size=(4,)).astype(np.float32)

    def observe(self, state: np.ndarray) -> np.ndarray:
        """The states as (cos, sin) of both angles and both velocities."""
        s0, s1, s2, s3 = state
        return np.stack([np.cos(s0), np.sin(s0), np.cos(s1), np.sin(s1), s2, s3], axis=1).astype(
            np.float32
        )

    def initial_observation(self, state: np.ndarray) -> np.ndarray:
        """The first observation, from the float32 reset state as gymnasium computes it."""
        # gymnasium's reset state is float32, so its first cos/sin are float32 ones.
        return self.observe(state.astype(np.float32))

    def _derivs(self, s: np.ndarray, torque: np.ndarray, c: np.ndarray) -> np.ndarray:
        theta1, theta2, dtheta1, dtheta2 = s
        m1_lc1_sq, m2, l1_sq_lc2_sq, two_l1_lc2, inertia, lc2_sq, l1_lc2 = c[:7]
        m2_lc2_g, neg_m2_l1_lc2, two_m2_l1_lc2, phi1_g, m2_l1_lc2, ddtheta2_den = c[7:13]
        cos2, sin2 = np.cos(theta2), np.sin(theta2)
        d1 = m1_lc1_sq + m2 * (l1_sq_lc2_sq + two_l1_lc2 * cos2) + inertia + inertia
        d2 = m2 * (lc2_sq + l1_lc2 * cos2) + inertia
        phi2 = m2_lc2_g * np.cos(theta1 + theta2 - math.pi / 2.0)
        phi1 = (
            neg_m2_l1_lc2 * dtheta2**2 * sin2
            - two_m2_l1_lc2 * dtheta2 * dtheta1 * sin2
            + phi1_g * np.cos(theta1 - math.pi / 2)
            + phi2
        )
        ddtheta2 = (torque + d2 / d1 * phi1 - m2_l1_lc2 * dtheta1**2 * sin2 - phi2) / (
            ddtheta2_den - d2**2 / d1
        )
        ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
        return np.stack([dtheta1, dtheta2, ddtheta1, ddtheta2])

    def dynamics(
        self, state: np.ndarray, consts: np.ndarray, actions: np.ndarray, slots: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One RK4 step of every given slot: new states, rewards and terminations."""
        torque_mag = consts[13]
        torque = np.where(actions == 0, -torque_mag, np.where(actions == 2, torque_mag, 0.0))
        # One RK4 step over [0, dt]; the torque is constant over the step.
        dt = self.dt - 0
        half = dt / 2.0
        k1 = self._derivs(state, torque, consts)
        k2 = self._derivs(state + half * k1, torque, consts)
        k3 = self._derivs(state + half * k2, torque, consts)
        k4 = self._derivs(state + dt * k3, torque, consts)
        new = state + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        new[0] = _wrap(new[0], -math.pi, math.pi)
        new[1] = _wrap(new[1], -math.pi, math.pi)
        new[2] = np.minimum(np.maximum(new[2], -self.max_vel_1), self.max_vel_1)
        new[3] = np.minimum(np.maximum(new[3], -self.max_vel_2), self.max_vel_2)
        terminated = -np.cos(new[0]) - np.cos(new[1] + new[0]) > 1.0
        rewards = np.where(terminated, 0.0, -1.0)
        return new, rewards, terminated


def _wrap(x: np.ndarray, low: float, high: float) -> np.ndarray:
    """gymnasium's `wrap`: shift by the period until inside [low, high]."""
    period = high - low
    while np.any(x > high):
        x = np.where(x > high, x - period, x)
    while np.any(x < low):
        x = np.where(x < low, x + period, x)
    return x


@register("acrobot")
def acrobot() -> TaskSpace:
    """The task space of Acrobot: link lengths, masses and torque."""
    return TaskSpace(
        name="acrobot",
        params=(
            Param("link_length_1", low=0.5, high=2.0, init=1.0, step=0.15, round_to=0.01),
            Param("link_length_2", low=0.5, high=2.0, init=1.0, step=0.15, round_to=0.01),
            Param("link_mass_1", low=0.5, high=2.0, init=1.0, step=0.15, round_to=0.01),
            Param("link_mass_2", low=0.5, high=2.0, init=1.0, step=0.15, round_to=0.01),
            Param("torque", low=0.5, high=2.0, init=1.0, step=0.15, round_to=0.01),
        ),
        make_env=TaskAcrobot,
        max_episode_steps=500,
        solved_score=-100.0,
        make_slots=AcrobotSlots,
    )
