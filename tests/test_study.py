"""The curricula study's pipeline end to end: its `--quick` variant (the issue's check, about
1.5 min on 2 cores) and, for PPO and the stepping stones, their smallest scale (`--smoke`)."""

from __future__ import annotations

import importlib.util
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


@pytest.mark.study
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


@pytest.mark.study
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


def _study_module():
    """run_study.py imported (a script, not a package; its dataclass needs sys.modules)."""
    if "run_study" not in sys.modules:
        spec = importlib.util.spec_from_file_location("run_study", STUDY)
        module = importlib.util.module_from_spec(spec)
        sys.modules["run_study"] = module
        spec.loader.exec_module(module)
    return sys.modules["run_study"]


def _curves(points):
    """curves.csv rows of one curriculum: (seed, env_steps, test_mastered) each."""
    return pd.DataFrame(
        [
            {"task_space": "cartpole", "curriculum": "plr", "optimizer": "es", "seed": seed,
             "generation": i, "env_steps": steps, "test_mastered": mastered}
            for i, (seed, steps, mastered) in enumerate(points)
        ]
    )  # fmt: skip


def test_the_curve_averages_seeds_mark_by_mark_and_ends_on_the_table_figure(tmp_path):
    """Runs cross a mark a little after it, each at its own env steps: the curve's point at a
    mark is the mean of the seeds' scorings for that mark (not of whatever falls in an env-step
    bin), and a step that crosses two marks scores once for both."""
    study = _study_module()
    curves = _curves(
        [
            (0, 100_400, 0.1), (0, 200_900, 0.5), (0, 301_000, 0.2),
            (1, 100_100, 0.3), (1, 200_050, 0.0), (1, 300_200, 0.6),
            (2, 100_000, 0.8), (2, 305_000, 0.4),  # one large step: marks 2 and 3
        ]
    )  # fmt: skip
    means = study.per_mark(curves, 300_000, 3)
    assert means["mark"].tolist() == [0, 1, 2]
    assert means["mark_steps"].tolist() == [100_000, 200_000, 300_000]
    assert means["test_mastered"].tolist() == pytest.approx([0.4, 0.3, 0.4])
    assert means["seeds"].tolist() == [3, 3, 3]
    runs = curves.groupby("seed").last().reset_index().assign(generations=1, wall_s=1.0)
    table = study.summarise(runs)
    assert means["test_mastered"].iloc[-1] == pytest.approx(table["test_mastered_mean"].iloc[0])
    study.plot(curves, tmp_path / "curves.png", 300_000, 3)
    assert (tmp_path / "curves.png").stat().st_size > 0


def test_replot_rerenders_a_study_from_its_csvs_and_one_seed_has_no_std(tmp_path):
    """--replot: the table and the plot from runs.csv / curves.csv, nothing run; a runs.csv
    without `started` gives seeds started only where it holds by definition; one seed: no std."""
    study = _study_module()
    curves = _curves([(0, 100_400, 0.1), (0, 200_900, 0.5)])
    curves.to_csv(tmp_path / "curves.csv", index=False)
    runs = curves.groupby("seed").last().reset_index().assign(generations=2, wall_s=1.0)
    runs.drop(columns="generation").to_csv(tmp_path / "runs.csv", index=False)
    (tmp_path / "table.md").write_text("| old |\n\nBudget 200,000 training env steps per run.\n")
    table = study.main(["--replot", str(tmp_path)])
    assert table["test_mastered_std"].isna().all() and table["seeds_started"].isna().all()
    text = (tmp_path / "table.md").read_text()
    assert "| 50.0 ± n/a |" in text and "± 0.0" not in text and "| n/a |" in text
    assert "Budget 200,000 training env steps per run." in text
    assert "Test set scored at 2 marks" in text
    assert (tmp_path / "curves.png").stat().st_size > 0
    study.main(["--replot", str(tmp_path)])  # again: the same table.md
    assert (tmp_path / "table.md").read_text() == text


@pytest.mark.parametrize(
    "folder", sorted(p.parent.name for p in STUDY.parent.glob("*/curves.csv")) or ["none"]
)
def test_the_committed_curves_end_on_their_tables_figures(folder):
    """Every committed study: each curriculum's last point per mark is its table's figure."""
    study = _study_module()
    out = STUDY.parent / folder
    text = (out / "table.md").read_text()
    budget = int(text.split("Budget ")[1].split(" ")[0].replace(",", ""))
    points = int(text.split("scored at ")[1].split(" ")[0])
    means = study.per_mark(pd.read_csv(out / "curves.csv"), budget, points)
    assert (means["seeds"] == 3).all() and (means.groupby("curriculum").size() == points).all()
    last = means.groupby("curriculum", sort=False)["test_mastered"].last()
    table = pd.read_csv(out / "table.csv").set_index("curriculum")["test_mastered_mean"]
    assert last.to_dict() == pytest.approx(table.to_dict())


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
