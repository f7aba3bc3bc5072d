"""Run a sweep of curricula and seeds, then compare them on held-out test tasks.

The command-line equivalent:
    coevo-run -m curriculum=dr,plr,accel seed=0,1,2 pool=local
    coevo-compare runs/multirun/DATE_TIME --by curriculum.name --baseline dr

    python examples/sweep_compare.py [OUT_DIR]          # 3 curricula x 3 seeds, 20 generations
    python examples/sweep_compare.py --small [OUT_DIR]  # 2 x 2 runs of 3 generations
"""

import argparse
import tempfile
from pathlib import Path

from coevo import runner
from coevo.compare.cli import main as compare
from coevo.config import parse_config


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", nargs="?", type=Path, default=None, help="where the runs go")
    parser.add_argument("--small", action="store_true", help="a tiny sweep, for the tests")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="coevo-sweep-"))
    curricula, seeds = (
        (["dr", "plr"], [0, 1]) if args.small else (["dr", "plr", "accel"], [0, 1, 2])
    )
    generations = 3 if args.small else 20

    for name in curricula:
        for seed in seeds:
            raw = {
                "seed": seed,
                "curriculum": {"name": name, "generations": generations},
                "pool": {"backend": "local"},
                # 20 held-out CartPole tasks, scored every generation
                "test_set": {"size": 20, "every": 1},
            }
            run_dir = out / f"{name}_{seed}"  # any layout: compare finds runs at any depth
            runner.run(parse_config(raw), run_dir, echo=lambda line: None)
            print("ran", run_dir)

    # IQM of the share of test tasks mastered, 95 % intervals, P(improvement) over DR
    compare([str(out), "--by", "curriculum.name", "--baseline", "dr"])


if __name__ == "__main__":
    main()
