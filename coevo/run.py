"""`Run`: one run of a curriculum, a generation at a time, with its tables, checkpoints,
TensorBoard scalars and report in a run directory: what `coevo-run` does, steppable.

    with Run(curriculum, "runs/mine") as run:      # a curriculum built from Python
        run.generations(3)
    run = Run.from_config(config, "runs/cfg")      # what coevo-run does (a RunConfig)
    run = Run.resume("runs/cfg")                   # goes on from the newest checkpoint
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import sys
import time
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from coevo import checkpoint
from coevo.checkpoint import CheckpointError
from coevo.config import RunConfig
from coevo.curricula.base import Curriculum, GenerationFailed, GenerationResult
from coevo.errors import ConfigError, Terminated
from coevo.pool.results import WorkerStartError, error_line
from coevo.report import RunRecorder, ScalarLogger, drawing_once, write_report
from coevo.report.progress import GenerationProgress
from coevo.resume_rules import resume_command
from coevo.run_files import (
    CHECKPOINTS,
    CROSS_SCORES_STEM,
    LOCK_FILE,
    STOPPED,
    TEST_SCORES,
    TEST_SET,
)
from coevo.run_setup import (
    SavedState,
    last_checkpointed,
    preflight,
    read_checkpoint,
    refuse_existing_run,
    run_test_set,
    start_curriculum,
    write_config,
)
from coevo.settings import checked_value, rule_of
from coevo.tasks.test_sets import TestSet, TestSetConfig, measure_detailed, no_test, test_space_of

Echo = Callable[[str], None]


class RunInterrupted(Exception):
    """The run was interrupted (Ctrl-C, or SIGTERM: `how`) after `generation` finished
    generations; the report is written and the run can be resumed from its last
    checkpoint."""

    def __init__(self, run_dir: Path, generation: int, how: str = "interrupted"):
        super().__init__(f"{how} after generation {generation}")
        self.run_dir = run_dir
        self.generation = generation
        self.how = how


@dataclasses.dataclass(frozen=True)
class _Recording:
    """What a run writes besides its tables, as RunConfig's fields of the same names say."""

    test_set: TestSetConfig | None
    logger: str
    checkpoints_kept: int
    report_every_s: float


def _run_setting(name: str, value: Any) -> Any:
    """`value` for RunConfig's field `name`, checked by its rule; None: the field's default
    (RunConfig stays the one source of both)."""
    field = next(f for f in dataclasses.fields(RunConfig) if f.name == name)
    if value is None:
        return field.default
    return checked_value(name, value, typing.get_type_hints(RunConfig)[name], rule_of(field))


class Run:
    """A curriculum's run in `run_dir`: `step()` runs one generation and records it
    (summary.csv, eligibility.csv, population.csv and the curriculum's own tables, a
    checkpoint, TensorBoard scalars with `logger="tensorboard"`, report.html at most every
    `report_every_s`); `generations(n)` runs n of them; `close()` writes the final report
    and lets go of the pool and the run directory's lock (a `with` block closes it too).

    Built here from a curriculum made in Python (its pool is the run's from then on; no
    config.yaml is written, so resume with `Run(curriculum, run_dir, resume=True)` and a
    curriculum built the same way), or by `Run.from_config` / `Run.resume` as `coevo-run`
    does. `test_set` (a TestSetConfig) scores the curriculum's policies on held-out tasks;
    None: no test set. The other settings default to RunConfig's.
    """

    def __init__(
        self,
        curriculum: Curriculum,
        run_dir: str | Path,
        *,
        test_set: TestSetConfig | None = None,
        logger: str | None = None,
        checkpoints_kept: int | None = None,
        report_every_s: float | None = None,
        echo: Echo = print,
        progress: bool | None = None,
        resume: bool = False,
    ):
        if not isinstance(curriculum, Curriculum):
            raise TypeError(
                f"Run needs a Curriculum, got {type(curriculum).__name__}: a RunConfig "
                "runs with Run.from_config(config, run_dir)"
            )
        if test_set is not None and not isinstance(test_set, TestSetConfig):
            raise TypeError(f"test_set: a TestSetConfig or None, got {type(test_set).__name__}")
        recording = _Recording(
            test_set,
            _run_setting("logger", logger),
            _run_setting("checkpoints_kept", checkpoints_kept),
            _run_setting("report_every_s", report_every_s),
        )
        run_dir = Path(run_dir)
        with warnings_to_echo(echo):
            if test_set is not None:
                test_space_of(curriculum.space, test_set.params)  # its bounds' errors first
            if resume:
                total = curriculum.config.generations
                saved = read_checkpoint(run_dir, total, None, echo)
            else:
                refuse_existing_run(run_dir, setting="run_dir")
                saved = None
            run_dir.mkdir(parents=True, exist_ok=True)
            lock = _hold_run_dir(run_dir, "resume" if resume else "run_dir")
            self._open(curriculum, run_dir, recording, echo, progress, lock, saved=saved)

    @classmethod
    def from_config(
        cls,
        config: RunConfig | None,
        run_dir: str | Path,
        *,
        echo: Echo = print,
        resume: bool = False,
        checkpoint_file: Path | None = None,
        progress: bool | None = None,
    ) -> Run:
        """The run `config` describes (mode=coevolve), started in `run_dir` as `coevo-run`
        starts it: config.yaml written, pool started, first checkpoint saved. With `resume`
        it goes on from the run's newest readable checkpoint (or `checkpoint_file`, whose
        later ones are removed); `config` None is the run's own config.yaml, and a config
        given may differ from it only as `resume_rules.RESUME_OVERRIDES` allow. Everything
        is checked before the directory is made or written to."""
        run_dir = Path(run_dir)
        with warnings_to_echo(echo):
            plan = preflight(config, run_dir, resume, checkpoint_file, echo)
            # After the config checks: a refused run leaves no directory and no lock file.
            run_dir.mkdir(parents=True, exist_ok=True)
            lock = _hold_run_dir(run_dir, "resume" if resume else "hydra.run.dir")
            try:
                curriculum = start_curriculum(plan, run_dir, echo)
            except BaseException:
                _let_go(lock)
                raise
            config = plan.config
            recording = _Recording(
                config.test_set, config.logger, config.checkpoints_kept, config.report_every_s
            )
            run = cls.__new__(cls)
            run._open(
                curriculum,
                run_dir,
                recording,
                echo,
                progress,
                lock,
                saved=plan.saved,
                config=config,
                prune_later=checkpoint_file is not None,
            )
            return run

    @classmethod
    def resume(
        cls,
        run_dir: str | Path,
        config: RunConfig | None = None,
        *,
        echo: Echo = print,
        checkpoint_file: Path | None = None,
        progress: bool | None = None,
    ) -> Run:
        """The run in `run_dir` (started from a config), going on from its newest readable
        checkpoint or `checkpoint_file`; `config` None: its own config.yaml (a config given
        changes only what resume may change, e.g. more curriculum.generations)."""
        return cls.from_config(
            config,
            run_dir,
            echo=echo,
            resume=True,
            checkpoint_file=checkpoint_file,
            progress=progress,
        )

    # -- what a user calls -----------------------------------------------------------------
    @property
    def generation(self) -> int:
        """Generations finished (and recorded) so far."""
        return self.curriculum.generation

    @property
    def total(self) -> int:
        """The generations the run is to have (its curriculum's `generations`)."""
        return self.curriculum.config.generations

    @property
    def done(self) -> bool:
        """Whether every planned generation has run."""
        return self.generation >= self.total

    def step(self) -> GenerationResult:
        """Run one generation and record it; a stop (Ctrl-C: RunInterrupted, every episode
        failing: GenerationFailed, an exception) writes the reason to stopped.txt and the
        report, then raises (the run is then stopped: `close()` it)."""
        self._check_steppable(1)
        with warnings_to_echo(self.echo), self._stopping():
            result = self._generation()
            self._record(result)
            self.echo(self._progress_line(result))
            self._show_first_traceback()
            sys.stdout.flush()
        return result

    def generations(self, n: int | None = None) -> list[GenerationResult]:
        """Run `n` more generations (None: until the run's total), recording each. A stop
        between two of them is a stop as in one (Ctrl-C: RunInterrupted)."""
        more = self.total - self.generation if n is None else n
        self._check_steppable(more)
        with self._stopping():
            return [self.step() for _ in range(more)]

    def close(self) -> None:
        """Write the final report (unless a stop wrote it, or the page written after the last
        generation already is it) and let go of the pool, the TensorBoard writer and the run
        directory's lock. Closing twice does nothing."""
        if self._closed:
            return
        self._closed = True
        try:
            if not self._stopped and not self._reported:
                # Ctrl-C while the last page is drawn: a stop after the last generation,
                # whose way back (resume) draws it again.
                with warnings_to_echo(self.echo), self._stopping():
                    self._write_report()
        finally:
            self._release()
        if not self._stopped:
            self.echo(f"run directory: {self.run_dir}")

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "stopped" if self._stopped else "open"
        return (
            f"Run({str(self.run_dir)!r}, generation {self.generation} of {self.total}, "
            f"curriculum {type(self.curriculum).__name__} "
            f"({self.curriculum.config.name!r}), {state})"
        )

    # -- opening ---------------------------------------------------------------------------
    def _open(
        self,
        curriculum: Curriculum,
        run_dir: Path,
        recording: _Recording,
        echo: Echo,
        progress: bool | None,
        lock: IO[str] | None,
        *,
        saved: SavedState | None,
        config: RunConfig | None = None,
        prune_later: bool = False,
    ) -> None:
        """The run's recorder, first checkpoint (or the saved one restored) and test set;
        on failure the pool and lock are let go."""
        self.curriculum, self.run_dir, self.echo, self.config = curriculum, run_dir, echo, config
        self._recording, self._lock = recording, lock
        self._closed = self._stopped = False
        self._logger: ScalarLogger | None = None
        self._test_set: TestSet | None = None
        self._traceback_shown = self._first_failure_on_test = False
        self._reported = False  # whether report.html shows the last recorded generation
        # A task's picture file is named by its content: drawn once in this process.
        self._render_task = drawing_once(curriculum.space.metadata.get("render_png"))
        try:
            self._logger = ScalarLogger(run_dir, recording.logger)
            self._recorder = RunRecorder(run_dir, tables=(CROSS_SCORES_STEM, TEST_SCORES))
            if saved is not None:
                self._restore(saved, prune_later)
            else:
                self._save_checkpoint()
            self._report_built = time.monotonic()
            (run_dir / STOPPED).unlink(missing_ok=True)  # going on: an earlier stop is history
            # From the first checkpoint on, an interrupt is a RunInterrupted (resumable): the
            # test set's episodes, too, come after it.
            with self._stopping():
                self._test_set = self._make_test_set()
            self._progress = GenerationProgress(progress)
            curriculum.pool.progress = self._progress
        except BaseException:
            self._closed = True
            self._release()
            raise

    def _restore(self, saved: SavedState, prune_later: bool) -> None:
        """The curriculum and the recorder as the checkpoint left them."""
        curriculum = self.curriculum
        try:
            curriculum.load_state_dict(saved.state["curriculum"])
        except Exception as error:  # noqa: BLE001 - a user curriculum may raise anything
            raise CheckpointError(
                f"{saved.source}: its state does not load into curriculum "
                f"'{curriculum.config.name}' ({type(error).__name__}: {error}); the run "
                "directory is unchanged"
            ) from error
        # The run owns the count (a plug-in's state_dict may leave it out): a resumed run
        # goes on numbering from the checkpoint's generation.
        curriculum.generation = saved.generation
        self._recorder.load_state_dict(saved.state["report"], curriculum.population_frame())
        curriculum.resume_failure_count(self._recorder.summary_rows)
        checkpoints = self.run_dir / CHECKPOINTS
        if prune_later:
            newest = checkpoint.checkpoint_path(checkpoints, saved.generation).name
            for later in checkpoint.list_checkpoints(checkpoints):
                if later.name > newest:
                    later.unlink()  # another future: resume must not fall back on it
        if self.config is not None:
            # The run's own config plus the overrides that resume allows, once it goes on.
            write_config(self.run_dir, self.config)
        self.echo(f"resuming {self.run_dir} after generation {saved.generation}")
        if saved.generation >= self.total:
            how = (
                f"coevo-run resume={self.run_dir} curriculum.generations=N (N > {self.total})"
                if self.config is not None
                else f"a curriculum of more than {self.total} generations"
            )
            self.echo(
                f"nothing to run: the run's {self.total} generations are done; extend it with {how}"
            )

    def _make_test_set(self) -> TestSet | None:
        """The held-out test set (its tasks written to test_set.csv), or None."""
        options = self._recording.test_set
        if options is None:
            return None
        space = self.curriculum.space
        test_set = run_test_set(options, self.total, space, self.echo)
        if test_set is not None:
            rows = test_set.rows(space, options.episodes)
            pd.DataFrame(rows).to_csv(self.run_dir / TEST_SET, index=False)
        return test_set

    # -- one generation --------------------------------------------------------------------
    def _check_steppable(self, generations: int) -> None:
        if self._closed:
            raise RuntimeError(f"{self!r} is closed: resume it to go on")
        if self._stopped:
            raise RuntimeError(f"{self!r} has stopped (stopped.txt says why): close it")
        if generations < 0 or self.generation + generations > self.total:
            raise ConfigError(
                "curriculum.generations",
                f"{generations} more generations would pass the run's {self.total} "
                f"(done: {self.generation}); a longer run needs more curriculum.generations",
            )

    def _generation(self) -> GenerationResult:
        """The curriculum's step, then the test set's scores on a test generation (after
        the generation's own figures: test episodes never count as training)."""
        self._progress.start(self.generation + 1, self.total)
        try:
            result = self.curriculum.step()
        finally:
            self._progress.finish()
        if self._test_set is not None:  # no test set: no test columns
            self._measure_test(result)
        return result

    def _measure_test(self, result: GenerationResult) -> None:
        options = self._recording.test_set
        assert options is not None and self._test_set is not None
        if not options.due(self.generation):
            result.summary.update(no_test())
            return
        pool = self.curriculum.pool
        untested = not pool.first_error_text
        columns, rows = measure_detailed(self.curriculum, self._test_set, options)
        self._first_failure_on_test = untested and bool(pool.first_error_text)
        result.summary.update(columns)
        result.tables[TEST_SCORES] = [{"generation": self.generation, **row} for row in rows]

    def _record(self, result: GenerationResult) -> None:
        """The generation's rows, scalars and checkpoint; the report when it is due."""
        self._recorder.record(result, self.curriculum.population_frame())
        assert self._logger is not None
        self._logger.log(result.summary)
        self._save_checkpoint()
        self._reported = False
        if time.monotonic() - self._report_built >= self._recording.report_every_s:
            # The page is for people: rebuilding it every generation would cost most of a
            # small run's time; `coevo-report` rebuilds it on demand.
            self._write_report()
            self._report_built = time.monotonic()

    def _save_checkpoint(self) -> None:
        curriculum = self.curriculum
        state = {
            "curriculum": curriculum.state_dict(),
            "report": self._recorder.state_dict(),
            # Every curriculum's policies under one key: coevo-eval reads them whatever the
            # curriculum's own state looks like.
            "policies": dict(curriculum.policies_for_testing().policies),
        }
        checkpoint.save(
            self.run_dir / CHECKPOINTS,
            curriculum.generation,
            state,
            self._recording.checkpoints_kept,
        )

    def _write_report(self) -> None:
        space = self.curriculum.space
        # A run from a config: the page rebuilds the space from config.yaml, as coevo-report
        # does; a run from Python has no config.yaml to rebuild it from.
        write_report(self.run_dir, self._render_task, None if self.config else space)
        self._reported = True

    # -- what the console says -------------------------------------------------------------
    def _progress_line(self, result: GenerationResult) -> str:
        line = self.curriculum.progress_line(result, self.total)
        mastered = result.summary.get("test_mastered")
        if mastered is not None and np.isfinite(mastered):  # a test generation
            assert self._test_set is not None
            mean = result.summary["test_mean_return"]
            line += f" | test {mastered:.0%} of {len(self._test_set.tasks)} mastered, " + (
                f"mean {mean:.1f}" if np.isfinite(mean) else "every episode failed"
            )
        kept = [d for d in result.decisions if d.outcome == "step_failed"]
        if kept:  # weights kept: a policy whose every step is not applied is frozen
            steps = "step" if len(kept) == 1 else "steps"
            line += (
                f" | {len(kept)} optimizer {steps} not applied, weights kept (first: "
                f"{error_line(kept[0].reason)})"
            )
        failed = int(result.summary.get("failed_episodes", 0) or 0)
        first = next((d.error for d in result.decisions if d.error), "")
        if failed:  # the errors are in eligibility.csv; say they happened, and the first
            line += f" | {failed} episodes failed"
            if first:
                line += f" (first: {error_line(first)})"
        return line

    def _show_first_traceback(self) -> None:
        """Once per run: where the first failure happened (the env's file and line); every
        error's last line is in eligibility.csv's `error` column, a test episode's in
        test_scores.csv's."""
        first_error = self.curriculum.pool.first_error_text
        if not first_error or self._traceback_shown:
            return
        where = (
            "the first failed episode's error, on a test task (every test task's: "
            "test_scores.csv's error column)"
            if self._first_failure_on_test
            else "the first failed episode's error (every error: eligibility.csv's error "
            "column; a test task's: test_scores.csv's)"
        )
        self.echo(f"{where}:\n{first_error.rstrip()}")
        self._traceback_shown = True

    # -- stopping and closing --------------------------------------------------------------
    @property
    def _resume_hint(self) -> str:
        if self.config is not None:
            return resume_command(self.run_dir)
        return f"Run(curriculum, {str(self.run_dir)!r}, resume=True)"

    @contextlib.contextmanager
    def _stopping(self) -> Iterator[None]:
        """A stop says why in stopped.txt (shown first by report.html) and writes the report
        before the error goes on: Ctrl-C or SIGTERM as RunInterrupted (resumable). Nested,
        the innermost says it: a stop already said goes on as it is."""
        try:
            yield
        except BaseException as error:
            if not self._stopped:
                self._say_why(error)  # a Ctrl-C raises RunInterrupted here
            raise

    def _say_why(self, error: BaseException) -> None:
        interrupt = _interrupt_behind(error)
        if interrupt is not None:
            done = last_checkpointed(self.run_dir / CHECKPOINTS)
            how = "terminated (SIGTERM)" if isinstance(interrupt, Terminated) else "interrupted"
            # The page may fail to draw: a Ctrl-C mid-import leaves a library half imported.
            reason = f"{how} after generation {done}; resume with: {self._resume_hint}\n"
            self._stop(reason, report_may_fail=True)
            raise RunInterrupted(self.run_dir, done, how) from None
        if isinstance(error, GenerationFailed):
            self._stop(f"stopped: {error}\n")
        elif isinstance(error, Exception):
            self._stop_by_error(error)

    def _stop_by_error(self, error: Exception) -> None:
        """A bug (often a plug-in's): the run stops, but says so where its progress is, with
        the report of what it did and the way back once the bug is fixed."""
        done = last_checkpointed(self.run_dir / CHECKPOINTS)
        hint = f"after fixing it, resume with: {self._resume_hint}"
        what = f"{type(error).__name__}: {error}"
        if not isinstance(error, ConfigError | CheckpointError | WorkerStartError):
            # (Those are coevo's own errors, whose message is the whole story: the caller
            # reports them, coevo-run as an error line.)
            self.echo(f"error: {what} (stopped after generation {done}); {hint}")
        self._stop(f"stopped by an error after generation {done}: {what}; {hint}\n", True)
        error.add_note(f"coevo: stopped after generation {done}; {hint}")
        error.stopped_after = done  # type: ignore[attr-defined]  # the run had started

    def _stop(self, reason: str, report_may_fail: bool = False) -> None:
        self._stopped = True
        (self.run_dir / STOPPED).write_text(reason)
        if report_may_fail:
            with contextlib.suppress(Exception):  # the error may be the report's own
                self._write_report()
        else:
            self._write_report()
        if self._logger is not None:
            self._logger.close()
            self._logger = None

    def _release(self) -> None:
        """Let go of the pool, the TensorBoard writer and the lock, each whatever the
        others raise."""
        try:
            self.curriculum.pool.progress = None
            self.curriculum.pool.close()
        finally:
            try:
                if self._logger is not None:
                    self._logger.close()
                    self._logger = None
            finally:
                _let_go(self._lock)
                self._lock = None


def _interrupt_behind(error: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C (or SIGTERM) `error` is, or stands for: a library may turn one into an
    error of its own, chained to it (a pybind11 module's import: "ImportError:
    initialization failed"), or fail while it unwinds; None for any other error."""
    seen: set[int] = set()
    link: BaseException | None = error
    while link is not None and id(link) not in seen:
        if isinstance(link, KeyboardInterrupt):
            return link
        if not isinstance(link, Exception):  # SystemExit, GeneratorExit: not a stop's
            return None
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    return None


def _hold_run_dir(run_dir: Path, setting: str) -> IO[str] | None:
    """The run directory's lock file, locked: refuses a run directory another run is going
    on in (a second `resume=` of a run still going would append the same generations to the
    same tables). Held until `_let_go`, or until the process ends however it ends (the OS
    drops the lock then). None on a file system without locks."""
    import fcntl
    import os

    handle = open(run_dir / LOCK_FILE, "a+")  # noqa: SIM115 - held for the run's life
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:  # held: another run goes on there
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        way_out = (
            "start this run in a directory of its own (hydra.run.dir=...): two runs started "
            "in the same second get the same default directory"
            if setting == "hydra.run.dir"
            else "wait for it to end or stop it first"
        )
        raise ConfigError(
            setting, f"{run_dir} is in use: a coevo-run ({holder}) is running there; {way_out}"
        ) from None
    except OSError:  # a file system without locks (some NFS, FUSE mounts): run unguarded
        handle.close()
        return None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}")
    handle.flush()
    return handle


def _let_go(lock: IO[str] | None) -> None:
    if lock is not None:
        lock.close()  # closing the file drops its flock


@contextlib.contextmanager
def warnings_to_echo(echo: Echo) -> Iterator[None]:
    """coevo's logging warnings go to `echo` meanwhile (and not a second time to stderr);
    inside another such block with the same `echo`, that one's handler says them once."""
    coevo_log = logging.getLogger("coevo")
    if any(isinstance(h, _EchoWarnings) and h.echo == echo for h in coevo_log.handlers):
        yield
        return
    forward = _EchoWarnings(echo)
    propagated, coevo_log.propagate = coevo_log.propagate, False  # echo shows them: not twice
    coevo_log.addHandler(forward)
    try:
        yield
    finally:
        coevo_log.removeHandler(forward)
        coevo_log.propagate = propagated


class _EchoWarnings(logging.Handler):
    """coevo's warnings during a run (e.g. PLR's score fallback, a PPO rollout without an
    ended episode) go where its progress lines go: a caller that captures `echo` gets them,
    and `coevo-run` writes them to the console and RUN_DIR/cli.log, resumed runs too."""

    def __init__(self, echo: Echo):
        super().__init__(logging.WARNING)
        self.echo = echo

    def emit(self, record: logging.LogRecord) -> None:
        self.echo(f"warning: {record.getMessage()}")
