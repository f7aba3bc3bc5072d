"""Kill a run with SIGKILL in the middle of a generation, resume it, compare with a clean run."""

import os
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
from cli_support import COEVO_RUN, ROOT, cli

from coevo.pool.stats import is_runtime_column

# Generations take long enough (a fraction of a second with batched physics, more on the
# gym path) and are many enough that a kill right after generation 3 lands mid-run.
ARGS = [
    "pool=local",
    "curriculum.generations=12",
    "curriculum.optimizer_steps=3",
    "curriculum.repro_threshold=100",
    "curriculum.reproduce_every=1",
    "curriculum.max_children=6",
    "curriculum.transfer_every=2",
    "optimizer.population=48",
    "seed=5",
]


def _tables(run_dir: Path) -> dict[str, pd.DataFrame]:
    tables = {}
    for name in ("summary.csv", "eligibility.csv", "population.csv"):
        frame = pd.read_csv(run_dir / name)
        tables[name] = frame.drop(columns=[c for c in frame if is_runtime_column(c)])
    return tables


def test_sigkill_mid_generation_then_resume_matches_an_undisturbed_run(tmp_path):
    clean = tmp_path / "clean"
    done = cli("coevo-run", *ARGS, f"hydra.run.dir={clean}")
    assert done.returncode == 0, done.stderr[-3000:]

    killed = tmp_path / "killed"
    process = subprocess.Popen(
        [COEVO_RUN, *ARGS, f"hydra.run.dir={killed}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    third = killed / "checkpoints" / "gen_000003.pkl"
    deadline = time.monotonic() + 240
    while not third.exists():
        assert process.poll() is None, process.communicate()[1][-3000:]
        assert time.monotonic() < deadline
        time.sleep(0.02)
    time.sleep(0.05)  # inside generation 4: it starts as soon as checkpoint 3 is written
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL
    assert not (killed / "checkpoints" / "gen_000012.pkl").exists()
    summary_at_kill = pd.read_csv(killed / "summary.csv")
    assert summary_at_kill["generation"].max() < 12

    resumed = cli("coevo-run", f"resume={killed}")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resuming" in resumed.stdout and "gen  12/12" in resumed.stdout

    expected, got = _tables(clean), _tables(killed)
    for name in expected:
        pd.testing.assert_frame_equal(got[name], expected[name], obj=name)
    assert expected["summary.csv"]["generation"].tolist() == list(range(1, 13))


def test_a_corrupt_newest_checkpoint_falls_back_to_the_previous_one(tmp_path):
    run = tmp_path / "run"
    args = [a.replace("generations=12", "generations=3") for a in ARGS]
    done = cli("coevo-run", *args, f"hydra.run.dir={run}")
    assert done.returncode == 0, done.stderr[-3000:]
    newest = run / "checkpoints" / "gen_000003.pkl"
    newest.write_bytes(newest.read_bytes()[:100])  # truncated, as by a full disk
    resumed = cli("coevo-run", f"resume={run}")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "gen_000003.pkl is unreadable" in resumed.stdout + resumed.stderr
    assert "resuming" in resumed.stdout and "after generation 2" in resumed.stdout
    assert "gen   3/3" in resumed.stdout
    assert pd.read_csv(run / "summary.csv")["generation"].tolist() == [1, 2, 3]
