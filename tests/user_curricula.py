"""A curriculum written outside the coevo package, as a user would: named by import path
(`user_curricula:NearbyTasks`) in a config file of the user's own config directory."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from coevo.curricula.base import Decision
from coevo.curricula.single_policy import SinglePolicyConfig, SinglePolicyCurriculum
from coevo.settings import setting
from coevo.tasks.task import Task


@dataclass(frozen=True)
class NearbyTasksConfig(SinglePolicyConfig):
    name: str = setting("user_curricula:NearbyTasks")
    spread: float = setting(0.2, low=0.0, high=1.0, doc="fraction of each range to sample")
    hard_below: float = setting(100.0, doc="a task scoring below this is kept for next time")


class NearbyTasks(SinglePolicyCurriculum):
    """Tasks drawn around the space's initial task, widening nothing; a task on which the
    policy scored below `hard_below` is trained on again next generation."""

    config_class = NearbyTasksConfig
    config: NearbyTasksConfig

    def __init__(self, config, **kwargs):
        super().__init__(config, **kwargs)
        self.hard: list[Task] = []

    def training_tasks(self, rng: np.random.Generator) -> list[Task]:
        tasks = list(self.hard[: self.config.tasks_per_step])
        initial = self.space.initial_task()
        while len(tasks) < self.config.tasks_per_step:
            values = {}
            for param in self.space.params:
                half = self.config.spread * (param.high - param.low) / 2
                values[param.name] = float(
                    np.clip(initial[param.name] + rng.uniform(-half, half), param.low, param.high)
                )
            tasks.append(self.space.task(**values))
        return tasks

    def observe(self, tasks: list[Task], scores: np.ndarray) -> list[Decision]:
        mean = np.nanmean(np.where(np.isfinite(scores), scores, -np.inf), axis=0)
        self.hard = [t for t, s in zip(tasks, mean, strict=True) if s < self.config.hard_below]
        return [
            Decision(
                generation=self.generation,
                kind="level",
                rule="keep_hard",
                outcome="kept" if s < self.config.hard_below else "dropped",
                reason=f"mean score {s:.1f} {'<' if s < self.config.hard_below else '>='} "
                f"hard_below {self.config.hard_below:g}",
                task_id=t.id,
                task=t.to_json(),
                score=float(s),
                threshold=self.config.hard_below,
            )
            for t, s in zip(tasks, mean, strict=True)
        ]

    def extra_state(self) -> dict[str, Any]:
        return {"hard": list(self.hard)}

    def load_extra_state(self, state: dict[str, Any]) -> None:
        self.hard = list(state["hard"])
