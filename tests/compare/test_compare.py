"""coevo-compare on real runs: a multirun of 2 curricula x 2 seeds, made once per module."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from cli_support import ROOT, cli_in_process

from coevo.compare import stats
from coevo.compare.cli import main

# One worker under xdist: the sweep (`sweep`) made once for the module.
pytestmark = pytest.mark.xdist_group("test_compare")
GENERATIONS = 6


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """A coevo-run multirun (Hydra's sweep, each job in this process)."""
    out = tmp_path_factory.mktemp("sweep")
    done = cli_in_process(
        "coevo-run",
        "-m",
        "pool=local",
        "curriculum=dr,plr",
        "seed=0,1",
        f"curriculum.generations={GENERATIONS}",
        "test_set.every=1",
        "test_set.size=10",
        "test_set.episodes=2",  # α-CVaR ranks on one episode and reports the other
        f"hydra.sweep.dir={out}",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["0", "1", "2", "3"]
    return out


def figure(run_dir, last=3, budget=None):
    """A run's figure computed here from summary.csv, apart from coevo.compare."""
    summary = pd.read_csv(run_dir / "summary.csv")
    steps = summary["env_steps"].cumsum()
    inside = summary[(steps <= budget) if budget is not None else steps > -1]
    return inside["test_mastered"].dropna().tail(last).mean()


def compare(capsys, *args):
    main([*map(str, args), "--reps", "500"])
    return capsys.readouterr().out


def test_groups_by_curriculum_with_per_seed_values_and_iqm(sweep, capsys):
    out = compare(capsys, sweep, "--baseline", "dr")
    assert "4 runs in 2 groups" in out
    runs = pd.read_csv(sweep / "compare_runs.csv")
    assert sorted(runs["curriculum.name"]) == ["dr", "dr", "plr", "plr"]
    for row in runs.itertuples():
        assert row.value == pytest.approx(figure(Path(row.run_dir)))  # relative to the cwd
    groups = pd.read_csv(sweep / "compare.csv").set_index("curriculum.name")
    for name in ("dr", "plr"):
        values = runs[runs["curriculum.name"] == name]["value"].to_numpy()
        assert groups.loc[name, "iqm"] == pytest.approx(stats.iqm(values))
        assert groups.loc[name, "iqm_ci_low"] <= groups.loc[name, "iqm"]
        assert groups.loc[name, "iqm"] <= groups.loc[name, "iqm_ci_high"]
        line = next(line for line in out.splitlines() if line.startswith(f"{name} |"))
        assert " 0:" in line and " 1:" in line  # per-seed values
    plr, dr = (runs[runs["curriculum.name"] == n]["value"] for n in ("plr", "dr"))
    assert groups.loc["plr", "p_improvement_over_dr"] == pytest.approx(
        stats.probability_of_improvement(plr, dr)
    )
    assert math.isnan(groups.loc["dr", "p_improvement_over_dr"])  # the baseline itself
    assert "P(> dr)" in out


def test_cvar_comes_from_the_per_task_returns_of_the_scorings_used(sweep, capsys):
    out = compare(capsys, sweep)
    runs = pd.read_csv(sweep / "compare_runs.csv")
    row = runs.iloc[0]
    run_dir = sweep / "0"
    scores = pd.read_csv(run_dir / "test_scores.csv")
    used = [int(g) for g in str(row["generations"]).split()]
    assert used == [GENERATIONS - 2, GENERATIONS - 1, GENERATIONS]  # the last 3 scorings
    columns = ["return", "return_even", "return_odd"]
    per_task = scores[scores["generation"].isin(used)].groupby("test_task")[columns].mean()
    worst = per_task["return_even"].idxmin()  # 10 % of 10 tasks, ranked on the even episode
    assert row["cvar"] == pytest.approx(per_task.loc[worst, "return_odd"])  # reported: odd
    assert row["cvar_same_episodes"] == pytest.approx(per_task["return"].min())
    assert "0.1-CVaR (rescored) IQM" in out and "ranked on the even-numbered" in out
    assert "no α-CVaR" not in out


def test_a_budget_keeps_only_the_scorings_inside_it(sweep, capsys):
    steps = pd.read_csv(sweep / "0" / "summary.csv")["env_steps"].cumsum()
    budget = float(steps.iloc[3])  # 4 generations' steps: scorings 2, 3, 4
    compare(capsys, sweep, "--budget-steps", budget)
    runs = pd.read_csv(sweep / "compare_runs.csv").set_index("run_dir")
    first = runs.loc[next(r for r in runs.index if Path(r).name == "0")]
    assert first["generations"] == "2 3 4"
    assert first["value"] == pytest.approx(figure(sweep / "0", budget=budget))
    assert first["env_steps"] <= budget
    # In updates (optimizer_steps: one per DR generation here): scorings 2, 3, 4 again.
    compare(capsys, sweep, "--budget-updates", 4)
    runs = pd.read_csv(sweep / "compare_runs.csv").set_index("run_dir")
    dr = runs[runs["curriculum.name"] == "dr"]
    assert (dr["generations"] == "2 3 4").all() and (dr["updates"] == 4).all()
    out = compare(capsys, sweep, "--budget-steps", 1)  # before any scoring
    assert "no test scoring inside the budget" in out
    assert "n/a" in out


def test_any_config_key_groups(sweep, capsys):
    out = compare(capsys, sweep, "--by", "curriculum.name,seed")
    assert "4 runs in 4 groups" in out
    assert "dr,0 |" in out and "plr,1 |" in out
    # Grouped by seed alone, a group mixes curricula: the notes say what else differs.
    out = compare(capsys, sweep, "--by", "seed")
    assert "runs differ in more than the seed:" in out and "curriculum.name" in out
    assert "differ in more than the seed" not in compare(capsys, sweep)


def test_html_page_is_self_contained_with_tables_and_curves(sweep, capsys):
    compare(capsys, sweep, "--baseline", "dr")
    page = (sweep / "compare.html").read_text()
    assert "data:image/png;base64," in page
    assert "src='http" not in page and 'src="http' not in page
    assert "mean of its last 3 held-out test scorings" in page
    assert "ranked on one scoring and their mean test return taken from an independent" in page
    assert "cvar_same_episodes" in page
    for text in ("<h2>Groups</h2>", "<h2>Runs</h2>", ">dr<", ">plr<", "iqm_ci_low"):
        assert text in page


def test_bad_input_is_refused_saying_what_was_expected(sweep, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main([str(tmp_path)])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "holds no coevo run" in err and "expected a run directory" in err
    with pytest.raises(SystemExit):
        main([str(sweep), "--baseline", "nosuch"])
    assert "none of the groups: dr, plr" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([str(sweep), "--by", "curriculum.nosuch"])
    assert "no key curriculum.nosuch" in capsys.readouterr().err
    done = subprocess.run(
        [sys.executable, "-m", "coevo.compare", str(tmp_path / "missing")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 2 and "does not exist" in done.stderr
