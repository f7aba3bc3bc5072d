"""What `coevo-run` runs, as library calls: `run` (mode=coevolve, a thin layer on
`coevo.run.Run`) and `run_eligible` (mode=eligible_parents). The checks and parts a run
is built from live in `coevo.run_setup`."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from coevo.config import RunConfig
from coevo.curricula.base import Curriculum
from coevo.eligible import eligibility_threshold, judge_groups, load_pairs
from coevo.errors import ConfigError
from coevo.frames import column
from coevo.report import write_report
from coevo.report.tables import ELIGIBILITY_COLUMNS
from coevo.run import Run, warnings_to_echo
from coevo.run_files import (
    ELIGIBILITY,
    RETURNS,
    SUMMARY,
)
from coevo.run_setup import (
    make_pool,
    prepare,
    refuse_existing_run,
    write_config,
)


def run(
    config: RunConfig | None,
    run_dir: Path,
    echo: Callable[[str], None] = print,
    resume: bool = False,
    checkpoint_file: Path | None = None,
) -> Curriculum:
    """Run `config` in `run_dir` (mode=coevolve; `run_eligible` runs mode=eligible_parents),
    or with `resume` continue the run there: `config` None takes the run's own config.yaml;
    a config given must equal it but for what resume may change
    (`resume_rules.RESUME_OVERRIDES`). Ctrl-C raises `RunInterrupted` once the report is
    written; `curriculum.failed_generations` generations in a row whose every evaluation
    failed raise `GenerationFailed` (report written too, with the reason in stopped.txt).
    The run directory's lock is let go at the end (a later resume, in this process or
    another, may take it)."""
    with Run.from_config(
        config, run_dir, echo=echo, resume=resume, checkpoint_file=checkpoint_file
    ) as steps:
        steps.generations()
    return steps.curriculum


def run_eligible(
    config: RunConfig, run_dir: Path, echo: Callable[[str], None] = print
) -> pd.DataFrame:
    """mode=eligible_parents: evaluate the file's pairs on the pool and report who passes."""
    with warnings_to_echo(echo):
        return _run_eligible(config, Path(run_dir), echo)


def _run_eligible(config: RunConfig, run_dir: Path, echo: Callable[[str], None]) -> pd.DataFrame:
    options = config.eligible
    if options.pairs_file is None:  # RunConfig.check asks for it with mode=eligible_parents only
        raise ConfigError(
            "eligible.pairs_file", "required by runner.run_eligible (a YAML or CSV file)"
        )
    refuse_existing_run(run_dir)
    space, policy = prepare(config)
    threshold = eligibility_threshold(options.threshold, space)
    pairs = load_pairs(Path(options.pairs_file), space, policy)
    run_dir.mkdir(parents=True, exist_ok=True)  # after the checks: a refused run leaves none
    write_config(run_dir, config)
    started = time.perf_counter()
    # One pool per policy architecture in the file (most files have one).
    decisions, returns, stats = judge_groups(
        lambda group_policy: make_pool(config, space, group_policy),
        policy,
        pairs,
        options.episodes,
        threshold,
        config.seed,
    )
    frame = pd.DataFrame([d.as_row() for d in decisions], columns=ELIGIBILITY_COLUMNS)
    frame.to_csv(run_dir / ELIGIBILITY, index=False)
    _write_returns(run_dir, pairs, returns)
    eligible = int((column(frame, "outcome") == "eligible").sum())
    summary = _eligible_summary(frame, len(pairs), eligible, stats)
    summary["wall_s"] = time.perf_counter() - started
    pd.DataFrame([summary]).to_csv(run_dir / SUMMARY, index=False)
    write_report(run_dir, space.metadata.get("render_png"))
    for decision in decisions:
        echo(f"{decision.outcome:>10}  {decision.reason}")
    echo(
        f"{eligible} of {len(pairs)} pairs eligible to reproduce (threshold "
        f"{threshold:g}, {options.episodes} episodes each)"
    )
    echo(f"run directory: {run_dir}")
    return frame


def _write_returns(run_dir: Path, pairs: list, returns: np.ndarray) -> None:
    """returns.csv: every pair's per-episode returns."""
    per_episode = pd.DataFrame(returns, columns=[f"episode_{k}" for k in range(returns.shape[1])])
    per_episode.insert(0, "name", [p.name for p in pairs])
    per_episode.insert(1, "policy", [p.source for p in pairs])
    per_episode.to_csv(run_dir / RETURNS, index=False)


def _eligible_summary(frame: pd.DataFrame, pairs: int, eligible: int, stats: dict) -> dict:
    """summary.csv's one row of mode=eligible_parents (its wall_s added by the caller)."""
    return {
        "generation": 0,
        "pairs": pairs,  # evaluated once: nothing is active or archived
        "eligible": eligible,
        "best_score": float(np.nanmax(frame["score"])),
        "median_score": float(np.nanmedian(frame["score"])),
        "episodes": stats["episodes"],
        "env_steps": stats["env_steps"],
        "steps_per_s": stats["steps_per_s"],
    }
