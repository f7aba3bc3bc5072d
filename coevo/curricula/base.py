"""The curriculum seam: what the runner, the tables, the report and checkpoints rely on.

A curriculum decides which (task, policy) pairs to train and evaluate; one `step()` is one
generation and returns a `GenerationResult`: a summary row, decision rows (outcome and
reason, for eligibility.csv) and optional extra tables. It never starts Ray or writes
files: the runner owns the pool, the run directory, checkpoints and report.

Built from the pool alone, settings as keywords (`Poet(pool, optimizer=ES(population=16),
max_active=8, seed=0)`: the keywords build the config dataclass, whose `setting` fields
hold every default and range), or from its config (`Poet(config, space=..., pool=...,
optimizer=...)`, the runner's way).

A generation is asked and told: `ask()` gives the next batch of jobs, `tell(results)` takes
their results and returns the `GenerationResult` once the generation has ended; `step()`
is ask → `pool.dispatch` → tell until then. Subclasses implement `run_generation` as work
in job batches (`coevo.batches`: `results = yield jobs`; a plain method that calls the
pool itself works too, as one batch-less generation), `state_dict`/`load_state_dict`,
`population_frame` (population.csv) and `policies_for_testing`. The pool's statistics for
the generation (episodes, env steps, timings) are added to the summary by `tell` itself,
so every curriculum reports them the same way.
"""

from __future__ import annotations

import inspect
import time
from abc import ABCMeta, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd

from coevo.batches import JobBatches, Work, drive
from coevo.errors import ConfigError
from coevo.plugins import require_config
from coevo.settings import Checked, is_count, setting
from coevo.start_policy import checked_theta

if TYPE_CHECKING:
    from coevo.optimizers.base import Optimizer
    from coevo.pool import EvaluationPool
    from coevo.tasks.task import TaskSpace


def check_arguments(
    space: object, pool: object, optimizer: object, seed: object, initial_theta: object
) -> None:
    """TypeError/ValueError naming a constructor argument of the wrong kind (each failed
    later as an AttributeError, or as numpy's seed error, far from the cause)."""
    from coevo.optimizers.base import Optimizer, OptimizerConfig
    from coevo.pool import EvaluationPool
    from coevo.tasks.task import TaskSpace

    wanted = (
        ("space", space, TaskSpace, "a TaskSpace, e.g. coevo.tasks.get('cartpole')"),
        ("pool", pool, EvaluationPool, "an EvaluationPool(space, policy, ...)"),
        (
            "optimizer",
            optimizer,
            Optimizer,
            "an Optimizer, e.g. EvolutionStrategy(ESConfig(...)) or coevo.optimizers.ES("
            "population=16)",
        ),
    )
    for name, value, kind, example in wanted:
        if not isinstance(value, kind):
            hint = ""
            if isinstance(value, OptimizerConfig):
                hint = " (a config: build the optimizer from it)"
            raise TypeError(f"{name} must be {example}, got {type(value).__name__}{hint}")
    if not is_count(seed, 0):
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    if isinstance(initial_theta, str | bytes) or hasattr(initial_theta, "__fspath__"):
        raise TypeError(
            "initial_theta takes the parameter vector, not a path: np.load(path) first "
            "(a run's policy.start_from takes a path)"
        )


def _a(name: str) -> str:
    """'a PLR', 'an ACCEL', 'an EnhancedPoet': the article for a class name."""
    return f"{'an' if name[:1].upper() in 'AEIOU' else 'a'} {name}"


class GenerationFailed(RuntimeError):
    """Every evaluation failed in `curriculum.failed_generations` generations in a row:
    nothing was learned or judged, most likely a broken env. Carries the last one's first
    error."""

    def __init__(self, generation: int, episodes: int, first_error: str, in_a_row: int = 1):
        run = f" (every episode failed in {in_a_row} generations in a row)" if in_a_row > 1 else ""
        super().__init__(
            f"generation {generation}: all {episodes} episodes failed{run}; "
            f"first error: {first_error}"
        )
        self.generation = generation
        self.first_error = first_error


def every_episode_failed(stats: Mapping[str, Any]) -> bool:
    """A generation's pool figures (or its summary row): jobs ran and all failed. Jobs,
    not episodes: a healthy PPO stream may end no episode in its rollout, and must not
    leave a failed one looking like the generation's only work."""
    jobs = stats.get("jobs")
    if jobs is None or jobs != jobs:  # a summary row written before the column existed
        jobs = stats.get("episodes", 0)
    jobs = float(jobs or 0)
    return jobs > 0 and float(stats.get("failed_episodes", 0) or 0) >= jobs


@dataclass(frozen=True)
class CurriculumConfig(Checked):
    """Base of every curriculum's config: `name` picks the implementation (a registry name
    or "package.module:Class"); `generations` is how many `step()`s a run takes."""

    section = "curriculum"

    name: str = setting("poet", doc="registry name or package.module:Class")
    generations: int = setting(30, low=1, doc="generations to run")
    # One generation's new tasks can all be broken by chance (a few levels drawn on a space
    # where some tasks fail); every episode failing several generations in a row is a
    # broken env, and the run stops rather than write rows of NaNs.
    failed_generations: int = setting(
        3, low=1, doc="generations in a row in which every episode failed that stop the run"
    )


@dataclass(frozen=True)
class Decision:
    """One row of eligibility.csv: a rule applied to a pair or candidate, and why."""

    generation: int
    kind: str  # e.g. parent, child, transfer, capacity; a curriculum may add its own
    rule: str
    outcome: str
    reason: str
    pair_id: int | None = None
    parent_id: int | None = None
    task_id: str = ""
    task: str = ""
    score: float = float("nan")
    threshold: float = float("nan")
    lower: float = float("nan")
    upper: float = float("nan")
    novelty: float = float("nan")
    error: str = ""  # why an evaluation failed, when one did

    def as_row(self) -> dict:
        return asdict(self)


@dataclass
class GenerationResult:
    """What one generation produced: its number, its `summary.csv` row, its decisions
    (`eligibility.csv` rows) and any extra tables (file stem -> rows).
    """

    generation: int
    summary: dict[str, Any]  # one row of summary.csv
    decisions: list[Decision] = field(default_factory=list)
    # Extra tables: file stem -> rows appended to RUN_DIR/<stem>.csv (e.g. cross_scores).
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


@dataclass(frozen=True)
class PoliciesForTesting:
    """The policies to score on a held-out test set.

    `best_of`: True when a test task's score is the best over these policies (a population
    whose members specialise, as in POET); False when each policy is scored on its own
    (one generalist policy, or a few seeds of it, as in DR or PLR).
    """

    policies: dict[str, np.ndarray]
    best_of: bool


def _constructor_keywords(cls: type) -> set[str]:
    """The keywords the constructors of `cls` and its bases name (space, pool, optimizer,
    seed, initial_theta, a subclass's own such as POET's initial_tasks): the others given
    to `Class(pool, ...)` are settings of its config."""
    names: set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None or klass is object:
            continue
        parameters = list(inspect.signature(init).parameters.values())[2:]  # self, config
        names.update(
            p.name
            for p in parameters
            if p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        )
    return names


def config_form(cls: type, args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
    """`Class(pool, optimizer=..., seed=..., **settings)` as the constructors' own form,
    `Class(config, space=pool.space, pool=pool, optimizer=..., seed=...)`: the settings build
    `cls.config_class` (a bad key or value: its ConfigError naming the field), the space is
    the pool's, and the optimizer defaults to the default optimizer config's with its
    defaults. Any other call (a config first, or no pool) is left as it is."""
    from coevo.pool import EvaluationPool

    by_pool = isinstance(args[0], EvaluationPool) if args else "pool" in kwargs
    if not by_pool or "config" in kwargs:
        return args, kwargs
    if len(args) > 1:
        raise TypeError(
            f"{cls.__name__}(pool, optimizer=..., seed=..., **settings) takes the pool alone "
            f"as a positional argument, got {len(args)}"
        )
    kwargs = dict(kwargs)
    if args:
        if "pool" in kwargs:
            raise TypeError(f"{cls.__name__} got the pool twice (positional and pool=)")
        kwargs["pool"] = args[0]
    parts = _constructor_keywords(cls)
    settings = {key: kwargs.pop(key) for key in list(kwargs) if key not in parts}
    config = cls.config_class(**settings)  # type: ignore[attr-defined]
    pool = kwargs["pool"]
    if not isinstance(pool, EvaluationPool):
        raise TypeError(
            f"pool must be an EvaluationPool(space, policy, ...), got {type(pool).__name__}"
        )
    kwargs.setdefault("space", pool.space)
    if kwargs.get("optimizer") is None:
        from coevo import optimizers
        from coevo.optimizers.base import OptimizerConfig

        kwargs["optimizer"] = optimizers.get(OptimizerConfig().name)()
    return (config,), kwargs


class _BuiltFromPool(ABCMeta):
    """Every curriculum class also takes `Class(pool, **settings)` (see `config_form`), so
    a subclass's constructor keeps the one signature `(config, **parts)`."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        args, kwargs = config_form(cls, args, kwargs)
        return super().__call__(*args, **kwargs)


class Curriculum(metaclass=_BuiltFromPool):
    """One implementation per curriculum; the registry in `coevo.curricula` finds it by
    name or import path. Built as `Class(pool, optimizer=..., seed=..., **settings)` or
    `Class(config, space=..., pool=..., optimizer=..., seed=...)`."""

    config_class: ClassVar[type[CurriculumConfig]] = CurriculumConfig

    def __init__(
        self,
        config: CurriculumConfig,
        *,
        space: TaskSpace,
        pool: EvaluationPool,
        optimizer: Optimizer,
        seed: int = 0,
        initial_theta: np.ndarray | None = None,
    ):
        require_config(type(self), config)
        check_arguments(space, pool, optimizer, seed, initial_theta)
        self.check(config, optimizer)
        self.check_space(config, space)
        if getattr(optimizer, "num_params", None) is None:  # ES(...) built without a count
            optimizer.bind(pool.policy.num_params)
        self.check_parts(space, pool, optimizer)
        # The policy the pool runs is the one a gradient optimizer (PPO) learns with: told
        # here, so PPO(config, n) built without `policy=` works, and a misfit is refused now.
        optimizer.use_policy(pool.policy)
        self.config = config
        self.space = space
        self.pool = pool
        self.optimizer = optimizer
        self.seed = seed
        self.initial_theta = (
            None
            if initial_theta is None
            else checked_theta(initial_theta, pool.policy, "initial_theta")
        )
        self.generation = 0
        self._failed_in_a_row = 0  # generations in a row in which every episode failed
        self._work: JobBatches[GenerationResult] | None = None  # the generation asked
        self._began: tuple[float, dict[str, float]] = (0.0, {})  # its start: time, pool stats

    def new_theta(self, rng: np.random.Generator) -> np.ndarray:
        """A new policy's starting parameters: a copy of `initial_theta` (a policy trained
        before: `policy.start_from`) when given, else the policy's own random init."""
        if self.initial_theta is not None:
            return self.initial_theta.copy()
        return self.pool.policy.init(rng)

    @classmethod  # noqa: B027 - optional to override, like the other defaults here
    def check(cls, config: CurriculumConfig, optimizer: Optimizer) -> None:
        """Refuse (ConfigError) a config that cannot work with this optimizer: called by the
        runner before any pool starts, and by the constructor. Default: nothing to check."""

    @classmethod  # noqa: B027 - optional to override, like `check`
    def check_space(cls, config: CurriculumConfig, space: TaskSpace) -> None:
        """Refuse (ConfigError) a setting the run's task space cannot take (a parameter name
        it lacks, a level count it cannot reach): called by the runner before any pool
        starts, and by the constructor. Default: nothing to check."""

    @staticmethod
    def check_parts(space: TaskSpace, pool: EvaluationPool, optimizer: Optimizer) -> None:
        """Refuse (ConfigError) parts that cannot work together: a pool built on another task
        space runs the curriculum's tasks on the wrong env (every episode failed, then a
        KeyError some generations later); an optimizer built for another parameter count
        fails its first step inside numpy."""
        if not space.same_tasks_as(pool.space):
            mine, pools = space.difference_from(pool.space) or ("?", "?")
            raise ConfigError(
                "space",
                f"the curriculum's task space is not the pool's: {mine} here, {pools} in the "
                "pool; build the pool and the curriculum on the same space",
            )
        # Optimizer.__init__ keeps num_params; a plug-in that skips it is not checked here.
        built_for = getattr(optimizer, "num_params", None)
        needed = pool.policy.num_params
        if built_for is not None and built_for != needed:
            raise ConfigError(
                "optimizer",
                f"built for {built_for} parameters; the pool's policy has {needed} (build it "
                "with pool.policy.num_params)",
            )

    # -- the protocol ------------------------------------------------------------------------
    def step(self) -> GenerationResult:
        """One generation: ask → `pool.dispatch` → tell until it ends.

        Raises `GenerationFailed` when every episode failed in `config.failed_generations`
        generations in a row."""
        try:
            return drive(self.pool, self)
        except BaseException:
            self._abandon()  # a failed pool call: the next step starts a new generation
            raise

    def ask(self) -> list[Any]:
        """The next batch of jobs of this generation (the first ask starts one): evaluate
        them anywhere and `tell` their results, one per job in order. [] when the generation
        needs no more jobs: `tell([])` then ends it. Asking again before telling gives the
        same batch. The jobs name their parameters by keys of this curriculum's pool
        (`pool.register`)."""
        if self._work is None:
            self.generation += 1
            self._began = (time.perf_counter(), self.pool.stats_snapshot())
            self._work = JobBatches(self._generation_work())
        return self._work.ask()

    def tell(self, results: Sequence[Any]) -> GenerationResult | None:
        """The results of the last `ask()`'s jobs. Returns the `GenerationResult` when the
        generation has ended, with the pool's figures for it in the summary; None while it
        has more jobs to ask for. Raises `GenerationFailed` as `step` does."""
        work = self._work
        if work is None:
            raise RuntimeError("tell() before ask(): ask for the generation's jobs first")
        try:
            result = work.tell(results)
        except BaseException:
            if work.done:  # the generation itself raised: it is over
                self._work = None
            raise
        if result is None:
            return None
        self._work = None
        return self._finish(result)

    def _generation_work(self) -> Work[GenerationResult]:
        made = self.run_generation()
        if isinstance(made, GenerationResult):  # a plain method: it ran whole
            return made
        return (yield from made)

    def _abandon(self) -> None:
        if self._work is not None:
            self._work.close()
            self._work = None

    def _finish(self, result: GenerationResult) -> GenerationResult:
        """The pool's figures for the generation added to its summary; the failure count."""
        started, before = self._began
        pool_stats = self.pool.stats_since(before)
        failed = int(pool_stats["failed_episodes"])  # episodes, or PPO streams
        self._failed_in_a_row = self._failed_in_a_row + 1 if every_episode_failed(pool_stats) else 0
        limit = getattr(self.config, "failed_generations", CurriculumConfig.failed_generations)
        if self._failed_in_a_row >= limit:
            raise GenerationFailed(
                self.generation, failed, self.pool.last_error, self._failed_in_a_row
            )
        wall = time.perf_counter() - started
        # Env steps per second of the whole generation: a learner's update (PPO) included,
        # not only the time inside pool calls.
        pool_stats["steps_per_s"] = pool_stats["env_steps"] / wall if wall > 0 else 0.0
        result.summary = {
            "generation": self.generation,
            **result.summary,
            **pool_stats,
            "wall_s": wall,
        }
        return result

    def resume_failure_count(self, summaries: Sequence[Mapping[str, Any]]) -> None:
        """After a resume: the all-failed generations in a row at the end of the recorded
        summary rows count towards `failed_generations`, as they did before the stop."""
        in_a_row = 0
        for row in summaries:
            in_a_row = in_a_row + 1 if every_episode_failed(row) else 0
        self._failed_in_a_row = in_a_row

    @abstractmethod
    def run_generation(self) -> Work[GenerationResult] | GenerationResult:
        """The curriculum's work for generation `self.generation` (already incremented):
        a generator that yields batches of jobs and receives their results (`results =
        yield jobs`), returning the `GenerationResult`; or a plain method returning it (then
        it calls the pool itself and cannot be asked and told in batches). Its summary holds
        the curriculum's own columns (the pool's are added)."""

    @abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly: generation, RNG states, population.
        (coevo's curricula add their `kind` with `tagged_state`.)"""

    @abstractmethod
    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from `state_dict()`'s output (coevo's curricula first `check_state`)."""

    def tagged_state(self, state: dict[str, Any]) -> dict[str, Any]:
        """`state` with this curriculum's kind (its class name), for `check_state`."""
        return {"kind": type(self).__name__, **state}

    def check_state(
        self,
        state: Mapping[str, Any],
        required: Sequence[str] = (),
        thetas: Sequence[np.ndarray] = (),
        task_spaces: Sequence[str] = (),
    ) -> None:
        """Refuse, before anything is loaded, a state that would fail later or leave the
        curriculum half loaded: one saved by another curriculum (a state of a class this one
        derives from is accepted: POET's in Enhanced POET; one without a kind, saved before
        states carried it, is trusted), one missing `required` keys, policies (`thetas`) of
        another size than the pool's policy, tasks of another space (`task_spaces`)."""
        if not isinstance(state, Mapping):
            raise TypeError(f"state must be a dict from state_dict(), got {type(state).__name__}")
        mine = type(self).__name__
        kind = state.get("kind")
        if kind is not None and kind not in {c.__name__ for c in type(self).__mro__}:
            raise ConfigError(
                "state",
                f"saved by {_a(kind)} curriculum; this is {_a(mine)}: load a state_dict() of "
                "the same curriculum",
            )
        missing = [key for key in required if key not in state]
        if missing:
            raise ConfigError(
                "state", f"lacks {', '.join(missing)}: not a state_dict() of {_a(mine)}"
            )
        needed = self.pool.policy.num_params
        for index, theta in enumerate(thetas):
            if np.size(theta) != needed:
                raise ConfigError(
                    "state",
                    f"its policy {index} has {np.size(theta)} parameters; this pool's policy "
                    f"has {needed}: the state is of a run with another policy",
                )
        for name in task_spaces:
            if name != self.space.name:
                raise ConfigError(
                    "state",
                    f"holds tasks of space '{name}'; this curriculum runs '{self.space.name}'",
                )

    @abstractmethod
    def population_frame(self) -> pd.DataFrame:
        """population.csv: one row per pair or level the curriculum keeps."""

    @abstractmethod
    def policies_for_testing(self) -> PoliciesForTesting: ...

    # -- defaults --------------------------------------------------------------------------
    def progress_line(self, result: GenerationResult, total: int) -> str:
        """The console line of a generation."""
        s = result.summary
        return (
            f"gen {result.generation:>3}/{total} | best {s.get('best_score', float('nan')):7.1f}"
            f" | {s.get('steps_per_s', 0.0) / 1000:6.1f}k steps/s | {s['wall_s']:5.1f}s"
        )

    def run(
        self,
        generations: int | None = None,
        callback: Callable[[GenerationResult], None] | None = None,
    ) -> list[GenerationResult]:
        """Step until `generations` (default: the config's) have run; returns their results."""
        results = []
        while self.generation < (generations or self.config.generations):
            result = self.step()
            results.append(result)
            if callback:
                callback(result)
        return results
