"""Bytes a maze PLR-like pool call sends to its Ray workers, call after call: episode jobs,
then PPO updates (trajectory streams).

Episodes: one call is `--levels` mazes x `--episodes` seeds each (512 jobs over 32 levels by
default), one policy; `--calls` calls replay the same levels with new seeds, as PLR's
replays do. The jobs of a level come together (as an optimizer's step on one level asks
them), or with `--interleave` level after level for each seed (as `cross_evaluate` and
POET's transfers ask them: each chunk then names many levels).

PPO: `--calls` updates of an actor-critic on the same mazes, one stream per maze
(`n_envs = --levels`), `--ppo-steps` steps a stream; the streams go on across updates (an
unfinished episode's continuation travels with its stream), the weights are kept.

For each call it prints:

  by value   bytes of the chunks' arguments with every job's level inside it (as before
             levels travelled by id): the same chunks, pickled with the levels put back
  by id      bytes of the chunks' arguments the pool hands Ray (jobs and their sources,
             pickled as Ray pickles them): each level named by its id
  level put  bytes of level blocks put in the object store (`level_bytes_shipped`)
  weights    bytes of weight blocks put (`bytes_shipped`)

    .venv/bin/python benchmarks/level_shipping.py [--levels 32] [--episodes 16] [--calls 3]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np
import ray
import ray.cloudpickle.cloudpickle as cloudpickle

from coevo import tasks
from coevo.optimizers.ppo import PPO
from coevo.optimizers.ppo_config import PPOConfig
from coevo.optimizers.ppo_streams import with_stream_ends
from coevo.policies.registry import make_policy
from coevo.pool import EvaluationPool
from coevo.pool.jobs import EpisodeJob, Stored
from coevo.pool.levels import LEVEL_SOURCES, LevelKey, with_task

HEADER = f"{'call':>4} {'by value':>10} {'by id':>10} {'level put':>10} {'weights':>10}"


def _by_value(chunk: list[Any], sources: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """A chunk as it travelled before levels went by id: each job carries its level."""
    jobs = [
        with_task(job, job.task.level) if isinstance(job.task, LevelKey) else job for job in chunk
    ]
    return jobs, {key: value for key, value in sources.items() if key != LEVEL_SOURCES}


def _measuring(run: Callable[..., Any], sent: list[tuple[int, int]]) -> Callable[..., Any]:
    """The backend's `run`, noting the pickled size of every chunk's arguments, by value
    and as sent (by id)."""

    def wrapped(chunks: Any, sources_for: Any, *rest: Any) -> Any:
        pairs = list(zip(chunks, sources_for, strict=True))
        by_value = sum(len(cloudpickle.dumps(_by_value(c, s))) for c, s in pairs)
        by_id = sum(len(cloudpickle.dumps((c, s))) for c, s in pairs)
        sent.append((by_value, by_id))
        return run(chunks, sources_for, *rest)

    return wrapped


class _Watched:
    """A Ray pool whose chunk arguments are measured; prints one line per call."""

    def __init__(self, pool: EvaluationPool):
        self.pool = pool
        self.sent: list[tuple[int, int]] = []
        backend: Any = pool._backend  # noqa: SLF001 - the benchmark watches what it is handed
        backend.run = _measuring(backend.run, self.sent)
        self.before = pool.stats_snapshot()
        print(HEADER)

    def line(self, call: int) -> None:
        """Print the figures of the call just made."""
        after = self.pool.stats_snapshot()
        put = after["level_bytes_shipped"] - self.before["level_bytes_shipped"]
        weights = after["bytes_shipped"] - self.before["bytes_shipped"]
        by_value, by_id = self.sent[-1]
        print(f"{call:>4} {by_value:>10,} {by_id:>10,} {put:>10,.0f} {weights:>10,.0f}")
        self.before = after


def episodes(space: Any, levels: list[Any], args: argparse.Namespace) -> None:
    """The episode calls: `--episodes` seeds on each maze, call after call."""
    env = space.make_env()
    policy = make_policy("mlp", env.observation_space, env.action_space, {"hidden": [16]})
    theta = policy.init(np.random.default_rng(0))
    with EvaluationPool(space, policy, "ray", args.workers, envs_per_worker=16) as pool:
        order = "interleaved" if args.interleave else "grouped by level"
        count = len(levels) * args.episodes
        print(f"episodes: {len(levels)} mazes x {args.episodes} episodes = {count} jobs ({order})")
        watched = _Watched(pool)
        key = pool.register(theta)
        for call in range(args.calls):
            seed = call * args.episodes
            pairs = [(level, seed + k) for level in levels for k in range(args.episodes)]
            if args.interleave:
                pairs = [(level, seed + k) for k in range(args.episodes) for level in levels]
            pool.run([EpisodeJob(Stored(key), level, job_seed) for level, job_seed in pairs])
            watched.line(call + 1)


def ppo_updates(space: Any, levels: list[Any], args: argparse.Namespace) -> None:
    """The PPO rollouts: one stream per maze, `--ppo-steps` steps, update after update."""
    env = space.make_env()
    policy = make_policy("actor_critic", env.observation_space, env.action_space, {"hidden": [16]})
    config = PPOConfig(n_envs=len(levels), n_steps=args.ppo_steps)
    optimizer = PPO(config, policy.num_params, policy=policy)
    theta = policy.init(np.random.default_rng(0))
    state = optimizer.init_state(theta, np.random.default_rng(1))
    rng = np.random.default_rng(2)
    with EvaluationPool(space, policy, "ray", args.workers, envs_per_worker=16) as pool:
        print(
            f"PPO: {len(levels)} mazes, one stream each, {args.ppo_steps} steps a stream "
            f"(episodes of at most {space.max_episode_steps})"
        )
        watched = _Watched(pool)
        for call in range(args.calls):
            asked = optimizer.ask(theta, state, levels, rng, pool.register)
            streams = pool.dispatch(asked.jobs)
            state = with_stream_ends(state, asked.jobs, streams)
            watched.line(call + 1)


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Bytes a maze PLR-like pool call sends to its workers."
    )
    parser.add_argument("--levels", type=int, default=32)
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--interleave", action="store_true", help="jobs seed by seed")
    parser.add_argument("--ppo-steps", type=int, default=256, help="steps a PPO stream")
    args = parser.parse_args()
    ray.init(address="local", num_cpus=args.workers, include_dashboard=False)
    space = tasks.get("maze")
    rng = np.random.default_rng(0)
    levels = [space.sample(rng) for _ in range(args.levels)]
    episodes(space, levels, args)
    ppo_updates(space, levels, args)
    ray.shutdown()


if __name__ == "__main__":
    main()
