"""Trajectory jobs: a worker runs a policy on a task for N steps and returns the arrays a
policy-gradient learner needs (observations, actions, log-probs, rewards, terminated /
truncated flags, values and bootstrap values, the last observation).

A job is one stream: one env slot for `num_steps` steps, resetting at each episode end. It
starts from a reset, or, when it carries a `Continuation`, inside the episode its previous
rollout left unfinished: an env's state is a function of (task, the episode's reset seed, the
env actions since that reset), so the worker takes the live env from its `StreamCache` when
it still holds that state, and otherwise resets with the seed and replays the actions (env
steps only, no policy). A PPO rollout of one pair is `n_envs` such jobs (streams
0..n_envs-1). Many pairs' streams share a worker's slots and step together, one batched
forward pass per step, exactly as evaluation episodes do.

Determinism: a stream's reset seeds and action noise come from generators seeded by (job
seed, stream), drawn up front, never by slot or batch; the numpy policy and the batched
envs give each row the same bits whatever the batch. So a stream's arrays are a function of
(policy, task, seed, stream, num_steps, continuation), whatever the backend, worker count,
chunking or cache content (a cached env and a replayed one are in the same state).
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from coevo.pool.dispatch import register_job_kind
from coevo.pool.jobs import Stored
from coevo.pool.slots import as_rows, env_error_text
from coevo.tasks.task import Task

if TYPE_CHECKING:
    from coevo.pool.pool import EvaluationPool

# Arrays of a chunk, in the order `TrajectoryChunk.arrays` lists them.
ARRAY_NAMES = (
    "obs",
    "actions",
    "log_probs",
    "rewards",
    "terminated",
    "truncated",
    "values",
    "next_values",
    "last_obs",
    "episode_return_sum",
    "episodes_done",
    "level_index",
)


@dataclass(frozen=True, eq=False)
class Continuation:
    """An unfinished episode: reset with `reset_seed`, then the env actions `actions` ([L]
    int64 or [L, A] float32, as the env received them), `episode_return` summed so far.

    `key` is a digest of all three: with the task it names the env state exactly, so a
    worker's cached env is used only when it is in that state.
    """

    reset_seed: int
    actions: np.ndarray
    episode_return: float
    key: str = ""

    def __post_init__(self) -> None:
        if not self.key:
            digest = hashlib.blake2b(digest_size=12)
            digest.update(np.int64(self.reset_seed).tobytes())
            digest.update(np.float64(self.episode_return).tobytes())
            digest.update(str((self.actions.dtype, self.actions.shape)).encode())
            digest.update(np.ascontiguousarray(self.actions).tobytes())
            object.__setattr__(self, "key", digest.hexdigest())

    def __eq__(self, other: object) -> bool:  # same digest: same seed, actions and return
        return isinstance(other, Continuation) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)

    @property
    def length(self) -> int:
        """Steps since the reset."""
        return int(len(self.actions))


@dataclass(frozen=True)
class TrajectoryJob:
    """Stream `stream` of a rollout: the stored policy `params` on `task` for `num_steps`
    steps, from generators seeded by (seed, stream); from `continuation`'s env state when
    given (the generators then seed the later episodes' resets), else from a reset.

    `next_tasks`: the levels the stream takes at its resets within the rollout, in order,
    cycling (a new level at every reset); empty: every reset is on `task`."""

    params: Stored
    task: Task
    seed: int
    stream: int
    num_steps: int
    continuation: Continuation | None = None
    next_tasks: tuple[Task, ...] = ()

    def stream_key(self) -> tuple[Task, str] | None:
        """Names the env state the job starts from (None: a reset)."""
        return None if self.continuation is None else (self.task, self.continuation.key)

    def levels(self) -> tuple[Task, ...]:
        """The job's levels by `level_index`: 0 is `task`, k is next_tasks[k - 1]."""
        return (self.task, *self.next_tasks)

    def level_after(self, resets: int) -> int:
        """The `level_index` a stream runs after its `resets`-th reset in the rollout."""
        if not self.next_tasks:
            return 0
        return (resets - 1) % len(self.next_tasks) + 1


class StreamCache:
    """A worker's live envs of unfinished episodes, by (task, continuation key), newest
    `capacity` kept. An entry is the slots' snapshot (`save_slot`) and the observation."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.entries: OrderedDict[tuple[Task, str], tuple[Any, np.ndarray]] = OrderedDict()

    def take(self, key: tuple[Task, str]) -> tuple[Any, np.ndarray] | None:
        """Remove and return the entry of `key`, or None."""
        return self.entries.pop(key, None)

    def put(self, key: tuple[Task, str], snapshot: Any, obs: np.ndarray) -> None:
        """Keep a snapshot and observation under `key`, dropping the oldest beyond `capacity`."""
        self.entries[key] = (snapshot, obs)
        self.entries.move_to_end(key)
        while len(self.entries) > self.capacity:
            self.entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self.entries)


@dataclass
class TrajectoryChunk:
    """The streams of a chunk, stacked: arrays [jobs, T, ...] in job order.

    Travels from a Ray worker as a handful of numpy arrays (zero-copy in the object store).
    `next_values[j, t]` is the value of the observation after step t where the episode was
    truncated at t or t is the stream's last step (0 elsewhere); a failed job's arrays are
    zeros and its error is in `errors`.
    """

    obs: np.ndarray  # [J, T, D] float32, raw (the policy normalises inside)
    actions: np.ndarray  # [J, T] int64 or [J, T, A] float32 (unclipped samples)
    log_probs: np.ndarray  # [J, T] float32
    rewards: np.ndarray  # [J, T] float32
    terminated: np.ndarray  # [J, T] bool
    truncated: np.ndarray  # [J, T] bool (the task's max_episode_steps)
    values: np.ndarray  # [J, T] float32
    next_values: np.ndarray  # [J, T] float32
    last_obs: np.ndarray  # [J, D] float32
    episode_return_sum: np.ndarray  # [J] float64: summed returns of episodes that ended
    episodes_done: np.ndarray  # [J] int64
    # [J, T] int16: the level each step ran on (0: the job's task, k: its next_tasks[k-1]).
    level_index: np.ndarray
    errors: dict[int, str] = field(default_factory=dict)
    # Per job: the episode left unfinished at the stream's end (None: it ended, or failed).
    continuations: list[Continuation | None] = field(default_factory=list)
    stats: dict[str, float] = field(default_factory=dict)

    @property
    def nbytes(self) -> int:
        """The bytes of the chunk's arrays."""
        return int(sum(getattr(self, name).nbytes for name in ARRAY_NAMES))

    def __len__(self) -> int:
        return int(self.rewards.shape[0])


def stream_generators(seed: int, stream: int) -> tuple[np.random.Generator, np.random.Generator]:
    """(reset-seed generator, action-noise generator) of one stream."""
    return (
        np.random.default_rng([int(seed), int(stream), 0]),
        np.random.default_rng([int(seed), int(stream), 1]),
    )


def collect(
    slots: Any,
    policy: Any,
    max_episode_steps: int,
    jobs: Sequence[TrajectoryJob],
    params_for: Callable[[TrajectoryJob], np.ndarray],
    skeleton: np.ndarray,
    cache: StreamCache | None = None,
) -> TrajectoryChunk:
    """Run trajectory jobs on `slots` (an `EnvSlots`), `slots.num_slots` streams at a time.

    `policy` needs `draw_noise(rng, horizon)` / `noise_index(t)` (a stream's noise, e.g.
    gSDE's exploration matrices on their cadence), `sample(params, obs, noise)` and
    `values(params, obs)` (e.g. `ActorCriticSpec`); `skeleton` is the worker's
    preallocated [slots, P] parameter array, filled in place; `params_for(job)` gives a
    job's vector (the worker's weight cache).
    `cache` keeps the live envs of unfinished episodes between calls, where the slots can
    save and load one (`save_slot` / `load_slot`); without it continuations are replayed.
    """
    n = len(jobs)
    horizon = _horizon(jobs)
    out = _empty_chunk(policy, n, horizon)
    if cache is not None and not (hasattr(slots, "save_slot") and hasattr(slots, "load_slot")):
        cache = None  # slots that cannot hand out a live env: every continuation replays
    width = slots.num_slots
    for first in range(0, n, width):
        _run_wave(slots, policy, max_episode_steps, jobs, first, min(n, first + width),
                  params_for, skeleton, out, cache)  # fmt: skip
    out.stats["trajectory_bytes"] = float(out.nbytes)
    out.stats["env_steps"] = float(horizon * (n - len(out.errors)))
    # Episodes that ended in the rollout, a failed stream's (it ended in its error) included:
    # as for episode jobs, where a failed episode counts as one of the call's episodes.
    out.stats["episodes"] = float(out.episodes_done.sum() + len(out.errors))
    return out


def _horizon(jobs: Sequence[TrajectoryJob]) -> int:
    """The steps every job of a chunk runs (0 for no job); a ValueError when they differ."""
    steps = {job.num_steps for job in jobs}
    if len(steps) > 1:
        raise ValueError(f"a chunk's trajectory jobs must share num_steps, got {sorted(steps)}")
    return steps.pop() if steps else 0


def _empty_chunk(policy: Any, n: int, horizon: int) -> TrajectoryChunk:
    """A chunk of `n` streams of `horizon` steps, all zeros, its stream counters at 0."""
    dim = int(policy.obs_dim)
    out = TrajectoryChunk(
        obs=np.zeros((n, horizon, dim), dtype=np.float32),
        actions=(
            np.zeros((n, horizon), dtype=np.int64)
            if policy.discrete
            else np.zeros((n, horizon, policy.act_dim), dtype=np.float32)
        ),
        log_probs=np.zeros((n, horizon), dtype=np.float32),
        rewards=np.zeros((n, horizon), dtype=np.float32),
        terminated=np.zeros((n, horizon), dtype=bool),
        truncated=np.zeros((n, horizon), dtype=bool),
        values=np.zeros((n, horizon), dtype=np.float32),
        next_values=np.zeros((n, horizon), dtype=np.float32),
        last_obs=np.zeros((n, dim), dtype=np.float32),
        episode_return_sum=np.zeros(n, dtype=np.float64),
        episodes_done=np.zeros(n, dtype=np.int64),
        level_index=np.zeros((n, horizon), dtype=np.int16),
        continuations=[None] * n,
    )
    for name in STREAM_STAT_KEYS:
        out.stats[name] = 0.0
    return out


# Counters of continuing streams a chunk reports (summed by the pool): cache hits and misses
# of the worker's `StreamCache`, and the env steps and seconds spent replaying on a miss.
STREAM_STAT_KEYS = ("stream_cache_hits", "stream_cache_misses", "replay_steps", "replay_s")


def _run_wave(slots, policy, max_steps, jobs, first, stop, params_for, skeleton, out, cache):
    """Jobs first..stop-1 in slots 0..k-1, stepped together for the common horizon."""
    wave = _Wave(slots, policy, max_steps, jobs, first, stop, skeleton, out, cache)
    wave.start(params_for)
    wave.run()
    wave.finish()


class _Wave:
    """One wave of `collect`: jobs first..stop-1 in slots 0..k-1, their per-slot state
    (observation, alive, episode length, return and count, level), and where each slot's
    current episode began, for the streams' continuations."""

    def __init__(
        self,
        slots: Any,
        policy: Any,
        max_steps: int,
        jobs: Sequence[Any],
        first: int,
        stop: int,
        skeleton: np.ndarray,
        out: TrajectoryChunk,
        cache: StreamCache | None,
    ):
        self.slots, self.policy, self.max_steps, self.jobs = slots, policy, max_steps, jobs
        self.skeleton, self.out, self.cache = skeleton, out, cache
        self.first, self.stop = first, stop
        k = self.k = stop - first
        self.horizon = out.rewards.shape[1]
        self.rows = np.arange(first, stop)
        self.obs = np.zeros((k, out.obs.shape[2]), dtype=np.float32)
        self.alive = np.ones(k, dtype=bool)
        self.length = np.zeros(k, dtype=np.int64)
        self.episode_return = np.zeros(k, dtype=np.float64)
        self.reset_seeds: list[np.ndarray] = []
        self.noises: list[np.ndarray] = []  # per stream; step t uses noise[policy.noise_index(t)]
        self.episode = np.zeros(k, dtype=np.int64)
        self.level = np.zeros(k, dtype=np.int16)  # per slot: the level_index of its episode
        # The env actions of this wave, and per slot where its current episode began (-1:
        # before the wave, in its continuation) and from which reset seed: the streams'
        # continuations.
        self.env_actions_taken = np.zeros_like(out.actions[first:stop])
        self.episode_start = np.zeros(k, dtype=np.int64)
        self.episode_seed = np.zeros(k, dtype=np.int64)

    def _fail(self, position: int, message: str) -> None:
        """The stream in slot `position` fails with `message`."""
        self.alive[position] = False
        self.out.errors[int(self.rows[position])] = message

    def start(self, params_for: Callable[[Any], np.ndarray]) -> None:
        """Each stream's generators drawn and its slot brought to its first observation."""
        to_replay: list[int] = []
        for position, job in enumerate(self.jobs[self.first : self.stop]):
            seeds_rng, noise_rng = stream_generators(job.seed, job.stream)
            # Enough reset seeds for the most episodes a stream can have (one per step).
            self.reset_seeds.append(seeds_rng.integers(0, 2**31 - 1, size=self.horizon + 1))
            self.noises.append(self.policy.draw_noise(noise_rng, self.horizon))
            try:
                self.skeleton[position] = params_for(job)
                if self._start_stream(position, job):
                    to_replay.append(position)
            except Exception as error:  # a task its env refuses fails that stream only
                self._fail(position, f"{type(error).__name__}: {error}")
        if to_replay:
            _replay(
                self.slots, self.jobs, self.rows, to_replay, self.obs, self._fail, self.out.stats
            )

    def _start_stream(self, position: int, job: Any) -> bool:
        """Reset a slot, or resume its continuation from the cache; True where the
        continuation's actions must be replayed."""
        obs, slots, stats = self.obs, self.slots, self.out.stats
        resumed = job.continuation
        if resumed is None:
            self.episode_seed[position] = self.reset_seeds[position][0]
            obs[position] = slots.reset_slot(position, job.task, int(self.episode_seed[position]))
            return False
        self.episode_start[position] = -1
        self.episode_seed[position] = resumed.reset_seed
        self.length[position] = resumed.length
        self.episode_return[position] = resumed.episode_return
        if resumed.length >= self.max_steps:
            raise ValueError(
                f"a continuation of {resumed.length} steps reaches the task's "
                f"max_episode_steps ({self.max_steps}): that episode has ended"
            )
        cached = self.cache.take(job.stream_key()) if self.cache is not None else None
        if cached is not None:
            slots.load_slot(position, cached[0])
            obs[position] = cached[1]
            stats["stream_cache_hits"] += 1
            return False
        obs[position] = slots.reset_slot(position, job.task, int(resumed.reset_seed))
        stats["stream_cache_misses"] += 1
        return True

    def run(self) -> None:
        """Step the live streams together until the horizon (or none is left)."""
        self.noise = np.stack(self.noises)
        self.params = self.skeleton[: self.k]
        for t in range(self.horizon):
            live = np.flatnonzero(self.alive)
            if live.size == 0:
                break
            self._step(t, live)

    def _act(self, t: int, live: np.ndarray) -> tuple[np.ndarray, Any]:
        """The policy's actions for the live slots at step t, recorded; (their params, the
        env actions)."""
        out, policy, every = self.out, self.policy, live.size == self.k
        p = self.params if every else self.params[live]
        o = self.obs if every else self.obs[live]
        actions, env_actions, log_probs, values = policy.sample(
            p, o, self.noise[live, policy.noise_index(t)]
        )
        at = self.rows[live]
        out.obs[at, t] = o
        out.actions[at, t] = actions
        out.log_probs[at, t] = log_probs
        out.values[at, t] = values
        out.level_index[at, t] = self.level[live]
        self.env_actions_taken[live, t] = env_actions
        return p, env_actions

    def _step(self, t: int, live: np.ndarray) -> None:
        """Step t of the live slots: act, step the envs, record, bootstrap, end episodes."""
        out, slots = self.out, self.slots
        p, env_actions = self._act(t, live)
        at = self.rows[live]
        next_obs, rewards, terminated, errors = slots.step_slots(live, env_actions)
        if (
            getattr(rewards, "shape", None) != live.shape
            or getattr(terminated, "shape", None) != live.shape
        ):  # a user's batched slots: lists, or columns
            rewards, terminated = as_rows(slots, rewards, terminated, live.size)
        self.length[live] += 1
        cut_by_env = _cut_by_env(slots, terminated)
        if cut_by_env is not None:
            terminated = terminated & ~cut_by_env
        truncated = (self.length[live] >= self.max_steps) & ~terminated
        if cut_by_env is not None:
            truncated |= cut_by_env
        out.rewards[at, t] = rewards
        out.terminated[at, t] = terminated
        out.truncated[at, t] = truncated
        self.episode_return[live] += rewards
        for position, message in errors.items():
            self._fail(int(live[position]), message)
        ended = (terminated | truncated) & self.alive[live]
        cut = truncated & self.alive[live]
        if t == self.horizon - 1:
            cut = ~terminated & self.alive[live]  # the stream's end: bootstrap every live one
        if cut.any():
            out.next_values[at[cut], t] = self.policy.values(p[cut], next_obs[cut])
        self.obs[live] = next_obs
        for position in live[ended].tolist():
            self._episode_ended(position, t)

    def _episode_ended(self, position: int, t: int) -> None:
        """Count the slot's episode that ended at step t, and reset it on its next level."""
        out, row = self.out, self.rows[position]
        out.episode_return_sum[row] += self.episode_return[position]
        out.episodes_done[row] += 1
        self.episode_return[position] = 0.0
        self.length[position] = 0
        self.episode_start[position] = t + 1
        if t == self.horizon - 1:
            return  # the stream ends here: no reset needed
        self.episode[position] += 1
        job = self.jobs[row]
        self.level[position] = job.level_after(int(self.episode[position]))
        try:
            self.episode_seed[position] = self.reset_seeds[position][self.episode[position]]
            task = job.levels()[self.level[position]]
            self.obs[position] = self.slots.reset_slot(
                position, task, int(self.episode_seed[position])
            )
        except Exception:
            self._fail(position, env_error_text())

    def finish(self) -> None:
        """Last observations and continuations out; a failed stream's arrays zeroed."""
        self.out.last_obs[self.rows] = self.obs
        for position in np.flatnonzero(self.alive).tolist():
            self._continue_later(position)
        for position in np.flatnonzero(~self.alive).tolist():
            row = self.rows[position]
            for name in ARRAY_NAMES:
                getattr(self.out, name)[row] = 0

    def _continue_later(self, position: int) -> None:
        """The continuation of the slot's unfinished episode (none if it just ended), its
        live env kept in the cache."""
        if self.episode_start[position] >= self.horizon:
            return  # its episode ended at the last step: the next rollout resets
        job = self.jobs[self.rows[position]]
        since = self.env_actions_taken[position, max(0, self.episode_start[position]) :]
        if self.episode_start[position] < 0:  # still the episode it continued
            since = np.concatenate([job.continuation.actions, since])
        ahead = Continuation(
            int(self.episode_seed[position]), since.copy(), float(self.episode_return[position])
        )
        self.out.continuations[self.rows[position]] = ahead
        if self.cache is not None:  # under the level of the unfinished episode
            task = job.levels()[self.level[position]]
            self.cache.put(
                (task, ahead.key), self.slots.save_slot(position), self.obs[position].copy()
            )


def _cut_by_env(slots: Any, done: np.ndarray) -> np.ndarray | None:
    """Which `done` episodes of the last `step_slots` the env cut short (gymnasium's
    `truncated`: their values are bootstrapped), or None where the slots do not say."""
    cut = getattr(slots, "truncated", None)
    if cut is None:
        return None
    cut = np.asarray(cut, dtype=bool)
    if cut.shape != done.shape:
        raise ValueError(
            f"{type(slots).__name__}.truncated has shape {cut.shape} after a step of "
            f"{done.size} slots; expected ({done.size},)"
        )
    return cut & done


def _replay(slots, jobs, rows, positions, obs, fail, stats) -> None:
    """Bring the slots at `positions` (just reset with their continuation's seed) to the
    continuation's state: its env actions, batched across slots, no policy."""
    started = time.perf_counter()
    actions = {p: jobs[rows[p]].continuation.actions for p in positions}
    pending, replayed, t = list(positions), 0, 0
    while pending:
        live = [p for p in pending if len(actions[p]) > t]
        if not live:
            break
        at = np.array(live, dtype=np.int64)
        next_obs, _, done, errors = slots.step_slots(at, np.stack([actions[p][t] for p in live]))
        replayed += len(live)
        obs[at] = next_obs
        dropped = set()
        for position, message in errors.items():
            fail(live[position], f"replaying a continuation: {message}")
            dropped.add(live[position])
        for position in np.flatnonzero(done).tolist():
            if live[position] not in dropped:  # the episode it continues had not ended
                fail(live[position], f"replaying a continuation ended its episode at step "
                     f"{t + 1} of {len(actions[live[position]])}: the env is not "
                     "deterministic given its reset seed and actions")  # fmt: skip
                dropped.add(live[position])
        pending = [p for p in pending if p not in dropped]
        t += 1
    stats["replay_steps"] += float(replayed)
    stats["replay_s"] += time.perf_counter() - started


@dataclass
class Stream:
    """One job's arrays ([T, ...] views into its chunk's arrays: no copies) and its error."""

    obs: np.ndarray
    actions: np.ndarray
    log_probs: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    values: np.ndarray
    next_values: np.ndarray
    last_obs: np.ndarray
    episode_return_sum: float
    episodes_done: int
    error: str = ""
    continuation: Continuation | None = None  # the episode left unfinished at its end
    # [T] int16: the level each step ran on (0: the job's task, k: its next_tasks[k-1]).
    level_index: np.ndarray | None = None


def streams_of(chunk: TrajectoryChunk) -> list[Stream]:
    """A chunk's jobs as `Stream`s, in job order."""
    return [
        Stream(
            chunk.obs[j],
            chunk.actions[j],
            chunk.log_probs[j],
            chunk.rewards[j],
            chunk.terminated[j],
            chunk.truncated[j],
            chunk.values[j],
            chunk.next_values[j],
            chunk.last_obs[j],
            float(chunk.episode_return_sum[j]),
            int(chunk.episodes_done[j]),
            chunk.errors.get(j, ""),
            chunk.continuations[j] if chunk.continuations else None,
            chunk.level_index[j],
        )
        for j in range(len(chunk))
    ]


def final_level(job: TrajectoryJob, stream: Stream) -> Task:
    """The level of the stream's last step: that of its unfinished episode, if any."""
    if stream.level_index is None or len(stream.level_index) == 0:
        return job.task
    return job.levels()[int(stream.level_index[-1])]


# Streams whose worker the pool remembers (`EvaluationPool.stream_homes`); older ones are
# forgotten first (their chunks then go to any worker and replay there).
STREAM_HOMES = 1 << 16


def run_trajectory_jobs(pool: EvaluationPool, jobs: list[TrajectoryJob]) -> list[Stream]:
    """The pool's runner for trajectory jobs: one `Stream` per job, in order (the chunks'
    bytes are in the pool's `trajectory_bytes`).

    Sticky: a continuing stream's chunk goes to the worker that ran its previous rollout
    (it holds the live env), others fill the workers evenly; the streams' new homes are
    noted for the next call. Where a stream runs never changes its arrays.
    """
    from coevo.pool.scheduling import sticky_chunks

    homes = pool.stream_homes
    prefer = [homes.get(key) if (key := job.stream_key()) else None for job in jobs]
    placed = sticky_chunks(prefer, pool.num_workers, pool.envs_per_worker)
    chunks = [[jobs[i] for i in indices] for indices, _ in placed]
    answers = pool.run_placed(chunks, [worker for _, worker in placed], "collect_trajectories")
    errors: dict[int, str] = {}
    streams: list[Stream | None] = [None] * len(jobs)
    for (indices, _), (worker, chunk) in zip(placed, answers, strict=True):
        errors.update({indices[j]: message for j, message in chunk.errors.items()})
        for index, stream in zip(indices, streams_of(chunk), strict=True):
            streams[index] = stream
            job = jobs[index]
            if job.continuation is not None:
                homes.pop((job.task, job.continuation.key), None)  # it moved on
            if stream.continuation is not None:  # on the level of its unfinished episode
                homes[(final_level(job, stream), stream.continuation.key)] = worker
    pool.note_results(len(jobs), errors)  # a failed stream is a failed job (GenerationFailed)
    while len(homes) > STREAM_HOMES:
        del homes[next(iter(homes))]
    return streams  # type: ignore[return-value]


register_job_kind(TrajectoryJob, run_trajectory_jobs)
