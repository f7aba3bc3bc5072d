"""The wheel as a user installs it: built from this checkout, installed into a fresh virtual
environment (no system site-packages), then coevo-run, coevo-report and coevo-eval from a
directory outside the repository, a preset with a shipped file (the eligible-parents
example) and a config group of the user's own through Hydra's search path.

The wheel's dependencies are not unpacked again (torch alone is ~700 MB, most of a minute):
the fresh environment sees, through one .pth file, exactly the distributions its
Requires-Dist names, transitively, as this environment has them installed, linked into one
directory; nothing else of this environment, and not the checkout. `pip check` then says
the declared requirements are met, and an import of anything undeclared fails as it would
after `pip install`."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pandas as pd
import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow  # ~15 s: a wheel build and four commands


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


def _requirements(requires: list[str] | None) -> list[str]:
    """The names of the requirements that apply here, no extras asked for."""
    names = []
    for text in requires or []:
        req = Requirement(text)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            names.append(req.name)
    return names


def _link_dependencies(wheel: Path, tmp_path: Path) -> Path:
    """A directory of links to every top-level file of the wheel's dependency closure, as
    installed in this environment (a fresh venv adds it to its path)."""
    with zipfile.ZipFile(wheel) as archive:
        meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        requires = [
            line.split(":", 1)[1].strip()
            for line in archive.read(meta).decode().splitlines()
            if line.startswith("Requires-Dist:")
        ]
    deps = tmp_path / "dependencies"
    deps.mkdir()
    todo, seen = _requirements(requires), set()
    while todo:
        dist = metadata.distribution(todo.pop())
        name = dist.metadata["Name"].lower()
        if name in seen:
            continue
        seen.add(name)
        todo += _requirements(dist.requires)
        for top in {f.parts[0] for f in dist.files or [] if f.parts[0] != ".."}:
            source, link = Path(str(dist.locate_file(top))), deps / top
            if source.exists() and not link.exists():
                link.symlink_to(source)
    assert "torch" in seen and "ray" in seen, sorted(seen)
    return deps


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
    # No pip or setuptools of the venv's own: pip runs from here (`--python`), and the
    # venv's old setuptools would shadow the one torch requires.
    _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=tmp_path)
    bin_dir = venv / "bin"
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "coevo-dependencies.pth").write_text(f"{_link_dependencies(wheel, tmp_path)}\n")
    pip = [sys.executable, "-m", "pip", "--python", bin_dir / "python"]
    _run([*pip, "install", "-q", "--no-deps", wheel], cwd=tmp_path, PYTHONPATH="")
    _run([*pip, "check"], cwd=tmp_path, PYTHONPATH="")
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

    # The user's own config directory on Hydra's search path: a curriculum preset of theirs.
    mine = work / "my_conf" / "curriculum"
    mine.mkdir(parents=True)
    (mine / "short_poet.yaml").write_text("name: poet\ngenerations: 2\nmax_children: 2\n")
    run = work / "run"
    done = _run(
        [
            bin_dir / "coevo-run",
            f"hydra.searchpath=[file://{work / 'my_conf'}]",
            "curriculum=short_poet",
            "pool=local",
            "optimizer.population=4",
            f"hydra.run.dir={run}",
        ],
        cwd=work,
        **clean_env,
    )
    assert "gen   2/2" in done.stdout  # the preset's generations
    assert pd.read_csv(run / "summary.csv")["generation"].tolist() == [1, 2]
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
    # coevo-report rebuilds that run's page (one figure: the installed command is what is
    # checked here, the page's figures are tests/report's).
    report = _run([bin_dir / "coevo-report", eligible], cwd=work, **clean_env)
    assert report.stdout.strip().endswith("report.html")
