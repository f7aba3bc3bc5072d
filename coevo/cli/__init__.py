"""Command-line entry points: `coevo-run` (run.py; its resume in resume.py), `coevo-report`
(report.py), `coevo-eval` (evaluate.py). Hydra composes a run's config; the work is in
`coevo.runner`. The names below are the console scripts' targets (pyproject.toml)."""

from coevo.cli.evaluate import main as eval_main
from coevo.cli.report import main as report_main
from coevo.cli.run import main as run_main

__all__ = ["eval_main", "report_main", "run_main"]
