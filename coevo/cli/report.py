"""`coevo-report RUN_DIR`: rebuild a run's report.html from its tables."""

from __future__ import annotations

import sys
from pathlib import Path

from coevo import run_setup
from coevo.cli.console import asked_for_help

REPORT_HELP = """usage: coevo-report RUN_DIR

Rebuild RUN_DIR/report.html from the run directory's tables (summary.csv, eligibility.csv,
population.csv, ...) and print its path. A run rebuilds its page every report_every_s
seconds and at its end; this rebuilds it now, e.g. while the run goes on."""


def main() -> None:
    """`coevo-report RUN_DIR`: rebuild report.html from the run directory's files."""
    from coevo.report import write_report

    asked_for_help(REPORT_HELP)
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        print(REPORT_HELP.splitlines()[0], file=sys.stderr)
        sys.exit(2)
    run_dir = Path(sys.argv[1])
    if not (run_dir / "summary.csv").exists() and not (run_dir / "config.yaml").exists():
        print(f"coevo-report: error: {run_dir} is not a coevo run directory", file=sys.stderr)
        sys.exit(2)
    from coevo.report.html import ReportError

    try:
        print(write_report(run_dir, run_setup.task_renderer(run_dir)))
    except ReportError as error:
        print(f"coevo-report: error: {error}", file=sys.stderr)
        sys.exit(2)
