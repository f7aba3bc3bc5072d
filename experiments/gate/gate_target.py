"""The gate claim's `direct` arm: training on the target distribution itself (the papers'
"default" learner), through the same machinery as DR.

CurrOT's target is two narrow gates (at -3 and at 3), which no box of bounds holds alone, so
`direct` is not DR on collapsed bounds: it is DR whose every task is drawn from the target
(`coevo.tasks.point_mass_gate.target_task`, the distribution the test set is drawn from).
Named by import path (`curriculum.name=gate_target:TargetTasks`, with experiments/gate/ on the
path, as run.py puts it).
"""

from __future__ import annotations

from dataclasses import dataclass

from coevo.curricula.base import Decision
from coevo.curricula.dr import DomainRandomization, DRConfig
from coevo.curricula.level_sampling import Plan, Student
from coevo.settings import setting
from coevo.tasks.point_mass_gate import target_task

NAME = "gate_target:TargetTasks"


@dataclass(frozen=True)
class TargetTasksConfig(DRConfig):
    """DR's settings; only the tasks' distribution differs."""

    name: str = setting(NAME, doc="this curriculum's import path")


class TargetTasks(DomainRandomization):
    """Every step trains on `tasks_per_step` tasks of the point-mass gate's target."""

    config_class = TargetTasksConfig

    def plan(self, student: Student, decisions: list[Decision]) -> Plan:
        """Train on `tasks_per_step` tasks drawn from the target distribution."""
        tasks = [target_task(self.space, student.rng) for _ in range(self.config.tasks_per_step)]
        return Plan(train=tasks)
