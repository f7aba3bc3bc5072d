"""The documentation site builds with `mkdocs build --strict`: a broken link, a missing page or
an API reference to a name that does not exist fails the build, and so this test."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import yaml
from cli_support import cli_in_process

ROOT = Path(__file__).resolve().parents[1]


def _build(project: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=project,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )


def test_the_docs_build_strict_with_every_page_in_the_nav(tmp_path):
    done = _build(ROOT, tmp_path / "site")
    assert done.returncode == 0, done.stderr[-3000:]
    assert 'not included in the "nav"' not in done.stderr
    # the API reference is rendered from the docstrings, not left as a `:::` line
    pool_page = (tmp_path / "site" / "api" / "pool" / "index.html").read_text()
    assert "EvaluationPool" in pool_page and ":::" not in pool_page
    assert "cross_evaluate" in pool_page


def test_a_broken_reference_fails_the_build(tmp_path):
    # The site's own mkdocs.yml (strict, mkdocstrings' settings) on one of its API pages, a
    # reference to a name that does not exist added: the site's other pages (built above)
    # would add only their rendering.
    project = tmp_path / "project"
    (project / "docs" / "api").mkdir(parents=True)
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    config["nav"] = [{"Pool": "api/pool.md"}]
    (project / "mkdocs.yml").write_text(yaml.safe_dump(config))
    (project / "coevo").symlink_to(ROOT / "coevo")
    text = (ROOT / "docs" / "api" / "pool.md").read_text()
    (project / "docs" / "api" / "pool.md").write_text(text + "\n::: coevo.pool.pool.NoSuchClass\n")
    done = _build(project, tmp_path / "site")
    assert done.returncode != 0
    assert "NoSuchClass" in done.stderr
    # ... and the reference is what failed it: no other warning or error.
    others = [
        line
        for line in done.stderr.splitlines()
        if line.startswith(("WARNING", "ERROR"))
        and "NoSuchClass" not in line
        and "Error reading page 'api/pool.md'" not in line
    ]
    assert not others, done.stderr[-3000:]


def _doc_commands() -> list[tuple[str, list[str]]]:
    """The site's self-contained `coevo-run` lines: (page, arguments). Lines naming your own
    package or config directory (mypkg, $PWD, HEAD) need files a reader makes first."""
    found = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        if page.name in ("architecture.md", "benchmarks-history.md"):  # records, not guides
            continue
        for block in re.findall(r"```bash\n(.*?)```", page.read_text(), flags=re.S):
            for line in block.splitlines():
                words = shlex.split(line, comments=True)
                if not words or not words[0].endswith("coevo-run"):
                    continue
                if any(mark in line for mark in ("mypkg", "$PWD", "HEAD", "DATE_TIME")):
                    continue
                found.append((page.name, words[1:]))
    return found


def test_the_docs_coevo_run_lines_compose(tmp_path):
    """Each command line of the guide composes (`--cfg job`: groups, keys and values checked,
    nothing run); a sweep's lists, by their first and last values."""
    commands = _doc_commands()
    assert len(commands) >= 8
    for page, args in commands:
        picks = [0, -1] if args[0] == "-m" else [None]
        for pick in picks:
            one = args
            if pick is not None:
                one = [a.split("=")[0] + "=" + a.split("=")[1].split(",")[pick] for a in args[1:]]
            done = cli_in_process("coevo-run", *one, "--cfg", "job", cwd=tmp_path)
            assert done.returncode == 0, (page, one, done.stderr[-2000:])
