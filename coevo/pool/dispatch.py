"""Jobs of different kinds in one pool call, results aligned with the jobs.

Each job type has a runner: `runner(pool, jobs) -> results`, one per job, in order.
`EpisodeJob` is built in (an `EpisodeResult` per job); another kind (e.g. a trajectory
request for a gradient optimizer) is added with `register_job_kind` beside its job class.
`dispatch` groups a mixed list by kind, runs each group and puts the results back in the
jobs' order, so an optimizer's `tell` receives exactly the results of its own `ask`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from coevo.pool.jobs import EpisodeJob

if TYPE_CHECKING:
    from coevo.pool.pool import EvaluationPool

JobRunner = Callable[["EvaluationPool", list[Any]], Sequence[Any]]


@dataclass(frozen=True)
class EpisodeResult:
    """One episode's return (NaN when it failed), length and error text ("" if none)."""

    ret: float
    length: int
    error: str = ""


def run_episode_jobs(pool: EvaluationPool, jobs: list[EpisodeJob]) -> list[EpisodeResult]:
    """Play episode jobs on the pool.

    Args:
        pool: The evaluation pool.
        jobs: The jobs, already checked by `EvaluationPool.dispatch`.

    Returns:
        One result per job, in order: return, length and error message (empty if none).
    """
    result = pool.run_checked(jobs)  # `EvaluationPool.dispatch` checked them, by their place
    return [
        EpisodeResult(float(ret), int(length), result.errors.get(index, ""))
        for index, (ret, length) in enumerate(zip(result.returns, result.lengths, strict=True))
    ]


_RUNNERS: dict[type, JobRunner] = {EpisodeJob: run_episode_jobs}


def register_job_kind(job_type: type, runner: JobRunner) -> None:
    """Teach `dispatch` a new kind of job: `runner(pool, jobs)` returns one result per job."""
    _RUNNERS[job_type] = runner


def dispatch(pool: EvaluationPool, jobs: Sequence[Any]) -> list[Any]:
    """Run jobs of any registered kinds; one result per job, in the jobs' order."""
    groups: dict[type, list[int]] = {}
    for index, job in enumerate(jobs):
        groups.setdefault(type(job), []).append(index)
    results: list[Any] = [None] * len(jobs)
    for kind, indices in groups.items():
        runner = _RUNNERS.get(kind)
        if runner is None:
            known = ", ".join(k.__name__ for k in _RUNNERS)
            raise TypeError(f"no runner for jobs of type {kind.__name__}; known: {known}")
        answers = runner(pool, [jobs[i] for i in indices])
        if len(answers) != len(indices):
            raise RuntimeError(
                f"the {kind.__name__} runner returned {len(answers)} results "
                f"for {len(indices)} jobs"
            )
        for index, answer in zip(indices, answers, strict=True):
            results[index] = answer
    return results
