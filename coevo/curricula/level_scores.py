"""PLR level scores: how much a level still has to teach the current policy.

`positive_value_loss` and `max_mc` are the two scores of Jiang et al. 2021 (Replay-Guided
Adversarial Environment Design); both need the value predictions of an actor-critic along the
episode. `return_regret` is coevo's stand-in for black-box optimizers (ES, ARS), which have no
critic: see its docstring. A curriculum names its score in config (`plr.score`).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

import numpy as np


class LevelScore(StrEnum):
    POSITIVE_VALUE_LOSS = "positive_value_loss"
    MAX_MC = "max_mc"
    RETURN_REGRET = "return_regret"

    @property
    def needs_values(self) -> bool:
        return self is not LevelScore.RETURN_REGRET


def gae_advantages(
    rewards: Sequence[float],
    values: Sequence[float],
    last_value: float,
    gamma: float,
    gae_lambda: float,
) -> np.ndarray:
    """Generalised advantage estimates of one episode (or episode fragment).

    `last_value` bootstraps the step after the last: 0 when the episode terminated, V(s_T)
    when it was truncated.
    """
    r = np.asarray(rewards, dtype=float)
    v = np.append(np.asarray(values, dtype=float), float(last_value))
    advantages = np.zeros(len(r))
    running = 0.0
    for t in range(len(r) - 1, -1, -1):
        delta = r[t] + gamma * v[t + 1] - v[t]
        running = delta + gamma * gae_lambda * running
        advantages[t] = running
    return advantages


def positive_value_loss(
    rewards: Sequence[float],
    values: Sequence[float],
    last_value: float,
    gamma: float,
    gae_lambda: float,
) -> float:
    """(1/T) Σ_t max(Â_t, 0) with Â the GAE advantages (the paper's and dcd's default score)."""
    if len(rewards) == 0:
        return float("nan")
    advantages = gae_advantages(rewards, values, last_value, gamma, gae_lambda)
    return float(np.clip(advantages, 0.0, None).mean())


def stream_advantages(
    rewards: Sequence[float],
    values: Sequence[float],
    next_values: Sequence[float],
    terminated: Sequence[bool],
    truncated: Sequence[bool],
    gamma: float,
    gae_lambda: float,
) -> np.ndarray:
    """GAE over a stream of steps that may hold several episodes (a PPO rollout stream).

    After step t the next value is 0 if the episode terminated there, `next_values[t]` if it
    was truncated there or t is the stream's last step (the bootstrap), else `values[t+1]`;
    advantages do not flow back across an episode's end.
    """
    r = np.asarray(rewards, dtype=float)
    v = np.asarray(values, dtype=float)
    n = len(r)
    advantages = np.zeros(n)
    running = 0.0
    for t in range(n - 1, -1, -1):
        last = t == n - 1
        if terminated[t]:
            following = 0.0
        elif truncated[t] or last:
            following = float(next_values[t])
        else:
            following = v[t + 1]
        if terminated[t] or truncated[t] or last:
            running = 0.0
        delta = r[t] + gamma * following - v[t]
        running = delta + gamma * gae_lambda * running
        advantages[t] = running
    return advantages


def trajectory_positive_value_loss(trajectory: object, gamma: float, gae_lambda: float) -> float:
    """`positive_value_loss` of an episode (`rewards`, `values`, optional `last_value`) or of
    a stream (`rewards`, `values`, `next_values`, `terminated`, `truncated`)."""
    if len(trajectory.rewards) == 0:
        return float("nan")
    if hasattr(trajectory, "next_values"):
        advantages = stream_advantages(
            trajectory.rewards,
            trajectory.values,
            trajectory.next_values,
            trajectory.terminated,
            trajectory.truncated,
            gamma,
            gae_lambda,
        )
        return float(np.clip(advantages, 0.0, None).mean())
    return positive_value_loss(
        trajectory.rewards,
        trajectory.values,
        getattr(trajectory, "last_value", 0.0),
        gamma,
        gae_lambda,
    )


def max_mc(values: Sequence[float], max_return: float) -> float:
    """(1/T) Σ_t (R_max - V(s_t)), R_max the highest return ever reached on this level."""
    v = np.asarray(values, dtype=float)
    if v.size == 0 or not np.isfinite(max_return):
        return float("nan")
    return float((max_return - v).mean())


def return_regret(level_return: float, best_return: float) -> float:
    """Estimated regret without a critic: best_return - level_return, at least 0.

    `best_return` is the best mean return the policy has reached on any level so far in the
    run: a stand-in for the level's optimal return, which black-box training cannot estimate
    per level. Under rank prioritisation this orders levels by their current return, lowest
    first. Its blind spot: a level no policy can solve looks as valuable as one it is about to
    learn (the value-based scores share it less).
    """
    if not np.isfinite(level_return):
        return float("nan")
    if not np.isfinite(best_return):
        return 0.0
    return float(max(best_return - level_return, 0.0))
