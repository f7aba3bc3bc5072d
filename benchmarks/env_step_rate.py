"""Env steps per second on one core: coevo's batched numpy physics against gymnasium's env.

For each classic-control task space with batched physics, in the same run:

- reference: gymnasium's single env (`gym.make(id).unwrapped`), `env.step` in a loop;
- batched: the space's `make_slots(n)` stepping all n slots per call, for several n;

both with the same pre-drawn random actions, resetting (with a seed, as the pool does)
whenever an episode ends. `step` counts only step calls; `+reset` includes the resets.
Then the same comparison inside the pool's `Worker` (policy forward pass included), with
one gymnasium env per slot (`GymSlots`) against the batched physics.

    .venv/bin/python benchmarks/env_step_rate.py            # about a minute
    .venv/bin/python benchmarks/env_step_rate.py --quick    # a few seconds
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import time

import gymnasium as gym
import numpy as np

from coevo import tasks
from coevo.policies import MLPPolicy
from coevo.pool import EpisodeJob, Stored, Worker
from coevo.tasks.cartpole import CartPoleSlots

GYM_IDS = {
    "cartpole": "CartPole-v1",
    "pendulum": "Pendulum-v1",
    "mountain_car_continuous": "MountainCarContinuous-v0",
    "acrobot": "Acrobot-v1",
}
BATCHED = {"cartpole": CartPoleSlots}  # spaces whose registered make_slots is not on yet


def _actions(space: gym.Space, count: int, rng: np.random.Generator) -> np.ndarray:
    if isinstance(space, gym.spaces.Discrete):
        return rng.integers(0, space.n, size=count)
    return rng.uniform(space.low, space.high, size=(count, space.low.size)).astype(np.float32)


def gym_rate(gym_id: str, steps: int) -> tuple[float, float]:
    """(steps/s counting step calls only, steps/s including seeded resets) of one env."""
    env = gym.make(gym_id).unwrapped
    actions = _actions(env.action_space, steps, np.random.default_rng(0))
    if actions.ndim == 1:
        actions = list(actions.astype(np.int64))  # numpy int64 scalars, as GymSlots passes them
    env.reset(seed=0)
    seed, step_time, started = 1, 0.0, time.perf_counter()
    for action in actions:
        tick = time.perf_counter()
        _, _, terminated, _, _ = env.step(action)
        step_time += time.perf_counter() - tick
        if terminated:
            env.reset(seed=seed)
            seed += 1
    total = time.perf_counter() - started
    return steps / step_time, steps / total


def batched_rate(name: str, num_slots: int, steps: int) -> tuple[float, float]:
    """Same for the batched physics with `num_slots` episodes side by side."""
    space = tasks.get(name)
    make_slots = space.make_slots or BATCHED[name]
    slots = make_slots(num_slots)
    env = space.make_env()
    calls = max(1, steps // num_slots)
    rng = np.random.default_rng(0)
    actions = _actions(env.action_space, calls * num_slots, rng)
    actions = actions.reshape(calls, num_slots, *actions.shape[1:])
    task = space.initial_task()
    every = np.arange(num_slots)
    for slot in every:
        slots.reset_slot(int(slot), task, int(slot))
    seed, step_time, started = num_slots, 0.0, time.perf_counter()
    for call in range(calls):
        tick = time.perf_counter()
        _, _, done, _ = slots.step_slots(every, actions[call])
        step_time += time.perf_counter() - tick
        for slot in np.flatnonzero(done).tolist():
            slots.reset_slot(slot, task, seed)
            seed += 1
    total = time.perf_counter() - started
    return calls * num_slots / step_time, calls * num_slots / total


def worker_rate(name: str, num_envs: int, batched: bool, episodes: int) -> float:
    """Env steps/s of `Worker.run` (policy forward included) on `episodes` episodes."""
    space = tasks.get(name)
    space = dataclasses.replace(
        space,
        make_slots=(space.make_slots or BATCHED[name]) if batched else None,
        max_episode_steps=min(space.max_episode_steps, 200),
    )
    env = space.make_env()
    policy = MLPPolicy.for_spaces(env.observation_space, env.action_space, hidden=(16,))
    theta = policy.init(np.random.default_rng(0))
    jobs = [EpisodeJob(Stored("k"), space.initial_task(), seed) for seed in range(episodes)]
    worker = Worker(space, policy, num_envs=num_envs)
    result = worker.run(jobs, {"k": theta})
    return result.stats["env_steps"] / result.stats["busy_s"]


def best(function, *args, repeats: int = 3):
    """The best of `repeats` runs (the least disturbed by other processes)."""
    results = [function(*args) for _ in range(repeats)]
    if isinstance(results[0], tuple):
        return tuple(max(r[i] for r in results) for i in range(len(results[0])))
    return max(results)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer steps, for a smoke run")
    args = parser.parse_args()
    steps = 20_000 if args.quick else 100_000
    widths = (1, 8, 64, 256, 1024)
    print(
        f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cpus visible, "
        f"numpy {np.__version__}, gymnasium {gym.__version__}; one process, best of 3"
    )
    print("\n## Env steps/s: batched physics vs gymnasium's single env (same run)")
    print(
        f"{'task':<25}{'slots':>6}{'step':>12}{'+reset':>12}{'x gym step':>12}{'x gym +reset':>14}"
    )
    for name, gym_id in GYM_IDS.items():
        ref_step, ref_total = best(gym_rate, gym_id, steps)
        print(f"{name:<25}{'gym':>6}{ref_step:>12,.0f}{ref_total:>12,.0f}{1:>12.1f}{1:>14.1f}")
        for width in widths:
            got_step, got_total = best(
                batched_rate, name, width, steps if width > 1 else steps // 5
            )
            print(
                f"{'':<25}{width:>6}{got_step:>12,.0f}{got_total:>12,.0f}"
                f"{got_step / ref_step:>12.1f}{got_total / ref_total:>14.1f}"
            )
    print("\n## Worker.run env steps/s (MLP 16 forward included): GymSlots vs batched")
    print(f"{'task':<25}{'envs':>6}{'GymSlots':>12}{'batched':>12}{'x':>8}")
    episodes = 64 if args.quick else 256
    for name in GYM_IDS:
        for num_envs in (8, 64, 256):
            gym_slots = best(worker_rate, name, num_envs, False, episodes)
            batched = best(worker_rate, name, num_envs, True, episodes)
            print(
                f"{name:<25}{num_envs:>6}{gym_slots:>12,.0f}{batched:>12,.0f}"
                f"{batched / gym_slots:>8.1f}"
            )


if __name__ == "__main__":
    main()
