"""The optimizer seam, in the ask/tell shape.

An optimizer never calls the pool. For each (theta, state, task) the loop asks it for jobs
(`ask`), sends every pair's jobs to the pool in ONE call (`EvaluationPool.dispatch`, which
accepts jobs of different kinds and returns one result per job, in order) and tells each
optimizer its own results back (`tell`), which returns the new theta, the new state and a
`StepRecord`. ES asks for `EpisodeJob`s of perturbed seeds and is told their returns; a
gradient method asks for trajectory jobs and is told the trajectories.

States are values: `ask` and `tell` never change the state they are given (`tell` returns
a new one), so a transfer's proposal step can start from a pair's state without copying it,
and a state pickles into a checkpoint and resumes exactly.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from coevo.batches import Work, drive
from coevo.errors import ConfigError
from coevo.plugins import require_config
from coevo.settings import Checked, is_count, setting
from coevo.tasks.task import Task

# `register(theta) -> key`: puts a parameter vector in the pool's weight store once per
# version; jobs name their parameters by that key (weights travel once).
Register = Callable[[np.ndarray], str]


@dataclass(frozen=True)
class OptimizerConfig(Checked):
    """Base of every optimizer's config: `name` picks the implementation (a registry name
    or "package.module:Class"). Subclasses add their fields with `setting(...)` ranges,
    checked when an instance is built, and checks across fields in `check()`."""

    section = "optimizer"

    name: str = setting("es", doc="registry name or package.module:Class")


@dataclass
class Asked:
    """What one `ask` wants evaluated: `jobs` for the pool, and `memo`, the optimizer's own
    note of how it built them (e.g. ES's noise seeds), handed back to `tell`."""

    jobs: list[Any]
    memo: Any = None


@dataclass(frozen=True)
class StepRecord:
    """What one optimizer step did, for the tables and the console."""

    mean_return: float  # mean over the step's episodes: a cheap progress signal
    failed: int = 0  # jobs whose evaluation failed
    reason: str = ""  # why the step did what it did, when it did something unusual
    extra: dict[str, float] = field(default_factory=dict)  # optimizer-specific numbers
    applied: bool = True  # False: the weights and state were kept (e.g. every job failed)

    @property
    def outcome(self) -> str:
        """eligibility.csv's outcome for a step with a `reason`: `step_failed` when the
        learner kept its weights, `step_applied` when it updated despite what the reason says
        (e.g. some perturbations failed and were left out)."""
        return "step_applied" if self.applied else "step_failed"


@dataclass
class Told:
    """A step's outcome: the new parameters and optimizer state, and its record."""

    theta: np.ndarray
    state: Any
    record: StepRecord


class Optimizer(ABC):
    """One parameter vector's optimizer. Subclasses set `config_class` and implement
    `init_state`, `ask` and `tell`; the registry in `coevo.optimizers` finds them by name
    or import path.

    Built from a config (`EvolutionStrategy(ESConfig(population=16), num_params)`, the
    runner's way) or from settings as keywords (`ES(population=16)`: they build the config,
    whose fields hold the defaults and ranges); without `num_params` it learns the count
    from the pool's policy when a curriculum is built with it (`bind`).
    """

    config_class: ClassVar[type[OptimizerConfig]] = OptimizerConfig

    def __init__(
        self, config: OptimizerConfig | None = None, num_params: int | None = None, **settings: Any
    ):
        if config is None:
            config = self.config_class(**settings)  # a bad key or value: ConfigError
        elif settings:
            raise TypeError(
                f"{type(self).__name__}: give a config or settings as keywords, not both "
                f"(got {', '.join(settings)} beside the config)"
            )
        require_config(type(self), config)
        self.config = config
        self.num_params: int | None = None
        if num_params is not None:
            self.bind(num_params)

    def bind(self, num_params: int) -> None:
        """Optimize vectors of `num_params` (the policy's `num_params`); an optimizer built
        for another count is refused (its first step would fail inside numpy)."""
        if not is_count(num_params, 1):
            raise ValueError(
                f"num_params must be an integer >= 1 (the policy's pool.policy.num_params), "
                f"got {num_params!r}"
            )
        if self.num_params is not None and self.num_params != num_params:
            raise ConfigError(
                "optimizer",
                f"built for {self.num_params} parameters; the pool's policy has {num_params} "
                "(build it with pool.policy.num_params, or leave num_params out)",
            )
        self.num_params = int(num_params)

    def use_policy(self, policy: Any) -> None:
        """Told the run's policy before any step (a gradient optimizer needs its network);
        raises ConfigError when it cannot work with it. Black-box optimizers ignore it."""
        return None

    @abstractmethod
    def init_state(self, theta: np.ndarray, rng: np.random.Generator) -> Any:
        """A fresh state for optimizing `theta` (a new pair, or a transferred policy)."""

    @abstractmethod
    def ask(
        self,
        theta: np.ndarray,
        state: Any,
        tasks: Sequence[Task],
        rng: np.random.Generator,
        register: Register,
    ) -> Asked:
        """The jobs of one step on `tasks` (one task, or several to spread the step's episodes
        over, e.g. for a single policy trained on a curriculum's tasks). Draws its
        randomness from `rng` only and does not change `state`."""

    @abstractmethod
    def tell(self, theta: np.ndarray, state: Any, asked: Asked, results: Sequence[Any]) -> Told:
        """The step from `results` (one per job of `asked.jobs`, in order)."""

    def tell_many(
        self, items: Sequence[tuple[np.ndarray, Any, Asked, Sequence[Any]]]
    ) -> list[Told]:
        """`tell` for many (theta, state, asked, results) at once, in order; the loops call
        this, so an optimizer can update many pairs together (PPO batches them in torch)."""
        return [self.tell(theta, state, asked, results) for theta, state, asked, results in items]

    def step(
        self,
        pool: Any,
        theta: np.ndarray,
        state: Any,
        tasks: Sequence[Task],
        rng: np.random.Generator,
    ) -> Told:
        """One step on its own: ask, run the jobs on `pool`, tell. (A curriculum steps many
        pairs at once with `coevo.curricula.training.optimize`, one pool call for all.)"""
        return drive(pool, self.step_work(theta, state, tasks, rng, pool.register))

    def step_work(
        self,
        theta: np.ndarray,
        state: Any,
        tasks: Sequence[Task],
        rng: np.random.Generator,
        register: Register,
    ) -> Work[Told]:
        """`step` as work in job batches (`coevo.batches`): one batch, `ask`'s jobs."""
        asked = self.ask(theta, state, tasks, rng, register)
        results = yield asked.jobs
        return self.tell(theta, state, asked, results)

    def task_capacity(self) -> tuple[int, str] | None:
        """(most tasks one step can play, the setting that bounds it), e.g. ES's
        `optimizer.population`: a curriculum asking for more is refused before the run starts.
        None: any number (PPO gives each task a stream)."""
        return None
