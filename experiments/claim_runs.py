"""What every claim's run.py shares: a run's saved result, the runs as they finish (in this
process, or in spawned ones) and the commit that wrote a table."""

from __future__ import annotations

import json
import multiprocessing
import subprocess
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def cached(path: Path, compute: Callable[[], dict]) -> dict:
    """The result saved at `path`, or `compute()` saved there (runs are deterministic, so a
    stopped study resumes); never a half-written file under the final name."""
    if path.exists():
        return json.loads(path.read_text())
    result = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".part")
    partial.write_text(json.dumps(result))
    partial.replace(path)
    return result


def finished(run: Callable[[Any], Any], work: Iterable[Any], jobs: int) -> Iterator[Any]:
    """`run(job)` for every job, as they finish: in this process with one job, else in
    `jobs` spawned processes (one job at a time each, so a long run never holds others)."""
    if jobs <= 1:
        yield from map(run, work)
        return
    with multiprocessing.get_context("spawn").Pool(jobs) as pool:
        yield from pool.imap_unordered(run, list(work), chunksize=1)


def commit() -> str:
    """The code's commit, with '-dirty' when tracked files differ from it."""

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], capture_output=True, text=True, cwd=HERE)

    head = git("rev-parse", "--short", "HEAD").stdout.strip()
    return head + ("-dirty" if git("diff", "--quiet", "HEAD", "--", ".").returncode else "")
