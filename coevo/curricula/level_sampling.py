"""The shared loop of the level-sampling curricula (dr, plr, accel, alp_gmm).

One policy is trained on the tasks the curriculum picks; `policies` > 1 trains that many
independent policies side by side (each with its own generator, level buffer or task
history), their work sent to the pool in one call. A generation is `rounds` rounds; in each
round every student gets a `Plan`:

- `train`: tasks for one optimizer step (ES spreads its perturbations over them);
- `score`: tasks to evaluate with the current policy, without training (PLR⊥'s new levels).

All students' optimizer jobs and evaluation jobs go to the pool in ONE `dispatch` call; each
student's results go back to its curriculum (`observe`), which may ask for evaluations of
further tasks with the updated policy (ACCEL's edited levels: a second call per round).

Student i draws from its own generator seeded with (seed, i), so student 0 gives the same
results whether it runs alone or beside others.

It is also the base for a user's own curriculum: only `plan` is required (which tasks each
student trains on, or scores); every other hook has a default (`observe` writes a "trained"
row per task; no summary columns, population rows or state of its own). See
`tests/user_curricula.py` for a complete one, named by import path from a config file.

Level signals. A curriculum sees, for each task, the mean return of the episodes on it and
the raw results. Results that carry per-step `rewards` and `values` (PPO's rollout streams)
let PLR compute value-based scores. An optimizer has a critic (`has_critic`) when it says so
(`provides_values = True`) or, failing that, when its policy has a value head (PPO keeps
its actor-critic spec as `optimizer.policy`, whose `values` method the streams come from).
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from coevo.batches import Work
from coevo.curricula.base import (
    Curriculum,
    CurriculumConfig,
    Decision,
    GenerationResult,
    PoliciesForTesting,
)
from coevo.curricula.training import mean_extras, tell_checked
from coevo.errors import ConfigError
from coevo.optimizers.base import StepRecord
from coevo.optimizers.ppo_streams import level_segments, without_streams
from coevo.pool.jobs import EpisodeJob, Stored
from coevo.pool.results import error_line
from coevo.pool.trajectories import Stream, TrajectoryJob
from coevo.settings import setting
from coevo.tasks.task import Task

log = logging.getLogger("coevo.curricula")


@dataclass(frozen=True)
class LevelSamplingConfig(CurriculumConfig):
    """Settings every single-policy curriculum shares."""

    policies: int = setting(1, low=1, doc="independent policies (seeds) trained side by side")
    rounds: int = setting(
        1, low=1, doc="rounds per generation: one optimizer step or level evaluation each"
    )
    tasks_per_step: int = setting(
        4,
        low=1,
        doc="tasks per optimizer step or per batch of new levels (dcd: one per parallel "
        "env, 16-32 with PPO; ES spreads its mirrored pairs over them, so keep it at most "
        "optimizer.population)",
    )
    eval_episodes: int = setting(2, low=1, doc="episodes per task when scoring without training")


@dataclass
class Student:
    """One policy being trained: parameters, optimizer state and its own generator."""

    index: int
    theta: np.ndarray
    state: Any
    rng: np.random.Generator
    steps: int = 0

    @property
    def name(self) -> str:
        """The student's name in reports: `policy_<index>`."""
        return f"policy_{self.index}"


@dataclass(frozen=True)
class Signal:
    """What the episodes on one task said: their mean return and the raw results."""

    task: Task
    mean_return: float
    results: tuple[Any, ...] = ()
    error: str = ""
    # The return of each episode that ended on the task (a stream's first one counts the
    # steps its continuation brought from earlier rollouts), in order.
    episode_returns: tuple[float, ...] = ()
    jobs: tuple[Any, ...] = ()  # the job of each result (a stream's index, continuation)
    trained: bool = False  # from a training step (its streams go on), not an evaluation

    def trajectories(self) -> list[Any]:
        """The results that carry per-step rewards and value predictions, if any."""
        return [r for r in self.results if hasattr(r, "values") and hasattr(r, "rewards")]


@dataclass
class Plan:
    """A student's work for one round, and the curriculum's note on why."""

    train: list[Task] = field(default_factory=list)
    score: list[Task] = field(default_factory=list)
    note: Any = None


@dataclass
class Outcome:
    """What came back for a plan: per-task signals of training and of scoring.

    `trained` holds only the training tasks the optimizer put jobs on; `unplayed` the others
    (an optimizer that plays fewer tasks than it is given, e.g. all its jobs on the first):
    the base writes their rows ("not_played"), and they are not trained, scored or counted.
    """

    trained: list[Signal]
    scored: list[Signal]
    step: StepRecord | None = None  # the optimizer's record of its step, when one was taken
    unplayed: list[Task] = field(default_factory=list)

    @property
    def training_outcome(self) -> str:
        """A training task's row outcome: `trained`, or `not_trained` when the step kept
        the weights (every job failed, a refused update; its `optimizer` row says why)."""
        return "not_trained" if self.step is not None and not self.step.applied else "trained"

    def outcome_of(self, signal: Signal) -> str:
        """One training task's row outcome: `failed` when every episode on it failed (it
        taught the step nothing, whatever the other tasks did), else `training_outcome`."""
        if signal.error and not np.isfinite(signal.mean_return):
            return "failed"
        return self.training_outcome


def warn_if_run_too_short(config: Any, needed: int, what: str, fix: str) -> None:
    """Warn when a run's tasks (at most generations x rounds x tasks_per_step per policy)
    are fewer than `needed` for the curriculum to start doing `what` (e.g. PLR's first
    replay). A warning, not a refusal: a short run may be resumed with more generations."""
    most = config.generations * config.rounds * config.tasks_per_step
    if most < needed:
        log.warning(
            "%s: %s (%d), but %d generations x %d rounds x %d tasks_per_step give at most %d "
            "tasks: it would never start. %s, or run more generations",
            config.name,
            what,
            needed,
            config.generations,
            config.rounds,
            config.tasks_per_step,
            most,
            fix,
        )


def has_critic(optimizer: Any) -> bool:
    """Does this optimizer's rollout come with value predictions? (See the module doc.)"""
    said = getattr(optimizer, "provides_values", None)
    if said is not None:
        return bool(said)
    return callable(getattr(getattr(optimizer, "policy", None), "values", None))


def result_return(result: Any) -> float:
    """An evaluation result's return: an episode's `ret`, or a stream's mean return over the
    episodes that ended in it (NaN if none did, or if it failed)."""
    if getattr(result, "error", ""):
        return float("nan")
    if hasattr(result, "ret"):
        return float(result.ret)
    done = int(getattr(result, "episodes_done", 0))
    return float(result.episode_return_sum) / done if done else float("nan")


def finished_returns(job: Any, result: Any) -> list[float]:
    """The returns of the episodes that ended in one result: an episode's `ret`, or each
    episode a stream finished (split where it terminated or was truncated; the first one
    adds the return its continuation brought). Nothing for a failed result."""
    if getattr(result, "error", ""):
        return []
    if hasattr(result, "ret"):
        return [float(result.ret)]
    if not hasattr(result, "terminated"):
        return []
    ahead = getattr(job, "continuation", None)
    running = float(ahead.episode_return) if ahead is not None else 0.0
    returns = []
    ends = np.asarray(result.terminated, bool) | np.asarray(result.truncated, bool)
    for reward, ended in zip(np.asarray(result.rewards, float), ends, strict=True):
        running += float(reward)
        if ended:
            returns.append(running)
            running = 0.0
    return returns


def split_by_level(jobs: Sequence[Any], results: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """Jobs and results with each PPO stream that ran on several levels split into its
    per-level segments (`level_segments`); other results as they are."""
    split_jobs, split_results = [], []
    for job, result in zip(jobs, results, strict=True):
        if isinstance(job, TrajectoryJob) and isinstance(result, Stream):
            for part, steps in level_segments(job, result):
                split_jobs.append(part)
                split_results.append(steps)
        else:
            split_jobs.append(job)
            split_results.append(result)
    return split_jobs, split_results


def _signals(
    tasks: Sequence[Task], jobs: Sequence[Any], results: Sequence[Any], trained: bool = False
) -> list[Signal]:
    """Group results by the task of their job, in the order of `tasks`."""
    by_task: dict[Task, list[Any]] = {task: [] for task in tasks}
    jobs_of: dict[Task, list[Any]] = {task: [] for task in tasks}
    finished: dict[Task, list[float]] = {task: [] for task in tasks}
    for job, result in zip(jobs, results, strict=True):
        by_task.setdefault(job.task, []).append(result)
        jobs_of.setdefault(job.task, []).append(job)
        finished.setdefault(job.task, []).extend(finished_returns(job, result))
    signals = []
    for task in dict.fromkeys(tasks):
        own = by_task[task]
        returns = np.array([result_return(r) for r in own], dtype=float)
        errors = [getattr(r, "error", "") for r in own if getattr(r, "error", "")]
        finite = returns[np.isfinite(returns)]
        # A failed episode makes the task's return NaN: failures are never scores. (A stream
        # in which no episode ended has no return and is left out of the mean.)
        mean = float(finite.mean()) if finite.size and not errors else float("nan")
        # The error's own line, as POET's rows give it (a worker's text is a traceback).
        error = error_line(errors[0]) if errors else ""
        signals.append(
            Signal(
                task,
                mean,
                tuple(own),
                error,
                tuple(finished[task]),
                tuple(jobs_of[task]),
                trained,
            )
        )
    return signals


class LevelSamplingCurriculum(Curriculum):
    """Base of dr, plr, accel and alp_gmm: subclasses plan, observe and keep their state."""

    config_class = LevelSamplingConfig
    config: LevelSamplingConfig

    def __init__(self, config, **parts: Any):
        """`parts`: the base's space, pool, optimizer, seed and initial_theta."""
        super().__init__(config, **parts)
        self.students: list[Student] = []
        for index in range(config.policies):
            rng = np.random.default_rng([self.seed, index])
            theta = self.new_theta(rng)
            state = self.optimizer.init_state(theta, rng)
            self.students.append(Student(index, theta, state, rng))
        self._last_returns: dict[int, float] = {}

    @classmethod
    def check(cls, config: Any, optimizer: Any) -> None:
        """Refuse a configuration the optimizer cannot serve.

        Args:
            config: The curriculum's configuration.
            optimizer: The optimizer it will use.

        Raises:
            ConfigError: If `tasks_per_step` exceeds the optimizer's task capacity.
        """
        # ES and ARS give each task whole mirrored pairs (pair i on task i mod n): more
        # tasks than pairs would leave some unplayed.
        capacity = optimizer.task_capacity()
        if capacity is not None and config.tasks_per_step > capacity[0]:
            units, setting = capacity
            raise ConfigError(
                "curriculum.tasks_per_step",
                f"{config.tasks_per_step} > {setting} {units}; allowed: 1..{units}",
            )

    # -- what subclasses implement (only `plan` is required) -------------------------------
    @abstractmethod
    def plan(self, student: Student, decisions: list[Decision]) -> Plan:
        """This round's work for `student`: tasks to train on and/or to score."""

    def observe(
        self, student: Student, plan: Plan, outcome: Outcome, decisions: list[Decision]
    ) -> list[Task]:
        """Take the round's signals; returns tasks to score with the updated policy.
        Default: a "trained" decision row per training task, nothing to score."""
        for signal in outcome.trained:
            decisions.append(
                self.decision(
                    student,
                    signal.task,
                    "train",
                    outcome.outcome_of(signal),
                    f"training return {signal.mean_return:.4g}",
                    score=signal.mean_return,
                    error=signal.error,
                )
            )
        return []

    def observe_followup(
        self, student: Student, plan: Plan, signals: list[Signal], decisions: list[Decision]
    ) -> None:
        """Signals of the tasks `observe` asked for (ACCEL's edited levels)."""

    def curriculum_summary(self) -> dict[str, Any]:
        """This generation's curriculum columns for summary.csv (default: none)."""
        return {}

    def student_rows(self, student: Student) -> list[dict[str, Any]]:
        """population.csv rows of one student (its level buffer or task history).
        Default: one row with its optimizer steps."""
        return [{"optimizer_steps": student.steps}]

    def curriculum_state(self) -> dict[str, Any]:
        """The curriculum's own state for checkpoints (default: none)."""
        return {}

    def load_curriculum_state(self, state: dict[str, Any]) -> None:
        """Restore what `curriculum_state` returned."""

    # -- the loop ------------------------------------------------------------------------------
    def run_generation(self) -> Work[GenerationResult]:
        """One generation: each round, plan every student's tasks, play them and update.

        Returns:
            Work that yields the pool's batches and returns the generation's result.
        """
        decisions: list[Decision] = []
        self._generation_returns: dict[int, list[float]] = {s.index: [] for s in self.students}
        self._tasks_played = 0
        self._step_records: list[Any] = []
        self.begin_generation()
        for _ in range(self.config.rounds):
            plans = [self.plan(student, decisions) for student in self.students]
            outcomes = yield from self._execute(plans)
            for student, outcome in zip(self.students, outcomes, strict=True):
                step = outcome.step
                if step is not None and step.reason:  # as POET writes it: e.g. weights kept
                    decisions.append(
                        self.decision(student, None, "optimizer", step.outcome, step.reason)
                    )
                decisions.extend(self._unplayed_rows(student, outcome))
            followups = [
                self.observe(student, plan, outcome, decisions)
                for student, plan, outcome in zip(self.students, plans, outcomes, strict=True)
            ]
            if any(followups):
                scored = yield from self._score_many(followups)
                self._tasks_played += sum(len(signals) for signals in scored)
                for student, plan, signals in zip(self.students, plans, scored, strict=True):
                    if signals:
                        self.observe_followup(student, plan, signals, decisions)
        means = {
            index: float(np.mean(values)) if values else float("nan")
            for index, values in self._generation_returns.items()
        }
        self._last_returns.update(means)
        finite = [v for v in means.values() if np.isfinite(v)]
        summary = {
            "policies": len(self.students),
            "tasks": self._tasks_played,  # distinct tasks each policy played, summed
            "optimizer_steps": int(sum(s.steps for s in self.students)),
            **self.curriculum_summary(),
            "best_score": max(finite) if finite else float("nan"),
            "median_score": float(np.median(finite)) if finite else float("nan"),
            **mean_extras(self._step_records),  # e.g. PPO's losses, KL and clip fraction
        }
        return GenerationResult(self.generation, summary, decisions)

    def begin_generation(self) -> None:
        """Reset per-generation counters (subclasses extend)."""

    def _unplayed_rows(self, student: Student, outcome: Outcome) -> list[Decision]:
        """A row per training task the optimizer put no job on: NaN is no training return,
        and the task was not trained on (it read "trained, return nan")."""
        if not outcome.unplayed:
            return []
        played = len(outcome.trained)
        total = played + len(outcome.unplayed)
        reason = (
            f"no episodes: the optimizer put no job on this task (its jobs went to {played} of "
            f"the step's {total} tasks; PPO's streams keep the tasks of their unfinished "
            "episodes, and an optimizer that plays fewer tasks per step declares "
            "Optimizer.task_capacity(), so that a larger curriculum.tasks_per_step is refused)"
        )
        return [
            self.decision(student, task, "optimizer", "not_played", reason)
            for task in outcome.unplayed
        ]

    def _execute(self, plans: list[Plan]) -> Work[list[Outcome]]:
        """Every student's optimizer jobs and evaluation jobs in one batch."""
        jobs: list[Any] = []
        spans = []
        for student, plan in zip(self.students, plans, strict=True):
            asked = None
            start = len(jobs)
            if plan.train:
                asked = self.optimizer.ask(
                    student.theta, student.state, plan.train, student.rng, self.pool.register
                )
                jobs.extend(asked.jobs)
            middle = len(jobs)
            jobs.extend(self._score_jobs(student, plan.score))
            spans.append((asked, start, middle, len(jobs)))
        results = (yield jobs) if jobs else []
        # Every student's step in one tell_many (PPO updates them in one batched call).
        training = [
            (student, asked, results[start:middle])
            for student, (asked, start, middle, _) in zip(self.students, spans, strict=True)
            if asked is not None
        ]
        steps = tell_checked(
            self.optimizer, [(s.theta, s.state, asked, own) for s, asked, own in training]
        )
        told_by_student = {id(s): told for (s, _, _), told in zip(training, steps, strict=True)}
        outcomes = []
        for student, plan, (asked, start, middle, end) in zip(
            self.students, plans, spans, strict=True
        ):
            trained: list[Signal] = []
            unplayed: list[Task] = []
            step = None
            if asked is not None:
                own = results[start:middle]
                told = told_by_student[id(student)]
                # Per level: a PPO stream takes a new level at each reset, so its steps
                # are split where its level changes (the learner trains on whole streams).
                level_jobs, level_results = split_by_level(asked.jobs, own)
                played = {job.task for job in level_jobs}
                unplayed = [task for task in dict.fromkeys(plan.train) if task not in played]
                # The planned tasks played, then the levels of earlier steps whose streams
                # kept them until their episodes ended (PPO: a new level only at a reset).
                planned = set(plan.train)
                kept = [job.task for job in level_jobs if job.task not in planned]
                trained = _signals(
                    [task for task in plan.train if task in played] + kept,
                    level_jobs,
                    level_results,
                    trained=True,
                )
                student.theta, student.state = told.theta, told.state
                student.steps += 1
                step = told.record
                self._step_records.append(told.record)
            scored = _signals(plan.score, jobs[middle:end], results[middle:end])
            self._tasks_played += len(trained) + len(scored)
            for signal in (*trained, *scored):
                if np.isfinite(signal.mean_return):
                    self._generation_returns[student.index].append(signal.mean_return)
            outcomes.append(Outcome(trained, scored, step, unplayed))
        return outcomes

    def _score_jobs(self, student: Student, tasks: Sequence[Task]) -> list[Any]:
        """Jobs that evaluate the current policy on `tasks` without training it.

        An optimizer with a critic (`provides_values`) is asked for its own jobs (e.g. PPO's
        rollout streams, which carry value predictions) and never told the results: the
        rollouts dcd scores levels with, minus the update. Otherwise: plain episodes.
        """
        if not tasks:
            return []
        if has_critic(self.optimizer):
            # From resets on the tasks given: the training streams' unfinished episodes are
            # neither continued nor displacing the levels to score.
            asked = self.optimizer.ask(
                student.theta,
                without_streams(student.state),
                list(tasks),
                student.rng,
                self.pool.register,
            )
            return list(asked.jobs)
        key = self.pool.register(student.theta)
        seed = int(student.rng.integers(0, 2**31 - 1))
        episodes = self.config.eval_episodes
        return [EpisodeJob(Stored(key), task, seed + k) for task in tasks for k in range(episodes)]

    def _score_many(self, tasks_per_student: list[list[Task]]) -> Work[list[list[Signal]]]:
        jobs_per_student = [
            self._score_jobs(student, tasks)
            for student, tasks in zip(self.students, tasks_per_student, strict=True)
        ]
        batch = [job for jobs in jobs_per_student for job in jobs]
        results = (yield batch) if batch else []
        out, offset = [], 0
        for tasks, jobs in zip(tasks_per_student, jobs_per_student, strict=True):
            own = results[offset : offset + len(jobs)]
            offset += len(jobs)
            out.append(_signals(tasks, jobs, own) if tasks else [])
        return out

    # -- helpers for subclasses ----------------------------------------------------------------
    def decision(
        self, student: Student, task: Task | None, rule: str, outcome: str, reason: str, **fields
    ) -> Decision:
        """A level decision of this generation about `student`.

        Args:
            student: The student it concerns.
            task: The level it concerns, if any.
            rule: The rule that decided.
            outcome: What was decided.
            reason: Why, in words.
            **fields (Any): Further Decision fields.

        Returns:
            The decision.
        """
        return Decision(
            generation=self.generation,
            kind="level",
            rule=rule,
            outcome=outcome,
            reason=reason,
            pair_id=student.index,
            task_id=task.id if task is not None else "",
            task=task.to_json() if task is not None else "",
            **fields,
        )

    # -- the protocol's remaining parts ----------------------------------------------------------
    def population_frame(self) -> pd.DataFrame:
        """Every student's `student_rows`, as population.csv's table."""
        rows = [
            {"student": student.index, **row}
            for student in self.students
            for row in self.student_rows(student)
        ]
        # A header even with no rows, so population.csv always reads back as a table.
        return pd.DataFrame(rows) if rows else pd.DataFrame({"student": []})

    def policies_for_testing(self) -> PoliciesForTesting:
        """Every student's parameters, by name."""
        return PoliciesForTesting({s.name: s.theta for s in self.students}, best_of=False)

    def state_dict(self) -> dict[str, Any]:
        """The curriculum's checkpoint state: generation, students, returns and own state."""
        return self.tagged_state(
            {
                "generation": self.generation,
                "students": [
                    {
                        "theta": s.theta,
                        "state": s.state,
                        "rng": s.rng.bit_generator.state,
                        "steps": s.steps,
                    }
                    for s in self.students
                ],
                "last_returns": dict(self._last_returns),
                "curriculum": self.curriculum_state(),
            }
        )

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state that `state_dict` returned.

        Args:
            state: The saved state.

        Raises:
            ConfigError: If the state lacks keys or holds another number of students.
        """
        keys = ("generation", "students", "last_returns", "curriculum")
        self.check_state(state, keys)
        saved = state["students"]
        if len(saved) != len(self.students):
            raise ConfigError(
                "state",
                f"holds {len(saved)} students; this curriculum has {len(self.students)} "
                "(curriculum.policies)",
            )
        self.check_state(state, thetas=[s["theta"] for s in saved])
        self.generation = state["generation"]
        for student, saved in zip(self.students, state["students"], strict=True):
            student.theta = saved["theta"]
            student.state = saved["state"]
            student.rng.bit_generator.state = saved["rng"]
            student.steps = saved["steps"]
        self._last_returns = dict(state["last_returns"])
        self.load_curriculum_state(state["curriculum"])
