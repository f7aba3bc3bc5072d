"""Per-episode cost of a coevo task sampler: in-process, served by a multiprocessing
manager (what `coevo.wrappers.serve` uses), and as a Ray actor.

    python benchmarks/sampler_overhead.py            # best of 3 x 2000 episodes per row
    python benchmarks/sampler_overhead.py --quick    # 300, no Ray

One episode is what a `CurriculumWrapper` asks of the sampler: its task at reset and its
report at the end (for the shared ones, `next_task` and `episode_end` of the ordered
`VectorSampler`, one env calling, so that every call is a round trip and nothing waits on
other envs). The returns are made up; the sampler's own work (PLR's buffer, ALP-GMM's fits
every 250 episodes) is in every row, so the difference between rows is the transport.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from coevo.curricula.sampler import sampler
from coevo.wrappers import VectorSampler, serve

SETTINGS: dict[str, dict[str, Any]] = {"dr": {}, "plr": {}, "alp_gmm": {}}


def _direct(s: Any, episodes: int) -> None:
    for _ in range(episodes):
        task = s.sample()
        s.update(task, episode_return=task["pole_length"], episode_length=10, success=False)


def _ordered(call: Callable[..., Any], end: Callable[..., Any], episodes: int) -> None:
    for tick in range(1, episodes + 1):
        task = call(0, tick)
        end(0, tick, task, episode_return=task["pole_length"], episode_length=10, success=False)


def measure(name: str, episodes: int, use_ray: bool) -> dict[str, float]:
    """Microseconds per episode, per transport."""
    figures = {}
    start = time.perf_counter()
    _direct(sampler(name, "cartpole", **SETTINGS[name]), episodes)
    figures["in-process sampler"] = time.perf_counter() - start
    local = VectorSampler(sampler(name, "cartpole", **SETTINGS[name]), 1)
    start = time.perf_counter()
    _ordered(local.next_task, local.episode_end, episodes)
    figures["in-process VectorSampler"] = time.perf_counter() - start
    with serve(sampler(name, "cartpole", **SETTINGS[name]), 1) as shared:
        proxy = shared.proxy
        start = time.perf_counter()
        _ordered(proxy.next_task, proxy.episode_end, episodes)
        figures["manager proxy"] = time.perf_counter() - start
    if use_ray:
        import ray

        actor = ray.remote(VectorSampler).remote(sampler(name, "cartpole", **SETTINGS[name]), 1)
        ray.get(actor.episodes.remote())  # started

        def call(env: int, tick: int) -> Any:
            return ray.get(actor.next_task.remote(env, tick))

        def end(*args: Any, **kwargs: Any) -> Any:
            return ray.get(actor.episode_end.remote(*args, **kwargs))

        start = time.perf_counter()
        _ordered(call, end, episodes)
        figures["Ray actor"] = time.perf_counter() - start
        ray.kill(actor)
    return {key: 1e6 * seconds / episodes for key, seconds in figures.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="300 episodes, no Ray")
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs")
    args = parser.parse_args(argv)
    episodes = 300 if args.quick else args.episodes
    use_ray = not args.quick
    if use_ray:
        import ray

        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    print(
        f"µs per episode (best of {args.repeats} x {episodes} episodes; ratio to the "
        "in-process sampler)"
    )
    for name in SETTINGS:
        runs = [measure(name, episodes, use_ray) for _ in range(args.repeats)]
        figures = {key: min(run[key] for run in runs) for key in runs[0]}
        base = figures["in-process sampler"]
        cells = [f"{key} {us:8.1f} ({us / base:4.1f}x)" for key, us in figures.items()]
        print(f"{name:8s} | " + " | ".join(cells))


if __name__ == "__main__":
    main()
