"""Where a worker's time goes beside the env's own step, in one process (no Ray).

One `Worker` (one gymnasium env per slot, MLP policy, `--slots` rows), per CPU second of
this process (`time.process_time`, so other processes' load counts less), each figure the
best of `--repeats`, beside the env alone stepped in the same run:

  per step      policies whose episodes all last the env's time limit (found by trying
                random MLPs): the loop's cost per env step, with resets out of the way
  per episode   policies whose episodes last about 10 steps: what each episode adds
                (params copied into the row, reset with its seed, bookkeeping)
  seeded reset  the env's reset with a seed (what determinism needs) and without
  chunks        the pool's chunks for one of 2 workers on random policies (256 pairs x 5
                episodes), run one after the other, and as a Ray actor runs them: two calls
                at once, the second's episodes filling rows the first's last ones leave
                free; rows per policy call and time per env step
  time split    the same chunks once more with every env call and policy call timed: per
                env step, the time inside `env.step`, inside the seeded resets, inside the
                policy's forward pass, and the rest (the loop; the timers' own ~0.2 us per
                call land in the env's share)
  free env      the pool's own cost per env step: the same loop and policy on an env whose
                step costs nothing (same spaces, zero observations), episodes of the chunks'
                mean length, as many slots as the chunks' rows per policy call; the best
                env / pool ratio this loop allows is env / (env + that cost)
  interleaved   the env's own step, `--slots` envs stepped in turn (a fixed action), with
                and without a forward pass of as many rows between rounds (its own time
                left out): what streaming the rows' weights through the caches costs the
                env's next steps

    .venv/bin/python benchmarks/rollout_overheads.py [--task cartpole] [--hidden 64 64]
        [--pairs 256 --episodes 5]   # e.g. --task bipedal_terrain --pairs 16 --episodes 2
"""

from __future__ import annotations

import argparse
import dataclasses
import threading
import time
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np

from coevo import tasks
from coevo.policies import MLPPolicy, Policy
from coevo.pool.jobs import EpisodeJob, Stored
from coevo.pool.scheduling import chunk_sizes
from coevo.pool.worker import Worker
from coevo.tasks.task import TaskSpace


class CountingPolicy:
    """The policy, counting its calls and the rows they carried."""

    def __init__(self, policy):
        self.policy, self.calls, self.rows = policy, 0, 0
        self.noise_dim, self.state_size = policy.noise_dim, policy.state_size

    def step(self, params, obs, state, noise):
        self.calls += 1
        self.rows += obs.shape[0]
        return self.policy.step(params, obs, state, noise)


def best_us_per_step(worker: Worker, jobs: list, sources: dict, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        cpu = time.process_time()
        result = worker.run(jobs, sources)
        best = min(best, (time.process_time() - cpu) / result.lengths.sum())
    return best * 1e6


def env_us_per_step(space, seconds: float, repeats: int) -> float:
    """The env alone: a constant action of its own type, unseeded resets."""
    env = space.make_env()
    env.set_task(space.initial_task().as_dict())
    space_ = env.action_space
    action = space_.dtype.type(0) if hasattr(space_, "n") else np.zeros(space_.shape, space_.dtype)
    best = float("inf")
    for _ in range(repeats):
        env.reset(seed=0)
        steps, cpu = 0, time.process_time()
        while time.process_time() - cpu < seconds:
            for _ in range(500):
                _, _, terminated, truncated, _ = env.step(action)
                if terminated or truncated:
                    env.reset()
            steps += 500
        best = min(best, (time.process_time() - cpu) / steps)
    return best * 1e6


def overlapping(worker: Worker, chunks: list[list], sources: dict) -> int:
    """Run the chunks as a Ray actor with two calls in flight does; env steps."""
    pending = list(chunks)
    lock, steps = threading.Lock(), []

    def caller() -> None:
        while True:
            with lock:
                if not pending:
                    return
                chunk = pending.pop(0)
            steps.append(int(worker.run(chunk, sources).lengths.sum()))

    threads = [threading.Thread(target=caller) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(steps)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--task", default="cartpole")
    parser.add_argument("--hidden", type=int, nargs="+", default=[64, 64])
    parser.add_argument("--slots", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=256, help="chunks: pairs x episodes")
    parser.add_argument("--episodes", type=int, default=5)
    parser.add_argument(
        "--probe", type=int, default=4000, help="random policies tried for long/short episodes"
    )
    parser.add_argument(
        "--target", type=float, default=0.9, help="env / pool ratio whose per-step budget to print"
    )
    args = parser.parse_args()

    space = dataclasses.replace(tasks.get(args.task), make_slots=None)  # one env per slot
    env = space.make_env()
    policy = MLPPolicy.for_spaces(env.observation_space, env.action_space, hidden=args.hidden)
    rng = np.random.default_rng(0)
    task = space.initial_task()
    sources = {f"p{i}": policy.init(rng) for i in range(max(args.probe, args.pairs))}
    keys = list(sources)
    probe = Worker(space, policy, args.slots)
    tried = [EpisodeJob(Stored(k), task, 0) for k in keys[: args.probe]]
    lengths = probe.run(tried, sources).lengths
    limit = space.max_episode_steps
    long_keys = [keys[i] for i in np.flatnonzero(lengths == limit)[: args.slots]]
    short_keys = [keys[i] for i in np.flatnonzero((lengths >= 8) & (lengths <= 12))[: args.slots]]

    env_us = env_us_per_step(space, 0.5, args.repeats)
    print(f"{args.task}, MLP {args.hidden}, {args.slots} slots, one process, per CPU second")
    print(f"  env alone (own action type, unseeded resets): {env_us:6.2f} us per step")
    worker = Worker(space, policy, args.slots)
    rows = {}
    for name, chosen in (("long", long_keys), ("short", short_keys)):
        if not chosen:
            print(f"  no {name} episodes among {args.probe} random policies")
            continue
        jobs = [EpisodeJob(Stored(k), task, 0) for k in chosen]
        jobs = jobs * max(
            1, round(4 * args.slots / len(jobs) * (limit / 10 if name == "short" else 1))
        )
        per_step = best_us_per_step(worker, jobs, sources, args.repeats)
        mean_length = float(np.mean([lengths[keys.index(k)] for k in chosen]))
        rows[name] = (per_step, mean_length, len(chosen))
    if "long" in rows:
        per_step, _, count = rows["long"]
        print(
            f"  per step: {count} episodes of {limit} steps at a time: {per_step:6.2f} us per step"
            f" = env + {per_step - env_us:.2f} (env / pool {env_us / per_step:.2f})"
        )
    if "short" in rows and "long" in rows:
        per_step, mean_length, _ = rows["short"]
        per_episode = (per_step - rows["long"][0]) * mean_length
        print(
            f"  per episode: {mean_length:.1f}-step episodes: {per_step:6.2f} us per step, so"
            f" ~{per_episode:.1f} us more per episode"
        )
    reset_env = space.make_env()
    reset_env.set_task(task.as_dict())
    seeded = min(timeit.repeat(lambda: reset_env.reset(seed=0), number=2000, repeat=3)) / 2000
    unseeded = min(timeit.repeat(lambda: reset_env.reset(), number=2000, repeat=3)) / 2000
    print(f"  reset with a seed {seeded * 1e6:.2f} us, without {unseeded * 1e6:.2f} us")

    pairs, episodes = args.pairs, args.episodes
    jobs = [
        EpisodeJob(Stored(keys[i]), task, seed) for i in range(pairs) for seed in range(episodes)
    ]
    sizes = chunk_sizes(len(jobs), 2, args.slots)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    mine = [jobs[starts[i] : starts[i + 1]] for i in range(0, len(sizes), 2)]  # worker 0's
    counting = CountingPolicy(policy)
    worker = Worker(space, policy, args.slots)
    worker.rollouts.policy = counting
    print(f"  chunks of {pairs} x {episodes} episodes, one of 2 workers': {[len(c) for c in mine]}")
    for name in ("one call at a time", "two calls at once"):
        best, per_call = float("inf"), 0.0
        for _ in range(args.repeats):
            counting.calls = counting.rows = 0
            cpu = time.process_time()
            if name == "one call at a time":
                steps = sum(int(worker.run(chunk, sources).lengths.sum()) for chunk in mine)
            else:
                steps = overlapping(worker, mine, sources)
            best = min(best, (time.process_time() - cpu) / steps)
            per_call = counting.rows / counting.calls
        print(
            f"    {name}: {best * 1e6:6.2f} us per step, {per_call:.1f} rows per policy call"
            f" (env / pool {env_us / (best * 1e6):.2f})"
        )
    time_split(Worker(space, policy, args.slots), mine, sources)
    rows = max(1, round(per_call))
    mean_length = max(1, round(steps / sum(len(chunk) for chunk in mine)))
    own = free_env_us_per_step(space, policy, sources, rows, mean_length, args.repeats)
    print(
        f"  free env: the pool's own cost, {rows} rows, {mean_length}-step episodes:"
        f" {own:.2f} us per step; best env / pool this loop allows: env / (env + own) ="
        f" {env_us / (env_us + own):.2f}"
    )
    alone, polluted = interleaved_env_us(space, policy, args.slots, args.repeats)
    print(
        f"  interleaved: the env's step over {args.slots} envs in turn {alone:.2f} us, with a"
        f" forward pass of {args.slots} rows between rounds {polluted:.2f} us"
        f" ({polluted - alone:+.2f} us: the weights through the caches)"
    )
    floor = bare_forward_us_per_row(policy.layer_sizes, rows, args.repeats)
    budget = env_us * (1 / args.target - 1)
    print(
        f"  floor: a bare forward pass of the same layers, each row its own weights (stacked"
        f" matmul + tanh, float32, no biases), {rows} rows per call: {floor:.2f} us per row;"
        f" env / pool {args.target} leaves {budget:.2f} us per step for all the pool adds"
    )


class FreeEnv:
    """An env whose step costs nothing: zero observations of the real env's space, reward
    0, each episode `length` steps long. What the pool costs beside any env."""

    def __init__(self, observation_space: Any, action_space: Any, length: int):
        self.observation_space, self.action_space = observation_space, action_space
        self.obs = np.zeros(observation_space.shape, dtype=observation_space.dtype)
        self.length, self.steps = length, 0

    def set_task(self, task) -> None:
        pass

    def reset(self, *, seed=None, options=None):
        self.steps = 0
        return self.obs, {}

    def step(self, action):
        self.steps += 1
        return self.obs, 0.0, self.steps >= self.length, False, {}


def free_env_us_per_step(
    space: TaskSpace, policy: Policy, sources: dict, rows: int, length: int, repeats: int
) -> float:
    """The pool's own cost per env step (loop, policy, resets' bookkeeping) on `FreeEnv`,
    `rows` slots busy with episodes of `length` steps, less FreeEnv's own step and reset."""
    env = space.make_env()
    alone = FreeEnv(env.observation_space, env.action_space, length)
    action = env.action_space.sample()

    def episode() -> None:
        alone.reset(seed=0)
        for _ in range(length):
            alone.step(action)

    free_own = min(timeit.repeat(episode, number=200, repeat=repeats)) / 200 / length * 1e6
    free = dataclasses.replace(
        space,
        make_env=lambda: FreeEnv(env.observation_space, env.action_space, length),
        max_episode_steps=max(space.max_episode_steps, length),
    )
    keys = list(sources)[:rows]
    task = space.initial_task()
    episodes = max(4 * rows, round(20_000 / length))  # ~20k steps per repeat
    jobs = [EpisodeJob(Stored(keys[i % len(keys)]), task, i) for i in range(episodes)]
    return best_us_per_step(Worker(free, policy, rows), jobs, sources, repeats) - free_own


def interleaved_env_us(
    space: TaskSpace, policy: Policy, slots: int, repeats: int
) -> tuple[float, float]:
    """(us per env step, stepped in turn over `slots` envs; the same with a bare forward pass
    of `slots` rows between rounds, the forward's own time left out)."""
    envs = [space.make_env() for _ in range(slots)]
    task = space.initial_task().as_dict()
    for env in envs:
        env.set_task(task)
    space_ = envs[0].action_space
    action = space_.dtype.type(0) if hasattr(space_, "n") else np.zeros(space_.shape, space_.dtype)
    forward = bare_forward(policy.layer_sizes, slots)
    rounds = 50
    best = {False: float("inf"), True: float("inf")}
    for repeat in range(repeats):
        # Alternating which case runs first: the first of a pair warms the caches for both.
        for with_forward in (False, True) if repeat % 2 == 0 else (True, False):
            for index, env in enumerate(envs):
                env.reset(seed=index)
            spent = 0.0
            for _ in range(rounds):
                if with_forward:
                    forward()
                started = time.process_time()
                for env in envs:
                    _, _, terminated, truncated, _ = env.step(action)
                    if terminated or truncated:
                        env.reset()
                spent += time.process_time() - started
            best[with_forward] = min(best[with_forward], spent / (rounds * slots) * 1e6)
    return best[False], best[True]


def bare_forward(sizes: tuple[int, ...], rows: int) -> Callable[[], np.ndarray]:
    """A per-row-weights forward pass of these layers: numpy's stacked matmul and tanh."""
    rng = np.random.default_rng(0)
    weights = [
        rng.standard_normal((rows, fan_out, fan_in), dtype=np.float32)
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True)
    ]
    obs = rng.standard_normal((rows, sizes[0], 1), dtype=np.float32)

    def forward() -> np.ndarray:
        h = obs
        for weight in weights[:-1]:
            h = np.tanh(weight @ h)
        return weights[-1] @ h

    return forward


def bare_forward_us_per_row(sizes: tuple[int, ...], rows: int, repeats: int) -> float:
    """The least a per-row-weights MLP forward costs here: numpy's stacked matmul and tanh
    alone, none of the policy's bookkeeping (ES rows each have their own weights, so one
    shared GEMM is not an option)."""
    forward = bare_forward(sizes, rows)
    number = 2000
    return min(timeit.repeat(forward, number=number, repeat=repeats)) / number / rows * 1e6


def time_split(worker: Worker, chunks: list[list], sources: dict) -> None:
    """Run the chunks with each env step and reset timed (wrappers on the worker's slots)."""
    slots = worker.slots
    spent = {"step": 0.0, "reset": 0.0}
    clock = time.perf_counter

    def timed_step(step):
        def call(action):
            started = clock()
            try:
                return step(action)
            finally:
                spent["step"] += clock() - started

        return call

    reset_slot = slots.reset_slot

    def timed_reset(slot, task, seed):
        started = clock()
        try:
            return reset_slot(slot, task, seed)
        finally:
            spent["reset"] += clock() - started
            slots._step[slot] = timed_step(slots._step[slot])  # the step bound at this reset

    slots.reset_slot = timed_reset
    policy = worker.rollouts.policy
    spent["policy"] = 0.0

    class TimedPolicy:
        noise_dim, state_size = policy.noise_dim, policy.state_size

        def step(self, *args):
            started = clock()
            try:
                return policy.step(*args)
            finally:
                spent["policy"] += clock() - started

    worker.rollouts.policy = TimedPolicy()
    started = clock()
    steps = sum(int(worker.run(chunk, sources).lengths.sum()) for chunk in chunks)
    total = clock() - started
    rest = total - spent["step"] - spent["reset"] - spent["policy"]
    per = 1e6 / steps
    print(
        f"  time split (wall, one call at a time): {total * per:6.2f} us per step ="
        f" env.step {spent['step'] * per:.2f} + resets {spent['reset'] * per:.2f}"
        f" + policy {spent['policy'] * per:.2f} + loop {rest * per:.2f}"
        f" (env share {(spent['step'] + spent['reset']) / total:.2f})"
    )


if __name__ == "__main__":
    main()
