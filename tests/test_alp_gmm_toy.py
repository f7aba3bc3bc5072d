"""The ALP-GMM toy reproduction (experiments/alp_gmm_toy): its rules and its --quick smoke run."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_support import script_module

ROOT = Path(__file__).resolve().parents[1]
TOY_DIR = ROOT / "experiments" / "alp_gmm_toy"
sys.path.insert(0, str(TOY_DIR))

from toy import CellGrid, mastery_curve  # noqa: E402


def test_only_the_corner_cell_learns_from_scratch():
    grid = CellGrid()
    assert grid.episode(np.array([0.55, 0.55])) == 0.0  # locked: no mastered neighbour
    assert grid.episode(np.array([0.05, 0.05])) == pytest.approx(0.01)
    assert grid.open_cells() == [(0, 0)]


def test_a_cell_unlocks_its_next_neighbours_at_75_and_is_mastered_above_75():
    grid = CellGrid()
    for _ in range(75):
        grid.episode(np.array([0.01, 0.01]))
    assert grid.mastered_percent() == 0.0  # 75 unlocks but is not yet "mastered"
    assert set(grid.open_cells()) == {(0, 0), (0, 1), (1, 0), (1, 1)}
    grid.episode(np.array([0.01, 0.01]))
    assert grid.mastered_percent() == 1.0
    assert not grid.learnable((2, 0))
    for _ in range(200):  # competence is capped at 100
        grid.episode(np.array([0.01, 0.01]))
    assert grid.competence[0, 0] == 100
    assert grid.cell_of(np.array([1.0, 1.0])) == (9, 9)  # the upper edge is the last cell


def test_the_oracle_wastes_no_episode_and_runs_repeat():
    # 100 cells x 76 episodes each: every one of the oracle's episodes must count.
    curve = mastery_curve("oracle", 1000, 7600, 76)
    assert curve[-2] < 100.0 and curve[-1] == 100.0
    random_a, random_b = (mastery_curve("random", 1000, 500, 100) for _ in range(2))
    assert random_a.tolist() == random_b.tolist()


def test_quick_run_writes_parseable_results(tmp_path):
    from threadpoolctl import threadpool_limits  # scikit-learn's own dependency

    # run.py's main in this process, as the gate and mazes claims' tests call theirs (a
    # process would add only its imports), on one BLAS thread as run.py sets for its own
    # process (this one's BLAS started before run.py could set it).
    toy_run = script_module(TOY_DIR / "run.py", "alp_gmm_toy_run")
    with threadpool_limits(1):
        toy_run.main(["--quick", "--out", str(tmp_path), "--cache", str(tmp_path / "cache")])
    runs = pd.read_csv(tmp_path / "runs.csv")
    assert set(runs["arm"]) == {"random", "alp_gmm", "oracle"}
    assert len(runs) == 3 * runs["seed"].nunique()
    assert runs["mastered_pct"].between(0, 100).all()
    oracle = runs[runs["arm"] == "oracle"]["mastered_pct"]
    assert (oracle >= runs[runs["arm"] == "random"]["mastered_pct"].max()).all()
    curves = pd.read_csv(tmp_path / "curves.csv")
    assert curves["episode"].max() == runs["episodes"].iloc[0]
    table = (tmp_path / "table.md").read_text()
    assert "IQM" in table and "Verdict:" in table and "alp_gmm" in table
    assert (tmp_path / "mastery.png").stat().st_size > 0
