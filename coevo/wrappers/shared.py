"""One task sampler shared by several envs, in a fixed order: a run with a fixed number of
envs is reproducible whatever the processes' timing.

The order. Every env counts vector steps (`tick`: its `step` calls, and with
`autoreset="next_step"` its resets after a done, so that all envs agree on the tick).
An env whose episode ends at tick t sends the episode (`episode_end(env, t, ...)`); the
sampler is not touched then. Events are applied when a message of a later tick arrives
(any env's reset or episode end), all of one tick in env-index order: for each, `update`
with the finished episode, then one `sample()` for that env's queue. Because a vector
env finishes step t on every env before any env begins step t + 1, and each call waits
for its answer, every event of tick t is in before a message of tick t + 1: the order
depends on the envs' count, never on which process was quicker.

The price of the order: a task is drawn one episode ahead (each env starts with two
queued tasks, drawn env by env), so the sampler sees an episode's result after the env
has begun its next episode, not before. Within one process (`SyncVectorEnv`) a plain
`TaskSampler` passed to each `CurriculumWrapper` is already ordered (envs step in index
order); the queue is for envs in other processes.

Serving. `serve(sampler, num_envs)` starts a `multiprocessing` manager process holding
the `VectorSampler`; its proxy pickles into `SubprocVecEnv` / `AsyncVectorEnv` workers
(measured against an in-process sampler and a Ray actor by
benchmarks/sampler_overhead.py; see docs/architecture.md).
"""

from __future__ import annotations

import threading
from collections import deque
from multiprocessing.managers import BaseManager
from typing import Any

from coevo.curricula.sampler import TaskSampler
from coevo.tasks.task import Task, TaskSpace

QUEUED = 2  # tasks drawn ahead per env at the start (see the module doc)


class VectorSampler:
    """A `TaskSampler` behind the ordered protocol above, for `num_envs` envs."""

    def __init__(self, sampler: TaskSampler, num_envs: int):
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self.sampler = sampler
        self.num_envs = int(num_envs)
        self._lock = threading.Lock()  # a manager serves each env's calls on its own thread
        self._queues: list[deque[Task]] = [deque() for _ in range(self.num_envs)]
        for _ in range(QUEUED):
            for queue in self._queues:
                queue.append(sampler.sample())
        # (tick, env index, task, the episode's report), in arrival order
        self._events: list[tuple[int, int, Task, dict[str, Any]]] = []

    def next_task(self, env_index: int, tick: int) -> Task:
        """The task env `env_index` plays from its reset at `tick`."""
        with self._lock:
            self._check(env_index)
            self._apply_before(tick)
            queue = self._queues[env_index]
            if not queue:
                raise RuntimeError(
                    f"env {env_index} reset at tick {tick} with no task queued: its ticks "
                    "do not follow the vector steps (wrong CurriculumWrapper autoreset?)"
                )
            return queue.popleft()

    def episode_end(self, env_index: int, tick: int, task: Task, **report: Any) -> None:
        """Env `env_index`'s episode on `task` ended at `tick`; `report`: `update`'s
        keywords (episode_return, episode_length, success, values, rewards)."""
        with self._lock:
            self._check(env_index)
            self._apply_before(tick)
            self._events.append((int(tick), env_index, task, report))

    def _apply_before(self, tick: int) -> None:
        due = sorted((e for e in self._events if e[0] < tick), key=lambda e: (e[0], e[1]))
        if not due:
            return
        self._events = [e for e in self._events if e[0] >= tick]
        for _, env_index, task, report in due:
            self.sampler.update(task, **report)
            self._queues[env_index].append(self.sampler.sample())

    def flush(self) -> None:
        """Apply every recorded episode (at the end of training, before reading the
        sampler's decisions or state: the last vector step's episodes are still held)."""
        with self._lock:
            self._apply_before(2**62)

    def _check(self, env_index: int) -> None:
        if not 0 <= env_index < self.num_envs:
            raise ValueError(f"env_index {env_index} outside 0..{self.num_envs - 1}")

    # -- reading and restoring (through a proxy too) ----------------------------------
    def task_space(self) -> TaskSpace:
        """The wrapped sampler's task space (a method, so a proxy can give it)."""
        return self.sampler.space

    def decisions(self) -> list[Any]:
        """The wrapped sampler's decision rows so far."""
        return self.sampler.decisions()

    def episodes(self) -> int:
        """Episodes reported to the wrapped sampler so far."""
        return self.sampler.episodes

    def state_dict(self) -> dict[str, Any]:
        """The sampler's state with each env's queued tasks and the episodes held back."""
        with self._lock:
            return {
                "sampler": self.sampler.state_dict(),
                "queues": [list(q) for q in self._queues],
                "events": list(self._events),
            }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from `state_dict()`'s output.

        Raises:
            ValueError: the state was taken with another number of envs.
        """
        with self._lock:
            if len(state["queues"]) != self.num_envs:
                raise ValueError(
                    f"state holds {len(state['queues'])} envs; this sampler has {self.num_envs}"
                )
            self.sampler.load_state_dict(state["sampler"])
            self._queues = [deque(q) for q in state["queues"]]
            self._events = list(state["events"])


class SamplerManager(BaseManager):
    """The manager process that serves a `VectorSampler` to envs in other processes."""


SamplerManager.register("VectorSampler", VectorSampler)


class SharedSampler:
    """A served `VectorSampler`: `proxy` goes to the envs (it pickles into worker
    processes); `close()` (or leaving the `with` block) stops the server."""

    def __init__(self, sampler: TaskSampler, num_envs: int):
        self._manager = SamplerManager()
        self._manager.start()
        self.proxy = self._manager.VectorSampler(sampler, num_envs)  # type: ignore[attr-defined]

    def __enter__(self) -> SharedSampler:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stop the server process."""
        self._manager.shutdown()


def serve(sampler: TaskSampler, num_envs: int) -> SharedSampler:
    """Serve `sampler` to `num_envs` envs in other processes (see the module doc)."""
    return SharedSampler(sampler, num_envs)
