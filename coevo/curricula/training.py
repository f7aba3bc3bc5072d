"""Train and evaluate policies: the helpers every curriculum shares.

`optimize` takes one optimizer step for each (theta, state, tasks) item: every item's jobs
go to the pool in ONE call (so every worker stays busy whatever the number of pairs), and
each item's results go back to the optimizer that asked for them.

Each helper is written as work in job batches (`coevo.batches`: `results = yield jobs`),
so a curriculum's generation can `yield from` it and be asked and told from outside;
`optimize` runs its work on a pool.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from coevo.batches import Work, drive
from coevo.optimizers.base import Optimizer, Register, StepRecord, Told
from coevo.pool import EvaluationPool
from coevo.pool.jobs import EpisodeJob, Stored
from coevo.pool.results import error_line
from coevo.tasks.task import Task


class Trainable(Protocol):
    """Anything with `theta`, `state` and `steps` (POET's `Pair`, a level-sampling `Student`)."""

    theta: np.ndarray
    state: Any
    steps: int


def optimize(
    pool: EvaluationPool,
    optimizer: Optimizer,
    items: Sequence[tuple[np.ndarray, Any, Sequence[Task]]],
    rng: np.random.Generator,
) -> list[Told]:
    """One step for each (theta, state, tasks); the states given are left unchanged."""
    return drive(pool, optimize_work(optimizer, items, rng, pool.register))


def optimize_work(
    optimizer: Optimizer,
    items: Sequence[tuple[np.ndarray, Any, Sequence[Task]]],
    rng: np.random.Generator,
    register: Register,
) -> Work[list[Told]]:
    """`optimize` as work in job batches: one batch, every item's jobs."""
    asked = [optimizer.ask(theta, state, tasks, rng, register) for theta, state, tasks in items]
    jobs = [job for ask in asked for job in ask.jobs]
    results = (yield jobs) if jobs else []
    answered, offset = [], 0
    for (theta, state, _), ask in zip(items, asked, strict=True):
        answered.append((theta, state, ask, results[offset : offset + len(ask.jobs)]))
        offset += len(ask.jobs)
    return tell_checked(optimizer, answered)


def evaluate_work(
    register: Register,
    pairs: Sequence[tuple[np.ndarray, Task]],
    episodes: int,
    seed: int,
) -> Work[tuple[np.ndarray, dict[int, str]]]:
    """`EvaluationPool.evaluate_detailed` as work in job batches: returns [len(pairs),
    episodes] (NaN where an episode failed) and, per pair with a failed episode, its first
    error's last line. No batch when there are no pairs."""
    keys = [register(theta) for theta, _ in pairs]
    jobs = [
        EpisodeJob(Stored(key), task, seed + k)
        for key, (_, task) in zip(keys, pairs, strict=True)
        for k in range(episodes)
    ]
    results = (yield jobs) if jobs else []
    returns = np.array([r.ret for r in results], dtype=np.float64).reshape(len(pairs), episodes)
    errors: dict[int, str] = {}
    for index, result in enumerate(results):
        if result.error:
            errors.setdefault(index // episodes, error_line(result.error))
    return returns, errors


def tell_checked(
    optimizer: Optimizer, items: Sequence[tuple[np.ndarray, Any, Any, Sequence[Any]]]
) -> list[Told]:
    """`optimizer.tell_many(items)`, with every update checked: one whose parameters are not
    finite, or not the policy's size, is not applied (weights and state kept, the record
    says why: a `step_failed` row), whatever optimizer made it (a plug-in's NaN update
    otherwise became the learner's weights and failed every later episode)."""
    told = optimizer.tell_many(items)
    return [
        _checked(theta, state, step) for (theta, state, _, _), step in zip(items, told, strict=True)
    ]


def _checked(theta: np.ndarray, state: Any, step: Told) -> Told:
    try:
        new = np.asarray(step.theta)
    except (TypeError, ValueError):  # ragged
        new = np.asarray(step.theta, dtype=object)
    if new.dtype.kind not in "fiu":
        problem = f"parameters of type {type(step.theta).__name__} (dtype {new.dtype})"
    elif new.shape != np.shape(theta):
        problem = f"a parameter vector of shape {new.shape}; the policy has {np.size(theta)}"
    else:
        # A list or float64 vector becomes the learner's own kind (float32) before the check:
        # a value beyond float32's range is an inf there.
        dtype = np.asarray(theta).dtype
        with np.errstate(over="ignore"):
            cast = new.astype(dtype, copy=False)
        bad = cast.size - int(np.count_nonzero(np.isfinite(cast)))
        if not bad:
            return step if cast is step.theta else Told(cast, step.state, step.record)
        problem = f"{bad} non-finite parameter{'s' if bad > 1 else ''} (nan/inf) of {new.size}"
    record = step.record
    reason = f"the optimizer's update gave {problem}: weights and optimizer state kept"
    if record.reason:
        reason = f"{record.reason}; {reason}"
    kept = StepRecord(record.mean_return, record.failed, reason, dict(record.extra), applied=False)
    return Told(theta, state, kept)


def mean_extras(records: Sequence[Any]) -> dict[str, float]:
    """The optimizer's own numbers of some steps (`StepRecord.extra`: PPO's losses, KL,
    clip fraction), each averaged over the steps that report it: summary.csv columns."""
    values: dict[str, list[float]] = {}
    for record in records:
        for name, value in record.extra.items():
            values.setdefault(name, []).append(float(value))
    return {name: float(np.mean(v)) for name, v in values.items()}


def train_work(
    optimizer: Optimizer,
    learners: Sequence[Trainable],
    tasks: Sequence[Sequence[Task]],
    steps: int,
    rng: np.random.Generator,
    register: Register,
    reasons: list[tuple[int, StepRecord]] | None = None,
    records: list[Any] | None = None,
) -> Work[float]:
    """`steps` optimizer steps for each learner on its tasks (one batch per step), updating
    the learners in place; returns the mean return of the last step over the learners (NaN
    if none). Steps that report a reason (e.g. a refused PPO update: the learner kept its
    weights) are appended to `reasons` as (learner index, record); every step's record to
    `records`."""
    mean_return = float("nan")
    for _ in range(steps):
        told = yield from optimize_work(
            optimizer,
            [(lr.theta, lr.state, own) for lr, own in zip(learners, tasks, strict=True)],
            rng,
            register,
        )
        for index, (learner, step) in enumerate(zip(learners, told, strict=True)):
            learner.theta, learner.state = step.theta, step.state
            learner.steps += 1
            if step.record.reason and reasons is not None:
                reasons.append((index, step.record))
            if records is not None:
                records.append(step.record)
        means = [s.record.mean_return for s in told if np.isfinite(s.record.mean_return)]
        mean_return = float(np.mean(means)) if means else float("nan")
    return mean_return
