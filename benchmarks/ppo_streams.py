"""What continuing PPO streams cost the pool: cache hit rate and replay cost.

    .venv/bin/python benchmarks/ppo_streams.py            # ~1 min here
    .venv/bin/python benchmarks/ppo_streams.py --calls 10  # shorter

8 pairs x a stream shape (the zoo's CartPole 8 x 32 and Pendulum 4 x 1024, and Pendulum
8 x 32) rollouts, pool calls
one after another, each stream continuing where the previous call left it (the bookkeeping
PPO's `tell` does, without the update: this measures the pool alone). Policies are fixed
random initialisations, so CartPole's episodes are short (~20 steps) and Pendulum's last
its 200 steps. Per mode: env steps per CPU second (this process and the pool's workers),
cache hits and misses, replayed env steps per collected one. Modes:
- `reset`: every stream starts at a reset (the behaviour before streams continued);
- `cached`: one local worker, every continuation found in its cache;
- `replayed`: one local worker with no cache: every continuation is replayed;
- `ray sticky`: two Ray workers, chunks routed to the worker holding the stream;
- `ray elsewhere`: two Ray workers, each stream routed to the worker NOT holding it (the
  worst case, as after a worker restart): every continuation is replayed.
Wall times on this shared 2-core machine move with the other processes' load; the CPU-second
figures are the ones to compare.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from coevo import tasks
from coevo.optimizers.ppo import PPO
from coevo.optimizers.ppo_config import PPOConfig
from coevo.optimizers.ppo_streams import with_stream_ends
from coevo.policies.actor_critic import ActorCriticSpec
from coevo.pool import EvaluationPool
from coevo.pool.trajectories import StreamCache

# (task space, n_envs, n_steps): the zoo's shapes, and Pendulum at 8 x 32, where a stream is
# on average ~100 steps into a 200-step episode: the replay-heavy case.
SHAPES = [("cartpole", 8, 32), ("pendulum", 4, 1024), ("pendulum", 8, 32)]
PAIRS = 8


def measure(space_name: str, n_envs: int, n_steps: int, mode: str, calls: int) -> dict[str, float]:
    space = tasks.get(space_name)
    env = space.make_env()
    spec = ActorCriticSpec.for_spaces(env.observation_space, env.action_space)
    optimizer = PPO(PPOConfig(n_envs=n_envs, n_steps=n_steps), spec.num_params, policy=spec)
    rngs = [np.random.default_rng(seed) for seed in range(PAIRS)]
    thetas = [spec.init(rng) for rng in rngs]
    states = [optimizer.init_state(t, rng) for t, rng in zip(thetas, rngs, strict=True)]
    task = space.initial_task()
    backend, workers = ("ray", 2) if mode.startswith("ray") else ("local", 1)
    with EvaluationPool(space, spec, backend, workers, envs_per_worker=64) as pool:
        if mode == "replayed":
            pool.workers[0].streams = StreamCache(0)
        before, cpu0, wall0 = pool.stats_snapshot(), time.process_time(), time.perf_counter()
        for _ in range(calls):
            if mode == "ray elsewhere":
                for key, worker in pool.stream_homes.items():
                    pool.stream_homes[key] = 1 - worker
            asked = [
                optimizer.ask(theta, state, [task], rng, pool.register)
                for theta, state, rng in zip(thetas, states, rngs, strict=True)
            ]
            results = pool.dispatch([job for a in asked for job in a.jobs])
            offset = 0
            for index, a in enumerate(asked):
                own = results[offset : offset + len(a.jobs)]
                offset += len(a.jobs)
                if mode != "reset":
                    states[index] = with_stream_ends(states[index], a.jobs, own)
        after = pool.stats_snapshot()
        wall = time.perf_counter() - wall0
        cpu = time.process_time() - cpu0
        if backend == "ray":  # the workers are other processes: their CPU time as counted
            cpu += after["cpu_s"] - before["cpu_s"]
    delta = {key: after[key] - before[key] for key in after if key in before}
    return {
        "env_steps": delta["env_steps"],
        "cpu_s": cpu,
        "wall_s": wall,
        "hits": delta["stream_cache_hits"],
        "misses": delta["stream_cache_misses"],
        "replay_steps": delta["replay_steps"],
        "replay_s": delta["replay_s"],
        "busy_s": delta["busy_s"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args()
    print("| task | mode | env steps / CPU s | env steps / wall s | cache hit rate "
          "| replayed / collected steps | replay share of worker time |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for space_name, n_envs, n_steps in SHAPES:
        calls = max(3, args.calls * 32 // n_steps)
        for mode in ("reset", "cached", "replayed", "ray sticky", "ray elsewhere"):
            f = measure(space_name, n_envs, n_steps, mode, calls)
            asked = f["hits"] + f["misses"]
            rate = f"{f['hits'] / asked:.2f}" if asked else "-"
            print(
                f"| {space_name} {n_envs} x {n_steps} | {mode} | {f['env_steps'] / f['cpu_s']:.0f} "
                f"| {f['env_steps'] / f['wall_s']:.0f} | {rate} "
                f"| {f['replay_steps'] / f['env_steps']:.2f} "
                f"| {f['replay_s'] / max(f['busy_s'], 1e-9):.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
