"""Kill a run with SIGKILL in the middle of a generation, resume it, compare with a clean run."""

import importlib
import os
import shutil
import signal
import sys
from pathlib import Path

import pandas as pd
import pytest
from cli_support import cli_in_process, run_and_kill_after_checkpoint, run_tables

# Generations take long enough (a fraction of a second with batched physics, more on the
# gym path) and are many enough that a kill right after generation 3 lands mid-run; 6 hold
# children, refusals and transfers.
ARGS = [
    "pool=local",
    "curriculum.generations=6",
    "curriculum.optimizer_steps=3",
    "curriculum.repro_threshold=100",
    "curriculum.reproduce_every=1",
    "curriculum.max_children=6",
    "curriculum.transfer_every=2",
    "optimizer.population=24",
    "seed=5",
]
# One worker under xdist: the undisturbed run (`clean`) made once for the module.
pytestmark = pytest.mark.xdist_group("test_resume")


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> Path:
    """ARGS run to its end, undisturbed: what a resumed run must equal."""
    run = tmp_path_factory.mktemp("resume") / "clean"
    done = cli_in_process("coevo-run", *ARGS, f"hydra.run.dir={run}")
    assert done.returncode == 0, done.stderr[-3000:]
    return run


def test_sigkill_mid_generation_then_resume_matches_an_undisturbed_run(clean, tmp_path):
    killed = tmp_path / "killed"
    process = run_and_kill_after_checkpoint(ARGS, killed)
    assert process.returncode == -signal.SIGKILL
    assert not (killed / "checkpoints" / "gen_000006.pkl").exists()
    summary_at_kill = pd.read_csv(killed / "summary.csv")
    assert summary_at_kill["generation"].max() < 6

    resumed = cli_in_process("coevo-run", f"resume={killed}")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resuming" in resumed.stdout and "gen   6/6" in resumed.stdout

    expected, got = run_tables(clean), run_tables(killed)
    for name in expected:
        pd.testing.assert_frame_equal(got[name], expected[name], obj=name)
    assert expected["summary.csv"]["generation"].tolist() == list(range(1, 7))


def test_a_corrupt_newest_checkpoint_falls_back_to_the_previous_one(clean, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(clean, run)  # a finished run of its own
    newest = run / "checkpoints" / "gen_000006.pkl"
    newest.write_bytes(newest.read_bytes()[:100])  # truncated, as by a full disk
    resumed = cli_in_process("coevo-run", f"resume={run}")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "gen_000006.pkl is unreadable" in resumed.stdout + resumed.stderr
    assert "resuming" in resumed.stdout and "after generation 5" in resumed.stdout
    assert "gen   6/6" in resumed.stdout
    assert pd.read_csv(run / "summary.csv")["generation"].tolist() == list(range(1, 7))
    expected, got = run_tables(clean), run_tables(run)
    for name in expected:  # generation 6 again, from generation 5's checkpoint
        pd.testing.assert_frame_equal(got[name], expected[name], obj=name)


def test_the_way_back_names_the_pythonpath_entries_the_runs_modules_came_from(
    tmp_path, monkeypatch
):
    from coevo.resume_rules import resume_command

    mine, unused = tmp_path / "mine", tmp_path / "unused"
    mine.mkdir()
    unused.mkdir()
    (mine / "way_back_probe_tasks.py").write_text("VALUE = 1\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(unused), str(mine)]))
    run = tmp_path / "run"
    assert resume_command(run) == f"coevo-run resume={run}"  # nothing imported from there
    monkeypatch.syspath_prepend(str(mine))
    monkeypatch.delitem(sys.modules, "way_back_probe_tasks", raising=False)
    importlib.import_module("way_back_probe_tasks")
    try:
        assert resume_command(run) == f"PYTHONPATH={mine} coevo-run resume={run}"
    finally:
        del sys.modules["way_back_probe_tasks"]
