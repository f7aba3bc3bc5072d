"""The stepping-stones experiment end to end at its smallest scale (the curricula study's
tests are in test_curricula_study.py)."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest
from cli_support import ROOT

STEPPING = ROOT / "experiments" / "stepping_stones" / "run.py"


@pytest.mark.parametrize(
    ("domain", "horizon"), [("acrobot_high_goal", 500), ("mountain_car_hilltop", 999)]
)
def test_the_stepping_stones_experiment_runs_direct_and_a_curriculum(tmp_path, domain, horizon):
    """Its smallest run: the hard task scored at 10 marks, a row per run, the table."""
    done = subprocess.run(
        [
            sys.executable,
            str(STEPPING),
            "--domain",
            domain,
            "--methods",
            "direct,poet",
            "--seeds",
            "1",
            "--budget",
            "20000",
            "--episodes",
            "2",
            "--jobs",
            "1",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    runs = pd.read_csv(tmp_path / "runs.csv")
    assert list(runs["method"]) == ["direct", "poet"]
    assert (runs["env_steps"] >= 20_000).all()
    assert runs["hard_return"].between(-horizon, 0).all()  # -1 per step until the goal
    curves = pd.read_csv(tmp_path / "curves.csv")
    assert (
        curves.groupby("method", sort=False)["hard_return"].last()
        == runs.set_index("method")["hard_return"]
    ).all()
    table = (tmp_path / "table.md").read_text()
    assert "| direct | 0 of 1 |" in table or "| direct | 1 of 1 |" in table
    assert (tmp_path / "curves.png").stat().st_size > 0
