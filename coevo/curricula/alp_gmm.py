"""`alp_gmm`: ALP-GMM, tasks sampled where absolute learning progress is high.

Portelas, Colas, Hofmann, Oudeyer, CoRL 2019 (arXiv:1910.07224). Each round a student draws
`tasks_per_step` tasks from its teacher (`alp_gmm_teacher.py`: a Gaussian mixture over
(task, ALP), random exploration, bootstrap), takes one optimizer step on them, and records
each task's training return, from which the teacher computes its ALP (as TeachMyAgent
records each training episode's return). For continuous task spaces; integer-grid parameters
are rounded after sampling.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from coevo.curricula.alp_gmm_teacher import ALP_SCALES, CRITERIA, ALPGMMTeacher, Mixture, Sampled
from coevo.curricula.base import Decision
from coevo.curricula.level_sampling import (
    LevelSamplingConfig,
    LevelSamplingCurriculum,
    Outcome,
    Plan,
    Signal,
    Student,
    warn_if_run_too_short,
)
from coevo.errors import ConfigError
from coevo.settings import setting
from coevo.tasks.level_kind import require
from coevo.tasks.task import Task

# Sources: TeachMyAgent `ALPGMM.__init__` defaults (teachers/algos/alp_gmm.py), which are the
# paper's settings: fit every 250 episodes, 20% random tasks, 2..10 components by AIC.
TEACHER_FIELDS = (
    "fit_rate",
    "bootstrap",
    "random_ratio",
    "min_components",
    "max_components",
    "criterion",
    "em_inits",
    "min_history",
    "alp_scale",
)


@dataclass(frozen=True)
class ALPGMMConfig(LevelSamplingConfig):
    """ALP-GMM settings, defaulted as in flowersteam/TeachMyAgent."""

    name: str = setting("alp_gmm", doc="registry name or package.module:Class")
    fit_rate: int = setting(250, low=2, doc="tasks between two fits (TeachMyAgent: 250)")
    bootstrap: int = setting(
        250, low=2, doc="random tasks before the first fit (TeachMyAgent: = fit_rate)"
    )
    random_ratio: float = setting(
        0.2, low=0.0, high=1.0, doc="share of uniform exploration tasks (paper: 20%)"
    )
    min_components: int = setting(2, low=1, doc="fewest Gaussians tried (TeachMyAgent: 2)")
    max_components: int = setting(10, low=1, doc="most Gaussians tried (TeachMyAgent: 10)")
    criterion: str = setting("aic", choices=CRITERIA, doc="model choice (TeachMyAgent: aic)")
    em_inits: int = setting(1, low=1, doc="EM restarts per fit (TeachMyAgent nb_em_init: 1)")
    min_history: int = setting(
        5, low=0, doc="ALP is 0 until the history holds more tasks (TeachMyAgent: 5)"
    )
    alp_scale: str = setting(
        "window_max",
        choices=ALP_SCALES,
        doc="ALP divided by the fit window's largest before fitting (none: raw, as TeachMyAgent)",
    )

    def check(self) -> None:
        """Checks across fields, at parse time (before any worker starts)."""
        if self.min_components > self.max_components:
            raise ConfigError(
                "curriculum.min_components",
                f"must be <= curriculum.max_components ({self.max_components}), "
                f"got {self.min_components}",
            )
        if self.fit_rate < self.max_components:
            raise ConfigError(
                "curriculum.fit_rate",
                f"must be >= curriculum.max_components ({self.max_components}): a fit needs "
                f"at least one task per component, got {self.fit_rate}",
            )
        if self.bootstrap < self.fit_rate:
            raise ConfigError(
                "curriculum.bootstrap",
                f"must be >= curriculum.fit_rate ({self.fit_rate}), got {self.bootstrap}",
            )


class ALPGMM(LevelSamplingCurriculum):
    """ALP-GMM (Portelas et al. 2019): fits Gaussian mixtures over (task, absolute learning
    progress) and samples tasks where progress is high, with some uniform exploration.

    Takes the same arguments as `DomainRandomization`, with an `ALPGMMConfig`. Needs
    scikit-learn (`pip install 'coevo[curricula]'`).
    """

    config_class = ALPGMMConfig
    config: ALPGMMConfig

    def __init__(self, config, **kwargs):
        super().__init__(config, **kwargs)
        self.teachers = {s.index: new_teacher(self.space, config, s.rng) for s in self.students}
        warn_if_run_too_short(
            config,
            config.bootstrap,
            "the teacher samples uniformly (as DR does) until its first mixture, fitted after "
            "curriculum.bootstrap tasks",
            "Lower curriculum.bootstrap and curriculum.fit_rate",
        )

    @classmethod
    def check_space(cls, config: Any, space: Any) -> None:
        # The teacher fits mixtures over encoded levels and draws points it decodes into
        # levels: a kind without both hooks (mazes: no point decodes to a maze) cannot run.
        require(
            space,
            ("encode", "decode"),
            "alp_gmm",
            "draws tasks as points of a fixed-length encoding and decodes them",
        )

    def begin_generation(self) -> None:
        self._counts = {"random_tasks": 0, "bootstrap_tasks": 0, "gmm_tasks": 0, "fits": 0}
        self._alps: list[float] = []

    def plan(self, student: Student, decisions: list[Decision]) -> Plan:
        teacher = self.teachers[student.index]
        sampled = [teacher.sample(student.rng) for _ in range(self.config.tasks_per_step)]
        for s in sampled:
            self._counts[f"{s.origin}_tasks"] += 1  # gmm, random (its share) or bootstrap
        return Plan(train=[s.task for s in sampled], note=sampled)

    def observe(
        self, student: Student, plan: Plan, outcome: Outcome, decisions: list[Decision]
    ) -> list[Task]:
        teacher = self.teachers[student.index]
        by_task = {signal.task: signal for signal in outcome.trained}
        sampled: list[Sampled] = plan.note
        planned = {s.task for s in sampled}
        # The sampled tasks played (not_played ones have their rows: Outcome.unplayed), then
        # tasks of earlier steps whose PPO streams kept them until their episodes ended.
        items = [(s, by_task[s.task]) for s in sampled if s.task in by_task]
        items += [(None, sig) for sig in outcome.trained if sig.task not in planned]
        recorded: set[Task] = set()
        for s, signal in items:
            per_episode = bool(signal.trajectories())
            if per_episode and signal.task in recorded:
                continue  # a task drawn twice: its streams' episodes are recorded once
            recorded.add(signal.task)
            points = _points(signal)
            if not points:
                reason = (
                    f"{_origin(s, self.config.random_ratio)}; no episode on it ended in this "
                    "step: recorded when one does (its stream keeps it until then)"
                )
                origin = s.origin if s is not None else "continued"
                decisions.append(self.decision(student, signal.task, "sample", origin, reason))
            for episode_return in points:
                fitted_before = teacher.mixture
                alp = teacher.record(signal.task, episode_return)
                if np.isfinite(alp):
                    self._alps.append(alp)
                refit = teacher.mixture is not fitted_before
                self._counts["fits"] += int(refit)
                reason = record_reason(
                    s, self.config, episode_return, alp, teacher.mixture if refit else None
                )
                if outcome.training_outcome != "trained":
                    reason += "; not trained: the step kept the weights"
                decisions.append(
                    self.decision(
                        student,
                        signal.task,
                        "sample",
                        s.origin if s is not None else "continued",
                        reason,
                        score=alp,
                        error=signal.error,
                    )
                )
        return []

    def curriculum_summary(self) -> dict[str, Any]:
        components = [
            t.mixture.components if t.mixture is not None else 0 for t in self.teachers.values()
        ]
        return {
            **self._counts,
            "mean_alp": float(np.mean(self._alps)) if self._alps else float("nan"),
            "gmm_components": float(np.mean(components)),
            "history": float(np.mean([len(t) for t in self.teachers.values()])),
        }

    def student_rows(self, student: Student) -> list[dict[str, Any]]:
        return self.teachers[student.index].rows()

    def curriculum_state(self) -> dict[Any, dict[str, Any]]:
        # Keyed by student index: an int here, a str once the state has been through JSON.
        return {index: teacher.state_dict() for index, teacher in self.teachers.items()}

    def load_curriculum_state(self, state: dict[str, Any]) -> None:
        for index, saved in state.items():
            self.teachers[int(index)].load_state_dict(saved)

    def progress_line(self, result, total: int) -> str:
        s = result.summary
        return (
            f"gen {result.generation:>3}/{total} | tasks from GMM {s['gmm_tasks']:>2} random "
            f"{s['random_tasks']:>2} bootstrap {s['bootstrap_tasks']:>2} | "
            f"components {s['gmm_components']:4.3g} | "
            f"ALP {s['mean_alp']:7.3g} | best {s['best_score']:7.1f} | {s['wall_s']:5.1f}s"
        )


# -- the rules both faces use: coevo's runs (above) and coevo.curricula.sampler -----------
def new_teacher(space: Any, config: ALPGMMConfig, rng: np.random.Generator) -> ALPGMMTeacher:
    """A student's teacher as `config` sets it; its fits' seed is drawn from `rng`."""
    settings = {name: getattr(config, name) for name in TEACHER_FIELDS}
    try:
        return ALPGMMTeacher(space, **settings, gmm_seed=int(rng.integers(0, 2**31 - 1)))
    except ValueError as error:
        raise ConfigError("curriculum", str(error)) from None


def record_reason(
    s: Sampled | None,
    config: ALPGMMConfig,
    episode_return: float,
    alp: float,
    refit: Mixture | None,
) -> str:
    """A recorded episode's row reason: where its task came from, its ALP, and the
    mixture fitted after it (`refit`), if one was."""
    reason = (
        f"{_origin(s, config.random_ratio)}; training return {episode_return:.4g}, ALP {alp:.3g}"
    )
    if refit is not None:
        reason += (
            f"; refit: {refit.components} components by {refit.criterion.upper()} over "
            f"the last {config.fit_rate} tasks"
        )
    return reason


def _points(signal: Signal) -> list[float]:
    """The returns the teacher records for one task's training. From PPO's streams: one per
    finished episode (TeachMyAgent's `record_train_episode`; an episode cut by the rollout's
    end is recorded when it ends, its stream keeping the task until then). From plain
    episodes (ES, ARS, whose perturbations share the task): one, their mean return."""
    if signal.trajectories():
        return list(signal.episode_returns)
    return [signal.mean_return]


def _origin(s: Sampled | None, random_ratio: float) -> str:
    if s is None:
        return "sampled at an earlier step; its stream kept it until its episode ended"
    return s.reason(random_ratio)
