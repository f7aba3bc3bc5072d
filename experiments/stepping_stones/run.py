"""Stepping stones: does a curriculum reach a hard task that training on it directly does not,
within the same budget of training env steps?

    python experiments/stepping_stones/run.py                 # the recorded experiment
    python experiments/stepping_stones/run.py --budget 200000 --seeds 1   # a quick look

"direct" trains on the hard task alone: domain randomisation over a task space whose bounds
are collapsed onto the hard task, so it runs through exactly the same machinery (ES, pool,
env-step accounting) as the curricula. The curricula start from the task space's own
bounds and initial task. Every run is scored on the hard task (best of the curriculum's
test policies, `--episodes` episodes) at 10 marks of training env steps; a run "reaches" the
hard task when that mean return is >= the threshold. Writes runs.csv, curves.csv and
table.md under --out.
"""

from __future__ import annotations

import argparse
import multiprocessing
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd

from coevo import runner
from coevo.config import parse_config
from coevo.pool import EvaluationPool
from coevo.tasks.test_sets import TestSet, score_test_set

HERE = Path(__file__).resolve().parent
# The hard task and why (see experiments/README.md): continuous MountainCar with the weakest
# engine the space allows. A car this weak must rock back and forth ~10 times to climb out.
SPACE = "mountain_car_continuous"
HARD = {"power": 0.0005, "max_speed": 0.07, "goal_position": 0.45}
# Reward: +100 at the goal minus 0.1 a^2 per step, so a return > 0 means the goal was reached;
# >= 50 means reached with at most half the action budget spent (the hand-written
# energy-pumping controller, full force along the velocity, scores ~81 here).
THRESHOLD = 50.0
OVERRIDES = {"plr": {"buffer_size": 64, "score": "return_regret"}}


def run_one(job: tuple[str, int, int, int]) -> tuple[dict, list[dict]]:
    method, seed, budget, episodes = job
    task: dict = {"name": SPACE}
    curriculum = method
    if method == "direct":  # DR on a space collapsed onto the hard task
        curriculum = "dr"
        task["params"] = {
            name: {"low": value, "high": value, "init": value, "step": 0.0}
            for name, value in HARD.items()
        }
    config = parse_config(
        {
            "seed": seed,
            "task": task,
            "curriculum": {"name": curriculum, "generations": 10**6, **OVERRIDES.get(method, {})},
        }
    )
    space, policy = runner.prepare(config)
    hard = space.task(**HARD)
    target = TestSet(space.name, (hard,), THRESHOLD, seed=0)
    marks = [budget * (k + 1) / 10 for k in range(10)]
    curve, steps = [], 0.0
    started = time.perf_counter()
    with EvaluationPool(space, policy, "local", 1) as pool:
        built = runner.build(config, space, pool)
        while steps < budget:
            steps += built.step().summary["env_steps"]
            if steps >= marks[0]:
                while marks and steps >= marks[0]:
                    marks.pop(0)
                chosen = built.policies_for_testing()
                score = score_test_set(
                    pool, list(chosen.policies.values()), target, episodes, seed=10_000
                )
                curve.append(
                    {
                        "method": method,
                        "seed": seed,
                        "env_steps": steps,
                        "hard_return": float(score.returns[0]),
                    }
                )
    row = {
        "method": method,
        "seed": seed,
        "env_steps": steps,
        "generations": built.generation,
        "hard_return": curve[-1]["hard_return"],
        "best_hard_return": max(p["hard_return"] for p in curve),
        "reached": curve[-1]["hard_return"] >= THRESHOLD,
        "wall_s": time.perf_counter() - started,
    }
    return row, curve


def main(argv: list[str] | None = None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default="direct,dr,alp_gmm,poet")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--budget", type=int, default=3_000_000, help="training env steps")
    parser.add_argument("--episodes", type=int, default=10, help="episodes on the hard task")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    jobs = [
        (m, s, args.budget, args.episodes)
        for m in args.methods.split(",")
        for s in range(args.seeds)
    ]
    rows, points = [], []
    started = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(args.jobs) as workers:
        for row, curve in workers.imap(run_one, jobs):
            rows.append(row)
            points.extend(curve)
            print(
                f"{row['method']} seed {row['seed']}: hard-task return {row['hard_return']:.1f} "
                f"(best {row['best_hard_return']:.1f}) after {row['env_steps']:,.0f} steps, "
                f"{row['wall_s']:.0f} s",
                flush=True,
            )
    runs = pd.DataFrame(rows)
    runs.to_csv(args.out / "runs.csv", index=False)
    pd.DataFrame(points).to_csv(args.out / "curves.csv", index=False)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE
    ).stdout.strip()
    lines = [
        "| method | seeds reaching the hard task | hard-task return at the end (mean ± std) "
        "| best during the run (mean) |",
        "| --- | ---: | ---: | ---: |",
    ]
    for method, part in runs.groupby("method", sort=False):
        lines.append(
            f"| {method} | {int(part['reached'].sum())} of {len(part)} | "
            f"{part['hard_return'].mean():.1f} ± {np.std(part['hard_return']):.1f} | "
            f"{part['best_hard_return'].mean():.1f} |"
        )
    text = "\n".join(lines) + (
        f"\n\nHard task {HARD} of {SPACE}, threshold {THRESHOLD:g}; budget {args.budget:,} "
        f"training env steps per run; commit {commit}; "
        f"{time.perf_counter() - started:.0f} s in all.\n"
    )
    (args.out / "table.md").write_text(text)
    print(text)
    return runs


if __name__ == "__main__":
    main()
