"""The stepping-stones reproduction (experiments/stepping_stones, issue 31 claim 1) end to end
at its smallest scale: `--quick` runs every arm, writes the results and resumes from them (the
curricula study's tests are in test_curricula_study.py)."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest
import yaml
from cli_support import ROOT, script_module
from phrases import assert_says

from coevo.config import parse_config
from coevo.curricula.dr import DRConfig
from coevo.curricula.poet import PoetConfig

STEPPING = ROOT / "experiments" / "stepping_stones" / "run.py"
ARMS = ["direct", "dr", "dr_x6", "poet", "poet_no_transfer"]


def _script():
    """run.py as a module of its own name (other experiments have a run.py too)."""
    return script_module(STEPPING, "stepping_stones_run")


def _config(folder, arm):
    return parse_config(yaml.safe_load((folder / "configs" / f"{arm}.yaml").read_text()))


def test_quick_runs_every_arm_writes_the_results_and_resumes(tmp_path):
    done = subprocess.run(
        [sys.executable, str(STEPPING), "--quick", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    runs = pd.read_csv(tmp_path / "runs.csv")
    assert list(runs["arm"]) == ARMS and set(runs["seed"]) == {100}  # a probe seed
    assert bool((runs["env_steps"] >= 150_000).all())
    assert bool(runs["hard_return"].between(-999, 0).all())  # -1 per step until the goal
    assert dict(zip(runs["arm"], runs["policies"], strict=True))["dr_x6"] == 6  # best of 6
    curves = pd.read_csv(tmp_path / "curves.csv")
    last = curves.groupby("arm", sort=False)["hard_return"].last()
    assert last.to_dict() == runs.set_index("arm")["hard_return"].to_dict()
    # Each arm's resolved config beside the results, as the runs used it.
    dr_x6 = _config(tmp_path, "dr_x6").curriculum
    assert isinstance(dr_x6, DRConfig) and dr_x6.policies == 6
    no_transfer = _config(tmp_path, "poet_no_transfer").curriculum
    assert isinstance(no_transfer, PoetConfig)
    assert no_transfer.transfer_every == 0 and not no_transfer.admission_transfer
    goal = _config(tmp_path, "direct").task.params["goal_position"]
    assert goal["low"] == goal["high"] == 0.45  # direct trains on the hard task alone
    table = (tmp_path / "table.md").read_text()
    assert_says(
        table,
        "| dr_x6 |",
        "Primary: seeds reaching the hard task at the last scoring",
        "poet > direct (control)",
        "poet > dr_x6 (control)",
        "poet > poet_no_transfer (mechanism control)",
        "one-sided Fisher exact p =",
        "150,000 training env steps",
        "Verdict: not judged",
    )
    assert (tmp_path / "curves.png").stat().st_size > 0
    # Again: every run is read back from runs/, none is run a second time.
    saved = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "runs").iterdir()}
    again = _script().main(["--quick", "--out", str(tmp_path)])
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "runs").iterdir()} == saved
    assert list(again["hard_return"]) == list(runs["hard_return"])
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "runs.csv"), runs)


@pytest.mark.parametrize(
    ("argv", "phrases"),
    [
        (["--probe", "--seeds", "12"], ["--seeds", "probes use seeds >= 100"]),
        (["--probe"], ["--probe needs --seeds"]),
        (["--full", "--seeds", "100"], ["--seeds is for --probe"]),
        (["--full", "--arms", "poet,direct"], ["--full runs the claim"]),
        (["--quick", "--arms", "poet,ppo"], ["--arms", "unknown ['ppo']", "dr_x6"]),
    ],
)
def test_the_command_line_refuses_what_would_mix_probes_and_confirmation(argv, phrases, capsys):
    with pytest.raises(SystemExit):
        _script().parse(argv)
    assert_says(capsys.readouterr().err, *phrases)
