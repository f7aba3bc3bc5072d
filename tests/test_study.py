"""The curricula study's pipeline end to end: its `--quick` variant (the issue's check, about
1.5 min on 2 cores) and, for PPO and the stepping stones, their smallest scale (`--smoke`)."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest
from cli_support import ROOT

STUDY = ROOT / "experiments" / "curricula" / "run_study.py"


COLUMNS = [
    "task_space",
    "curriculum",
    "optimizer",
    "seeds",
    "test_mastered_mean",
    "test_mastered_std",
    "env_steps",
    "generations",
    "wall_s_mean",
    "seeds_started",
]


def _study(out, *args, scale="--smoke", jobs=1):
    done = subprocess.run(
        [sys.executable, str(STUDY), scale, "--jobs", str(jobs), "--out", str(out), *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return pd.read_csv(out / "table.csv")


@pytest.mark.slow
def test_the_quick_study_runs_every_curriculum_and_writes_its_table(tmp_path):
    """`--quick` as a user runs it: six curricula x 3 seeds, 300 k env steps each, ES."""
    table = _study(tmp_path, scale="--quick", jobs=2)
    assert list(table.columns) == COLUMNS
    assert list(table["curriculum"]) == ["dr", "plr", "accel", "alp_gmm", "poet", "enhanced_poet"]
    assert (table["seeds"] == 3).all()
    assert table["test_mastered_mean"].between(0, 1).all()
    assert table["test_mastered_std"].notna().all()  # three seeds give a spread
    assert (table["env_steps"] >= 300_000).all()  # each ran to the quick budget
    runs = pd.read_csv(tmp_path / "runs.csv")
    assert len(runs) == 18 and sorted(runs["seed"].unique()) == [0, 1, 2]
    curves = pd.read_csv(tmp_path / "curves.csv")
    # The table's figure is the mean over seeds of the last point of each run's curve.
    last = curves.groupby(["curriculum", "seed"], sort=False)["test_mastered"].last()
    mean = last.groupby("curriculum", sort=False).mean()
    assert mean.to_dict() == pytest.approx(
        table.set_index("curriculum")["test_mastered_mean"].to_dict()
    )
    assert "| cartpole | dr | es | 3 |" in (tmp_path / "table.md").read_text()
    assert (tmp_path / "curves.png").stat().st_size > 0


def test_the_study_trains_with_ppo_on_the_actor_critic(tmp_path):
    """The PPO rows: the same table, one row per curriculum with optimizer ppo."""
    table = _study(tmp_path, "--optimizers", "ppo", "--curricula", "dr,plr,alp_gmm,poet")
    assert list(table.columns) == COLUMNS
    assert list(table["curriculum"]) == ["dr", "plr", "alp_gmm", "poet"]
    assert (table["optimizer"] == "ppo").all()
    assert table["test_mastered_mean"].between(0, 1).all()
    assert (table["env_steps"] >= 20_000).all()
    assert "| cartpole | poet | ppo | 1 |" in (tmp_path / "table.md").read_text()
    # 10 generations x 4 tasks: PLR's 32-level fill is reached, ALP-GMM's 250-task bootstrap
    # is not (its row is DR's): the table says which runs their curriculum started in.
    started = table.set_index("curriculum")["seeds_started"].to_dict()
    assert started == {"dr": 1, "plr": 1, "alp_gmm": 0, "poet": 1}
    assert "| 0 of 1 |" in (tmp_path / "table.md").read_text()


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
