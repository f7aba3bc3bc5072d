"""Evaluate a saved policy: read a run directory's newest checkpoint and test its policies on
tasks past the run's bounds, a test of generalisation. As `coevo-eval RUN_DIR task=...`.

    python examples/evaluate_saved.py runs/DATE_TIME    # a run of yours (POET or any curriculum)
    python examples/evaluate_saved.py --small           # makes a 2-generation DR run first
"""

import argparse
import tempfile
from pathlib import Path

from coevo import EvaluationPool, run_setup, runner
from coevo.config import parse_config
from coevo.replay import load_saved_run


def make_run(generations: int) -> Path:
    run_dir = Path(tempfile.mkdtemp(prefix="coevo-run-"))
    raw = {"curriculum": {"name": "dr", "generations": generations}, "pool": {"backend": "local"}}
    runner.run(parse_config(raw), run_dir, echo=lambda line: None)
    return run_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("run_dir", nargs="?", type=Path, help="a run directory or checkpoint")
    parser.add_argument("--small", action="store_true", help="a tiny run, for the tests")
    args = parser.parse_args()
    run_dir = args.run_dir or make_run(2 if args.small else 20)

    saved = load_saved_run(run_dir)  # the newest readable checkpoint, and config.yaml
    space, policy = run_setup.prepare(saved.config)  # the run's task space and policy, rebuilt
    # POET's pairs are in saved.population; every curriculum's policies are in saved.policies.
    print(f"{run_dir}: generation {saved.generation}, policies {sorted(saved.policies)}")

    gravity = next(p for p in space.params if p.name == "gravity")
    wider = space.with_overrides({"gravity": {"high": 2 * gravity.high}})
    tests = [wider.initial_task()] + [
        wider.task(gravity=g) for g in (gravity.high, 2 * gravity.high)
    ]
    with EvaluationPool(wider, policy, backend="local") as pool:
        for name, theta in sorted(saved.policies.items()):
            returns = pool.evaluate([(theta, task) for task in tests], episodes=3, seed=0)
            for task, row in zip(tests, returns, strict=True):
                print(f"{name} on gravity {task['gravity']:5.1f}: mean return {row.mean():6.1f}")


if __name__ == "__main__":
    main()
