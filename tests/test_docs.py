"""The documentation site builds with `mkdocs build --strict`: a broken link, a missing page or
an API reference to a name that does not exist fails the build, and so this test."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

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
    project = tmp_path / "project"
    shutil.copytree(ROOT / "docs", project / "docs")
    shutil.copy(ROOT / "mkdocs.yml", project / "mkdocs.yml")
    (project / "coevo").symlink_to(ROOT / "coevo")
    page = project / "docs" / "api" / "pool.md"
    page.write_text(page.read_text() + "\n::: coevo.pool.pool.NoSuchClass\n")
    done = _build(project, tmp_path / "site")
    assert done.returncode != 0
    assert "NoSuchClass" in done.stderr
