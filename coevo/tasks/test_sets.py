"""Held-out test sets: fixed, seeded tasks of a space from easy to hard, and "% mastered".

The metric curriculum papers compare on (TeachMyAgent, Romac et al. 2021): the share of a
fixed set of test tasks on which the trained agent's return reaches a mastery threshold. A
test set here is `size` tasks drawn uniformly from the task space's bounds with a fixed seed,
sorted from easy to hard by their distance (in the space's [0, 1]-scaled encoding) from the
space's initial task: every curriculum starts there, so distance from it is the one
difficulty order that means the same in every space. The mastery threshold is the task
space's `solved_score` (its one source of truth), unless a run overrides it.

Scoring goes through the evaluation pool like every other evaluation. With several policies
(POET's active pairs) each test task is scored by the best of them, as transfer would pick;
a single-policy curriculum passes its one policy. Test episodes are counted apart: the result
carries its own episode and env-step counts, which never enter the training counters.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from coevo.errors import ConfigError
from coevo.tasks.task import Task, TaskSpace

DEFAULT_SIZE = 100
DEFAULT_SEED = 0
DEFAULT_EPISODES = 1  # TeachMyAgent scores each test task on one episode


@dataclass(frozen=True)
class TestSet:
    """Test tasks of one space, easiest first, and the return that counts as mastered."""

    space: str
    tasks: tuple[Task, ...]
    threshold: float
    seed: int

    __test__ = False  # not a pytest test class, whatever its name

    def __len__(self) -> int:
        return len(self.tasks)


@dataclass(frozen=True)
class TestScore:
    """Per test task: the best policy's mean return and whether it reached the threshold."""

    returns: np.ndarray  # [tasks], best over policies of the mean over episodes (NaN: failed)
    best_policy: np.ndarray  # [tasks], index of the policy that scored it (-1: all failed)
    mastered: np.ndarray  # [tasks] bool
    episodes: int  # test episodes run (counted apart from training)
    env_steps: float  # env steps of those episodes

    __test__ = False

    @property
    def share_mastered(self) -> float:
        """Share of test tasks mastered, 0 to 1."""
        return float(self.mastered.mean()) if self.mastered.size else 0.0


def mastery_threshold(space: TaskSpace, threshold: float | None = None) -> float:
    """`threshold` when given, else the space's solved score; an error naming both if none."""
    if threshold is not None:
        return float(threshold)
    if space.solved_score is None:
        raise ConfigError(
            "test_set.threshold",
            f"task space '{space.name}' declares no solved_score: give the mastery threshold",
        )
    return float(space.solved_score)


def make_test_set(
    space: TaskSpace,
    size: int = DEFAULT_SIZE,
    seed: int = DEFAULT_SEED,
    threshold: float | None = None,
) -> TestSet:
    """`size` distinct tasks drawn uniformly within the space's bounds from a generator seeded
    by (seed, space name), rounded like mutations, sorted by distance from the initial task
    (ties by task id, so the order never depends on the draw order)."""
    if not isinstance(size, int) or size <= 0:
        raise ConfigError("test_set.size", f"must be a positive integer, got {size!r}")
    rng = np.random.default_rng([seed, zlib.crc32(space.name.encode())])
    start = space.initial_task()
    tasks: dict[Task, None] = {}
    # Rounding can make draws collide (a narrow parameter with a coarse round_to): keep drawing,
    # but stop if the space has fewer distinct tasks than asked for.
    for _ in range(100 * size):
        if len(tasks) == size:
            break
        tasks.setdefault(_uniform_task(space, rng), None)
    if len(tasks) < size:
        raise ConfigError(
            "test_set.size",
            f"task space '{space.name}' gave only {len(tasks)} distinct tasks of {size} asked for",
        )
    ordered = sorted(tasks, key=lambda task: (round(space.distance(start, task), 12), task.id))
    return TestSet(space.name, tuple(ordered), mastery_threshold(space, threshold), seed)


def _uniform_task(space: TaskSpace, rng: np.random.Generator) -> Task:
    values = {p.name: p.clip(rng.uniform(p.low, p.high)) for p in space.params}
    for low_name, high_name in space.ordered:
        if values[low_name] > values[high_name]:
            values[low_name], values[high_name] = values[high_name], values[low_name]
    return space.task(**values)


def score_test_set(
    pool,
    policies: Sequence[np.ndarray],
    test_set: TestSet,
    episodes: int = DEFAULT_EPISODES,
    seed: int = 0,
) -> TestScore:
    """Every policy on every test task through the pool (one call); each task keeps its best
    policy's mean return. Deterministic for given policies, test set, episodes and seed."""
    if not policies:
        raise ValueError("score_test_set needs at least one policy")
    if not isinstance(episodes, int) or episodes <= 0:
        raise ConfigError("test_set.episodes", f"must be a positive integer, got {episodes!r}")
    before = pool.stats_snapshot()
    pairs = [(theta, task) for theta in policies for task in test_set.tasks]
    returns = pool.evaluate(pairs, episodes, seed).mean(axis=1)
    after = pool.stats_snapshot()
    matrix = returns.reshape(len(policies), len(test_set))
    finite = np.where(np.isfinite(matrix), matrix, -np.inf)
    best_policy = np.argmax(finite, axis=0)
    best = finite[best_policy, np.arange(len(test_set))]
    failed = ~np.isfinite(best)
    best = np.where(failed, np.nan, best)
    best_policy = np.where(failed, -1, best_policy)
    mastered = np.zeros(len(test_set), dtype=bool)
    mastered[~failed] = best[~failed] >= test_set.threshold
    return TestScore(
        returns=best,
        best_policy=best_policy,
        mastered=mastered,
        episodes=len(pairs) * episodes,
        env_steps=float(after["env_steps"] - before["env_steps"]),
    )
