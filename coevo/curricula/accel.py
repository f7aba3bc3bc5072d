"""`accel`: ACCEL, PLR⊥ plus edits of the levels it replays.

Parker-Holder, Jiang, Dennis, Samvelyan, Foerster, Grefenstette, Rocktäschel, "Evolving
Curricula with Regret-Based Environment Design", ICML 2022. After each replay step, every
replayed level (high score: high estimated regret) is edited `num_edits` times by the task
space's own mutator (`TaskSpace.mutate`, the one POET uses), the edited level is evaluated
with the updated policy, scored, and offered to the buffer like any new level. Each level
records its parent and its edits since a base level (population.csv `parent_id`, `edits`).
New (non-replay) levels default to ACCEL's "easy" base levels: the space's initial task
edited `num_edits` times.
"""

from __future__ import annotations

from dataclasses import dataclass

from coevo.curricula.base import Decision
from coevo.curricula.level_buffer import Level, Pick
from coevo.curricula.level_editor import edit_level
from coevo.curricula.level_sampling import Plan, Signal, Student
from coevo.curricula.plr import NEW_LEVELS, PLRConfig, PrioritizedLevelReplay
from coevo.settings import setting
from coevo.tasks.task import Task


@dataclass(frozen=True)
class ACCELConfig(PLRConfig):
    """ACCEL settings: PLR⊥'s plus how often to replay and how to edit replayed levels."""

    name: str = setting("accel", doc="registry name or package.module:Class")
    replay_prob: float = setting(
        0.8, low=0.0, high=1.0, doc="P(replay) once warm (dcd ACCEL MiniGrid config: 0.8)"
    )
    num_edits: int = setting(
        1,
        low=1,
        doc="TaskSpace.mutate calls per edit (dcd: 3-5 single-parameter edits; one coevo "
        "mutation already moves every parameter by up to ±step)",
    )
    new_levels: str = setting(
        "easy", choices=NEW_LEVELS, doc="easy: ACCEL's base levels (dcd base_levels: easy)"
    )


class ACCEL(PrioritizedLevelReplay):
    """ACCEL (Parker-Holder et al. 2022): PLR⊥ that also edits the levels it replays with the
    space's mutation, so complexity grows from easy levels.

    Takes the same arguments as `DomainRandomization`, with an `ACCELConfig`.
    """

    config_class = ACCELConfig
    config: ACCELConfig

    def __init__(self, config, **kwargs):
        super().__init__(config, **kwargs)
        self._parents: dict[int, dict[Task, Level]] = {s.index: {} for s in self.students}

    def begin_generation(self) -> None:
        super().begin_generation()
        self._counts["edits_tried"] = 0

    def after_replay(
        self, student: Student, picks: list[Pick], decisions: list[Decision]
    ) -> list[Task]:
        parents: dict[Task, Level] = {}
        for pick in picks:
            if any(level is pick.level for level in parents.values()):
                continue  # a level drawn twice is edited once
            child = edit_level(self.space, pick.level.task, self.config.num_edits, student.rng)
            parents.setdefault(child, pick.level)
        self._parents[student.index] = parents
        return list(parents)

    def observe_followup(
        self, student: Student, plan: Plan, signals: list[Signal], decisions: list[Decision]
    ) -> None:
        buffer = self.buffers[student.index]
        parents = self._parents.pop(student.index)
        self._note_returns(student, signals)
        for signal in signals:
            parent = parents[signal.task]
            self._counts["edits_tried"] += 1
            score, how = self.level_score(student, signal, None)
            edits = parent.edits + self.config.num_edits
            next_id = buffer.next_id
            level, offer_reason = buffer.offer(
                signal.task,
                score,
                self.generation,
                parent_id=parent.level_id,
                edits=edits,
                mean_return=signal.mean_return,
            )
            offered = self._count_offer(level, buffer.next_id > next_id)
            decisions.append(
                self.decision(
                    student,
                    signal.task,
                    "edit",
                    offered,
                    f"new level from mutation of L{parent.level_id} ({self.config.num_edits} "
                    f"edit(s), {edits} since a base level); {how}; {offer_reason}",
                    parent_id=parent.level_id,
                    score=score,
                    error=signal.error,
                )
            )
