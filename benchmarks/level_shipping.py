"""Bytes a maze PLR-like pool call sends to its Ray workers, call after call.

One call is `--levels` mazes x `--episodes` seeds each (512 jobs over 32 levels by default),
one policy; `--calls` calls replay the same levels with new seeds, as PLR's replays do. The
jobs of a level come together (as an optimizer's step on one level asks them), or with
`--interleave` level after level for each seed (as `cross_evaluate` and POET's transfers ask
them: each chunk then names many levels). For each call it prints:

  args       bytes of the chunks' arguments the pool hands Ray (jobs and their sources,
             pickled as Ray pickles them): levels by value inside the jobs, or by id
  level put  bytes of level blocks put in the object store (`level_bytes_shipped`)
  weights    bytes of weight blocks put (`bytes_shipped`)

Run it on an older checkout (PYTHONPATH=that checkout) for the figures of levels by value.

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
from coevo.policies.registry import make_policy
from coevo.pool import EvaluationPool
from coevo.pool.jobs import EpisodeJob, Stored


def _measuring(run: Callable[..., Any], sent: list[int]) -> Callable[..., Any]:
    """The backend's `run`, noting the pickled size of every chunk's arguments."""

    def wrapped(chunks: Any, sources_for: Any, *rest: Any) -> Any:
        sent.append(
            sum(len(cloudpickle.dumps((c, s))) for c, s in zip(chunks, sources_for, strict=True))
        )
        return run(chunks, sources_for, *rest)

    return wrapped


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Bytes a maze PLR-like pool call sends to its workers."
    )
    parser.add_argument("--levels", type=int, default=32)
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--interleave", action="store_true", help="jobs seed by seed")
    args = parser.parse_args()
    ray.init(address="local", num_cpus=args.workers, include_dashboard=False)
    space = tasks.get("maze")
    env = space.make_env()
    policy = make_policy("mlp", env.observation_space, env.action_space, {"hidden": [16]})
    rng = np.random.default_rng(0)
    levels = [space.sample(rng) for _ in range(args.levels)]
    theta = policy.init(rng)
    with EvaluationPool(space, policy, "ray", args.workers, envs_per_worker=16) as pool:
        sent: list[int] = []
        backend: Any = pool._backend  # noqa: SLF001 - the benchmark watches what it is handed
        backend.run = _measuring(backend.run, sent)
        key = pool.register(theta)
        jobs_per_call = args.levels * args.episodes
        order = "interleaved" if args.interleave else "grouped by level"
        print(f"{args.levels} mazes x {args.episodes} episodes = {jobs_per_call} jobs ({order})")
        print(f"{'call':>4} {'args':>10} {'level put':>10} {'weights':>10}")
        before = pool.stats_snapshot()
        for call in range(args.calls):
            seed = call * args.episodes
            pairs = [(level, seed + k) for level in levels for k in range(args.episodes)]
            if args.interleave:
                pairs = [(level, seed + k) for k in range(args.episodes) for level in levels]
            jobs = [EpisodeJob(Stored(key), level, job_seed) for level, job_seed in pairs]
            pool.run(jobs)
            after = pool.stats_snapshot()
            put = after.get("level_bytes_shipped", 0.0) - before.get("level_bytes_shipped", 0.0)
            weights = after["bytes_shipped"] - before["bytes_shipped"]
            print(f"{call + 1:>4} {sent[-1]:>10,} {put:>10,.0f} {weights:>10,.0f}")
            before = after
    ray.shutdown()


if __name__ == "__main__":
    main()
