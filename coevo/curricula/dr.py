"""`dr`: domain randomisation, the baseline every curriculum paper reports.

Every optimizer step trains on `tasks_per_step` tasks drawn uniformly from the task space
(Tobin et al. 2017, "Domain Randomization for Transferring Deep Neural Networks from
Simulation to the Real World"; in dcd it is `ued_algo: domain_randomization` with PLR off).
Integer-grid parameters stay on their grid; intervals keep low ≤ high.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coevo.curricula.base import Decision
from coevo.curricula.level_sampling import (
    LevelSamplingConfig,
    LevelSamplingCurriculum,
    Outcome,
    Plan,
    Student,
)
from coevo.curricula.task_sampling import uniform_task
from coevo.settings import setting
from coevo.tasks.task import Task


@dataclass(frozen=True)
class DRConfig(LevelSamplingConfig):
    """Domain randomisation settings: those every single-policy curriculum shares, plus the
    length of the task history kept for `population.csv`.
    """

    name: str = setting("dr", doc="registry name or package.module:Class")
    history: int = setting(1000, low=0, doc="tasks kept per student for population.csv (0: all)")


class DomainRandomization(LevelSamplingCurriculum):
    """Domain randomisation (Tobin et al. 2017): every step trains on `tasks_per_step` tasks
    drawn uniformly within the space's bounds. The baseline for every other curriculum.

    Built as `DR(pool, optimizer=ES(...), seed=0, **settings)`, the settings being
    `DRConfig`'s fields, or as `DomainRandomization(config, space=, pool=, optimizer=,
    seed=0, initial_theta=None)`: the space is the pool's; `initial_theta` is what every
    policy starts from (default: the policy's init). A bad setting raises `ConfigError`.
    Arguments of the wrong kind raise `TypeError`.
    """

    config_class = DRConfig
    config: DRConfig

    def __init__(self, config, **kwargs):
        super().__init__(config, **kwargs)
        # (generation, task, mean training return) per student, newest last
        self.history: dict[int, list[tuple[int, Task, float]]] = {
            s.index: [] for s in self.students
        }

    def begin_generation(self) -> None:
        self._tasks_now = 0

    def plan(self, student: Student, decisions: list[Decision]) -> Plan:
        tasks = [uniform_task(self.space, student.rng) for _ in range(self.config.tasks_per_step)]
        return Plan(train=tasks)

    def observe(
        self, student: Student, plan: Plan, outcome: Outcome, decisions: list[Decision]
    ) -> list[Task]:
        history = self.history[student.index]
        for signal in outcome.trained:
            history.append((self.generation, signal.task, signal.mean_return))
            self._tasks_now += 1
            decisions.append(
                self.decision(
                    student,
                    signal.task,
                    "sample",
                    outcome.outcome_of(signal),
                    f"uniform task from the space; training return {signal.mean_return:.4g}",
                    score=signal.mean_return,
                    error=signal.error,
                )
            )
        if self.config.history and len(history) > self.config.history:
            del history[: len(history) - self.config.history]
        return []

    def curriculum_summary(self) -> dict[str, Any]:
        return {"tasks_trained": self._tasks_now}

    def student_rows(self, student: Student) -> list[dict[str, Any]]:
        return [
            {
                "generation": g,
                "task_id": t.id,
                **{f"task.{k}": v for k, v in t.params},
                "train_return": r,
            }
            for g, t, r in self.history[student.index]
        ]

    def curriculum_state(self) -> dict[str, Any]:
        return {"history": {k: list(v) for k, v in self.history.items()}}

    def load_curriculum_state(self, state: dict[str, Any]) -> None:
        self.history = {int(k): list(v) for k, v in state["history"].items()}
