"""Cold start and a warm small call of the evaluation pool, Ray's start included.

Each repeat runs in a fresh Python process (`--child`), so Ray, the worker processes and
their imports all start from nothing, as in a user's first call:

  ray.init        `ray.init` as `EvaluationPool` calls it (the pool owns Ray)
  constructed     `EvaluationPool(...)` returned (Ray now starts in the background)
  first result    pool constructed to the first `evaluate` answered (1 pair x 1 episode),
                  with who served it: "local (ray starting)" (coevo/pool/handover.py) or "ray"
  ray ready       pool constructed to Ray's workers answering (`pool.wait_ready()`),
                  `ray.init` included
  warm call       16 pairs x 4 Pendulum episodes on batched physics on Ray's workers, best of
                  `--warm-calls` after the first (median also printed)

Wall times, on a machine shared with other processes: the load average is printed beside
each run, and the CPU seconds the driver process used are given too.

    .venv/bin/python benchmarks/pool_startup.py [--json] [--repeats 3] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any


def child(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    cpu_started = time.process_time()
    import numpy as np

    from coevo import tasks
    from coevo.policies import MLPPolicy
    from coevo.pool import EvaluationPool

    space = tasks.get("pendulum")
    env = space.make_env()
    policy = MLPPolicy.for_spaces(env.observation_space, env.action_space, hidden=(16,))
    rng = np.random.default_rng(0)
    ray_init_s = timed_ray_init()
    imported = time.perf_counter()
    pool = EvaluationPool(space, policy, "ray", args.workers, args.envs_per_worker)
    constructed = time.perf_counter()
    first = pool.evaluate([(policy.init(rng), space.initial_task())], episodes=1)
    answered = time.perf_counter()
    served_first = pool.serving
    pool.wait_ready()
    ready = time.perf_counter()
    gravity = space.param("gravity")
    pairs = [
        (policy.init(rng), space.task(gravity=float(g)))
        for g in np.linspace(gravity.low, gravity.high, 16)
    ]
    warm = []
    for _ in range(args.warm_calls):
        t = time.perf_counter()
        pool.evaluate(pairs, episodes=4, seed=1)
        warm.append(time.perf_counter() - t)
    pool.close()
    return {
        "imports_s": imported - started,
        "ray_init_s": ray_init_s[0],
        "constructed_s": constructed - imported,
        "first_result_s": answered - imported,
        "first_served_by": served_first,
        "ray_ready_s": ready - imported,
        "warm_call_best_s": min(warm[1:] or warm),
        "warm_call_median_s": float(np.median(warm[1:] or warm)),
        "driver_cpu_s": time.process_time() - cpu_started,
        "first_return_finite": bool(np.isfinite(first).all()),
    }


def timed_ray_init() -> list[float]:
    """Wrap `ray.init` so that the pool's own call is timed; the list gets its seconds."""
    import ray

    seconds: list[float] = [float("nan")]
    init = ray.init

    def timed(*args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter()
        try:
            return init(*args, **kwargs)
        finally:
            seconds[0] = time.perf_counter() - t

    ray.init = timed
    return seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--envs-per-worker", type=int, default=64)
    parser.add_argument("--warm-calls", type=int, default=11)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args)))
        return
    runs = []
    for _ in range(args.repeats):
        load = os.getloadavg()[0]
        command = [sys.executable, __file__, "--child", "--workers", str(args.workers)]
        command += ["--envs-per-worker", str(args.envs_per_worker)]
        command += ["--warm-calls", str(args.warm_calls)]
        out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        run = json.loads(out.strip().splitlines()[-1])
        run["loadavg"] = round(load, 2)
        runs.append(run)
    if args.json:
        print(json.dumps(runs, indent=2))
        return
    print(f"{args.workers} Ray workers x {args.envs_per_worker} slots, {os.cpu_count()} CPUs")
    print(
        f"{'load':>6}{'imports':>9}{'ray.init':>10}{'built':>8}{'1st result':>12}"
        f"{'served by':>22}{'ray ready':>11}{'warm best':>11}{'warm median':>13}"
        f"{'driver CPU':>12}"
    )
    for run in runs:
        print(
            f"{run['loadavg']:>6.2f}{run['imports_s']:>8.2f}s{run['ray_init_s']:>9.2f}s"
            f"{run['constructed_s']:>7.3f}s{run['first_result_s']:>11.3f}s"
            f"{run['first_served_by']:>22}{run['ray_ready_s']:>10.2f}s"
            f"{1e3 * run['warm_call_best_s']:>9.1f}ms{1e3 * run['warm_call_median_s']:>11.1f}ms"
            f"{run['driver_cpu_s']:>11.2f}s"
        )
    print(
        "1st result and ray ready: from constructing the pool (Ray not running), ray.init\n"
        "included; warm: 16 pairs x 4 Pendulum episodes (PendulumSlots) on Ray's workers."
    )


if __name__ == "__main__":
    main()
