"""What a run checks and builds before its first generation: the task space and policy, the
pool, the curriculum, the warnings said at the start, the test set, and on resume the
checkpoint it goes on from. Starts nothing but the pool (`make_pool`); writes only
config.yaml (`write_config`)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import cast

import numpy as np
import yaml

from coevo import checkpoint, curricula, optimizers, tasks
from coevo.config import RunConfig, parse_config
from coevo.curricula.base import Curriculum
from coevo.curricula.level_sampling import LevelSamplingCurriculum
from coevo.errors import ConfigError, yaml_error_text
from coevo.optimizers.ppo_config import PPOConfig
from coevo.policies import Policy, make_policy
from coevo.pool import Backend, EvaluationPool
from coevo.resume_rules import check_resume_config
from coevo.run_files import CHECKPOINTS, CONFIG_FILE, RUN_MARKERS
from coevo.start_policy import load_start_theta
from coevo.tasks.masked import PARTIALLY_OBSERVED
from coevo.tasks.task import TaskSpace
from coevo.tasks.test_sets import TestSet, TestSetConfig, bounds_text, make_test_set, test_space_of


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
    """The config as plain JSON-compatible dicts and lists."""
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


def make_pool(config: RunConfig, space: TaskSpace, policy: Policy) -> EvaluationPool:
    """The pool `config.pool` describes (Ray's workers start here)."""
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
    """Score thresholds of the curriculum above what counts as solved on this task space,
    or above its highest return where the space knows it (`best_return`: a maze's solved
    score is its least success, 0.1, and its returns reach 1): POET's defaults are on
    CartPole's scale (returns up to 500), and on a space whose returns stay below them
    (Pendulum's are <= 0) no pair would ever reproduce."""
    solved = space.solved_score
    curriculum = config.curriculum
    best = getattr(space, "best_return", None)
    if best is not None:  # the space knows its highest return (mazes: ~1, solved from 0.1)
        return _thresholds_above(
            config, best, f"the highest return of task space '{space.name}' ({best:.3g})"
        )
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
    return _thresholds_above(
        config, solved, f"the solved score of task space '{space.name}' ({solved:g})"
    )


def _thresholds_above(config: RunConfig, limit: float, what: str) -> list[str]:
    """A warning naming POET's score thresholds above `limit` (`what` says which limit):
    with them pairs may never reproduce, or no child pass the minimal criterion."""
    above = [
        f"curriculum.{name} {value:g}"
        for name in ("repro_threshold", "mc_lower")
        if (value := getattr(config.curriculum, name, None)) is not None and value > limit
    ]
    if not above:
        return []
    return [
        f"warning: {' and '.join(above)} above {what}: pairs may never reproduce or pass "
        f"the minimal criterion; set curriculum.repro_threshold, mc_lower and mc_upper on "
        f"its scale"
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
    n_envs = cast(PPOConfig, config.optimizer).n_envs  # is_ppo: PPO's settings
    streams = max(n_envs, tasks)  # PPO.ask: every task gets a stream
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


def last_checkpointed(checkpoints: Path) -> int:
    """The generation of the newest checkpoint in `checkpoints` (0: none)."""
    saved = checkpoint.list_checkpoints(checkpoints)
    return checkpoint.generation_of(saved[-1]) if saved else 0


def checked_optimizer(config: RunConfig, space: TaskSpace, policy: Policy) -> type:
    """The checks of the optimizer against the policy (e.g. ppo needs a value head) and of
    the curriculum against the optimizer (e.g. PLR's value scores) and the space, before
    Ray starts; returns the optimizer's class."""
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
    return type(optimizer)


def start_warnings(
    config: RunConfig, space: TaskSpace, policy: Policy, optimizer_class: type
) -> list[str]:
    """Every warning said when the run starts (see each function)."""
    curriculum_class = curricula.get(config.curriculum.name)
    return (
        scale_warnings(config, space)
        + memory_warnings(config, space, policy)
        + episode_cut_warnings(config, space, curriculum_class, optimizer_class)
        + minibatch_warnings(config, curriculum_class, optimizer_class)
    )


def run_test_set(
    options: TestSetConfig, generations: int, space: TaskSpace, echo: Callable[[str], None]
) -> TestSet | None:
    """The run's held-out test set, or None (with a note) when off or without a threshold."""
    if options.every == 0:
        return None
    if options.threshold is None and space.solved_score is None:
        echo(
            f"no test set: task space '{space.name}' declares no solved_score; "
            "set test_set.threshold to measure test_mastered"
        )
        return None
    if options.every > generations:
        echo(
            f"test set: measured every {options.every} generations (test_set.every), so not "
            f"in this run of {generations}: test_* columns stay empty"
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


def write_config(run_dir: Path, config: RunConfig) -> None:
    """Write the config as YAML into the run folder."""
    (run_dir / CONFIG_FILE).write_text(yaml.safe_dump(config_to_dict(config), sort_keys=False))


@dataclasses.dataclass(frozen=True)
class SavedState:
    """The checkpoint a resumed run goes on from."""

    generation: int
    state: dict
    source: Path  # its file


def check_resumed_config(config: RunConfig, run_dir: Path) -> None:
    """`config` against the run's recorded one: only what resume may change may differ."""
    if (run_dir / CONFIG_FILE).is_file():
        check_resume_config(
            config_to_dict(load_run_config(run_dir)), config_to_dict(config), run_dir
        )


def read_checkpoint(
    run_dir: Path,
    generations: int,
    checkpoint_file: Path | None,
    echo: Callable[[str], None],
) -> SavedState:
    """The checkpoint a resume goes on from: `checkpoint_file`, or the run's newest readable
    one; refused when it holds more than the `generations` the run is to have."""
    checkpoints = run_dir / CHECKPOINTS
    if checkpoint_file is not None:
        state = checkpoint.load(checkpoint_file)
        generation, source = checkpoint.generation_of(checkpoint_file), Path(checkpoint_file)
    elif not checkpoint.list_checkpoints(checkpoints) and (run_dir / CONFIG_FILE).is_file():
        raise ConfigError(
            "resume",
            f"{run_dir} holds no checkpoint: the run stopped before its start was saved, so "
            "there is nothing to continue; start it again in this directory (runner.run("
            "config, run_dir), or coevo-run with hydra.run.dir)",
        )
    else:
        generation, state = checkpoint.load_latest(checkpoints, on_skip=echo)
        source = checkpoint.checkpoint_path(checkpoints, generation)
    if generations < generation:  # it would run nothing, and config.yaml would contradict
        raise ConfigError(
            "curriculum.generations",
            f"{generations} is fewer than the {generation} generations the checkpoint holds; "
            f"allowed: {generation} or more (resume goes on from generation {generation})",
        )
    return SavedState(generation, state, source)


@dataclasses.dataclass(frozen=True)
class RunPlan:
    """A config's run as checked before anything is written or started."""

    config: RunConfig
    space: TaskSpace
    policy: Policy
    optimizer_class: type
    saved: SavedState | None  # resume: the checkpoint it goes on from
    initial_theta: np.ndarray | None  # policy.start_from's parameters


def preflight(
    config: RunConfig | None,
    run_dir: Path,
    resume: bool,
    checkpoint_file: Path | None,
    echo: Callable[[str], None],
) -> RunPlan:
    """Every check of a config's run that needs no directory, lock or pool: the config, the
    space and policy, the optimizer and curriculum against them, the test set's bounds, on
    resume the recorded config and the checkpoint, the start policy, the cluster."""
    config = coevolve_config(config, run_dir, resume)
    if not resume:
        refuse_existing_run(run_dir)
    space, policy = prepare(config)
    optimizer_class = checked_optimizer(config, space, policy)
    test_space_of(space, config.test_set.params)  # its bounds' errors, before starting
    saved = None
    if resume:
        check_resumed_config(config, run_dir)
        saved = read_checkpoint(run_dir, config.curriculum.generations, checkpoint_file, echo)
    # A resumed run's policies come from its checkpoint: the start file is not read again.
    start = config.policy.start_from
    initial_theta = load_start_theta(start, policy, echo) if start and saved is None else None
    check_cluster(config)
    return RunPlan(config, space, policy, optimizer_class, saved, initial_theta)


def start_curriculum(plan: RunPlan, run_dir: Path, echo: Callable[[str], None]) -> Curriculum:
    """config.yaml (a new run's), the start's warnings, the pool started and the curriculum
    built on it (the pool closed again if that fails)."""
    config = plan.config
    if plan.saved is None:
        write_config(run_dir, config)
    for line in start_warnings(config, plan.space, plan.policy, plan.optimizer_class):
        echo(line)
    pool = make_pool(config, plan.space, plan.policy)
    try:
        if config.pool.wait_for_workers:
            echo("pool: waiting for Ray's workers (pool.wait_for_workers)")
            pool.wait_ready()  # raises what Ray's start raised (WorkerStartError, ...)
        echo(describe_pool(pool))
        return build(config, plan.space, pool, plan.initial_theta)
    except BaseException:
        pool.close()
        raise


def coevolve_config(config: RunConfig | None, run_dir: Path, resume: bool) -> RunConfig:
    """The RunConfig a coevolve run runs: `config`, or with `resume` and None the run's own."""
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
    return config


def check_cluster(config: RunConfig) -> None:
    """A `pool.address` where nothing answers is a config error too, known before starting."""
    if config.pool.backend == "ray" and config.pool.address:
        from coevo.pool.ray_backend import check_reachable

        check_reachable(config.pool.address)
