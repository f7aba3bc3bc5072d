"""Novelty of candidate tasks: two characterizations and the k-nearest-neighbour score.

- `params` (POET): a task's parameters scaled to [0, 1] by their bounds.
- `pata_ec` (Enhanced POET): the scores of all active and archived policies on the task,
  clipped to the minimal-criterion bounds, turned into centred ranks (ties averaged).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from enum import StrEnum

import numpy as np

from coevo.batches import Work, drive
from coevo.curricula.training import evaluate_work
from coevo.optimizers.base import Register
from coevo.optimizers.es import centred_ranks
from coevo.pool import EvaluationPool
from coevo.tasks.task import Task, TaskSpace


class Characterization(StrEnum):
    """How POET characterises a level for novelty: by its parameters or by PATA-EC."""

    PARAMS = "params"
    PATA_EC = "pata_ec"


def knn_novelty(candidates: np.ndarray, reference: np.ndarray, k: int) -> np.ndarray:
    """Mean Euclidean distance from each candidate row to its k nearest reference rows."""
    if len(reference) == 0:
        return np.full(len(candidates), np.inf)
    distances = np.linalg.norm(candidates[:, None, :] - reference[None, :, :], axis=2)
    k = min(k, reference.shape[0])
    return np.sort(distances, axis=1)[:, :k].mean(axis=1)


def pata_ec(scores: np.ndarray, lower: float, upper: float) -> np.ndarray:
    """PATA-EC vectors: rows are tasks, columns policies -> clipped, centred-ranked rows."""
    clipped = np.clip(scores, lower, upper)
    return np.stack([centred_ranks(row) for row in clipped]) if len(clipped) else clipped


class ScoreCache:
    """Scores by (weights key, task id). Keys are content hashes, so an archived (frozen)
    policy is evaluated once on a task; an active policy that changed has a new key."""

    def __init__(self, capacity: int = 200_000):
        self._scores: OrderedDict[tuple[str, str], float] = OrderedDict()
        self.capacity = capacity
        self.hits = 0

    def matrix(
        self,
        pool: EvaluationPool,
        thetas: Sequence[np.ndarray],
        tasks: Sequence[Task],
        episodes: int,
        seed: int,
    ) -> np.ndarray:
        """Mean return of every policy (rows) on every task (columns); misses in one call."""
        return drive(pool, self.matrix_work(pool.register, thetas, tasks, episodes, seed))

    def matrix_work(
        self,
        register: Register,
        thetas: Sequence[np.ndarray],
        tasks: Sequence[Task],
        episodes: int,
        seed: int,
    ) -> Work[np.ndarray]:
        """`matrix` as work in job batches (`coevo.batches`): one batch, the misses."""
        keys = [register(theta) for theta in thetas]
        missing = [
            (i, j)
            for i, key in enumerate(keys)
            for j, task in enumerate(tasks)
            if (key, task.id) not in self._scores
        ]
        self.hits += len(keys) * len(tasks) - len(missing)
        if missing:
            # A failed evaluation scores NaN: PATA-EC clips it like any score out of bounds.
            returns, _ = yield from evaluate_work(
                register, [(thetas[i], tasks[j]) for i, j in missing], episodes, seed
            )
            for (i, j), score in zip(missing, returns.mean(axis=1), strict=True):
                self._scores[(keys[i], tasks[j].id)] = float(score)
            while len(self._scores) > self.capacity:
                self._scores.popitem(last=False)
        return np.array([[self._scores[(key, task.id)] for task in tasks] for key in keys])


def novelty_scores(
    characterization: Characterization,
    space: TaskSpace,
    candidates: Sequence[Task],
    reference: Sequence[Task],
    k: int,
    *,
    pool: EvaluationPool | None = None,
    policies: Sequence[np.ndarray] = (),
    cache: ScoreCache | None = None,
    episodes: int = 1,
    seed: int = 0,
    bounds: tuple[float, float] = (-np.inf, np.inf),
) -> np.ndarray:
    """Novelty of each candidate against the reference tasks (active and archived); PATA-EC
    evaluates on `pool`."""
    work = novelty_work(
        characterization,
        space,
        candidates,
        reference,
        k,
        register=pool.register if pool is not None else None,
        policies=policies,
        cache=cache,
        episodes=episodes,
        seed=seed,
        bounds=bounds,
    )
    return drive(pool, work)


def novelty_work(
    characterization: Characterization,
    space: TaskSpace,
    candidates: Sequence[Task],
    reference: Sequence[Task],
    k: int,
    *,
    register: Register | None = None,
    policies: Sequence[np.ndarray] = (),
    cache: ScoreCache | None = None,
    episodes: int = 1,
    seed: int = 0,
    bounds: tuple[float, float] = (-np.inf, np.inf),
) -> Work[np.ndarray]:
    """`novelty_scores` as work in job batches (`coevo.batches`): PATA-EC's one batch of
    the scores not cached; none for `params`."""
    if characterization is Characterization.PARAMS:
        encode = np.stack([space.encode(t) for t in candidates])
        reference_rows = np.stack([space.encode(t) for t in reference])
        return knn_novelty(encode, reference_rows, k)
    assert register is not None and cache is not None
    scores = yield from cache.matrix_work(
        register, policies, [*candidates, *reference], episodes, seed
    )
    vectors = pata_ec(scores.T, *bounds)  # one row per task
    return knn_novelty(vectors[: len(candidates)], vectors[len(candidates) :], k)
