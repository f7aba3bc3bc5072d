"""Torch policies against the numpy MLP inside the worker: env steps/s at 8, 64, 256 slots.

    .venv/bin/python benchmarks/policy_throughput.py            # about 1 min
    .venv/bin/python benchmarks/policy_throughput.py --quick    # fewer episodes

One process, one core (torch.set_num_threads(1), as in a worker). Each row runs the pool's
`Worker` on pendulum (batched numpy physics, fixed 200-step episodes so every policy steps
the same count) with 3 policies of the same function class side by side:

- `mlp`: the numpy MLP [16] tanh (stacked np.matmul),
- `torch_seq`: the same network as a torch `nn.Sequential` through `TorchPolicy`, which
  recognises a chain of Linear/Tanh/ReLU layers and runs it as stacked numpy matmuls,
- `torch_fx`: the same network inside a module with its own `forward`, which TorchPolicy
  reads with torch.fx into the same numpy program,
- `torch_vmap`: the same again with a clamp at +-1e9 in its forward (the same function for
  these outputs; clamp is outside the numpy programs): vmap of functional_call in fixed
  blocks of `batch_block` rows, the last padded,
- `gru`: the GRU policy [16] (torch, vmap, recurrent state per slot),

and, as the reference of the same run, the raw batched env stepping all slots with a fixed
action (no policy). Figures are env steps per CPU-second of this process (wall-clock
figures are distorted by other processes on this machine) and the ratio to the reference.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from coevo import tasks
from coevo.policies import make_policy
from coevo.policies.loaders import from_module
from coevo.pool import EpisodeJob, Stored, Worker, weights_key

SLOTS = (8, 64, 256)


class Wrapped(torch.nn.Module):
    """A module with a forward of its own (read by torch.fx into numpy)."""

    def __init__(self, inner: torch.nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, obs):
        return self.inner(obs)


class Clamped(Wrapped):
    """The same with a clamp no numpy program has: TorchPolicy's general (vmap) path."""

    def forward(self, obs):
        return torch.clamp(self.inner(obs), -1e9, 1e9)


def reference_rate(space, slots: int, steps: int) -> float:
    """Steps/CPU-s of the batched env alone: all slots, fixed action, no resets."""
    env_slots = space.make_slots(slots)
    task = space.initial_task()
    for slot in range(slots):
        env_slots.reset_slot(slot, task, slot)
    active = np.arange(slots)
    actions = np.zeros((slots, 1), np.float32)
    started = time.process_time()
    for _ in range(steps):
        env_slots.step_slots(active, actions)
    return slots * steps / (time.process_time() - started)


def worker_rate(space, policy, slots: int, episodes: int, repeats: int) -> float:
    """Steps/CPU-s of `Worker.run` (best of `repeats`), 4 distinct parameter vectors."""
    rng = np.random.default_rng(0)
    thetas = [policy.init(rng) for _ in range(4)]
    sources = {weights_key(t): t for t in thetas}
    task = space.initial_task()
    jobs = [EpisodeJob(Stored(weights_key(thetas[k % 4])), task, k) for k in range(episodes)]
    worker = Worker(space, policy, slots)
    worker.run(jobs[:slots], sources)  # warm-up: caches, vmap tracing
    best = 0.0
    for _ in range(repeats):
        result = worker.run(jobs, sources)
        best = max(best, result.stats["env_steps"] / result.stats["cpu_s"])
    return best


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer episodes and repeats")
    args = parser.parse_args()
    torch.set_num_threads(1)
    space = tasks.get("pendulum")
    env = space.make_env()
    obs_space, act_space = env.observation_space, env.action_space
    mlp = make_policy("mlp", obs_space, act_space, {"hidden": (16,)})
    network = mlp.to_torch(mlp.init(np.random.default_rng(0)))
    torch_seq = from_module(network, obs_space, act_space).policy
    torch_fx = from_module(Wrapped(network), obs_space, act_space).policy
    torch_vmap = from_module(Clamped(network), obs_space, act_space).policy
    assert torch_fx._chain is not None and torch_vmap._chain is None
    policies = {
        "mlp": mlp,
        "torch_seq": torch_seq,
        "torch_fx": torch_fx,
        "torch_vmap": torch_vmap,
        "gru": make_policy("gru", obs_space, act_space, {"hidden": (16,)}),
    }
    repeats = 1 if args.quick else 3
    print(
        f"torch {torch.__version__}, batch_block {torch_vmap.batch_block}, "
        f"pendulum 200-step episodes, env steps per CPU-second (x reference)"
    )
    header = "| slots | reference (env only) | " + " | ".join(policies) + " |"
    print(header)
    print("| ---: | ---: |" + " ---: |" * len(policies))
    for slots in SLOTS:
        episodes = max(2 * slots, 32) if args.quick else max(4 * slots, 64)
        reference = reference_rate(space, slots, 400 if args.quick else 2000)
        cells = [f"{reference / 1e3:,.0f}k"]
        for policy in policies.values():
            rate = worker_rate(space, policy, slots, episodes, repeats)
            cells.append(f"{rate / 1e3:,.1f}k ({rate / reference:.2f}x)")
        print(f"| {slots} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
