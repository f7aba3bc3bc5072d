"""Maze env steps per CPU second: batched `MazeSlots` vs one env per slot.

The same mazes (random ones of the training generator) and the same pre-drawn random
actions (forward half the time) for three ways of stepping N episodes, each episode reset
on its maze when it ends:

- `MazeSlots(N)`: all N slots in one numpy call per step (what a worker uses);
- a Python loop over N `MazeEnv`s (coevo's single env, one per slot, as `GymSlots` steps);
- a Python loop over N of the `minigrid` package's own envs on the same mazes
  (`coevo.tasks.maze.minigrid_twin`, `pip install coevo[maze]`).

Figures are CPU seconds of this process (`time.process_time`), one core; each way is
timed `--repeats` times and its best rate printed (a run of 64 slots x 200 steps lasts a
few milliseconds, so one timing catches whatever else the core was doing).

    .venv/bin/python benchmarks/maze_step_rate.py [--slots 64 256] [--steps 200] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from coevo.tasks.maze import MazeEnv, MazeSlots, sample


def _mazes(count: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    return [sample(rng) for _ in range(count)]


def _actions(count: int, steps: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed + 1)
    return rng.choice(3, size=(steps, count), p=[0.25, 0.25, 0.5])


def batched_rate(levels: list, actions: np.ndarray) -> float:
    slots = MazeSlots(len(levels))
    for slot, level in enumerate(levels):
        slots.reset_slot(slot, level, slot)
    every = np.arange(len(levels))
    start = time.process_time()
    for row in actions:
        _, _, done, _ = slots.step_slots(every, row)
        for slot in np.flatnonzero(done).tolist():
            slots.reset_slot(slot, levels[slot], slot)
    return actions.size / (time.process_time() - start)


def loop_rate(envs: list, actions: np.ndarray) -> float:
    for env in envs:
        env.reset(seed=0)
    steps = [env.step for env in envs]
    start = time.process_time()
    for row in actions:
        for slot, action in enumerate(row.tolist()):
            _, _, terminated, truncated, _ = steps[slot](action)
            if terminated or truncated:
                envs[slot].reset(seed=0)
    return actions.size / (time.process_time() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--slots", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--steps", type=int, default=200, help="steps of every slot")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3, help="timings of each; the best")
    parser.add_argument("--no-minigrid", action="store_true", help="leave minigrid out")
    args = parser.parse_args()
    print(
        "slots | MazeSlots step/s | MazeEnv loop step/s | minigrid loop step/s | "
        "x MazeEnv | x minigrid"
    )
    for count in args.slots:
        batched, single, reference = _best_rates(count, args)
        print(
            f"{count} | {batched:,.0f} | {single:,.0f} | {reference:,.0f} | "
            f"{batched / single:.1f}x | {batched / reference:.1f}x"
        )


def _best_rates(count: int, args: argparse.Namespace) -> tuple[float, float, float]:
    """The best of `args.repeats` rates of each way, the ways taking turns (so a busy
    moment of the machine falls on all of them alike)."""
    levels = _mazes(count, args.seed)
    actions = _actions(count, args.steps, args.seed)
    envs = [MazeEnv(level) for level in levels]
    references = []
    if not args.no_minigrid:
        from coevo.tasks.maze.minigrid_twin import minigrid_maze_env

        references = [minigrid_maze_env(level) for level in levels]
    rates = np.full((args.repeats, 3), np.nan)
    for repeat in range(args.repeats):
        rates[repeat, 0] = batched_rate(levels, actions)
        rates[repeat, 1] = loop_rate(envs, actions)
        if references:
            rates[repeat, 2] = loop_rate(references, actions)
    batched, single, reference = rates.max(axis=0)
    return float(batched), float(single), float(reference)


if __name__ == "__main__":
    main()
