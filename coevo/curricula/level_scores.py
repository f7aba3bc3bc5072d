"""Level scores: how much a level still has to teach the current policy.

A small registry (`LevelScore`, `SCORES`): each score's function cites its source. A
curriculum names its score in config (`curriculum.score`); `score_fallback` is used when the
optimizer has no critic (ES, ARS).

- `positive_value_loss`, `max_mc`: Jiang et al. 2021 (Replay-Guided Adversarial Environment
  Design) and facebookresearch/dcd `level_replay/level_sampler.py`. Both need the value
  predictions of an actor-critic; GAE uses the learner's own γ and λ (dcd computes the
  advantages it scores with in the learner's rollout storage: one pair, never a second).
- `learnability`: p(1 - p), p the level's success rate (Rutherford et al. 2024, "No Regrets:
  Investigating and Improving Regret Approximations for Curriculum Discovery"). Needs the
  task space to say what success is (`TaskSpace.solved`, its `solved_score`). The default for
  black-box optimizers.
- `return_regret`: coevo's own critic-free proxy, only when named: it favours unsolvable
  levels (see its docstring).

Per-episode merging (dcd's `_partial_update_seed_score`): an episode cut by a rollout's end
leaves a partial score and its step count; its continuation's score is merged step-weighted
(`merge_partial`) and the whole episode's score then updates the level.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, TypeGuard

import numpy as np

log = logging.getLogger("coevo.curricula")

RETURN_REGRET_WARNING = (
    "curriculum.score=return_regret ranks levels by how far their return falls below the best "
    "return so far: it favours unsolvable levels (lowest return first), whose regret is not "
    "learnable; curriculum.score=learnability (p(1 - p) of the success rate) does not"
)


# Per-step values as a list or an array.
Floats = Sequence[float] | np.ndarray
Flags = Sequence[bool] | np.ndarray


class EpisodeTrace(Protocol):
    """An episode's result as the value scores read it (its `last_value`, when it has one,
    bootstraps the step after its last)."""

    @property
    def rewards(self) -> Floats: ...

    @property
    def values(self) -> Floats: ...


class StreamTrace(EpisodeTrace, Protocol):
    """A stream of steps that may hold several episodes (a PPO rollout stream)."""

    @property
    def next_values(self) -> Floats: ...

    @property
    def terminated(self) -> Flags: ...

    @property
    def truncated(self) -> Flags: ...


def is_stream(trace: EpisodeTrace | StreamTrace) -> TypeGuard[StreamTrace]:
    return hasattr(trace, "next_values")


class LevelScore(StrEnum):
    POSITIVE_VALUE_LOSS = "positive_value_loss"
    MAX_MC = "max_mc"
    LEARNABILITY = "learnability"
    RETURN_REGRET = "return_regret"

    @property
    def needs_values(self) -> bool:
        """Needs per-step value predictions (an actor-critic optimizer)."""
        return self in (LevelScore.POSITIVE_VALUE_LOSS, LevelScore.MAX_MC)

    @property
    def needs_success(self) -> bool:
        """Needs the task space to say which returns solve a level (`TaskSpace.solved`)."""
        return self is LevelScore.LEARNABILITY


def gae_advantages(
    rewards: Floats,
    values: Floats,
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
    rewards: Floats,
    values: Floats,
    last_value: float,
    gamma: float,
    gae_lambda: float,
) -> float:
    """(1/T) Σ_t max(Â_t, 0), Â the GAE advantages with the learner's γ and λ.

    Source: Jiang et al. 2021, eq. "positive value loss"; dcd `_average_positive_value_loss`
    (the default `level_replay_strategy` of its PLR⊥ and ACCEL configs).
    """
    if len(rewards) == 0:
        return float("nan")
    advantages = gae_advantages(rewards, values, last_value, gamma, gae_lambda)
    return float(np.clip(advantages, 0.0, None).mean())


def stream_advantages(
    rewards: Floats,
    values: Floats,
    next_values: Floats,
    terminated: Flags,
    truncated: Flags,
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


def trajectory_positive_value_loss(
    trajectory: EpisodeTrace | StreamTrace, gamma: float, gae_lambda: float
) -> float:
    """`positive_value_loss` of an episode (`rewards`, `values`, optional `last_value`) or of
    a stream (`rewards`, `values`, `next_values`, `terminated`, `truncated`)."""
    if len(trajectory.rewards) == 0:
        return float("nan")
    if is_stream(trajectory):
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


def max_mc(values: Floats, max_return: float) -> float:
    """(1/T) Σ_t (R_max - V(s_t)), R_max the highest return ever reached on this level.

    Source: Jiang et al. 2021 ("MaxMC"); dcd `_average_grounded_signed_value_loss`, whose
    grounded value is the level's highest undiscounted return.
    """
    v = np.asarray(values, dtype=float)
    if v.size == 0 or not np.isfinite(max_return):
        return float("nan")
    return float((max_return - v).mean())


def return_regret(level_return: float, best_return: float) -> float:
    """Estimated regret without a critic: best_return - level_return, at least 0 (coevo's
    own proxy: no paper defines it; used only when named, with `RETURN_REGRET_WARNING`).

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


def learnability(successes: Sequence[bool]) -> float:
    """p(1 - p), p the share of `successes` (one per finished episode on the level).

    Source: Rutherford et al. 2024, "No Regrets" (SFL): highest (0.25) for a level solved
    half the time, 0 for one always or never solved, so unsolvable levels score nothing.
    NaN when no episode finished.
    """
    if len(successes) == 0:
        return float("nan")
    p = float(np.mean(np.asarray(successes, dtype=float)))
    return p * (1.0 - p)


@dataclass(frozen=True)
class Partial:
    """An episode's score so far and its steps (dcd: partial_seed_scores / _steps)."""

    score: float
    steps: int


def merge_partial(partial: Partial | None, score: float, steps: int) -> Partial:
    """The episode's score after `steps` more steps scoring `score`: the step-weighted mean
    of the parts (dcd `_partial_update_seed_score`: partial + (score - partial) * n / N)."""
    if partial is None or partial.steps == 0:
        return Partial(float(score), int(steps))
    total = partial.steps + steps
    if total == 0:
        return partial
    return Partial(partial.score + (score - partial.score) * steps / total, total)


# The registry: each score's function (its docstring says where it comes from).
SCORES: dict[LevelScore, Callable[..., float]] = {
    LevelScore.POSITIVE_VALUE_LOSS: positive_value_loss,
    LevelScore.MAX_MC: max_mc,
    LevelScore.LEARNABILITY: learnability,
    LevelScore.RETURN_REGRET: return_regret,
}


@dataclass(frozen=True)
class EpisodePart:
    """The steps of one episode inside one result: a whole episode, or the part a rollout
    holds of one that began before it (`continued`) or goes on after it (not `finished`)."""

    rewards: np.ndarray
    values: np.ndarray
    next_values: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    finished: bool
    continued: bool

    @property
    def steps(self) -> int:
        return len(self.rewards)


def episode_parts(result: EpisodeTrace | StreamTrace, continued: bool) -> list[EpisodePart]:
    """A result's episodes, split where one terminated or was truncated: an episode result
    (`rewards`, `values`, optional `last_value`) is one finished episode; a stream's last
    part is unfinished unless its last step ended an episode. `continued`: the stream went
    on with an episode of an earlier rollout (its first part)."""
    rewards = np.asarray(result.rewards, dtype=float)
    values = np.asarray(result.values, dtype=float)
    if not is_stream(result):  # one whole episode
        following = np.append(values[1:], float(getattr(result, "last_value", 0.0)))
        going_on = np.zeros(len(rewards), bool)  # its last step bootstraps `last_value`
        return [EpisodePart(rewards, values, following, going_on, going_on, True, False)]
    terminated = np.asarray(result.terminated, bool)
    truncated = np.asarray(result.truncated, bool)
    ends = np.flatnonzero(terminated | truncated)
    parts, start = [], 0
    for stop in [*(int(e) + 1 for e in ends), len(rewards)]:
        if stop <= start:
            continue
        window = slice(start, stop)
        parts.append(
            EpisodePart(
                rewards[window],
                values[window],
                np.asarray(result.next_values, dtype=float)[window],
                terminated[window],
                truncated[window],
                bool(terminated[stop - 1] or truncated[stop - 1]),
                continued and start == 0,
            )
        )
        start = stop
    return parts


def part_positive_value_loss(part: EpisodePart, gamma: float, gae_lambda: float) -> float:
    """`positive_value_loss` of one episode part: its GAE bootstraps the value after its
    last step when the rollout cut it (dcd's returns bootstrap the rollout's next value)."""
    advantages = stream_advantages(
        part.rewards,
        part.values,
        part.next_values,
        part.terminated,
        part.truncated,
        gamma,
        gae_lambda,
    )
    return float(np.clip(advantages, 0.0, None).mean())
