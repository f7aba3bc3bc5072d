"""What the command line says: error lines and exit codes, a run's console lines (also in
RUN_DIR/cli.log), SIGTERM as Ctrl-C, and the way back (the resume command) after a stop."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TextIO

from coevo.errors import Terminated
from coevo.resume_rules import resume_command
from coevo.run import RunInterrupted


def fail(message: str) -> NoReturn:
    """A refused command: the reason on stderr, exit code 2."""
    print(f"coevo-run: error: {message}", file=sys.stderr)
    sys.exit(2)


def logged_to(run_dir: Path, stream: TextIO | None = None) -> Callable[[str], None]:
    """The run's console lines, printed (stdout unless `stream`) and appended to
    RUN_DIR/cli.log (where Hydra's logging writes the warnings): a run started in the
    background keeps its progress."""
    log = run_dir / "cli.log"

    def echo(line: str) -> None:
        # The log first: the line stays there whatever happens to the console.
        with log.open("a", encoding="utf-8") as file:
            file.write(line + "\n")
        print_line(line, stream or sys.stdout)

    return echo


def print_line(line: str, stream: TextIO) -> None:
    """Print a console line; once its reader has gone (`coevo-run ... | head`), the run goes
    on with its lines in cli.log only, rather than dying of a broken pipe mid-run."""
    try:
        print(line, file=stream, flush=True)
    except BrokenPipeError:
        # Point the stream's descriptor at /dev/null: the lines still buffered, and the
        # flush at exit, then go nowhere instead of raising again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)


def asked_for_help(usage: str) -> None:
    """`-h`/`--help`: the usage on stdout, exit 0 (it is what was asked for)."""
    if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help"):
        print(usage)
        sys.exit(0)


def stop_started(run_dir: Path, error: BaseException) -> None:
    """An error that stopped a run after it started (a state that does not pickle, say;
    the runner marks it `stopped_after`): a run's error, not a refused config. The message
    and the way back go to cli.log too, exit code 1."""
    if getattr(error, "stopped_after", None) is not None:
        way_back = resume_command(run_dir)
        stopped(run_dir, f"coevo-run: error: {error}; after fixing it, resume with: {way_back}", 1)


def stopped(run_dir: Path, message: str, code: int) -> NoReturn:
    """A run that started and stopped: the reason on stderr and in its cli.log."""
    logged_to(run_dir, sys.stderr)(message)
    sys.exit(code)


def stop_on_sigterm() -> None:
    """A batch scheduler's cancel or preemption (SIGTERM) stops the run as Ctrl-C does:
    report, stopped.txt and the resume hint, then the exit code of a SIGTERM."""
    signal.signal(signal.SIGTERM, _terminated)


def _terminated(signum: int, frame: Any) -> None:
    raise Terminated


def interrupt_code(terminated: bool) -> int:
    """A SIGTERM's exit code (143) or Ctrl-C's (130)."""
    return 128 + signal.SIGTERM if terminated else 130


def interrupted(error: RunInterrupted) -> NoReturn:
    """Ctrl-C or SIGTERM after the run started: how far it got and the way back."""
    terminated = error.how != "interrupted"
    stopped(
        error.run_dir,
        f"{error.how} after generation {error.generation}; resume with: "
        f"{resume_command(error.run_dir)}",
        interrupt_code(terminated),
    )
