"""Work done in batches of pool jobs, and the one ask → dispatch → tell loop.

Work that needs the pool (an optimizer step, a curriculum's generation) is written as a
generator that yields a batch of jobs and receives their results, one per job in order
(`results = yield jobs`), and returns its outcome. `JobBatches` exposes such a generator
as `ask()` / `tell(results)`, so a batch can be evaluated anywhere; `drive` runs anything
with that `ask`/`tell` shape on a pool: the only loop that sends jobs to one.
"""

from __future__ import annotations

import inspect
from collections.abc import Generator, Sequence
from typing import Any, Generic, Protocol, TypeVar

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

# `results = yield jobs` ... `return outcome`
Work = Generator[list[Any], Sequence[Any], T]


class AskTell(Protocol[T_co]):
    """`ask()` gives the next batch of jobs; `tell(results)` takes one result per job and
    returns the outcome once the work is done (None while more batches are to come)."""

    def ask(self) -> list[Any]:
        """The next batch of jobs (the same batch until it is told)."""
        ...

    def tell(self, results: Sequence[Any]) -> T_co | None:
        """One result per job of the last `ask()`, in its order; the outcome at the end."""
        ...


class JobBatches(Generic[T]):
    """`ask()`/`tell()` over a generator of job batches (see the module doc). Asking twice
    gives the same batch until it is told; work that needs no jobs asks for none ([]), and
    `tell([])` then returns its outcome."""

    def __init__(self, work: Work[T]):
        self._work = work
        self._pending: list[Any] | None = None  # the batch asked and not yet told
        self._done = False
        self._outcome: T | None = None

    @property
    def done(self) -> bool:
        """The generator has ended (returned its outcome, raised, or was closed)."""
        return self._done

    def ask(self) -> list[Any]:
        """The next batch of jobs; asking again before `tell` gives the same batch.

        Raises:
            RuntimeError: the work is done (`tell` returned its outcome).
        """
        if self._pending is None:
            if self._done:
                raise RuntimeError("the work is done: its outcome was returned by tell()")
            self._pending = self._advance(None)
        return self._pending

    def tell(self, results: Sequence[Any]) -> T | None:
        """Give the results of the last `ask()`'s jobs, one per job in its order.

        Returns:
            The work's outcome once it is done; None while more batches are to come.

        Raises:
            RuntimeError: `tell` before `ask`.
            ValueError: not one result per job.
        """
        jobs = self._pending
        if jobs is None:
            raise RuntimeError("tell() before ask(): ask for the batch of jobs first")
        results = list(results)
        if len(results) != len(jobs):
            raise ValueError(
                f"{len(results)} results for {len(jobs)} jobs: tell() takes one result per job "
                "of the last ask(), in its order"
            )
        if self._done:  # it finished without needing this (empty) batch
            self._pending = None
            return self._outcome
        self._pending = self._advance(results)
        if not self._done:
            return None
        self._pending = None
        return self._outcome

    def close(self) -> None:
        """Abandon the work (e.g. after a failed dispatch): the generator is closed."""
        self._work.close()
        self._pending, self._done = None, True

    def _advance(self, results: list[Any] | None) -> list[Any]:
        try:
            jobs = next(self._work) if results is None else self._work.send(results)
        except StopIteration as stop:
            if stop.value is None:
                raise TypeError("work in job batches must return its outcome, got None") from None
            self._done, self._outcome = True, stop.value
            return []
        except BaseException:
            self._done = True
            raise
        return list(jobs)


def drive(pool: Any, work: AskTell[T] | Work[T]) -> T:
    """Run `work` (an ask/tell object, or a generator of job batches) to its end, each
    batch in one `pool.dispatch` call; returns its outcome. An empty batch calls no pool."""
    asker: AskTell[T] = JobBatches(work) if inspect.isgenerator(work) else work  # type: ignore[assignment]
    while True:
        jobs = asker.ask()
        outcome = asker.tell(pool.dispatch(jobs) if jobs else [])
        if outcome is not None:
            return outcome
