"""A curriculum written outside the coevo package, as a user would: named by import path
(`user_curricula:NearbyTasks`) in a config file of the user's own config directory.

It subclasses the level-sampling base that coevo's own DR, PLR, ACCEL and ALP-GMM use; only
`plan` is required, the rest are optional hooks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from coevo.curricula.base import Decision
from coevo.curricula.dr import DomainRandomization, DRConfig
from coevo.curricula.level_sampling import (
    LevelSamplingConfig,
    LevelSamplingCurriculum,
    Outcome,
    Plan,
    Student,
)
from coevo.curricula.plr import PrioritizedLevelReplay
from coevo.errors import ConfigError
from coevo.optimizers.base import Optimizer, OptimizerConfig
from coevo.optimizers.ppo import PPO
from coevo.settings import setting
from coevo.tasks.task import Task


@dataclass(frozen=True)
class NearbyTasksConfig(LevelSamplingConfig):
    name: str = setting("user_curricula:NearbyTasks")
    spread: float = setting(0.2, low=0.0, high=1.0, doc="fraction of each range to sample")
    hard_below: float = setting(100.0, doc="a task scoring below this is kept for next time")


class NearbyTasks(LevelSamplingCurriculum):
    """Tasks drawn around the space's initial task; a task on which the policy's training
    return was below `hard_below` is trained on again in the next round."""

    config_class = NearbyTasksConfig
    config: NearbyTasksConfig

    def __init__(self, config, **kwargs):
        super().__init__(config, **kwargs)
        self.hard: dict[int, list[Task]] = {s.index: [] for s in self.students}

    def plan(self, student: Student, decisions: list[Decision]) -> Plan:
        tasks = list(self.hard[student.index][: self.config.tasks_per_step])
        initial = self.space.initial_task()
        while len(tasks) < self.config.tasks_per_step:
            values = {}
            for param in self.space.params:
                half = self.config.spread * (param.high - param.low) / 2
                shifted = initial[param.name] + student.rng.uniform(-half, half)
                values[param.name] = float(np.clip(shifted, param.low, param.high))
            tasks.append(self.space.task(**values))
        return Plan(train=tasks)

    def observe(
        self, student: Student, plan: Plan, outcome: Outcome, decisions: list[Decision]
    ) -> list[Task]:
        super().observe(student, plan, outcome, decisions)  # a "train" row per task
        limit = self.config.hard_below
        self.hard[student.index] = []
        for signal in outcome.trained:
            hard = not signal.mean_return >= limit  # NaN (a failed task) counts as hard
            if hard:
                self.hard[student.index].append(signal.task)
            decisions.append(
                self.decision(
                    student,
                    signal.task,
                    "keep_hard",
                    "kept" if hard else "dropped",
                    f"training return {signal.mean_return:.1f} "
                    f"{'<' if hard else '>='} hard_below {limit:g}",
                    score=signal.mean_return,
                    threshold=limit,
                )
            )
        return []

    def curriculum_summary(self) -> dict[str, Any]:
        return {"hard_tasks": sum(len(tasks) for tasks in self.hard.values())}

    def student_rows(self, student: Student) -> list[dict[str, Any]]:
        return [
            {"task_id": task.id, **{f"task.{k}": v for k, v in task.params}}
            for task in self.hard[student.index]
        ]

    def curriculum_state(self) -> dict[str, Any]:
        return {"hard": {index: list(tasks) for index, tasks in self.hard.items()}}

    def load_curriculum_state(self, state: dict[str, Any]) -> None:
        self.hard = {int(index): list(tasks) for index, tasks in state["hard"].items()}


@dataclass(frozen=True)
class ForgetfulDRConfig(DRConfig):
    name: str = setting("user_curricula:ForgetfulDR")


class ForgetfulDR(DomainRandomization):
    """Domain randomisation whose state leaves out the generation count, as a plug-in
    written from the state_dict/load_state_dict contract alone may: the runner restores it."""

    config_class = ForgetfulDRConfig

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        del state["generation"]
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict({**state, "generation": 0})


# The generation at which BuggyDR's step raises (0: never); a test sets it, then "fixes the
# bug" by setting it back before resuming.
BUG_AT = {"generation": 0}


@dataclass(frozen=True)
class BuggyDRConfig(DRConfig):
    name: str = setting("user_curricula:BuggyDR")
    bug_at: int = setting(0, low=0, doc="the generation whose step raises (0: BUG_AT's)")


class BuggyDR(DomainRandomization):
    """Domain randomisation with a bug of the kind a plug-in has: its step raises at one
    generation."""

    config_class = BuggyDRConfig

    def step(self):
        if self.generation + 1 == (self.config.bug_at or BUG_AT["generation"]):
            raise ValueError("my bug in step")
        return super().step()


@dataclass(frozen=True)
class UnpicklableDRConfig(DRConfig):
    name: str = setting("user_curricula:UnpicklableDR")


class UnpicklableDR(DomainRandomization):
    """Domain randomisation whose state holds a lambda: pickle cannot save it."""

    config_class = UnpicklableDRConfig

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "rule": lambda score: score > 0}


class LearnabilityPLR(PrioritizedLevelReplay):
    """PLR with a level score of its own: learnability p(1 - p), p = return / 500 (CartPole's
    best return), as a user's subclass writes it."""

    def level_score(self, student, signal, level):
        if signal.error or not np.isfinite(signal.mean_return):
            return float("nan"), "evaluation failed, no score"
        p = float(np.clip(signal.mean_return / 500.0, 0.0, 1.0))
        return p * (1 - p), f"learnability {p * (1 - p):.3g}"


class NamedLearnabilityPLR(LearnabilityPLR):
    score_name = "learnability"


@dataclass(frozen=True)
class OneParameterDRConfig(DRConfig):
    name: str = setting("user_curricula:OneParameterDR")
    param: str = setting("gravity", doc="the one task parameter randomised")


class OneParameterDR(DomainRandomization):
    """Domain randomisation of one parameter of the space, named in its config: a setting
    only the task space can check, before the pool starts (`check_space`)."""

    config_class = OneParameterDRConfig

    @classmethod
    def check_space(cls, config, space) -> None:
        names = [p.name for p in space.params]
        if config.param not in names:
            raise ConfigError("curriculum.param", f"must be one of {names}, got {config.param!r}")


class NoConfigES(Optimizer):
    """A plug-in optimizer whose author has not written its config_class yet."""

    def init_state(self, theta, rng):
        return None

    def ask(self, theta, state, tasks, rng, register):
        raise NotImplementedError

    def tell(self, theta, state, asked, results):
        raise NotImplementedError


class LateUnpicklableDR(DomainRandomization):
    """Its state holds a lambda from generation 2 on: the run stops at that checkpoint."""

    config_class = UnpicklableDRConfig

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        return {**state, "rule": lambda score: score > 0} if self.generation >= 2 else state


class ScaledPLR(PrioritizedLevelReplay):
    """A level_score that wraps the built-in one (unnamed: the built-in's checks stay)."""

    def level_score(self, student, signal, level):
        score, how = super().level_score(student, signal, level)
        return 2 * score, f"2 x ({how})"


@dataclass(frozen=True)
class NameOnlyConfig(OptimizerConfig):
    """A config class of its own that adds no setting (only its name's default)."""

    name: str = setting("user_curricula:NameOnlyOptimizer")


class NameOnlyOptimizer(NoConfigES):
    config_class = NameOnlyConfig


@dataclass(frozen=True)
class SigmaConfig(OptimizerConfig):
    """A user's optimizer config with a field named as one of ES's, its own default."""

    name: str = setting("user_curricula:SigmaOptimizer")
    sigma: float = setting(0.05, low=0.0)


class SigmaOptimizer(NoConfigES):
    config_class = SigmaConfig


class RenamedPPO(PPO):
    """PPO under a name of its own (a user's subclass, named by import path)."""


class UndecoratedConfig(OptimizerConfig):
    """@dataclass forgotten: `tries` is a class attribute, never a setting."""

    tries: int = 3


class UndecoratedOptimizer(NoConfigES):
    config_class = UndecoratedConfig


@dataclass(frozen=True)
class UnrelatedConfig:
    """A dataclass of its own, not an OptimizerConfig: its settings would go unchecked."""

    name: str = "user_curricula:UnrelatedOptimizer"
    tries: int = 3


class UnrelatedOptimizer(NoConfigES):
    config_class = UnrelatedConfig


def small_mlp(observation_space, action_space, options):
    """A policy kind of the user's own, named by import path: an MLP of 3 units."""
    from coevo.policies.mlp import MLPPolicy

    return MLPPolicy.for_spaces(observation_space, action_space, hidden=(3,))


def one_argument_builder(observation_space):
    """Not a builder's signature (observation_space, action_space, options)."""
    raise AssertionError("never called")


def number_builder(observation_space, action_space, options):
    """A builder that returns something other than a Policy."""
    return 5
