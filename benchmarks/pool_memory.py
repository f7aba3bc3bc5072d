"""Peak memory of the evaluation pool: 10 pairs vs 1000 pairs, same pool, same run.

Memory is PSS (proportional set size: shared pages split between the processes sharing
them, so Ray's shared-memory object store and shared libraries are counted once) summed
over the driver and every process it started (Ray's GCS, raylet, agents, the workers),
sampled every `--interval` seconds while each call runs. The pool's promise is that memory
is a function of the number of workers, not of the number of pairs or episodes: weights
travel once per version, workers keep a bounded cache, episodes stream through fixed slots.

    .venv/bin/python benchmarks/pool_memory.py [--json] [--pairs 10 1000] [--episodes 5]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import threading
import time
from typing import Any

import numpy as np
import psutil
import ray

from coevo import tasks
from coevo.policies import MLPPolicy, torch_policy_for
from coevo.pool import EvaluationPool


def process_tree() -> list[psutil.Process]:
    me = psutil.Process()
    return [me, *me.children(recursive=True)]


def pss_by_process() -> dict[str, float]:
    """PSS in bytes of the driver and its descendants, keyed 'pid name'."""
    out: dict[str, float] = {}
    for proc in process_tree():
        try:
            name = " ".join(proc.cmdline()[:2]) or proc.name()
            out[f"{proc.pid} {_short(name)}"] = float(proc.memory_full_info().pss)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return out


def _short(command: str) -> str:
    if "ray::" in command:  # the title names the running method too: ray::Worker.run
        return command.split()[0].split(".")[0]
    return os.path.basename(command.split()[-1])[:40]


class PeakSampler:
    """Samples the summed PSS in a thread; keeps the peak and its per-process breakdown."""

    def __init__(self, interval: float):
        self.interval = interval
        self.peak = 0.0
        self.breakdown: dict[str, float] = {}
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def sample(self) -> None:
        by_process = pss_by_process()
        total = sum(by_process.values())
        self.samples += 1
        if total > self.peak:
            self.peak, self.breakdown = total, by_process

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> PeakSampler:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()  # the results are in the driver now


def measure(args: argparse.Namespace) -> dict[str, Any]:
    space = tasks.get(args.task)
    if args.gym_slots:
        space = dataclasses.replace(space, make_slots=None)
    env = space.make_env()
    policy = MLPPolicy.for_spaces(env.observation_space, env.action_space, hidden=args.hidden)
    if args.policy == "torch":  # the same layers as a torch module (coevo's TorchPolicy)
        import torch

        layers: list[torch.nn.Module] = []
        sizes = policy.layer_sizes
        for index, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
            layers.append(torch.nn.Linear(fan_in, fan_out))
            if index < len(sizes) - 2:
                layers.append(torch.nn.Tanh())
        module = torch.nn.Sequential(*layers)
        policy = torch_policy_for(module, env.observation_space, env.action_space)
    out: dict[str, Any] = {}
    with EvaluationPool(space, policy, "ray", args.workers, args.envs_per_worker) as pool:
        rng = np.random.default_rng(0)
        pool.evaluate([(policy.init(rng), space.initial_task())], 1)  # warm-up
        time.sleep(1.0)  # let Ray's processes settle after start
        idle = sum(pss_by_process().values())
        out["idle_pss_mb"] = idle / 2**20
        out["slots"] = pool.worker_info()[0]["slots"]
        for count in args.pairs:
            pairs = [
                (policy.init(rng), space.mutate(space.initial_task(), rng)) for _ in range(count)
            ]
            before = pool.stats_snapshot()
            started = time.perf_counter()
            with PeakSampler(args.interval) as sampler:
                pool.evaluate(pairs, episodes=args.episodes, seed=0)
            wall = time.perf_counter() - started
            after = pool.stats_snapshot()
            del pairs
            out[f"pairs_{count}"] = {
                "peak_pss_mb": sampler.peak / 2**20,
                "samples": sampler.samples,
                "wall_s": wall,
                "episodes": after["episodes"] - before["episodes"],
                "env_steps": after["env_steps"] - before["env_steps"],
                "weights_mb": count * policy.num_params * 4 / 2**20,
                "bytes_shipped_mb": (after["bytes_shipped"] - before["bytes_shipped"]) / 2**20,
                "bytes_loaded_mb": (after["bytes_loaded"] - before["bytes_loaded"]) / 2**20,
                "peak_by_process_mb": {
                    name: round(pss / 2**20, 1)
                    for name, pss in sorted(sampler.breakdown.items(), key=lambda kv: -kv[1])
                },
            }
    small, large = (out[f"pairs_{count}"]["peak_pss_mb"] for count in args.pairs)
    out["growth"] = large / small - 1.0
    out.update(
        task=space.name,
        hidden=list(args.hidden),
        policy=args.policy,
        num_params=policy.num_params,
        workers=args.workers,
        envs_per_worker=args.envs_per_worker,
        pairs=list(args.pairs),
        episodes_per_pair=args.episodes,
    )
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--task", default="pendulum")
    parser.add_argument("--gym-slots", action="store_true", help="one gymnasium env per slot")
    parser.add_argument("--hidden", type=int, nargs="+", default=[16])
    parser.add_argument("--policy", choices=("mlp", "torch"), default="mlp")
    parser.add_argument("--pairs", type=int, nargs=2, default=[10, 1000])
    parser.add_argument("--episodes", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--envs-per-worker", type=int, default=64)
    parser.add_argument("--interval", type=float, default=0.05)
    args = parser.parse_args(argv)
    args.hidden = tuple(args.hidden)
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    try:
        result = measure(args)
    finally:
        ray.shutdown()
    if args.json:
        print(json.dumps(result, indent=2))
        return
    small, large = (result[f"pairs_{count}"] for count in args.pairs)
    print(
        f"{result['task']} ({result['slots'].rsplit('.', 1)[-1]}), "
        f"policy {result['policy']} {result['hidden']} "
        f"({result['num_params']} params), {result['workers']} workers x "
        f"{result['envs_per_worker']} envs, {args.episodes} episodes per pair"
    )
    print(f"idle after start: {result['idle_pss_mb']:.0f} MB PSS (driver + all Ray processes)")
    for count, row in zip(args.pairs, (small, large), strict=True):
        print(
            f"{count:>5} pairs: peak {row['peak_pss_mb']:7.1f} MB PSS   ({row['episodes']:.0f} "
            f"episodes, {row['env_steps']:,.0f} steps, {row['wall_s']:.1f} s, "
            f"{row['samples']} samples; weights {row['weights_mb']:.1f} MB, shipped "
            f"{row['bytes_shipped_mb']:.1f} MB, loaded by workers {row['bytes_loaded_mb']:.1f} MB)"
        )
    print(f"growth {args.pairs[0]} -> {args.pairs[1]} pairs: {100 * result['growth']:+.1f}%")
    print(f"peak by process at {args.pairs[1]} pairs (MB PSS):")
    for name, mb in large["peak_by_process_mb"].items():
        print(f"  {mb:8.1f}  {name}")


if __name__ == "__main__":
    main()
