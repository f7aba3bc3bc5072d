"""PPO's streams across rollouts: each pair's episodes continue from one rollout to the next.

A pair's state (`StreamingPPOState`: the learner's `PPOState` plus `streams`) remembers, per
stream, the task it ran on and the episode it left unfinished (`Continuation`: reset seed,
env actions since that reset, return so far). The next `ask` hands each stream its
continuation when the stream's task is unchanged; otherwise, or after an episode ended at
the rollout's last step or a failed stream, it starts from a reset. A stream with an
unfinished episode keeps its task whatever tasks the next step is given (`stream_tasks`:
a new level starts only at a reset, as in dcd); the new tasks go to the streams that reset.
So SB3's zoo shapes (e.g. CartPole's 8 streams x 32 steps) see whole episodes, as with any
PPO library's vectorised envs, and the arrays stay a function of (config, seed) whatever the pool.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

from coevo.optimizers.ppo_learner import PPOState
from coevo.pool.trajectories import Continuation, Stream, TrajectoryJob
from coevo.tasks.task import Task


@dataclass(frozen=True)
class StreamEnd:
    """Where one stream stopped: its task and its unfinished episode (None: it ended)."""

    task: Task
    continuation: Continuation | None


@dataclass
class StreamingPPOState(PPOState):
    """The learner's state plus the pair's streams (checkpointed with it)."""

    streams: tuple[StreamEnd, ...] = ()

    def copy(self) -> StreamingPPOState:
        """A copy of the state with its own arrays; the (immutable) streams are shared."""
        base = PPOState.copy(self)
        return StreamingPPOState(
            **{f.name: getattr(base, f.name) for f in fields(PPOState)}, streams=self.streams
        )


def stream_tasks(state: PPOState, tasks: Sequence[Task], count: int) -> list[Task]:
    """The task of each of the next rollout's `count` streams. A stream whose episode is
    unfinished keeps its task: a new level starts only at a reset (as dcd's level sampler
    hands out levels, and as any vectorised env does). The streams that reset take `tasks`
    in turn, cycling: with no unfinished episode, stream s runs tasks[s % len(tasks)]."""
    ends = getattr(state, "streams", ())  # a state saved before streams continued: resets
    out: list[Task] = []
    fresh = 0
    for s in range(count):
        if s < len(ends) and ends[s].continuation is not None:
            out.append(ends[s].task)
        else:
            out.append(tasks[fresh % len(tasks)])
            fresh += 1
    return out


def without_streams(state: PPOState) -> PPOState:
    """`state` with no unfinished episodes: rollouts asked with it (a curriculum scoring
    levels without training) start every stream from a reset on the tasks given."""
    if isinstance(state, StreamingPPOState) and state.streams:
        return replace(state, streams=())
    return state


def continuations(state: PPOState, tasks: Sequence[Task]) -> list[Continuation | None]:
    """Per stream of the next rollout (stream s runs tasks[s]): its continuation, or None
    where it starts from a reset (new stream, changed task, ended episode)."""
    ends = getattr(state, "streams", ())  # a state saved before streams continued: resets
    return [
        ends[s].continuation if s < len(ends) and ends[s].task == task else None
        for s, task in enumerate(tasks)
    ]


def with_stream_ends(
    state: PPOState, jobs: Sequence[TrajectoryJob], results: Sequence[Stream]
) -> StreamingPPOState:
    """`state` with the streams where this rollout (`jobs`, `results`) left them; the
    arrays are shared with `state`, not copied."""
    ends = tuple(StreamEnd(job.task, r.continuation) for job, r in zip(jobs, results, strict=True))
    if isinstance(state, StreamingPPOState):
        return replace(state, streams=ends)
    learner = {f.name: getattr(state, f.name) for f in fields(PPOState)}
    return StreamingPPOState(**learner, streams=ends)
