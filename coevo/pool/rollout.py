"""The rollout engine of a worker: its rows of running episodes, fed from a queue of chunks.

A worker's episodes run `num_slots` at a time, one batched forward pass per step. Chunks
(one pool call each) queue up; a row whose episode ends takes the next job of the oldest
chunk with jobs left. So while one chunk's last, long episodes drain, the next chunk's
episodes already fill the free rows (on a Ray actor the next call arrives on a second
thread, see `Worker.run`), instead of the batch shrinking to a few rows whose every step
pays the per-call costs of the policy and the loop.

A row's numbers never depend on the rows around it, so which row and which step an episode
starts at does not change its result.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from coevo.policies.base import Policy
from coevo.policies.noise import seed_key, uniforms
from coevo.pool.jobs import EpisodeJob, Perturbed
from coevo.pool.slots import EnvSlots, as_rows, env_error_text


@dataclass
class ChunkResult:
    """Returns and lengths of a chunk's episodes, in job order, with the worker's counters."""

    returns: np.ndarray
    lengths: np.ndarray
    errors: dict[int, str]
    stats: dict[str, float] = field(default_factory=dict)


@dataclass(eq=False)
class Chunk:
    """One call's jobs and what has come of them so far."""

    jobs: Sequence[EpisodeJob]
    sources: Mapping[str, Any]
    token: str = ""  # names the chunk in a watchdog's answers (Ray backend)
    next_job: int = 0
    running: int = 0  # its episodes in rows now
    finished: int = 0  # its jobs with a result (a return, or an error)
    perturbed: dict[Perturbed, np.ndarray] = field(default_factory=dict)
    counters: dict[str, float] = field(
        default_factory=lambda: {
            "cache_hits": 0.0,
            "cache_misses": 0.0,
            "bytes_loaded": 0.0,
            "overlap_starts": 0.0,  # its episodes started beside another chunk's
            "levels_loaded": 0.0,  # levels this worker took from their blocks (levels.py)
            "level_bytes_loaded": 0.0,
        }
    )
    failure: BaseException | None = None

    def __post_init__(self) -> None:
        n = len(self.jobs)
        self.returns = np.zeros(n, dtype=np.float64)
        self.lengths = np.zeros(n, dtype=np.int64)
        self.errors: dict[int, str] = {}

    @property
    def done(self) -> bool:
        """Whether every job of the chunk has a result."""
        # Counted from results, not from `next_job` and `running`: a caller waiting on
        # another thread may look while the driving thread is inside `_start` (its job
        # taken, not yet running), and must not see the chunk done then.
        return self.finished >= len(self.jobs)

    def result(self, pid: int) -> ChunkResult:
        """The chunk's returns, lengths, errors and counters, stamped with `pid`."""
        stats = self.counters
        stats["episodes"] = float(len(self.jobs))
        stats["env_steps"] = float(self.lengths.sum())
        stats.setdefault("busy_s", 0.0)
        stats.setdefault("cpu_s", 0.0)
        stats["pid"] = float(pid)
        return ChunkResult(self.returns, self.lengths, self.errors, stats)


# Params of a job: (job, chunk) -> the row's parameter vector (the worker's weight cache).
ParamsOf = Callable[[EpisodeJob, Chunk], np.ndarray]


class Rollouts:
    """Rows of running episodes over a worker's env slots, and the queue feeding them.

    The running episodes always fill a prefix of the per-row arrays (parameters,
    observations, recurrent state, noise keys, return, length): row r runs in env slot
    `env_slot[r]`. An episode that ends hands its row to the next queued job; when none is
    left, the last running row moves into it, so every step works on views `[:n]`.
    """

    def __init__(
        self,
        slots: EnvSlots,
        policy: Policy,
        max_steps: int,
        skeleton: np.ndarray,
        params_of: ParamsOf,
    ):
        self.slots, self.policy, self.max_steps = slots, policy, max_steps
        self.params_of = params_of
        n = slots.num_slots
        self.skeleton = skeleton
        self.obs = np.zeros((n, policy.obs_dim), dtype=np.float32)
        self.state = policy.initial_state(n)
        self.keys = np.zeros(n, dtype=np.uint64)
        self.env_slot = np.arange(n, dtype=np.int64)  # row -> env slot
        self.row_job = np.full(n, -1, dtype=np.int64)  # row -> job index in its chunk
        self.row_chunk: list[Chunk | None] = [None] * n
        self.row_return = np.zeros(n, dtype=np.float64)
        self.row_length = np.zeros(n, dtype=np.int64)
        # Each env slot's (chunk token, job index), for a watchdog thread asking which job
        # an env call belongs to (set already during the reset).
        self.slot_job = np.full(n, -1, dtype=np.int64)
        self.slot_token = [""] * n
        self.running = 0  # rows [0, running) hold running episodes
        self.chunks_in_rows = 0  # chunks with an episode running
        self.queue: deque[Chunk] = deque()  # chunks with jobs not yet started, oldest first
        self.failed_at_reset: list[Chunk] = []

    @property
    def idle(self) -> bool:
        """Whether no chunk runs or waits."""
        return self.running == 0 and not self.queue

    def add(self, chunk: Chunk) -> None:
        """Queue a chunk (an empty one is skipped)."""
        if chunk.jobs:
            self.queue.append(chunk)

    def _start(self, row: int) -> bool:
        """Give `row` (its env slot) the next queued job; False when none is left."""
        slot = int(self.env_slot[row])
        queue = self.queue
        while queue:
            chunk = queue[0]
            index = chunk.next_job
            chunk.next_job += 1
            if chunk.next_job >= len(chunk.jobs):
                queue.popleft()
            job = chunk.jobs[index]
            self.slot_job[slot] = index
            self.slot_token[slot] = chunk.token
            try:
                self.skeleton[row] = self.params_of(job, chunk)
                self.obs[row] = self.slots.reset_slot(slot, job.task, job.seed)
                self.state[row] = 0.0
                self.keys[row] = seed_key(job.seed)
            except Exception:  # an env that fails on a task fails that episode only
                chunk.errors[index] = env_error_text()
                chunk.returns[index] = np.nan
                chunk.finished += 1
                if chunk.done:
                    self.failed_at_reset.append(chunk)
                continue
            self.row_job[row] = index
            self.row_chunk[row] = chunk
            self.row_return[row] = 0.0
            self.row_length[row] = 0
            if chunk.running == 0:
                self.chunks_in_rows += 1
            if self.chunks_in_rows > 1:
                chunk.counters["overlap_starts"] += 1
            chunk.running += 1
            return True
        self.slot_job[slot] = -1
        return False

    def _finish(self, row: int, message: str | None) -> Chunk:
        chunk = self.row_chunk[row]
        assert chunk is not None
        self.row_chunk[row] = None
        index = int(self.row_job[row])
        total, length = float(self.row_return[row]), int(self.row_length[row])
        chunk.lengths[index] = length
        if message is None and not np.isfinite(total):
            # A NaN or infinite return is a broken episode, never a score.
            message = (
                f"non-finite return {total} after {length} steps (a step's reward was NaN, "
                "infinite or None)"
            )
        if message is None:
            chunk.returns[index] = total
        else:
            chunk.errors[index] = message
            chunk.returns[index] = np.nan
        chunk.running -= 1
        chunk.finished += 1
        if chunk.running == 0:
            self.chunks_in_rows -= 1
        return chunk

    def _move(self, source: int, target: int) -> None:
        """Row `source`'s running episode continues in row `target`; the env slot freed at
        `target` goes to `source` (a later chunk's episode may start there)."""
        for array in (self.skeleton, self.obs, self.state, self.keys):
            array[target] = array[source]
        slots = self.env_slot
        slots[target], slots[source] = slots[source], slots[target]
        self.row_job[target] = self.row_job[source]
        self.row_chunk[target] = self.row_chunk[source]
        self.row_chunk[source] = None
        self.row_return[target] = self.row_return[source]
        self.row_length[target] = self.row_length[source]

    def _sort_rows(self) -> None:
        """Put the rows in env slot order: batched slots step every slot without a gather
        when all of them run and the slots come sorted (`BatchedSlots.step_slots`). Moves
        while a chunk drained may have shuffled them; a later chunk's jobs refill them."""
        order = np.argsort(self.env_slot, kind="stable")
        if (order == np.arange(order.size)).all():
            return
        for name in ("skeleton", "obs", "state", "keys", "env_slot", "row_job"):
            array = getattr(self, name)
            array[:] = array[order]
        self.row_return[:] = self.row_return[order]
        self.row_length[:] = self.row_length[order]
        self.row_chunk = [self.row_chunk[i] for i in order.tolist()]

    def _row_views(self, running: int) -> tuple[np.ndarray, ...]:
        """The first `running` rows of (skeleton, obs, state, env_slot, row_return,
        row_length, keys), as views: the arrays are only ever rewritten in place."""
        arrays = (self.skeleton, self.obs, self.state)
        arrays += (self.env_slot, self.row_return, self.row_length, self.keys)
        return tuple(array[:running] for array in arrays)

    def drive(self, until: Chunk, on_done: Callable[[Chunk], None]) -> None:
        """Step every running episode, whichever chunk it belongs to, until `until` is done.

        Free rows take queued jobs (of `until` or of chunks queued after it) at every step;
        `on_done(chunk)` is called as each chunk's last episode ends.
        """
        num_slots = self.slots.num_slots
        views = self._row_views(self.running)
        changed = False
        while not until.done:
            if self.running < num_slots and self.queue:
                changed |= self._fill_rows(num_slots)
            running = self.running
            if running == 0:  # `until` is done: its last jobs failed at their reset
                break
            if changed:  # views rebuilt only when the number of running rows changes
                views = self._row_views(running)
                changed = False
            done, step_errors = self._step_rows(views, running)
            if done.any():
                self._end_rows(done, step_errors, on_done)
                # A new episode in an ended one's row keeps the views (and the policy's
                # per-layer views of `params`, cached while it is the same array).
                changed = self.running != running
            while self.failed_at_reset:  # chunks whose last jobs failed at their reset
                on_done(self.failed_at_reset.pop())
        while self.failed_at_reset:
            on_done(self.failed_at_reset.pop())

    def _fill_rows(self, num_slots: int) -> bool:
        """Start queued jobs in the free rows; whether the number of running rows changed."""
        before = self.running
        while self.running < num_slots and self._start(self.running):
            self.running += 1
        if self.running == num_slots:
            self._sort_rows()  # in place: the row views stay valid
        return self.running != before

    def _step_rows(
        self, views: tuple[np.ndarray, ...], running: int
    ) -> tuple[np.ndarray, dict[int, str]]:
        """One step of the first `running` rows (`views`: `_row_views`), returns and lengths
        added up; (which rows ended, errors of the rows whose step failed)."""
        params, obs, state, slots, total, length, keys = views
        policy = self.policy
        noise = None
        if policy.noise_dim:  # a function of (episode seed, step) per row: batch-independent
            noise = uniforms(keys, length, policy.noise_dim)
        output = policy.step(params, obs, state, noise)
        if policy.state_size > 0:
            state[:] = output.state
        next_obs, rewards, done, step_errors = self.slots.step_slots(slots, output.actions)
        if (
            getattr(rewards, "shape", None) != total.shape
            or getattr(done, "shape", None) != total.shape
        ):  # a user's batched slots: lists, or columns
            rewards, done = as_rows(self.slots, rewards, done, running)
        obs[:] = next_obs
        total += rewards
        length += 1
        done |= length >= self.max_steps
        for position in step_errors:
            done[position] = True
        return done, step_errors

    def _end_rows(
        self, done: np.ndarray, step_errors: dict[int, str], on_done: Callable[[Chunk], None]
    ) -> None:
        """Finish the ended rows' episodes and refill their rows (or close them up)."""
        # Highest rows first: a row moved down from the end is then never one whose
        # episode ended this step.
        for row in np.flatnonzero(done)[::-1].tolist():
            chunk = self._finish(row, step_errors.get(row))
            if not self._start(row):
                self.running -= 1
                if row != self.running:
                    self._move(self.running, row)
            if chunk.done:
                on_done(chunk)

    def abandon(self, error: BaseException) -> None:
        """Drop every running and queued episode (the loop raised `error`); the chunks they
        belonged to are marked failed."""
        chunks = {id(c): c for c in self.row_chunk if c is not None}
        chunks.update({id(c): c for c in self.queue})
        for chunk in chunks.values():
            chunk.failure = error
            chunk.running = 0
            chunk.next_job = chunk.finished = len(chunk.jobs)
        self.row_chunk = [None] * len(self.row_chunk)
        self.queue.clear()
        self.failed_at_reset.clear()
        self.running = self.chunks_in_rows = 0


def timed(chunk: Chunk, started: float, cpu_started: float) -> None:
    """Add the wall and CPU seconds since `started` to `chunk`'s counters."""
    counters = chunk.counters
    counters["busy_s"] = counters.get("busy_s", 0.0) + time.perf_counter() - started
    # CPU seconds of this process meanwhile: less than busy_s when other processes compete
    # for the cores; steps per cpu_s measures the loop free of that contention.
    counters["cpu_s"] = counters.get("cpu_s", 0.0) + time.process_time() - cpu_started
