"""The wheel as a user installs it: built from this checkout, installed into a fresh virtual
environment (no system site-packages), then coevo-run, coevo-report and coevo-eval from a
directory outside the repository, a preset with a shipped file (the eligible-parents
example) and a config group of the user's own through Hydra's search path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow  # ~1-2 min: pip installs the dependencies (from its cache)


def _run(args: list, cwd: Path, timeout: float = 600, **env: str) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [str(a) for a in args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        env={**os.environ, **env},
    )
    assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-3000:])
    return done


def test_the_wheel_installs_and_its_commands_run_from_any_directory(tmp_path):
    wheels = tmp_path / "wheels"
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            wheels,
            ROOT,
        ],
        cwd=tmp_path,
    )
    (wheel,) = wheels.glob("coevo-*.whl")
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", venv], cwd=tmp_path)
    bin_dir = venv / "bin"
    # torch stays the CPU build: the same constraints as the development install.
    _run(
        [bin_dir / "python", "-m", "pip", "install", "-q", wheel],
        cwd=tmp_path,
        PIP_CONSTRAINT=str(ROOT / "constraints.txt"),
    )
    work = tmp_path / "elsewhere"
    work.mkdir()
    clean_env = {"PYTHONPATH": ""}  # nothing from the checkout
    where = _run(
        [
            bin_dir / "python",
            "-c",
            "import coevo, coevo.cli.conf; print(coevo.__file__, coevo.cli.conf.CONF_DIR)",
        ],
        cwd=work,
        **clean_env,
    ).stdout.split()
    assert str(venv) in where[0] and where[1].startswith(str(venv))  # not the checkout's

    run = work / "run"
    done = _run(
        [
            bin_dir / "coevo-run",
            "pool=local",
            "curriculum.generations=2",
            "optimizer.population=4",
            f"hydra.run.dir={run}",
        ],
        cwd=work,
        **clean_env,
    )
    assert "gen   2/2" in done.stdout
    assert pd.read_csv(run / "summary.csv")["generation"].tolist() == [1, 2]
    report = _run([bin_dir / "coevo-report", run], cwd=work, **clean_env)
    assert report.stdout.strip().endswith("report.html")
    evaluated = _run([bin_dir / "coevo-eval", run, "episodes=2"], cwd=work, **clean_env)
    assert "mean " in evaluated.stdout and "over 2 episodes" in evaluated.stdout

    # A preset naming a file shipped with coevo, resolved wherever coevo is installed.
    eligible = work / "eligible"
    done = _run(
        [
            bin_dir / "coevo-run",
            "experiment=eligible_parents",
            "pool=local",
            f"hydra.run.dir={eligible}",
        ],
        cwd=work,
        **clean_env,
    )
    assert "2 of 8 pairs eligible" in done.stdout  # judged at CartPole's solved score, 475

    # The user's own config directory on Hydra's search path: a curriculum preset of theirs.
    mine = work / "my_conf" / "curriculum"
    mine.mkdir(parents=True)
    (mine / "short_poet.yaml").write_text("name: poet\ngenerations: 1\nmax_children: 2\n")
    own = work / "own"
    done = _run(
        [
            bin_dir / "coevo-run",
            f"hydra.searchpath=[file://{work / 'my_conf'}]",
            "curriculum=short_poet",
            "pool=local",
            "optimizer.population=4",
            f"hydra.run.dir={own}",
        ],
        cwd=work,
        **clean_env,
    )
    assert "gen   1/1" in done.stdout
