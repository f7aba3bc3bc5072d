"""Running coevo's console scripts as a user does: a subprocess in the repository root, or
their entry functions in this process where a subprocess would add only its imports; and
the repository's experiment and benchmark scripts imported as modules."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent  # the support modules: PYTHONPATH for their envs
BIN = Path(sys.executable).parent
COEVO_RUN = str(BIN / "coevo-run")


def script_module(path: Path, name: str):
    """The script at `path` imported as module `name`, once per test process (in
    sys.modules: its dataclasses look their module up by name, and several experiments
    have a run.py, so each gets a name of its own)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def cli(program: str, *args: object, timeout: float = 300, **kwargs) -> subprocess.CompletedProcess:
    """Run `program` (coevo-run, coevo-report, coevo-eval) to completion, output captured."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **kwargs.pop("env", {})}
    return subprocess.run(
        [str(BIN / program), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=kwargs.pop("cwd", ROOT),
        timeout=timeout,
        env=env,
        **kwargs,
    )


def cli_in_process(program: str, *args: object, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """Call `program`'s entry function (pyproject.toml's [project.scripts]) in this process
    with `args` as its command line, as `cli` runs it: its exit code, stdout and stderr.

    The same code answers as in a subprocess, without ~3 s of imports per call; what only a
    process shows (a signal's exit code, a kill, Ray starting in a fresh process, the
    installed scripts) keeps `cli`. What the call changes in this process is put back: the
    signal handlers it sets, the handlers Hydra adds to the root logger, the working
    directory and sys.argv."""
    import contextlib
    import importlib
    import io
    import logging
    import signal
    import tomllib
    import traceback

    with open(ROOT / "pyproject.toml", "rb") as file:
        target = tomllib.load(file)["project"]["scripts"][program]
    module, _, name = target.partition(":")
    entry = getattr(importlib.import_module(module), name)
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    root = logging.getLogger()
    root_state = (root.handlers[:], root.level)
    argv, here = sys.argv[:], os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    code: object = 0
    try:
        os.chdir(cwd)
        sys.argv = [program, *map(str, args)]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                entry()
            except SystemExit as exit:
                code = exit.code
            except Exception:  # what the interpreter does with an uncaught exception
                traceback.print_exc()
                code = 1
    finally:
        sys.argv = argv
        os.chdir(here)
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        for handler in root.handlers:
            if handler not in root_state[0]:
                handler.close()
        root.handlers[:], root.level = root_state
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message"): printed, exit code 1
        print(code, file=err)
        code = 1
    return subprocess.CompletedProcess(
        [program, *map(str, args)], code, out.getvalue(), err.getvalue()
    )


# One fresh process runs coevo-run's entry function once per case: what each case exits
# with, whether Ray was imported by then (a refusal must come before Ray starts).
_FRESH_LOOP = """
import contextlib, io, json, sys
from coevo import cli
cases, run_dir = json.loads(sys.argv[1]), sys.argv[2]
results = []
for overrides in cases:
    sys.argv = ["coevo-run", *overrides, "hydra.run.dir=" + run_dir]
    err, code = io.StringIO(), None
    with contextlib.redirect_stderr(err):
        try:
            cli.run_main()
        except SystemExit as exit:
            code = exit.code
    results.append([code, err.getvalue(), "ray" in sys.modules])
print(json.dumps(results))
"""


def refusals_in_a_fresh_process(cases: list[list[str]], run_dir: Path) -> list[tuple]:
    """(exit code, stderr, whether Ray was imported) of `coevo-run CASE` for each case, all
    in one new process (one start-up's imports rather than one per case)."""
    import json

    done = subprocess.run(
        [sys.executable, "-c", _FRESH_LOOP, json.dumps(cases), str(run_dir)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return [tuple(result) for result in json.loads(done.stdout.splitlines()[-1])]


# PPO small enough for a test run: two streams of 128 steps, one minibatch, three epochs.
SMALL_PPO = (
    "optimizer=ppo",
    "policy=actor_critic",
    "policy.hidden=[16,16]",
    "optimizer.n_envs=2",
    "optimizer.n_steps=128",
    "optimizer.batch_size=128",
    "optimizer.n_epochs=3",
)

# The summary.csv columns of an applied PPO update (SB3's train/* figures).
PPO_DIAGNOSTICS = (
    "policy_loss",
    "value_loss",
    "entropy",
    "approx_kl",
    "clip_fraction",
    "explained_variance",
)

RUN_TABLES = ("summary.csv", "eligibility.csv", "population.csv")


def run_tables(run_dir: Path, names: tuple[str, ...] = RUN_TABLES) -> dict:
    """A run's tables without the columns that measure time or how work was split."""
    import pandas as pd

    from coevo.pool.stats import is_runtime_column

    tables = {}
    for name in names:
        frame = pd.read_csv(Path(run_dir) / name)
        tables[name] = frame.drop(columns=[c for c in frame if is_runtime_column(c)])
    return tables


def run_and_kill_after_checkpoint(
    args: list[str], run_dir: Path, generation: int = 3, env: dict | None = None
) -> subprocess.Popen:
    """Start `coevo-run ARGS`, SIGKILL it just after checkpoint `generation` is written
    (inside the next generation, which starts at once), and return the dead process."""
    import signal
    import time

    process = subprocess.Popen(
        [COEVO_RUN, *map(str, args), f"hydra.run.dir={run_dir}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )
    checkpoint = Path(run_dir) / "checkpoints" / f"gen_{generation:06d}.pkl"
    deadline = time.monotonic() + 240
    while not checkpoint.exists():
        assert process.poll() is None, process.communicate()[1][-3000:]
        assert time.monotonic() < deadline
        time.sleep(0.02)
    time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    return process


# A small POET run on CartPole, in process: what the report and user-tool tests look at.
SMALL_POET = [
    "pool=local",
    "curriculum.generations=4",
    "curriculum.optimizer_steps=3",
    "curriculum.repro_threshold=100",
    "curriculum.reproduce_every=1",
    "curriculum.max_children=4",
    "curriculum.transfer_every=2",
    "optimizer.population=8",
]


def page_result_in_chromium(run_dir: Path, tmp_path: Path, script: str) -> dict[str, str]:
    """Load a run's report.html in headless Chromium with `script` (JavaScript run at load,
    which sets `data-result="key=value ..."` on the body); returns those fields. Fails on a
    script error; skips where Chromium is not installed."""
    import shutil

    import pytest

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed (make test installs it where apt-get works)")
    page = (run_dir / "report.html").read_text()
    handler = "<script>\nwindow.onerror = (m) => { document.title = 'ERROR ' + m; };\n"
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", f"{handler}{script}\n</script></body>"))
    shutil.copytree(run_dir / "plots", tmp_path / "plots")
    done = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--allow-file-access-from-files",
            "--virtual-time-budget=5000",
            "--dump-dom",
            probe.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    dom = done.stdout
    assert "ERROR" not in dom.split("<title>")[1].split("</title>")[0], dom[:500]
    result = dom.split('data-result="')[1].split('"')[0]
    return dict(item.split("=") for item in result.split())
