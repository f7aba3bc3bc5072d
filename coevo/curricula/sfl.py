"""`sfl`: Sampling For Learnability.

Rutherford, Beukman, Willi, Lacerda, Hawes, Foerster, "No Regrets: Investigating and
Improving Regret Approximations for Curriculum Discovery", NeurIPS 2024 (reference code:
amacrutherford/sampling-for-learnability, `sfl/train/minigrid_sfl.py`, `jaxnav_sfl.py`).

Every `refresh_every` optimizer steps a student spends one round scoring `levels_sampled`
fresh uniform levels with its current policy (`eval_episodes` episodes each, not trained
on) by learnability, p(1 - p) of the share of episodes that solve the level (the space's
`solved_score`). The `buffer_size` levels of highest learnability replace the whole buffer.
Each optimizer step in between trains on `tasks_per_step` tasks: `buffer_share` of them
drawn uniformly, with replacement, from the buffer, the rest fresh uniform levels.

The rules are module functions (`plan_step`, `score_level`, `rank_levels` and its
`Ranking.verdict`, `training_reason`, `check_buffer`) that this curriculum and
`coevo.curricula.sampler.SFLSampler`, SFL for a trainer of one's own, both call.

Defaults and where each comes from: `SFLConfig` below. The reference's scale (25000 levels
scored every 100 PPO updates, 1000 kept) is far past coevo's default run of 30 generations:
its values are stated per setting, coevo's defaults keep the ratios at a scale such a run
reaches (3 refreshes in 30 rounds). Where coevo differs from the reference code:

- levels are scored by whole evaluation episodes from resets (the policy as it is tested:
  PPO's actor-critic acts deterministically there unless `policy.kwargs.evaluation:
  sample`), where the reference rolls out the sampling policy for a fixed number of steps
  (2000 on MiniGrid) and counts the episodes that ended in it (at most 10): `eval_episodes`
  10 matches that count. On a level kind whose episodes are all alike for a deterministic
  policy (mazes: fixed start, no noise) every learnability is then 0 and the buffer keeps
  the first levels sampled: give such a policy `evaluation: sample`;
- a level whose every episode failed has no learnability and never enters the buffer (the
  reference's mean over no episodes is NaN, which its argsort would rank first);
- ties in learnability keep the order the levels were sampled in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from coevo.curricula.base import Decision
from coevo.curricula.level_sampling import (
    LevelSamplingConfig,
    LevelSamplingCurriculum,
    Outcome,
    Plan,
    Signal,
    Student,
)
from coevo.curricula.level_scores import LevelScore, learnability
from coevo.curricula.task_sampling import uniform_task
from coevo.errors import ConfigError
from coevo.pool.jobs import EpisodeJob, Stored
from coevo.settings import setting
from coevo.tasks.task import Task


@dataclass(frozen=True)
class SFLConfig(LevelSamplingConfig):
    """Settings of Sampling For Learnability (`curriculum.name: sfl`)."""

    name: str = setting("sfl", doc="registry name or package.module:Class")
    levels_sampled: int = setting(
        100,
        low=1,
        doc="fresh levels scored at each refresh (reference: NUM_BATCHES x BATCH_SIZE = "
        "5 x 5000 on MiniGrid, 5 x 1000 on JaxNav)",
    )
    buffer_size: int = setting(
        10,
        low=1,
        doc="levels of highest learnability kept at each refresh (reference NUM_TO_SAVE: "
        "1000 on MiniGrid, 100 on JaxNav)",
    )
    buffer_share: float = setting(
        0.5,
        low=0.0,
        high=1.0,
        doc="share of each step's tasks drawn from the buffer, the rest fresh uniform "
        "levels (reference: NUM_ENVS_FROM_SAMPLED 128 of NUM_ENVS 256)",
    )
    refresh_every: int = setting(
        10,
        low=1,
        doc="optimizer steps between refreshes of the buffer (reference EVAL_FREQ: 100 PPO "
        "updates on MiniGrid and JaxNav)",
    )
    eval_episodes: int = setting(
        10,
        low=1,
        doc="episodes per sampled level (reference: the episodes ending within "
        "ROLLOUT_STEPS 2000, at most 10 counted)",
    )


@dataclass(frozen=True)
class BufferLevel:
    """A level kept at a refresh: its learnability and the episodes it came from."""

    task: Task
    learnability: float
    solved: int
    episodes: int
    refresh: int  # the student's refresh that kept it (1 = the first)
    rank: int  # its rank among that refresh's sampled levels (1 = highest learnability)


@dataclass(frozen=True)
class Scored:
    """One sampled level's learnability, and how it came about (`error`: why it has none)."""

    task: Task
    learnability: float
    solved: int
    episodes: int
    error: str = ""


# -- SFL's rules, shared by the curriculum and `coevo.curricula.sampler.SFLSampler` -----------
def check_buffer(config: SFLConfig) -> None:
    """Refuse a buffer larger than the sample it is kept from (the reference's top-K).

    Raises:
        ConfigError: If `buffer_size` exceeds `levels_sampled`.
    """
    if config.buffer_size > config.levels_sampled:
        raise ConfigError(
            "curriculum.buffer_size",
            f"{config.buffer_size} > curriculum.levels_sampled {config.levels_sampled}: "
            "the buffer keeps the most learnable of the levels sampled at a refresh",
        )


def buffer_draws(config: SFLConfig) -> int:
    """Tasks of a step's `tasks_per_step` drawn from the buffer: buffer_share x
    tasks_per_step, rounded half up (the rest are fresh)."""
    return int(config.buffer_share * config.tasks_per_step + 0.5)


def fresh_levels(space: Any, rng: np.random.Generator, count: int) -> list[Task]:
    """`count` fresh uniform levels of `space`: a refresh's sample, a step's fresh tasks."""
    return [uniform_task(space, rng) for _ in range(count)]


def draw_from_buffer(
    buffer: Sequence[BufferLevel], rng: np.random.Generator, count: int
) -> list[BufferLevel]:
    """`count` levels drawn uniformly, with replacement, from `buffer`."""
    return [buffer[int(i)] for i in rng.integers(0, len(buffer), size=count)]


def plan_step(
    space: Any, config: SFLConfig, buffer: Sequence[BufferLevel], rng: np.random.Generator
) -> tuple[list[BufferLevel], list[Task]]:
    """One optimizer step's tasks: `buffer_draws` levels drawn from the buffer (none while
    it is empty), then the rest of `tasks_per_step` fresh uniform levels."""
    draws = buffer_draws(config) if buffer else 0
    picks = draw_from_buffer(buffer, rng, draws)
    return picks, fresh_levels(space, rng, config.tasks_per_step - draws)


def score_level(task: Task, solved: Sequence[bool], error: str = "") -> Scored:
    """A sampled level's learnability p(1 - p) over its evaluation episodes (`solved`: one
    flag per finished episode); NaN when none finished or `error` says why none counted."""
    if error:
        return Scored(task, float("nan"), 0, 0, error)
    return Scored(task, learnability(solved), sum(solved), len(solved), error)


def training_reason(
    level: BufferLevel | None, picks: Sequence[BufferLevel], tasks: int
) -> tuple[str, str]:
    """A planned training task's rule (`buffer`: it is `level`, else `fresh`) and why, for
    a step of `tasks` tasks whose buffer draws were `picks`."""
    share = f"{len(picks)} of the step's {tasks} tasks drawn from the buffer"
    if level is None:
        return "fresh", f"fresh uniform level ({share})"
    count = sum(pick.task == level.task for pick in picks)
    return "buffer", (
        f"drawn uniformly from the buffer {count} time(s) ({share}): kept at refresh "
        f"{level.refresh}, learnability {level.learnability:.3g} (solved {level.solved} of "
        f"{level.episodes}), rank {level.rank}"
    )


@dataclass(frozen=True)
class Ranking:
    """A refresh's sampled levels ranked by learnability: the new buffer and each level's
    rank (None: no learnability), in sampled order."""

    scored: tuple[Scored, ...]
    ranks: tuple[int | None, ...]
    buffer: tuple[BufferLevel, ...]
    buffer_size: int
    lowest: float  # the lowest learnability kept (NaN: none kept)

    def verdict(self, index: int, head: str, success: str) -> tuple[str, str]:
        """Sampled level `index`'s outcome (kept, dropped, failed) and its row's reason;
        `head` names the refresh, `success` says what counted as solved."""
        scored, rank = self.scored[index], self.ranks[index]
        if rank is None:
            why = "every episode failed" if scored.error else "no episode finished"
            outcome, what = "failed", f"no learnability ({why}): never kept"
        else:
            solved = (
                f"learnability {scored.learnability:.3g}: solved {scored.solved} of "
                f"{scored.episodes} episodes ({success})"
            )
            place = f"rank {rank} of {len(self.scored)} sampled"
            if rank <= self.buffer_size:
                outcome = "kept"
                what = f"{solved}; {place}: in the top {self.buffer_size} kept"
                if scored.learnability == 0.0:  # the reference keeps its top levels whatever
                    what += " (no higher one: ties keep the sampled order)"
            else:
                outcome = "dropped"
                what = (
                    f"{solved}; {place}: below the {len(self.buffer)} kept (lowest kept "
                    f"{self.lowest:.3g})"
                )
        return outcome, f"{head}: fresh uniform level scored without training; {what}"


def rank_levels(scored: Sequence[Scored], buffer_size: int, refresh: int) -> Ranking:
    """Keep the `buffer_size` levels of highest learnability (ties: in sampled order; a
    level without learnability never); `refresh` numbers the refresh (1 = the first)."""
    valid = [i for i, s in enumerate(scored) if np.isfinite(s.learnability)]
    order = sorted(valid, key=lambda i: -scored[i].learnability)  # stable: sampled order
    kept = order[:buffer_size]
    buffer = tuple(
        BufferLevel(
            scored[i].task,
            scored[i].learnability,
            scored[i].solved,
            scored[i].episodes,
            refresh,
            rank,
        )
        for rank, i in enumerate(kept, start=1)
    )
    lowest = scored[kept[-1]].learnability if kept else float("nan")
    rank_of = {i: rank for rank, i in enumerate(order, start=1)}
    ranks = tuple(rank_of.get(i) for i in range(len(scored)))
    return Ranking(tuple(scored), ranks, buffer, buffer_size, lowest)


class SampleForLearnability(LevelSamplingCurriculum):
    """Sampling For Learnability: each student trains on a buffer of the most learnable
    levels of a fresh sample, refreshed every `refresh_every` optimizer steps, mixed with
    fresh uniform levels.
    """

    config_class = SFLConfig
    config: SFLConfig

    def __init__(self, config, **kwargs):
        super().__init__(config, **kwargs)  # check_space: a space without success refused
        self.buffers: dict[int, list[BufferLevel]] = {s.index: [] for s in self.students}
        self.refreshes: dict[int, int] = {s.index: 0 for s in self.students}
        # The student's optimizer steps at its last refresh (None: never refreshed).
        self.refreshed_at: dict[int, int | None] = {s.index: None for s in self.students}

    @classmethod
    def check(cls, config: Any, optimizer: Any) -> None:
        """Refuse a configuration SFL cannot run.

        Raises:
            ConfigError: If the optimizer cannot serve `tasks_per_step`, or `buffer_size`
                exceeds `levels_sampled`.
        """
        super().check(config, optimizer)
        check_buffer(config)

    @classmethod
    def check_space(cls, config: Any, space: Any) -> None:
        """Refuse a task space that cannot say which returns solve a level.

        Raises:
            ConfigError: If the space has no success threshold.
        """
        super().check_space(config, space)
        space.solved(0.0)  # learnability needs success: refused before the pool starts

    def due(self, student: Student) -> bool:
        """Whether `student`'s buffer is due for a refresh: never filled, or `refresh_every` old."""
        last = self.refreshed_at[student.index]
        return last is None or student.steps - last >= self.config.refresh_every

    # -- planning --------------------------------------------------------------------------
    def begin_generation(self) -> None:
        """Reset this generation's refresh and task counts."""
        self._counts = {"refreshes": 0, "buffer_tasks": 0, "fresh_tasks": 0}

    def plan(self, student: Student, decisions: list[Decision]) -> Plan:
        """Score a fresh sample when a refresh is due, else train on buffer and fresh levels."""
        if self.due(student):
            tasks = fresh_levels(self.space, student.rng, self.config.levels_sampled)
            return Plan(score=tasks, note=("refresh", None))
        picks, fresh = plan_step(self.space, self.config, self.buffers[student.index], student.rng)
        return Plan(train=[p.task for p in picks] + fresh, note=("train", picks))

    def _score_jobs(self, student: Student, tasks: Sequence[Task]) -> list[Any]:
        """Whole episodes from resets, whatever the optimizer: learnability needs each
        episode's success, not value predictions (the base asks a critic's own rollouts)."""
        if not tasks:
            return []
        key = self.pool.register(student.theta)
        seed = int(student.rng.integers(0, 2**31 - 1))
        episodes = self.config.eval_episodes
        return [EpisodeJob(Stored(key), task, seed + k) for task in tasks for k in range(episodes)]

    # -- observing -------------------------------------------------------------------------
    def observe(
        self, student: Student, plan: Plan, outcome: Outcome, decisions: list[Decision]
    ) -> list[Task]:
        """Refill the buffer from a scored sample, or record the levels trained on."""
        kind, picks = plan.note
        if kind == "refresh":
            decisions.extend(self.refresh(student, outcome.scored))
        else:
            decisions.extend(self._training_rows(student, plan, picks, outcome))
        return []

    def score(self, signal: Signal) -> Scored:
        """A sampled level's learnability from its finished episodes (NaN: none counted)."""
        if signal.error:
            return score_level(signal.task, [], signal.error)
        return score_level(signal.task, [self.space.solved(r) for r in signal.episode_returns])

    def refresh(self, student: Student, signals: list[Signal]) -> list[Decision]:
        """Replace the student's buffer by the `buffer_size` sampled levels of highest
        learnability (ties: in sampled order); a row per sampled level says why."""
        self._counts["refreshes"] += 1
        self.refreshes[student.index] += 1
        self.refreshed_at[student.index] = student.steps
        number = self.refreshes[student.index]
        ranking = rank_levels(
            [self.score(signal) for signal in signals], self.config.buffer_size, number
        )
        self.buffers[student.index] = list(ranking.buffer)
        head = f"refresh {number} at optimizer step {student.steps}"
        success = f"return >= {self.space.solved_score:g}"
        rows = []
        for i, scored in enumerate(ranking.scored):
            outcome, reason = ranking.verdict(i, head, success)
            rows.append(
                self.decision(
                    student,
                    scored.task,
                    "sample_for_learnability",
                    outcome,
                    reason,
                    score=scored.learnability,
                    threshold=ranking.lowest,
                    error=scored.error,
                )
            )
        return rows

    def _training_rows(
        self, student: Student, plan: Plan, picks: list[BufferLevel], outcome: Outcome
    ) -> list[Decision]:
        """A row per task trained on: from the buffer (and why it is there), fresh, or
        kept by a PPO stream whose episode went on from an earlier step."""
        from_buffer = {p.task: p for p in picks}
        planned = set(plan.train)
        self._counts["buffer_tasks"] += len(picks)
        self._counts["fresh_tasks"] += len(plan.train) - len(picks)
        rows = []
        for signal in outcome.trained:
            if signal.task in planned:
                level = from_buffer.get(signal.task)
                rule, why = training_reason(level, picks, len(plan.train))
            else:
                rule = "continued"
                why = "its episode went on from an earlier step (a stream keeps its level)"
            rows.append(
                self.decision(
                    student,
                    signal.task,
                    rule,
                    outcome.outcome_of(signal),
                    f"{why}; training return {signal.mean_return:.4g}",
                    score=signal.mean_return,
                    error=signal.error,
                )
            )
        return rows

    # -- tables and state ------------------------------------------------------------------
    def curriculum_summary(self) -> dict[str, Any]:
        """Refresh and task counts, mean buffer size and learnability."""
        sizes = [len(b) for b in self.buffers.values()]
        scores = [lv.learnability for b in self.buffers.values() for lv in b]
        return {
            **self._counts,
            "buffer_size": float(np.mean(sizes)),
            "buffer_mean_learnability": float(np.mean(scores)) if scores else float("nan"),
            "level_score": LevelScore.LEARNABILITY.value,
        }

    def student_rows(self, student: Student) -> list[dict[str, Any]]:
        """The student's buffered levels, ranked by learnability."""
        return [
            {
                "rank": level.rank,
                "task_id": level.task.id,
                **{f"task.{k}": v for k, v in level.task.params},
                "learnability": level.learnability,
                "solved": level.solved,
                "episodes": level.episodes,
                "refresh": level.refresh,
            }
            for level in self.buffers[student.index]
        ]

    def curriculum_state(self) -> dict[str, Any]:
        """The buffers, refresh counts and refresh times."""
        return {
            "buffers": {i: list(b) for i, b in self.buffers.items()},
            "refreshes": dict(self.refreshes),
            "refreshed_at": dict(self.refreshed_at),
        }

    def load_curriculum_state(self, state: dict[str, Any]) -> None:
        """Restore what `curriculum_state` returned."""
        self.buffers = {int(i): list(b) for i, b in state["buffers"].items()}
        self.refreshes = {int(i): n for i, n in state["refreshes"].items()}
        self.refreshed_at = {int(i): n for i, n in state["refreshed_at"].items()}

    def progress_line(self, result, total: int) -> str:
        """One console line of a generation's refreshes, tasks, buffer and best score."""
        s = result.summary
        return (
            f"gen {result.generation:>3}/{total} | refreshes {s['refreshes']:>2} | tasks "
            f"buffer {s['buffer_tasks']:>2} fresh {s['fresh_tasks']:>2} | buffer "
            f"{s['buffer_size']:4.0f} learnability {s['buffer_mean_learnability']:6.3g} | "
            f"best {s['best_score']:7.1f} | {s['wall_s']:5.1f}s"
        )
