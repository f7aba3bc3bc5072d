"""How much a Ray cluster of two nodes keeps of one node's throughput, on the terrain walker.

The same calls (ES-sized batches of walker episodes: `--pairs` random MLP policies x
`--episodes` seeds on tasks spread over roughness) run on:

  one node     an embedded Ray with `--workers` CPUs, the pool's workers on it;
  two nodes    `tests/cluster_support.LocalCluster`: a head and a second raylet on this
               machine, `--workers` / 2 CPUs each, the pool connected by address (the
               two-node test cluster of `tests/pool/test_cluster.py`), so every chunk crosses
               node boundaries through the object store and the GCS as on a real cluster.

Per configuration and repeat it prints env steps per wall second, the workers' busy share
(sum of the workers' seconds inside a chunk / (wall x workers): what the driver, scheduling
and transfers leave idle) and env steps per worker-busy second. `efficiency` is two nodes'
steps per wall second over one node's in the same repeat; the two configurations alternate
so other processes' load hits both alike. The load average is printed beside each run.

What it does not measure: the network between real machines (both nodes share this host's
loopback), nor more than two nodes.

    .venv/bin/python benchmarks/cluster_efficiency.py [--json] [--repeats 3] [--calls 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import ray

from coevo import tasks
from coevo.policies import MLPPolicy
from coevo.pool import EvaluationPool

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from cluster_support import LocalCluster  # noqa: E402

SPACE = "bipedal_terrain"
HIDDEN = (40, 40)  # POET's walker policy (conf/experiment/poet_bipedal.yaml)


def workload(pairs: int, seed: int) -> list:
    """`pairs` random policies, each on one task of a spread over roughness."""
    space = tasks.get(SPACE)
    env = space.make_env()
    policy = MLPPolicy.for_spaces(env.observation_space, env.action_space, hidden=HIDDEN)
    rng = np.random.default_rng(seed)
    rough = space.param("roughness")
    levels = np.linspace(rough.low, rough.high, 8)
    return policy, [
        (policy.init(rng), space.task(roughness=rough.clip(levels[i % len(levels)])))
        for i in range(pairs)
    ]


def measure(pool: EvaluationPool, pairs: list, episodes: int, calls: int) -> dict:
    pool.evaluate(pairs[:4], 1, seed=999)  # warm: weights cached, envs built
    before = pool.stats_snapshot()
    start = time.perf_counter()
    for call in range(calls):
        pool.evaluate(pairs, episodes, seed=1000 * call)
    wall = time.perf_counter() - start
    after = pool.stats_snapshot()
    steps = after["env_steps"] - before["env_steps"]
    busy = after["busy_s"] - before["busy_s"]
    return {
        "env_steps": int(steps),
        "wall_s": wall,
        "steps_per_wall_s": steps / wall,
        "busy_share": busy / (wall * pool.num_workers),
        "steps_per_busy_s": steps / busy if busy else float("nan"),
        "load": os.getloadavg()[0],
    }


def run_driver(args, address: str | None, env: dict | None = None) -> dict:
    """One configuration's measurement in a fresh driver process (as a user's driver)."""
    command = [
        sys.executable,
        __file__,
        "--driver",
        *("--address", address) * (address is not None),
        *("--workers", str(args.workers), "--pairs", str(args.pairs)),
        *("--episodes", str(args.episodes), "--calls", str(args.calls)),
    ]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"driver failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def driver(args) -> None:
    """The driver's side: connect (or start an embedded Ray), measure, print JSON."""
    policy, pairs = workload(args.pairs, seed=0)
    if args.address:
        ray.init(address=args.address, log_to_driver=False)
    else:
        ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
    nodes = sum(1 for n in ray.nodes() if n["Alive"])
    with EvaluationPool(
        tasks.get(SPACE), policy, "ray", args.workers, 64, address=args.address
    ) as pool:
        figures = measure(pool, pairs, args.episodes, args.calls)
        figures["nodes_with_workers"] = len(set(pool.worker_nodes()))
    figures["nodes"] = nodes
    ray.shutdown()
    print(json.dumps(figures))


def two_nodes(args) -> dict:
    half = max(1, args.workers // 2)
    cluster = LocalCluster().start(head_cpus=half, node_cpus=(args.workers - half,))
    try:
        return run_driver(args, cluster.address, cluster.env)
    finally:
        cluster.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--pairs", type=int, default=64)
    parser.add_argument("--episodes", type=int, default=4)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--driver", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--address", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.driver:
        driver(args)
        return
    rows = []
    for repeat in range(args.repeats):
        single = run_driver(args, None)
        double = two_nodes(args)
        rows.append(
            {
                "repeat": repeat,
                "one_node": single,
                "two_nodes": double,
                "efficiency": double["steps_per_wall_s"] / single["steps_per_wall_s"],
            }
        )
        if not args.json:
            for name, r in (("one node", single), ("two nodes", double)):
                print(
                    f"repeat {repeat} {name:9s} {r['env_steps']:>8d} steps  "
                    f"{r['steps_per_wall_s']:>8.0f} steps/s  busy share {r['busy_share']:.3f}  "
                    f"{r['steps_per_busy_s']:>8.0f} steps/busy s  load {r['load']:.1f}"
                    + f"  ({r['nodes']} node(s), workers on {r['nodes_with_workers']})"
                )
            efficiency = rows[-1]["efficiency"]
            print(f"repeat {repeat} efficiency (two nodes / one node): {efficiency:.3f}")
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        eff = np.array([r["efficiency"] for r in rows])
        share = np.array([r["two_nodes"]["busy_share"] for r in rows])
        print(
            f"efficiency {eff.mean():.3f} ± {eff.std():.3f}; two nodes' busy share "
            f"{share.mean():.3f} ± {share.std():.3f} ({args.repeats} repeats)"
        )


if __name__ == "__main__":
    main()
