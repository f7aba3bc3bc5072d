"""`coevo-compare RUN_OR_SWEEP_DIR...`: runs side by side, grouped by curriculum or any
config key, with IQM, 95 % intervals, α-CVaR, P(improvement) over a baseline, curves and a
self-contained HTML page."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from coevo.compare import stats
from coevo.compare.analysis import (
    DEFAULT_ALPHA,
    DEFAULT_LAST,
    Budget,
    GroupStats,
    group_stats,
    run_figure,
)
from coevo.compare.report import (
    GROUPS_CSV,
    HTML,
    RUNS_CSV,
    console_table,
    group_frame,
    run_frame,
    write_html,
)
from coevo.compare.runs import TEST_COLUMNS, CompareError, Run, find_run_dirs, load_run

DEFAULT_BY = "curriculum.name"


def parser() -> argparse.ArgumentParser:
    """coevo-compare's command line (`coevo-compare --help` prints it)."""
    p = argparse.ArgumentParser(
        prog="coevo-compare",
        description=__doc__,
        epilog="e.g. coevo-compare runs/multirun/2026-01-01_10-00-00 --baseline dr "
        "--budget-steps 500000",
    )
    p.add_argument("dirs", nargs="+", type=Path, metavar="RUN_OR_SWEEP_DIR")
    p.add_argument(
        "--by",
        default=DEFAULT_BY,
        help="comma-separated config keys to group by (default %(default)s), e.g. "
        "curriculum.name,optimizer.name; a group is named by its values joined with ','",
    )
    p.add_argument("--baseline", default=None, help="group to give P(improvement) over")
    p.add_argument("--metric", default=TEST_COLUMNS[0], choices=TEST_COLUMNS)
    p.add_argument("--last", type=int, default=DEFAULT_LAST, help="scorings averaged per run")
    p.add_argument("--budget-steps", type=float, default=None, help="training env steps")
    p.add_argument("--budget-updates", type=float, default=None, help="optimizer steps")
    p.add_argument("--alpha", type=float, default=DEFAULT_ALPHA, help="α of α-CVaR")
    p.add_argument("--reps", type=int, default=stats.DEFAULT_REPS, help="bootstrap replicates")
    p.add_argument("--seed", type=int, default=stats.DEFAULT_SEED, help="bootstrap seed")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where to write compare.html and the CSVs "
        "(default: the one directory given, else the working directory)",
    )
    return p


def group_label(run: Run, keys: list[str]) -> str:
    """The group a run belongs to: its config's values at `keys`, joined with ','.

    Raises:
        CompareError: the run's config.yaml lacks one of the keys.
    """
    try:
        return ",".join(str(run.value(key)) for key in keys)
    except KeyError as missing:
        raise CompareError(
            f"{run.path}: its config.yaml has no key {missing.args[0]} (--by takes dotted keys "
            "of the run's config.yaml, e.g. curriculum.name)"
        ) from None


def compare(args: argparse.Namespace) -> list[GroupStats]:
    """Read, group and summarise the runs; write the CSVs and compare.html; print the table."""
    if args.last < 1:
        raise CompareError("--last must be at least 1")
    keys = [k.strip() for k in args.by.split(",") if k.strip()]
    budget = Budget(args.budget_steps, args.budget_updates)
    runs = [load_run(path) for path in find_run_dirs(args.dirs)]
    figures = [
        run_figure(run, group_label(run, keys), args.metric, budget, args.last, args.alpha)
        for run in runs
    ]
    groups = group_stats(figures, args.baseline, args.reps, args.seed, args.last)
    out = args.out or (args.dirs[0] if len(args.dirs) == 1 else Path.cwd())
    out.mkdir(parents=True, exist_ok=True)
    by = ",".join(keys)
    group_frame(groups, by, args.baseline).to_csv(out / GROUPS_CSV, index=False)
    run_frame(groups, by).to_csv(out / RUNS_CSV, index=False)
    write_html(
        out / HTML,
        groups,
        by,
        args.metric,
        args.baseline,
        budget,
        args.last,
        args.alpha,
        args.dirs,
    )
    print(
        f"{len(runs)} runs in {len(groups)} groups; figure: mean of the last {args.last} "
        f"{args.metric} scorings inside the budget ({budget.describe()}); {args.alpha:g}-CVaR: "
        f"the worst {args.alpha:.0%} of test tasks ranked on the even-numbered test episodes, "
        "their mean return on the odd-numbered ones"
    )
    print(console_table(groups, by, args.metric, args.baseline, args.alpha))
    print(f"wrote {out / HTML}, {out / GROUPS_CSV}, {out / RUNS_CSV}")
    return groups


def main(argv: list[str] | None = None) -> None:
    """The `coevo-compare` entry point: exits 2 with a one-line message on a `CompareError`.

    Args:
        argv: the arguments (default: the process's command line).
    """
    args = parser().parse_args(argv)
    try:
        compare(args)
    except CompareError as error:
        print(f"coevo-compare: error: {error}", file=sys.stderr)
        sys.exit(2)
