"""Trajectory jobs: a worker runs a policy on a task for N steps and returns the arrays a
policy-gradient learner needs (observations, actions, log-probs, rewards, terminated /
truncated flags, values and bootstrap values, the last observation).

A job is one stream: one env slot for `num_steps` steps, resetting at each episode end, from
a reset at the job's start. A PPO rollout of one pair is `n_envs` such jobs (streams
0..n_envs-1). Many pairs' streams share a worker's slots and step together, one batched
forward pass per step, exactly as evaluation episodes do.

Determinism: a stream's reset seeds and action noise come from generators seeded by (job
seed, stream), drawn up front, never by slot or batch; the numpy policy and the batched
envs give each row the same bits whatever the batch. So a stream's arrays are a function of
(policy, task, seed, stream, num_steps), whatever the backend, worker count or chunking.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from coevo.pool.dispatch import register_job_kind
from coevo.pool.jobs import Stored
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
)


@dataclass(frozen=True)
class TrajectoryJob:
    """Stream `stream` of a rollout: the stored policy `params` on `task` for `num_steps`
    steps, from generators seeded by (seed, stream)."""

    params: Stored
    task: Task
    seed: int
    stream: int
    num_steps: int


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
    errors: dict[int, str] = field(default_factory=dict)
    stats: dict[str, float] = field(default_factory=dict)

    @property
    def nbytes(self) -> int:
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
) -> TrajectoryChunk:
    """Run trajectory jobs on `slots` (an `EnvSlots`), `slots.num_slots` streams at a time.

    `policy` needs `sample(params, obs, noise)` and `values(params, obs)` (e.g.
    `ActorCriticSpec`); `skeleton` is the worker's preallocated [slots, P] parameter array,
    filled in place; `params_for(job)` gives a job's vector (the worker's weight cache).
    """
    n = len(jobs)
    steps = {job.num_steps for job in jobs}
    if len(steps) > 1:
        raise ValueError(f"a chunk's trajectory jobs must share num_steps, got {sorted(steps)}")
    horizon = steps.pop() if steps else 0
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
    )
    width = slots.num_slots
    for first in range(0, n, width):
        _run_wave(slots, policy, max_episode_steps, jobs, first, min(n, first + width),
                  params_for, skeleton, out)  # fmt: skip
    out.stats["trajectory_bytes"] = float(out.nbytes)
    out.stats["env_steps"] = float(horizon * (n - len(out.errors)))
    return out


def _run_wave(slots, policy, max_steps, jobs, first, stop, params_for, skeleton, out) -> None:
    """Jobs first..stop-1 in slots 0..k-1, stepped together for the common horizon."""
    k = stop - first
    horizon = out.rewards.shape[1]
    rows = np.arange(first, stop)
    obs = np.zeros((k, out.obs.shape[2]), dtype=np.float32)
    alive = np.ones(k, dtype=bool)
    length = np.zeros(k, dtype=np.int64)
    episode_return = np.zeros(k, dtype=np.float64)
    reset_seeds: list[np.ndarray] = []
    noise = (
        np.zeros((k, horizon), dtype=np.float64)
        if policy.discrete
        else np.zeros((k, horizon, policy.act_dim), dtype=np.float32)
    )
    episode = np.zeros(k, dtype=np.int64)

    def fail(position: int, message: str) -> None:
        alive[position] = False
        out.errors[int(rows[position])] = message

    for position, job in enumerate(jobs[first:stop]):
        seeds_rng, noise_rng = stream_generators(job.seed, job.stream)
        # Enough reset seeds for the most episodes a stream can have (one per step).
        reset_seeds.append(seeds_rng.integers(0, 2**31 - 1, size=horizon + 1))
        if policy.discrete:
            noise[position] = noise_rng.random(horizon)
        else:
            noise[position] = noise_rng.standard_normal((horizon, policy.act_dim), np.float32)
        try:
            skeleton[position] = params_for(job)
            obs[position] = slots.reset_slot(position, job.task, int(reset_seeds[position][0]))
        except Exception as error:  # a task its env refuses fails that stream only
            fail(position, f"{type(error).__name__}: {error}")

    params = skeleton[:k]
    for t in range(horizon):
        live = np.flatnonzero(alive)
        if live.size == 0:
            break
        every = live.size == k
        p = params if every else params[live]
        o = obs if every else obs[live]
        actions, env_actions, log_probs, values = policy.sample(p, o, noise[live, t])
        at = rows[live]
        out.obs[at, t] = o
        out.actions[at, t] = actions
        out.log_probs[at, t] = log_probs
        out.values[at, t] = values
        next_obs, rewards, terminated, errors = slots.step_slots(live, env_actions)
        length[live] += 1
        truncated = (length[live] >= max_steps) & ~terminated
        out.rewards[at, t] = rewards
        out.terminated[at, t] = terminated
        out.truncated[at, t] = truncated
        episode_return[live] += rewards
        for position, message in errors.items():
            fail(int(live[position]), message)
        ended = (terminated | truncated) & alive[live]
        cut = truncated & alive[live]
        if t == horizon - 1:
            cut = ~terminated & alive[live]  # the stream's end: bootstrap every live one
        if cut.any():
            out.next_values[at[cut], t] = policy.values(p[cut], next_obs[cut])
        obs[live] = next_obs
        for position in live[ended].tolist():
            out.episode_return_sum[rows[position]] += episode_return[position]
            out.episodes_done[rows[position]] += 1
            episode_return[position] = 0.0
            length[position] = 0
            if t == horizon - 1:
                continue  # the stream ends here: no reset needed
            episode[position] += 1
            job = jobs[rows[position]]
            try:
                seed = int(reset_seeds[position][episode[position]])
                obs[position] = slots.reset_slot(position, job.task, seed)
            except Exception as error:
                fail(position, f"{type(error).__name__}: {error}")
    out.last_obs[rows] = obs
    for position in np.flatnonzero(~alive).tolist():
        row = rows[position]
        for name in ARRAY_NAMES:
            getattr(out, name)[row] = 0


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
        )
        for j in range(len(chunk))
    ]


def run_trajectory_jobs(pool: EvaluationPool, jobs: list[TrajectoryJob]) -> list[Stream]:
    """The pool's runner for trajectory jobs: chunks to the workers like episodes, one
    `Stream` per job in order (the chunks' bytes are in the pool's `trajectory_bytes`)."""
    streams: list[Stream] = []
    for chunk in pool.run_chunks(jobs, "collect_trajectories"):
        streams.extend(streams_of(chunk))
    return streams


register_job_kind(TrajectoryJob, run_trajectory_jobs)
