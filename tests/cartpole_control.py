"""Which CartPole levels can be balanced at all: a model-based controller per level, for tests.

CartPole's task space has no notion of a solvable level, so this stands in for one: the
level's dynamics (gymnasium's, as coevo's CartPoleSlots steps them) linearised about the
upright pole, a discrete LQR gain from them, and the sign of its control as the push left or
right. A level counts as solvable when that controller reaches the space's solved score on
every one of a few seeded episodes: a lower bound (a cleverer controller might balance a few
more), but a pole too short for the force and the 20 ms step falls under any controller.
"""

from __future__ import annotations

import numpy as np

from coevo.tasks.cartpole import CartPoleSlots
from coevo.tasks.task import Task, TaskSpace


def lqr_gains(tasks: list[Task], tau: float = CartPoleSlots.tau) -> np.ndarray:
    """[4, tasks]: each level's discrete LQR gain K (u = -K s, s = [x, x_dot, theta,
    theta_dot]) of its dynamics linearised about the upright pole, Euler-stepped by `tau`."""
    length, masspole, cart, gravity = (
        np.array([task[name] for task in tasks])
        for name in ("pole_length", "pole_mass", "cart_mass", "gravity")
    )
    total = masspole + cart
    lever = length * (4.0 / 3.0 - masspole / total)
    # theta_acc = gravity / lever * theta - force / (total * lever); x_acc follows from it.
    a = np.zeros((len(tasks), 4, 4))
    a[:, 0, 1] = a[:, 2, 3] = 1.0
    a[:, 1, 2] = -masspole * length * gravity / (total * lever)
    a[:, 3, 2] = gravity / lever
    b = np.zeros((len(tasks), 4, 1))
    b[:, 1, 0] = (1.0 + masspole * length / (total * lever)) / total
    b[:, 3, 0] = -1.0 / (total * lever)
    a_d, b_d = np.eye(4) + tau * a, tau * b
    a_t, b_t = a_d.transpose(0, 2, 1), b_d.transpose(0, 2, 1)
    q, r = np.diag([1.0, 1.0, 10.0, 1.0]), 0.01
    p = np.broadcast_to(q, a_d.shape).copy()
    for _ in range(2000):  # the Riccati recursion, every level at once, to its fixed point
        gain = (b_t @ p @ a_d) / (r + b_t @ p @ b_d)
        p = q + a_t @ p @ (a_d - b_d @ gain)
    return ((b_t @ p @ a_d) / (r + b_t @ p @ b_d))[:, 0, :].T


def controller_returns(space: TaskSpace, tasks: list[Task], episodes: int = 3) -> np.ndarray:
    """[tasks, episodes]: the LQR sign controller's return on each level, episodes from the
    reset seeds 0, 1, ... (coevo's own batched CartPole physics)."""
    slots = CartPoleSlots(len(tasks) * episodes)
    pairs = [(task, seed) for task in tasks for seed in range(episodes)]
    gains = np.repeat(lqr_gains(tasks), episodes, axis=1)  # [4, slots], as `pairs`
    for slot, (task, seed) in enumerate(pairs):
        slots.reset_slot(slot, task, seed)
    state, alive = slots.state.copy(), np.ones(len(pairs), bool)
    returns = np.zeros(len(pairs))
    every = np.arange(len(pairs))
    with np.errstate(all="ignore"):  # a fallen pole's state runs off; it no longer counts
        for _ in range(space.max_episode_steps):
            actions = (-(gains * state).sum(axis=0) > 0).astype(np.int64)
            state, rewards, terminated = slots.dynamics(state, slots.consts, actions, every)
            returns += np.where(alive, rewards, 0.0)
            alive &= ~terminated
    return returns.reshape(len(tasks), episodes)


def solvable(space: TaskSpace, tasks: list[Task], episodes: int = 3) -> np.ndarray:
    """[tasks] bool: the controller reaches the space's solved score on every episode."""
    assert space.solved_score is not None
    return (controller_returns(space, tasks, episodes) >= space.solved_score).all(axis=1)
