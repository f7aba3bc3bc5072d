"""The base of curricula that train one policy (or a few seeds of it) on tasks they pick:
domain randomisation, PLR, ACCEL, ALP-GMM, a user's rule.

A subclass only decides which tasks to train on (`training_tasks`) and, optionally, what to
make of the scores the policy then gets on them (`observe`); this class trains with the
run's optimizer (every learner's step in one pool call, via `training.train`), evaluates,
writes the summary and decision rows, checkpoints, and hands the policies to test sets.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from coevo.curricula.base import (
    Curriculum,
    CurriculumConfig,
    Decision,
    GenerationResult,
    PoliciesForTesting,
)
from coevo.curricula.training import Learner, train
from coevo.settings import setting
from coevo.tasks.task import Task

if TYPE_CHECKING:
    from coevo.optimizers.base import Optimizer
    from coevo.pool import EvaluationPool
    from coevo.tasks.task import TaskSpace


@dataclass(frozen=True)
class SinglePolicyConfig(CurriculumConfig):
    generations: int = setting(30, low=1, doc="generations to run")
    policies: int = setting(1, low=1, doc="independent learners (seeds) trained side by side")
    optimizer_steps: int = setting(2, low=0, doc="optimizer steps per learner per generation")
    tasks_per_step: int = setting(4, low=1, doc="tasks a step's episodes are spread over")
    eval_episodes: int = setting(3, low=1, doc="episodes behind every score")


class SinglePolicyCurriculum(Curriculum):
    """One policy (or `policies` seeds) trained on the tasks the subclass picks."""

    config_class = SinglePolicyConfig
    config: SinglePolicyConfig

    def __init__(
        self,
        config: SinglePolicyConfig,
        *,
        space: TaskSpace,
        pool: EvaluationPool,
        optimizer: Optimizer,
        seed: int = 0,
    ):
        super().__init__(config, space=space, pool=pool, optimizer=optimizer, seed=seed)
        self.rng = np.random.default_rng(seed)
        self.learners: list[Learner] = []
        for _ in range(config.policies):
            theta = pool.policy.init(self.rng)
            self.learners.append(Learner(theta, optimizer.init_state(theta, self.rng)))
        self.last_tasks: list[Task] = []
        self.last_scores = np.zeros((config.policies, 0))

    # -- what a subclass decides -------------------------------------------------------------
    @abstractmethod
    def training_tasks(self, rng: np.random.Generator) -> list[Task]:
        """The `tasks_per_step` tasks of this generation's training steps."""

    def observe(self, tasks: list[Task], scores: np.ndarray) -> list[Decision]:
        """Called after evaluation with `scores[learner, task]` (mean return, NaN if it
        failed); returns decision rows of the curriculum's own (e.g. a level kept or
        replaced). Default: nothing."""
        return []

    def extra_state(self) -> dict[str, Any]:
        """The subclass's own state for checkpoints (e.g. a level buffer)."""
        return {}

    def load_extra_state(self, state: dict[str, Any]) -> None:
        pass

    # -- the generation ----------------------------------------------------------------------
    def run_generation(self) -> GenerationResult:
        cfg = self.config
        tasks = self.training_tasks(self.rng)
        for task in tasks:
            self.space.check(task)
        train_mean = train(
            self.pool,
            self.optimizer,
            self.learners,
            [tasks] * len(self.learners),
            cfg.optimizer_steps,
            self.rng,
        )
        seed = int(self.rng.integers(0, 2**31 - 1))
        pairs = [(lr.theta, task) for lr in self.learners for task in tasks]
        returns, errors = self.pool.evaluate_detailed(pairs, cfg.eval_episodes, seed)
        scores = returns.mean(axis=1).reshape(len(self.learners), len(tasks))
        self.last_tasks, self.last_scores = tasks, scores
        decisions = [
            Decision(
                generation=self.generation,
                kind="level",
                rule="train",
                outcome="trained",
                reason=f"trained on; learner {i} scores {scores[i, j]:.1f}",
                pair_id=i,
                task_id=task.id,
                task=task.to_json(),
                score=float(scores[i, j]),
                error=errors.get(i * len(tasks) + j, ""),
            )
            for i in range(len(self.learners))
            for j, task in enumerate(tasks)
        ]
        decisions += self.observe(tasks, scores)
        finite = scores[np.isfinite(scores)]
        summary = {
            "policies": len(self.learners),
            "tasks": len(tasks),
            "train_mean_return": train_mean,
            "best_score": float(finite.max()) if finite.size else float("nan"),
            "median_score": float(np.median(finite)) if finite.size else float("nan"),
        }
        return GenerationResult(self.generation, summary, decisions)

    # -- protocol ----------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "rng": self.rng.bit_generator.state,
            "learners": self.learners,
            "last_tasks": self.last_tasks,
            "last_scores": self.last_scores,
            "extra": self.extra_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.generation = state["generation"]
        self.rng.bit_generator.state = state["rng"]
        self.learners = state["learners"]
        self.last_tasks = state["last_tasks"]
        self.last_scores = state["last_scores"]
        self.load_extra_state(state["extra"])

    def population_frame(self) -> pd.DataFrame:
        """The last generation's tasks and each learner's score on them."""
        rows = []
        for j, task in enumerate(self.last_tasks):
            row: dict[str, Any] = {"task_id": task.id, **{f"task.{k}": v for k, v in task.params}}
            for i in range(len(self.learners)):
                row[f"score_{i}"] = float(self.last_scores[i, j])
            rows.append(row)
        return pd.DataFrame(rows)

    def policies_for_testing(self) -> PoliciesForTesting:
        return PoliciesForTesting(
            {f"policy_{i}": lr.theta for i, lr in enumerate(self.learners)}, best_of=False
        )
