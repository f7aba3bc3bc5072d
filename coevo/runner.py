"""Run an experiment from a validated `RunConfig`: what `coevo-run` does, as a library call."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd
import yaml

from coevo import checkpoint, curricula, optimizers, tasks
from coevo.checkpoint import CheckpointError
from coevo.config import RunConfig, parse_config
from coevo.curricula.base import Curriculum, GenerationFailed
from coevo.curricula.level_sampling import LevelSamplingCurriculum
from coevo.eligible import eligibility_threshold, judge_groups, load_pairs
from coevo.errors import ConfigError, Terminated, yaml_error_text
from coevo.policies import Policy, make_policy
from coevo.pool import Backend, EvaluationPool
from coevo.pool.results import WorkerStartError, error_line
from coevo.report import RunRecorder, ScalarLogger, write_report
from coevo.report.progress import GenerationProgress
from coevo.report.tables import ELIGIBILITY_COLUMNS
from coevo.resume_rules import check_resume_config
from coevo.run_files import (
    CHECKPOINTS,
    CONFIG_FILE,
    CROSS_SCORES_STEM,
    ELIGIBILITY,
    LOCK_FILE,
    RETURNS,
    RUN_MARKERS,
    STOPPED,
    SUMMARY,
    TEST_SCORES,
    TEST_SET,
)
from coevo.start_policy import load_start_theta
from coevo.tasks.masked import PARTIALLY_OBSERVED
from coevo.tasks.task import TaskSpace
from coevo.tasks.test_sets import (
    TestSet,
    bounds_text,
    make_test_set,
    measure_detailed,
    no_test,
    test_space_of,
)


def prepare(config: RunConfig) -> tuple[TaskSpace, Policy]:
    """Build and check the task space and policy spec; raises ConfigError, starts nothing."""
    space = tasks.space_from_config(config.task)
    env = space.make_env()
    try:
        options = dataclasses.asdict(config.policy)
        policy = make_policy(options.pop("name"), env.observation_space, env.action_space, options)
    finally:
        env.close()
    return space, policy


def task_renderer(run_dir: Path):
    """The run's task-picture function (task dict, PNG path) -> path, if its space has one."""
    try:  # the space alone: building the policy too would repeat its warnings
        space = tasks.space_from_config(load_run_config(run_dir).task)
    except (FileNotFoundError, ConfigError):
        return None
    return space.metadata.get("render_png")


def describe_pool(pool: EvaluationPool) -> str:
    """One line on where the workers run: backend, count, and nodes on a Ray cluster."""
    if pool.backend is Backend.LOCAL:
        return f"pool: {pool.num_workers} in-process worker(s), {pool.envs_per_worker} envs each"
    if pool.serving == "ray":
        where = f"on {len(set(pool.worker_nodes()))} node(s)"
    else:  # coevo/pool/handover.py: the first calls run here while Ray starts
        where = "starting (calls run in this process until they answer)"
    line = f"pool: {pool.num_workers} Ray worker(s) {where}, {pool.envs_per_worker} envs each"
    if pool.limits.episode_timeout_s is not None:
        line += f", env calls cut at {pool.limits.episode_timeout_s:g} s"
    if pool.limits.worker_memory_mb is not None:
        line += f", workers recycled above {pool.limits.worker_memory_mb:g} MB"
    return line


def config_to_dict(config: RunConfig) -> dict:
    return json.loads(json.dumps(dataclasses.asdict(config)))


def load_run_config(run_dir: Path) -> RunConfig:
    """The checked config a run directory's `config.yaml` records.

    Raises:
        FileNotFoundError: when `run_dir` holds no `config.yaml`.
        ConfigError: when the file does not hold a valid config.
    """
    path = Path(run_dir) / CONFIG_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: is {run_dir} a coevo run directory?")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        raise ConfigError(str(path), f"invalid YAML at {yaml_error_text(error)}") from None
    if not isinstance(raw, dict) or not raw:
        # An empty file would read as every default: another run than the one recorded.
        raise ConfigError(str(path), "empty or not a mapping: the run's settings are lost")
    return parse_config(raw)


# Open lock files of the run directories this process is running in: held until `run`
# returns, or until the process ends however it ends (the OS drops the lock then).
_HELD: dict[Path, IO[str]] = {}


def _hold_run_dir(run_dir: Path, setting: str) -> None:
    """Refuse a run directory another process is running in (a second `resume=` of a run
    still going would append the same generations to the same tables)."""
    import fcntl
    import os

    key = run_dir.resolve()
    if key in _HELD:
        return
    handle = open(run_dir / LOCK_FILE, "a+")  # noqa: SIM115 - held for the process's life
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:  # held: another process runs there
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
        return
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}")
    handle.flush()
    _HELD[key] = handle


def refuse_existing_run(run_dir: Path, setting: str = "hydra.run.dir") -> None:
    """A new run starts in a directory of its own: one that already holds a run would get
    both runs' rows in its tables and checkpoints of both (ConfigError naming the way out)."""
    found = [name for name in RUN_MARKERS if (run_dir / name).exists()]
    if CHECKPOINTS in found and not any((run_dir / CHECKPOINTS).glob("gen_*.pkl")):
        found.remove(CHECKPOINTS)  # a folder of that name with no checkpoint in it
    if found:
        way_out = (
            f"continue it with `coevo-run resume={run_dir}` (from Python: runner.run(None, "
            "run_dir, resume=True)), or start this one in another directory"
            if (run_dir / CONFIG_FILE).is_file()
            else "start this one in another directory"
        )
        held = ", ".join(found)
        raise ConfigError(setting, f"{run_dir} already holds a run ({held}); {way_out}")


def _pool(config: RunConfig, space: TaskSpace, policy: Policy) -> EvaluationPool:
    return EvaluationPool(
        space,
        policy,
        backend=config.pool.backend,
        num_workers=config.pool.num_workers,
        envs_per_worker=config.pool.envs_per_worker,
        address=config.pool.address,
        episode_timeout_s=config.pool.episode_timeout_s,
        worker_memory_mb=config.pool.worker_memory_mb,
    )


def run_eligible(
    config: RunConfig, run_dir: Path, echo: Callable[[str], None] = print
) -> pd.DataFrame:
    """mode=eligible_parents: evaluate the file's pairs on the pool and report who passes."""
    with _warnings_to(echo):
        return _run_eligible(config, Path(run_dir), echo)


def _run_eligible(config: RunConfig, run_dir: Path, echo: Callable[[str], None]) -> pd.DataFrame:
    refuse_existing_run(run_dir)
    space, policy = prepare(config)
    options = config.eligible
    threshold = eligibility_threshold(options.threshold, space)
    pairs = load_pairs(Path(options.pairs_file), space, policy)
    run_dir.mkdir(parents=True, exist_ok=True)  # after the checks: a refused run leaves none
    _write_config(run_dir, config)
    started = time.perf_counter()
    # One pool per policy architecture in the file (most files have one).
    decisions, returns, stats = judge_groups(
        lambda group_policy: _pool(config, space, group_policy),
        policy,
        pairs,
        options.episodes,
        threshold,
        config.seed,
    )
    frame = pd.DataFrame([d.as_row() for d in decisions], columns=ELIGIBILITY_COLUMNS)
    frame.to_csv(run_dir / ELIGIBILITY, index=False)
    per_episode = pd.DataFrame(returns, columns=[f"episode_{k}" for k in range(returns.shape[1])])
    per_episode.insert(0, "name", [p.name for p in pairs])
    per_episode.insert(1, "policy", [p.source for p in pairs])
    per_episode.to_csv(run_dir / RETURNS, index=False)
    eligible = int((frame["outcome"] == "eligible").sum())
    pd.DataFrame(
        [
            {
                "generation": 0,
                "pairs": len(pairs),  # evaluated once: nothing is active or archived
                "eligible": eligible,
                "best_score": float(np.nanmax(frame["score"])),
                "median_score": float(np.nanmedian(frame["score"])),
                "episodes": stats["episodes"],
                "env_steps": stats["env_steps"],
                "steps_per_s": stats["steps_per_s"],
                "wall_s": time.perf_counter() - started,
            }
        ]
    ).to_csv(run_dir / SUMMARY, index=False)
    write_report(run_dir, space.metadata.get("render_png"))
    for decision in decisions:
        echo(f"{decision.outcome:>10}  {decision.reason}")
    echo(
        f"{eligible} of {len(pairs)} pairs eligible to reproduce (threshold "
        f"{threshold:g}, {options.episodes} episodes each)"
    )
    echo(f"run directory: {run_dir}")
    return frame


def build(
    config: RunConfig,
    space: TaskSpace,
    pool: EvaluationPool,
    initial_theta: np.ndarray | None = None,
) -> Curriculum:
    """The run's curriculum with its optimizer, as the config names them."""
    optimizer = optimizers.build(config.optimizer, pool.policy.num_params)
    optimizer.use_policy(pool.policy)
    return curricula.build(
        config.curriculum, space, pool, optimizer, seed=config.seed, initial_theta=initial_theta
    )


def scale_warnings(config: RunConfig, space: TaskSpace) -> list[str]:
    """Score thresholds of the curriculum above what counts as solved on this task space:
    POET's defaults are on CartPole's scale (returns up to 500), and on a space whose
    returns stay below them (Pendulum's are <= 0) no pair would ever reproduce."""
    solved = space.solved_score
    curriculum = config.curriculum
    if solved is None:
        if getattr(curriculum, "repro_threshold", None) is None:
            return []
        # POET's thresholds keep their CartPole-scale defaults unless set: on another
        # env's returns pairs may never reproduce, and ANNECS has nothing to count with.
        annecs = (
            "; ANNECS counts nothing without curriculum.solved_threshold"
            if getattr(curriculum, "solved_threshold", 0) is None
            else ""
        )
        limits = ", ".join(
            f"{name} {getattr(curriculum, name):g}"
            for name in ("repro_threshold", "mc_lower", "mc_upper")
            if getattr(curriculum, name, None) is not None
        )
        return [
            f"warning: task space '{space.name}' declares no solved_score, so nothing checks "
            f"the curriculum's score thresholds ({limits}; CartPole's scale by default) "
            f"against its returns: set them on its scale{annecs}"
        ]
    above = [
        f"curriculum.{name} {value:g}"
        for name in ("repro_threshold", "mc_lower")
        if (value := getattr(config.curriculum, name, None)) is not None and value > solved
    ]
    if not above:
        return []
    return [
        f"warning: {' and '.join(above)} above the solved score of task space "
        f"'{space.name}' ({solved:g}): pairs may never reproduce or pass the minimal "
        f"criterion; set curriculum.repro_threshold, mc_lower and mc_upper on its scale"
    ]


def episode_cut_warnings(
    config: RunConfig, space: TaskSpace, curriculum_class: type, optimizer_class: type
) -> list[str]:
    """PPO (or a subclass) whose streams are shorter than an episode, under a single-policy
    curriculum that draws new tasks at each update: every episode is cut at n_steps, so
    late-episode states are never trained on. Said at the start (the rollout warning comes
    only once no episode ends)."""
    n_steps = getattr(config.optimizer, "n_steps", None)
    varies = any(p.low != p.high for p in space.params)
    if (
        n_steps is None
        or not issubclass(curriculum_class, LevelSamplingCurriculum)
        or not varies
        or n_steps >= space.max_episode_steps
        or not optimizers.is_ppo(optimizer_class)  # streams of n_steps
    ):
        return []
    return [
        f"warning: optimizer.n_steps={n_steps} is shorter than an episode of task space "
        f"'{space.name}' (up to {space.max_episode_steps} steps) and "
        f"curriculum={config.curriculum.name} draws new tasks at each update, so episodes "
        f"longer than {n_steps} steps are cut there: set optimizer.n_steps to at least "
        f"{space.max_episode_steps}"
    ]


def memory_warnings(config: RunConfig, space: TaskSpace, policy: Policy) -> list[str]:
    """A space whose observations hide part of its state (`partially_observed` metadata,
    e.g. cartpole_pomdp) with a policy without memory: it acts on what it sees only."""
    if not space.metadata.get(PARTIALLY_OBSERVED) or policy.state_size > 0:
        return []
    return [
        f"warning: task space '{space.name}' hides part of its state from the observations, "
        f"and policy={config.policy.name} keeps no memory between steps: it acts on what "
        "it sees only; policy=gru or policy=lstm carry a state through the episode"
    ]


def minibatch_warnings(
    config: RunConfig, curriculum_class: type, optimizer_class: type
) -> list[str]:
    """PPO's batch_size against its rollout, as SB3's PPO warns: one that does not divide
    the rollout leaves a truncated last minibatch each epoch; one larger than it makes each
    epoch a single minibatch of the whole rollout."""
    n_steps = getattr(config.optimizer, "n_steps", None)
    batch = getattr(config.optimizer, "batch_size", None)
    if n_steps is None or batch is None or not optimizers.is_ppo(optimizer_class):
        return []
    # POET asks for one task per pair, a single-policy curriculum for tasks_per_step; a
    # plug-in of another kind may ask for any number: its rollout size is not known here.
    if issubclass(curriculum_class, LevelSamplingCurriculum):
        tasks = getattr(config.curriculum, "tasks_per_step", 1)
    elif issubclass(curriculum_class, curricula.get("poet")):
        tasks = 1
    else:
        return []
    streams = max(config.optimizer.n_envs, tasks)  # PPO.ask: every task gets a stream
    size = streams * n_steps
    rollout = f"a rollout of {streams} streams x optimizer.n_steps={n_steps} = {size} steps"
    if batch > size:
        return [
            f"warning: optimizer.batch_size={batch} is larger than {rollout}: each epoch is "
            f"one minibatch of {size}"
        ]
    if size % batch:
        return [
            f"warning: optimizer.batch_size={batch} does not divide {rollout}: each epoch "
            f"ends with a truncated minibatch of {size % batch} after {size // batch} full "
            "ones (SB3 warns the same); a factor of the rollout avoids it"
        ]
    return []


def _last_checkpointed(checkpoints: Path) -> int:
    """The generation of the newest checkpoint in `checkpoints` (0: none)."""
    saved = checkpoint.list_checkpoints(checkpoints)
    return checkpoint.generation_of(saved[-1]) if saved else 0


def _test_set(config: RunConfig, space: TaskSpace, echo: Callable[[str], None]) -> TestSet | None:
    """The run's held-out test set, or None (with a note) when off or without a threshold."""
    options = config.test_set
    if options.every == 0:
        return None
    if options.threshold is None and space.solved_score is None:
        echo(
            f"no test set: task space '{space.name}' declares no solved_score; "
            "set test_set.threshold to measure test_mastered"
        )
        return None
    if options.every > config.curriculum.generations:
        echo(
            f"test set: measured every {options.every} generations (test_set.every), so not "
            f"in this run of {config.curriculum.generations}: test_* columns stay empty"
        )
    test_set = make_test_set(space, options.size, options.seed, options.threshold, options.params)
    within = (
        f"test_set.params' bounds ({bounds_text(space, options.params)})"
        if options.params
        else f"task space '{space.name}'"
    )
    if len(test_set.tasks) < options.size:
        # Every task there: without bounds of its own, the very tasks the curriculum trains on.
        held_out = (
            ""
            if options.params
            else ", the tasks the curriculum trains on: to hold some out, narrow task.params "
            "and give test_set.params the others"
        )
        echo(
            f"test set: the {len(test_set.tasks)} distinct tasks of {within} "
            f"(test_set.size {options.size} asks for more than it has){held_out}"
        )
    return test_set


def _write_config(run_dir: Path, config: RunConfig) -> None:
    (run_dir / CONFIG_FILE).write_text(yaml.safe_dump(config_to_dict(config), sort_keys=False))


def _saved_state(
    config: RunConfig,
    run_dir: Path,
    checkpoint_file: Path | None,
    echo: Callable[[str], None],
) -> tuple[int, dict, Path]:
    """(generation, state, file) a resume goes on from, once `config` is checked against
    the run's recorded one and its generation count against the checkpoint's."""
    recorded = run_dir / CONFIG_FILE
    if recorded.is_file():
        check_resume_config(
            config_to_dict(load_run_config(run_dir)), config_to_dict(config), run_dir
        )
    checkpoints = run_dir / CHECKPOINTS
    if checkpoint_file is not None:
        state = checkpoint.load(checkpoint_file)
        generation, source = checkpoint.generation_of(checkpoint_file), Path(checkpoint_file)
    elif not checkpoint.list_checkpoints(checkpoints) and recorded.is_file():
        raise ConfigError(
            "resume",
            f"{run_dir} holds no checkpoint: the run stopped before its start was saved, so "
            "there is nothing to continue; start it again in this directory (runner.run("
            "config, run_dir), or coevo-run with hydra.run.dir)",
        )
    else:
        generation, state = checkpoint.load_latest(checkpoints, on_skip=echo)
        source = checkpoint.checkpoint_path(checkpoints, generation)
    wanted = config.curriculum.generations
    if wanted < generation:  # it would run nothing, and config.yaml would contradict the tables
        raise ConfigError(
            "curriculum.generations",
            f"{wanted} is fewer than the {generation} generations the checkpoint holds; "
            f"allowed: {generation} or more (resume goes on from generation {generation})",
        )
    return generation, state, source


class RunInterrupted(Exception):
    """The run was interrupted (Ctrl-C, or SIGTERM: `how`) after `generation` finished
    generations; the report is written and the run can be resumed from its last
    checkpoint."""

    def __init__(self, run_dir: Path, generation: int, how: str = "interrupted"):
        super().__init__(f"{how} after generation {generation}")
        self.run_dir = run_dir
        self.generation = generation
        self.how = how


def run(
    config: RunConfig | None,
    run_dir: Path,
    echo: Callable[[str], None] = print,
    resume: bool = False,
    checkpoint_file: Path | None = None,
) -> Curriculum:
    """Run `config` in `run_dir` (mode=coevolve; `run_eligible` runs mode=eligible_parents),
    or with `resume` continue the run there: `config` None takes the run's own config.yaml;
    a config given must equal it but for what resume may change
    (`resume_rules.RESUME_OVERRIDES`). The run directory's lock is let go at the end (a later
    resume, in this process or another, may take it)."""
    try:
        with _warnings_to(echo):
            return _run(config, run_dir, echo, resume, checkpoint_file)
    finally:
        held = _HELD.pop(Path(run_dir).resolve(), None)
        if held is not None:
            held.close()  # closing the file drops its flock


@contextlib.contextmanager
def _warnings_to(echo: Callable[[str], None]) -> Iterator[None]:
    """coevo's logging warnings go to `echo` meanwhile (and not a second time to stderr)."""
    forward = _EchoWarnings(echo)
    coevo_log = logging.getLogger("coevo")
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

    def __init__(self, echo: Callable[[str], None]):
        super().__init__(logging.WARNING)
        self.echo = echo

    def emit(self, record: logging.LogRecord) -> None:
        self.echo(f"warning: {record.getMessage()}")


def _run(
    config: RunConfig | None,
    run_dir: Path,
    echo: Callable[[str], None],
    resume: bool,
    checkpoint_file: Path | None,
) -> Curriculum:
    """Run (or resume) the experiment, writing tables, checkpoints and report to `run_dir`.

    `resume`: continue from the newest readable checkpoint, or from `checkpoint_file` (the
    checkpoints after it are removed: the run goes on from there). Ctrl-C raises
    `RunInterrupted` once the report is written; `curriculum.failed_generations`
    generations in a row whose every evaluation failed raise `GenerationFailed` (report
    written too, with the reason in stopped.txt).
    """
    run_dir = Path(run_dir)
    if config is not None and not isinstance(config, RunConfig):
        raise TypeError(
            f"runner.run needs a RunConfig, got {type(config).__name__}: build one with "
            "coevo.config.parse_config(raw) (or None with resume=True: the run's own config)"
        )
    if config is None:
        if not resume:
            raise ConfigError("config", "required for a new run (None resumes: resume=True)")
        config = load_run_config(run_dir)
    if config.mode != "coevolve":
        raise ConfigError(
            "mode",
            f"runner.run runs mode=coevolve; mode={config.mode} is run by "
            "runner.run_eligible(config, run_dir)",
        )
    if not resume:
        refuse_existing_run(run_dir)
    space, policy = prepare(config)
    # The optimizer must fit the policy (e.g. ppo needs a value head), and the curriculum
    # the optimizer (e.g. PLR's value scores): known before Ray starts.
    optimizer = optimizers.build(config.optimizer, policy.num_params)
    try:
        optimizer.use_policy(policy)
    except ConfigError as error:
        if error.field != "policy.name":
            raise
        # The optimizer knows the policy's class; the user wrote its kind's name.
        raise ConfigError(error.field, f"{error.message} (policy={config.policy.name})") from None
    curriculum_class = curricula.get(config.curriculum.name)
    curriculum_class.check(config.curriculum, optimizer)
    curriculum_class.check_space(config.curriculum, space)
    test_space_of(space, config.test_set.params)  # its bounds' errors, before anything starts
    renderer = space.metadata.get("render_png")
    # Read (and checked against the run's own config) before anything is written or started.
    saved = _saved_state(config, run_dir, checkpoint_file, echo) if resume else None
    # A resumed run's policies come from its checkpoint: the start file is not read again.
    start = config.policy.start_from
    initial_theta = load_start_theta(start, policy, echo) if start and saved is None else None
    if config.pool.backend == "ray" and config.pool.address:
        from coevo.pool.ray_backend import check_reachable

        check_reachable(config.pool.address)  # a wrong address is a config error too
    # After the config checks: a refused run leaves no directory and no lock file.
    run_dir.mkdir(parents=True, exist_ok=True)
    _hold_run_dir(run_dir, "resume" if resume else "hydra.run.dir")
    if saved is None:
        _write_config(run_dir, config)
    total = config.curriculum.generations
    logger = ScalarLogger(run_dir, config.logger)
    for line in (
        scale_warnings(config, space)
        + memory_warnings(config, space, policy)
        + episode_cut_warnings(config, space, curriculum_class, type(optimizer))
        + minibatch_warnings(config, curriculum_class, type(optimizer))
    ):
        echo(line)
    with _pool(config, space, policy) as pool:
        if config.pool.wait_for_workers:
            echo("pool: waiting for Ray's workers (pool.wait_for_workers)")
            pool.wait_ready()  # raises what Ray's start raised (WorkerStartError, ...)
        echo(describe_pool(pool))
        curriculum = build(config, space, pool, initial_theta)
        recorder = RunRecorder(run_dir, tables=(CROSS_SCORES_STEM, TEST_SCORES))
        checkpoints = run_dir / CHECKPOINTS

        def save_checkpoint() -> None:
            state = {
                "curriculum": curriculum.state_dict(),
                "report": recorder.state_dict(),
                # Every curriculum's policies under one key: coevo-eval reads them whatever
                # the curriculum's own state looks like.
                "policies": dict(curriculum.policies_for_testing().policies),
            }
            checkpoint.save(checkpoints, curriculum.generation, state, config.checkpoints_kept)

        if saved is not None:
            generation, state, source = saved
            try:
                curriculum.load_state_dict(state["curriculum"])
            except Exception as error:  # noqa: BLE001 - a user curriculum may raise anything
                raise CheckpointError(
                    f"{source}: its state does not load into curriculum "
                    f"'{config.curriculum.name}' ({type(error).__name__}: {error}); the run "
                    "directory is unchanged"
                ) from error
            # The runner owns the count (a plug-in's state_dict may leave it out): a resumed
            # run goes on numbering from the checkpoint's generation.
            curriculum.generation = generation
            recorder.load_state_dict(state["report"], curriculum.population_frame())
            curriculum.resume_failure_count(recorder.summary_rows)
            if checkpoint_file is not None:
                for later in checkpoint.list_checkpoints(checkpoints):
                    if later.name > checkpoint.checkpoint_path(checkpoints, generation).name:
                        later.unlink()  # another future: resume must not fall back on it
            # The run's own config plus the overrides that resume allows, once it goes on.
            _write_config(run_dir, config)
            echo(f"resuming {run_dir} after generation {generation}")
            if generation >= total:
                echo(
                    f"nothing to run: the run's {total} generations are done; extend it with "
                    f"coevo-run resume={run_dir} curriculum.generations=N (N > {total})"
                )
        else:
            save_checkpoint()
        report_built = time.monotonic()
        stopped = run_dir / STOPPED
        stopped.unlink(missing_ok=True)  # going on: an earlier stop is history (cli.log)
        # From the first checkpoint on, an interrupt is a RunInterrupted (resumable): the
        # test set's episodes, too, come after it.
        try:
            test_set = _test_set(config, space, echo)
            if test_set is not None:
                rows = test_set.rows(space, config.test_set.episodes)
                pd.DataFrame(rows).to_csv(run_dir / TEST_SET, index=False)
            progress = GenerationProgress()
            pool.progress = progress
            traceback_shown = False
            first_failure_on_test = False
            while curriculum.generation < total:
                progress.start(curriculum.generation + 1, total)
                try:
                    result = curriculum.step()
                finally:
                    progress.finish()
                # After the generation's own figures: test episodes never count as training.
                if test_set is not None:  # no test set: no test columns
                    if config.test_set.due(curriculum.generation):
                        untested = not pool.first_error_text
                        columns, rows = measure_detailed(curriculum, test_set, config.test_set)
                        first_failure_on_test = untested and bool(pool.first_error_text)
                        result.summary.update(columns)
                        result.tables[TEST_SCORES] = [
                            {"generation": curriculum.generation, **row} for row in rows
                        ]
                    else:
                        result.summary.update(no_test())
                recorder.record(result, curriculum.population_frame())
                logger.log(result.summary)
                save_checkpoint()
                if time.monotonic() - report_built >= config.report_every_s:
                    # The page is for people: rebuilding it every generation would cost most
                    # of a small run's time; `coevo-report` rebuilds it on demand.
                    write_report(run_dir, renderer)
                    report_built = time.monotonic()
                line = curriculum.progress_line(result, total)
                mastered = result.summary.get("test_mastered")
                if mastered is not None and np.isfinite(mastered):  # a test generation
                    mean = result.summary["test_mean_return"]
                    line += f" | test {mastered:.0%} of {len(test_set.tasks)} mastered, " + (
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
                echo(line)
                if pool.first_error_text and not traceback_shown:
                    # Once per run: where the first failure happened (the env's file and
                    # line); every error's last line is in eligibility.csv's `error` column,
                    # a test episode's in test_scores.csv's.
                    where = (
                        "the first failed episode's error, on a test task (every test "
                        "task's: test_scores.csv's error column)"
                        if first_failure_on_test
                        else "the first failed episode's error (every error: eligibility.csv's "
                        "error column; a test task's: test_scores.csv's)"
                    )
                    echo(f"{where}:\n{pool.first_error_text.rstrip()}")
                    traceback_shown = True
                sys.stdout.flush()
        except KeyboardInterrupt as interrupt:
            done = _last_checkpointed(checkpoints)
            how = "terminated (SIGTERM)" if isinstance(interrupt, Terminated) else "interrupted"
            stopped.write_text(
                f"{how} after generation {done}; resume with: coevo-run resume={run_dir}\n"
            )
            write_report(run_dir, renderer)
            logger.close()
            raise RunInterrupted(run_dir, done, how) from None
        except GenerationFailed as error:
            stopped.write_text(f"stopped: {error}\n")
            write_report(run_dir, renderer)
            logger.close()
            raise
        except Exception as error:
            # A bug (often a plug-in's): the run stops, but says so where its progress is,
            # with the report of what it did and the way back once the bug is fixed.
            done = _last_checkpointed(checkpoints)
            hint = f"after fixing it, resume with: coevo-run resume={run_dir}"
            what = f"{type(error).__name__}: {error}"
            stopped.write_text(f"stopped by an error after generation {done}: {what}; {hint}\n")
            if not isinstance(error, ConfigError | CheckpointError | WorkerStartError):
                # (Those are coevo's own errors, whose message is the whole story: the caller
                # reports them, coevo-run as an error line.)
                echo(f"error: {what} (stopped after generation {done}); {hint}")
            with contextlib.suppress(Exception):  # the error may be the report's own
                write_report(run_dir, renderer)
            logger.close()
            error.add_note(f"coevo: stopped after generation {done}; {hint}")
            error.stopped_after = done  # type: ignore[attr-defined]  # the run had started
            raise
        write_report(run_dir, renderer)
    logger.close()
    echo(f"run directory: {run_dir}")
    return curriculum
