"""Env steps per CPU second of the terrain walker, and what its returns are.

Steps the walker of `bipedal_terrain` (and `bipedal_terrain_stairs`) through fixed episodes:
a few tasks (flat, rough with pits and stumps, stairs) x reset seeds, actions drawn once from
a seeded generator, each episode cut at `--steps` steps or when it ends. Prints, per CPU
second of this process: steps (resets included), the reset alone, and a digest of every
return and final observation, so two versions of the env can be compared for identical
results as well as for speed.

With `--reference` the same episodes also run on gymnasium's own per-step code
(`BipedalWalker.step` and its cloud generation) on our terrain, in the same run: the
reference figure for the walker's step, and a check that its returns are the same bits.

    .venv/bin/python benchmarks/walker_step_rate.py [--json] [--reference] [--steps 300]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from typing import Any

import numpy as np

from coevo import tasks

TASKS = {
    "flat": ("bipedal_terrain", {}),
    "rough_pits_stumps": (
        "bipedal_terrain",
        {
            "roughness": 3.0,
            "pit_gap_low": 1.0,
            "pit_gap_high": 3.0,
            "stump_height_low": 0.5,
            "stump_height_high": 1.5,
        },
    ),
    "stairs": (
        "bipedal_terrain_stairs",
        {"stair_height_low": 0.3, "stair_height_high": 0.8, "stair_steps": 3.0},
    ),
}


def make_env(space_name: str, reference: bool) -> Any:
    space = tasks.get(space_name)
    env = space.make_env()
    if reference:
        from gymnasium.envs.box2d.bipedal_walker import BipedalWalker

        # gymnasium's own per-step code and clouds on our terrain, bound to this env only.
        env.step = BipedalWalker.step.__get__(env)
        env._generate_clouds = BipedalWalker._generate_clouds.__get__(env)
    return env


def run_episodes(env: Any, task: dict, seeds: int, steps: int) -> dict[str, Any]:
    actions = np.random.default_rng(7).uniform(-1.0, 1.0, size=(steps, 4)).astype(np.float32)
    digest = hashlib.blake2b(digest_size=8)
    total_steps = 0
    returns = []
    step_cpu = reset_cpu = 0.0
    for seed in range(seeds):
        env.set_task(task)
        started = time.process_time()
        env.reset(seed=seed)
        reset_cpu += time.process_time() - started
        started = time.process_time()
        episode_return = 0.0
        for t in range(steps):
            obs, reward, terminated, truncated, _ = env.step(actions[(t + 31 * seed) % steps])
            episode_return += float(reward)
            total_steps += 1
            if terminated or truncated:
                break
        step_cpu += time.process_time() - started
        returns.append(episode_return)
        digest.update(np.float64(episode_return).tobytes() + np.asarray(obs).tobytes())
    return {
        "steps": total_steps,
        "steps_per_cpu_s": total_steps / (step_cpu + reset_cpu),
        "step_only_per_cpu_s": total_steps / step_cpu,
        "reset_ms": 1e3 * reset_cpu / seeds,
        "mean_return": float(np.mean(returns)),
        "digest": digest.hexdigest(),
    }


def measure(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    for name, (space_name, task) in TASKS.items():
        full = {**tasks.get(space_name).initial_task().as_dict(), **task}
        variants = [("coevo", False)] + ([("reference", True)] if args.reference else [])
        for label, reference in variants:
            env = make_env(space_name, reference)
            run_episodes(env, full, 1, 50)  # warm-up
            best: dict[str, Any] | None = None
            for _ in range(args.repeats):
                got = run_episodes(env, full, args.seeds, args.steps)
                if best is None or got["steps_per_cpu_s"] > best["steps_per_cpu_s"]:
                    best = got
            results[f"{name}/{label}"] = best
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--reference", action="store_true", help="also gymnasium's step")
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    results = measure(args)
    conditions = {"loadavg_before": round(load, 2), "loadavg_after": round(os.getloadavg()[0], 2)}
    if args.json:
        print(json.dumps({"results": results, **conditions}, indent=2))
        return
    print(f"best of {args.repeats}; load average {conditions}")
    print(
        f"{'episodes':<26}{'steps/CPU s':>12}{'step only':>11}{'reset ms':>10}"
        f"{'mean return':>13}  digest"
    )
    for name, row in results.items():
        print(
            f"{name:<26}{row['steps_per_cpu_s']:>12,.0f}{row['step_only_per_cpu_s']:>11,.0f}"
            f"{row['reset_ms']:>10.2f}{row['mean_return']:>13.4f}  {row['digest']}"
        )


if __name__ == "__main__":
    main()
