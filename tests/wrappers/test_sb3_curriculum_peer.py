"""benchmarks/sb3_curriculum_peer.py --quick: the same SB3 PPO job on Syllabus's PLR, on
coevo's PLR sampler and on uniform tasks prints one table. Its contents and shape are checked,
never its timings."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARMS = ("syllabus", "coevo", "uniform")
# One worker under xdist: the benchmark (`printed`) runs once for the module, not once on
# each worker that takes one of its tests.
pytestmark = pytest.mark.xdist_group("test_sb3_curriculum_peer")

pytest.importorskip("stable_baselines3", reason="SB3 is not installed (the sb3 extra)")
pytest.importorskip("syllabus", reason="syllabus-rl is not installed (the test extra)")


@pytest.fixture(scope="module")
def printed() -> list[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "sb3_curriculum_peer.py"), "--quick"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


def _rows(lines: list[str]) -> dict[str, list[str]]:
    cells = [[cell.strip() for cell in line.split("|")] for line in lines if "|" in line]
    return {row[0]: row for row in cells if row[0] in ARMS}


def test_every_arm_ran_and_has_its_row(printed):
    header = next(line for line in printed if line.startswith("arm "))
    assert [cell.strip() for cell in header.split("|")] == [
        "arm",
        "episodes",
        "µs/episode",
        "env side µs",
        "server CPU µs",
        "learn s",
        "held-out return [95% CI]",
    ]
    rows = _rows(printed)
    assert list(rows) == list(ARMS)
    for arm, row in rows.items():
        assert len(row) == 7, row
        assert int(row[1]) > 0, f"{arm} finished no episode"
        for cell in row[2:4] + [row[5]]:
            float(cell)
        assert re.fullmatch(r"-?\d+\.\d \[-?\d+\.\d, -?\d+\.\d\]", row[6]), row[6]
    assert rows["syllabus"][4].endswith("update thread")
    assert rows["coevo"][4].endswith("manager")
    assert rows["uniform"][4] == "0.0 -"  # no curriculum, no server


def test_one_run_line_per_arm_and_seed(printed):
    runs = [line for line in printed if line.startswith("run ")]
    assert [line.split(":")[0] for line in runs] == [f"run {arm} seed 0" for arm in ARMS]


def test_the_comparison_gives_the_ratio_and_the_noise_verdict(printed):
    assert re.fullmatch(r"curriculum µs per episode, coevo / syllabus: \d+\.\d\d", printed[-3])
    assert re.fullmatch(
        r"held-out return, coevo - syllabus: [+-]\d+\.\d; P\(coevo > syllabus\) \d\.\d\d "
        r"\[\d\.\d\d, \d\.\d\d\]: (within|beyond) seed noise",
        printed[-2],
    )
    assert re.fullmatch(r"total wall time: \d+ s", printed[-1])
