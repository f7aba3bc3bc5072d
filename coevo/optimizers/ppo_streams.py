"""PPO's streams across rollouts: each pair's episodes continue from one rollout to the next,
and every reset starts the next level.

A pair's state (`StreamingPPOState`: the learner's `PPOState` plus `streams`) remembers, per
stream, the level its unfinished episode runs on and that episode (`Continuation`: reset
seed, env actions since that reset, return so far). The next `ask` hands each stream its
continuation, on that level, whatever tasks the step is given: an episode is never cut by
an update, so SB3's zoo shapes (e.g. CartPole's 8 streams x 32 steps) see whole episodes,
as with any PPO library's vectorised envs. A new level starts only at a reset, and EVERY
reset starts one, mid-rollout too (as dcd's runners and SB3-style vec envs reset a done env
on the level sampler's next level): a training stream's job carries `next_tasks`, the step's
tasks rotated so that its resets take them in turn after its own first one (`stream_plan`).
Its result says which level each step ran on (`Stream.level_index`); a curriculum splits
it at the level changes into per-level segments (`level_segments`).

A scoring rollout (a curriculum evaluating levels without training: `without_streams`)
keeps every stream on its own level: several episodes of one level each. The arrays stay
a function of (config, seed) whatever the pool.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

import numpy as np

from coevo.optimizers.ppo_learner import PPOState
from coevo.pool.trajectories import Continuation, Stream, TrajectoryJob, final_level
from coevo.tasks.task import Task


@dataclass(frozen=True)
class StreamEnd:
    """Where one stream stopped: the level of its last episode and that episode if it is
    unfinished (None: it ended)."""

    task: Task
    continuation: Continuation | None


@dataclass
class StreamingPPOState(PPOState):
    """The learner's state plus the pair's streams (checkpointed with it).

    `next_levels`: training rollouts take a new level at every reset; False in the state a
    curriculum scores levels with (`without_streams`), whose streams stay on their level.
    """

    streams: tuple[StreamEnd, ...] = ()
    next_levels: bool = True

    def copy(self) -> StreamingPPOState:
        """A copy of the state with its own arrays; the (immutable) streams are shared."""
        base = PPOState.copy(self)
        return StreamingPPOState(
            **{f.name: getattr(base, f.name) for f in fields(PPOState)},
            streams=self.streams,
            next_levels=self.next_levels,
        )


def stream_plan(
    state: PPOState, tasks: Sequence[Task], count: int
) -> list[tuple[Task, tuple[Task, ...]]]:
    """Per stream of the next rollout of `count` streams: (its first level, the levels its
    resets take in turn). A stream whose episode is unfinished keeps its level until that
    episode ends; the streams that reset take `tasks` in turn, cycling (with no unfinished
    episode, stream s starts on tasks[s % len(tasks)]). In a training rollout a stream
    whose first level is tasks[i] (a continuing stream s: i = s % len(tasks)) then takes
    tasks[i+1], tasks[i+2], ... at its resets, cycling; in a scoring rollout, or with one
    task, every reset is on its first level."""
    ends = getattr(state, "streams", ())  # a state saved before streams continued: resets
    rotate = getattr(state, "next_levels", True) and len(tasks) > 1
    out: list[tuple[Task, tuple[Task, ...]]] = []
    fresh = 0
    for s in range(count):
        if s < len(ends) and ends[s].continuation is not None:
            first, i = ends[s].task, s % len(tasks) - 1
        else:
            i = fresh % len(tasks)
            first = tasks[i]
            fresh += 1
        following = (*tasks[i + 1 :], *tasks[: i + 1]) if rotate else ()
        out.append((first, tuple(following)))
    return out


def stream_tasks(state: PPOState, tasks: Sequence[Task], count: int) -> list[Task]:
    """The first level of each of the next rollout's `count` streams (`stream_plan`)."""
    return [first for first, _ in stream_plan(state, tasks, count)]


def without_streams(state: PPOState) -> PPOState:
    """`state` for rollouts that score levels without training: no unfinished episodes
    (every stream starts from a reset on the tasks given) and no new level at a reset."""
    if isinstance(state, StreamingPPOState):
        return replace(state, streams=(), next_levels=False)
    learner = {f.name: getattr(state, f.name) for f in fields(PPOState)}
    return StreamingPPOState(**learner, next_levels=False)


def continuations(state: PPOState, tasks: Sequence[Task]) -> list[Continuation | None]:
    """Per stream of the next rollout (stream s starts on tasks[s]): its continuation, or
    None where it starts from a reset (new stream, changed level, ended episode)."""
    ends = getattr(state, "streams", ())  # a state saved before streams continued: resets
    return [
        ends[s].continuation if s < len(ends) and ends[s].task == task else None
        for s, task in enumerate(tasks)
    ]


def with_stream_ends(
    state: PPOState, jobs: Sequence[TrajectoryJob], results: Sequence[Stream]
) -> StreamingPPOState:
    """`state` with the streams where this rollout (`jobs`, `results`) left them, each on
    the level of its last episode; the arrays are shared with `state`, not copied."""
    ends = tuple(
        StreamEnd(final_level(job, r), r.continuation) for job, r in zip(jobs, results, strict=True)
    )
    if isinstance(state, StreamingPPOState):
        return replace(state, streams=ends, next_levels=True)
    learner = {f.name: getattr(state, f.name) for f in fields(PPOState)}
    return StreamingPPOState(**learner, streams=ends)


def level_segments(job: TrajectoryJob, stream: Stream) -> list[tuple[TrajectoryJob, Stream]]:
    """A stream split where its level changes (always at an episode's end) into per-level
    (job, stream) pairs: each job on that level, with the continuation only on the first;
    each stream the steps on it (views), its ended episodes' count and return, and the
    unfinished episode's continuation only on the last. A stream on one level, or a failed
    one, is itself."""
    index = stream.level_index
    if stream.error or index is None or len(index) == 0 or not job.next_tasks:
        return [(job, stream)]
    starts = [0, *(np.flatnonzero(index[1:] != index[:-1]) + 1).tolist()]
    if len(starts) == 1 and index[0] == 0:
        return [(job, stream)]
    levels = job.levels()
    out = []
    for n, start in enumerate(starts):
        stop = starts[n + 1] if n + 1 < len(starts) else len(index)
        first, last = n == 0, n == len(starts) - 1
        part = replace(
            job,
            task=levels[int(index[start])],
            continuation=job.continuation if first else None,
            next_tasks=(),
        )
        out.append((part, _steps(stream, start, stop, part.continuation, last)))
    return out


def _steps(stream: Stream, start: int, stop: int, ahead: Continuation | None, last: bool) -> Stream:
    """Steps start..stop-1 of `stream` as a stream of their own (see `level_segments`)."""
    window = slice(start, stop)
    rewards = stream.rewards[window]
    ended = stream.terminated[window] | stream.truncated[window]
    # Summed step by step in float64 from the continuation's return, as the worker does.
    running = ahead.episode_return if ahead is not None else 0.0
    total, done = 0.0, 0
    for reward, end in zip(rewards.tolist(), ended.tolist(), strict=True):
        running += reward
        if end:
            total, done, running = total + running, done + 1, 0.0
    return Stream(
        obs=stream.obs[window],
        actions=stream.actions[window],
        log_probs=stream.log_probs[window],
        rewards=rewards,
        terminated=stream.terminated[window],
        truncated=stream.truncated[window],
        values=stream.values[window],
        next_values=stream.next_values[window],
        last_obs=stream.last_obs,
        episode_return_sum=total,
        episodes_done=done,
        error="",
        continuation=stream.continuation if last else None,
        level_index=np.zeros(stop - start, dtype=np.int16),
    )
