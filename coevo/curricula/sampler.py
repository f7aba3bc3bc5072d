"""coevo's level-sampling curricula for any trainer: a task sampler.

`sampler(name, space, seed=0, **settings)` returns a `TaskSampler` for DR, PLR⊥, ACCEL,
ALP-GMM or SFL: a trainer asks it for the next episode's task (`sample()`), plays the
episode, and tells it what happened (`update(task, episode_return=...,
episode_length=...)`). It is built on the objects coevo's own runs use, not a copy of them:
PLR's `LevelBuffer` and its rule functions (`plr.new_buffer`, `plr.new_level`, the level
scores), ACCEL's `edit_level`, ALP-GMM's `ALPGMMTeacher` (`alp_gmm.new_teacher`), SFL's
rule functions (`sfl.plan_step`, `sfl.rank_levels`, `sfl.training_reason`), DR's
`uniform_task`, and each curriculum's own config class, so a setting's default, rule and
error are the run's (`sampler("plr", space, buffer_sise=8)` is refused naming
`buffer_size`). `decisions()`
gives the rows a run writes to eligibility.csv (same rules, outcomes and fields; the
`generation` column counts the episodes reported before the row). `state_dict()` /
`load_state_dict()` restore a sampler that continues exactly as an uninterrupted one.

Where a sampler differs from a run, because a trainer plays one episode per task draw:

- A run's plan draws `tasks_per_step` tasks at once; a sampler draws one per `sample()`
  (a run with tasks_per_step=1). `tasks_per_step` (but for SFL), `rounds`, `generations`
  and `policies` are ignored.
- PLR⊥ evaluates new levels without training on them; a trainer trains on every episode
  it plays unless it asks `replaying(task)` and skips the gradient of the others.
- PLR⊥'s and ACCEL's scores are per episode. Learnability needs several episodes of a
  level: it is computed over the level's last `success_window` episodes (a sampler
  setting, default 10). Success (here and for SFL) is `success=` when given, else the
  space's `solved(return)`.
- Value scores need the trainer's critic: `critic=True` (a sampler setting) with
  `values=` (the value predictions of the episode's steps) and, for positive_value_loss,
  `rewards=`; the episode's last value bootstraps 0 (as a terminated episode). Without
  a critic the curriculum's `score_fallback` is used (learnability by default), as for
  a run with ES.
- ACCEL's edits of a replayed level are the next tasks `sample()` gives.
- SFL scores a refresh's fresh levels in episodes `sample()` hands out (`eval_episodes`
  each); the trainer should not train on them (`scoring(task)` says which). Its cadence is
  counted in episodes reported: a refresh every `refresh_every` x `tasks_per_step`
  training episodes (a run's `refresh_every` steps of `tasks_per_step` tasks), and each
  run of `tasks_per_step` training tasks is drawn as a run's step (see `SFLSampler`).

Several envs sharing one sampler: see `coevo.wrappers` (its ordering makes a run with a
fixed number of envs reproducible).
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pandas as pd

from coevo.curricula.accel import ACCELConfig
from coevo.curricula.alp_gmm import ALPGMM, ALPGMMConfig, new_teacher, record_reason
from coevo.curricula.alp_gmm_teacher import Sampled
from coevo.curricula.base import Decision
from coevo.curricula.dr import DRConfig
from coevo.curricula.level_buffer import Level, Pick
from coevo.curricula.level_editor import edit_level
from coevo.curricula.level_scores import (
    EpisodeTrace,
    LevelScore,
    episode_parts,
    max_mc,
    part_positive_value_loss,
)
from coevo.curricula.plr import (
    PLRConfig,
    _score_used,
    base_edits,
    count_new_levels,
    learnability_score,
    new_buffer,
    new_level,
    return_regret_score,
    value_discount,
)
from coevo.curricula.sfl import (
    BufferLevel,
    SFLConfig,
    check_buffer,
    fresh_levels,
    plan_step,
    rank_levels,
    score_level,
    training_reason,
)
from coevo.curricula.task_sampling import uniform_task
from coevo.errors import ConfigError
from coevo.tasks.task import Task, TaskSpace

SUCCESS_WINDOW = 10  # a level's last episodes its learnability is computed over


@dataclass(frozen=True)
class Episode:
    """What a trainer reports of one finished episode."""

    task: Task
    episode_return: float
    episode_length: int
    success: bool | None = None
    values: np.ndarray | None = None
    rewards: np.ndarray | None = None


class TaskSampler:
    """The sampler face of a curriculum: `sample`, `update`, `decisions`, state.

    A subclass names its curriculum's `config_class` (the one source of its settings'
    defaults and rules) and implements `_draw` (a task and the note its update needs) and
    `_observe` (take a finished episode, write its decision rows)."""

    name = ""
    config_class: type = DRConfig
    own_settings: tuple[str, ...] = ()  # sampler settings its curriculum's config lacks

    def __init__(self, space: TaskSpace, seed: int = 0, **settings: Any):
        own = {key: settings.pop(key) for key in self.own_settings if key in settings}
        self.config = self.config_class(name=self.name, **settings)
        self.space = space
        self.seed = int(seed)
        self.named = frozenset(settings)  # the settings the user gave
        # Student 0's generator in a run of the same seed.
        self.rng = np.random.default_rng([self.seed, 0])
        self.episodes = 0
        self._rows: list[Decision] = []
        self._pending: dict[Task, deque[Any]] = {}
        self._setup(**own)

    def _setup(self) -> None:
        """Build the curriculum's own objects (a subclass's `own_settings` as keywords)."""

    # -- the trainer's face -----------------------------------------------------------
    def sample(self) -> Task:
        """The next episode's task."""
        task, note = self._draw()
        self._pending.setdefault(task, deque()).append(note)
        return task

    def update(
        self,
        task: Task,
        *,
        episode_return: float,
        episode_length: int,
        success: bool | None = None,
        values: Sequence[float] | None = None,
        rewards: Sequence[float] | None = None,
    ) -> None:
        """Report a finished episode on `task` (a task `sample()` gave and not yet reported;
        several episodes on one task are matched to its draws in order)."""
        notes = self._pending.get(task)
        if not notes:
            raise ValueError(
                f"task {task.id} was not sampled (or its episodes were all reported): "
                "update() takes a task sample() gave"
            )
        note = notes.popleft()
        if not notes:
            del self._pending[task]
        episode = Episode(
            task,
            float(episode_return),
            int(episode_length),
            None if success is None else bool(success),
            None if values is None else np.asarray(values, dtype=float),
            None if rewards is None else np.asarray(rewards, dtype=float),
        )
        self._observe(note, episode)
        self.episodes += 1

    def decisions(self) -> list[Decision]:
        """The decision rows so far (eligibility.csv's rows of a run)."""
        return list(self._rows)

    def decisions_frame(self) -> pd.DataFrame:
        """The decision rows so far as a DataFrame, with eligibility.csv's columns."""
        return pd.DataFrame([row.as_row() for row in self._rows])

    def pending(self) -> int:
        """Tasks sampled and not yet reported."""
        return sum(len(notes) for notes in self._pending.values())

    # -- state ------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Everything a restored sampler needs to continue exactly (a deep copy)."""
        return copy.deepcopy(
            {
                "sampler": self.name,
                "seed": self.seed,
                "rng": self.rng.bit_generator.state,
                "episodes": self.episodes,
                "rows": self._rows,
                "pending": self._pending,
                "own": self._own_state(),
            }
        )

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from `state_dict()`'s output, exactly as the sampler that gave it would.

        Raises:
            ConfigError: `state` is another kind of sampler's (a PLR state into a DR sampler).
        """
        if state.get("sampler") != self.name:
            raise ConfigError(
                "state", f"is a '{state.get('sampler')}' sampler's; this is '{self.name}'"
            )
        state = copy.deepcopy(state)
        self.seed = state["seed"]
        self.rng.bit_generator.state = state["rng"]
        self.episodes = state["episodes"]
        self._rows = state["rows"]
        self._pending = state["pending"]
        self._load_own_state(state["own"])

    def _own_state(self) -> dict[str, Any]:
        return {}

    def _load_own_state(self, state: dict[str, Any]) -> None:
        pass

    # -- for subclasses ---------------------------------------------------------------
    def _draw(self) -> tuple[Task, Any]:
        raise NotImplementedError

    def _observe(self, note: Any, episode: Episode) -> None:
        raise NotImplementedError

    def _row(self, task: Task | None, rule: str, outcome: str, reason: str, **fields) -> None:
        """A row as `LevelSamplingCurriculum.decision` writes it for student 0."""
        self._rows.append(
            Decision(
                generation=self.episodes,
                kind="level",
                rule=rule,
                outcome=outcome,
                reason=reason,
                pair_id=0,
                task_id=task.id if task is not None else "",
                task=task.to_json() if task is not None else "",
                **fields,
            )
        )


class DRSampler(TaskSampler):
    """Domain randomisation: every task uniform in the space (`dr`)."""

    name = "dr"
    config_class = DRConfig

    def _draw(self) -> tuple[Task, Any]:
        return uniform_task(self.space, self.rng), None

    def _observe(self, note: Any, episode: Episode) -> None:
        self._row(
            episode.task,
            "sample",
            "trained",
            f"uniform task from the space; training return {episode.episode_return:.4g}",
            score=episode.episode_return,
        )


_TRAINER_SAID = "success as the trainer reported"


def _solved(space: TaskSpace, episode: Episode) -> tuple[bool, str]:
    """Whether `episode` solved its task: `success=` when the trainer gave it, else the
    space's `solved(return)`; and which of the two said so."""
    if episode.success is not None:
        return episode.success, _TRAINER_SAID
    return space.solved(episode.episode_return), f"return >= {space.solved_score:g}"


def _trainer(critic: bool) -> SimpleNamespace:
    """What `plr._score_used` asks of a learner: whether it gives value predictions."""
    said = "a trainer with a critic" if critic else "the trainer (critic=False)"
    return SimpleNamespace(provides_values=critic, config=SimpleNamespace(name=said))


class PLRSampler(TaskSampler):
    """Robust Prioritized Level Replay (`plr`) over one `LevelBuffer`."""

    name = "plr"
    config_class = PLRConfig
    own_settings = ("critic", "success_window")
    config: PLRConfig

    def _setup(self, critic: bool = False, success_window: int = SUCCESS_WINDOW) -> None:
        if success_window < 1:
            raise ConfigError("success_window", f"must be >= 1, got {success_window}")
        self.critic = bool(critic)
        self.success_window = int(success_window)
        # Warned of only when named: the default score's fallback is the sampler's default.
        warn = "score" in self.named
        self.score_used = _score_used(self.config, _trainer(critic), warn=warn)
        self.gamma, self.gae_lambda = value_discount(self.config, None)
        counted = count_new_levels(lambda rng: new_level(self.space, self.config, rng), self.config)
        self.buffer = new_buffer(self.config, None if counted is None else counted[0])
        self.best_return = float("-inf")
        self._successes: dict[Task, list[bool]] = {}  # learnability's episodes per level

    def replaying(self, task: Task) -> bool:
        """Is the oldest unreported draw of `task` a replay (PLR⊥ trains on those only)?"""
        notes = self._pending.get(task)
        return bool(notes) and notes[0][0] == "replay"

    def _draw(self) -> tuple[Task, Any]:
        replay, why = self.buffer.decide_replay(self.rng)
        if replay:
            pick = self.buffer.sample(self.rng, 1)[0]
            return pick.level.task, ("replay", why, pick)
        return new_level(self.space, self.config, self.rng), ("new", why, None)

    def _observe(self, note: Any, episode: Episode) -> None:
        kind, why, pick = note
        if np.isfinite(episode.episode_return):
            self.best_return = max(self.best_return, episode.episode_return)
        if kind == "replay":
            self._observe_replay(why, pick, episode)
        else:
            self._offer(episode, "new_level", why, parent=None, edits=base_edits(self.config))

    def _observe_replay(self, why: str, pick: Pick, episode: Episode) -> None:
        level = pick.level
        if self.buffer.by_id(level.level_id) is not level:
            self._row(
                episode.task,
                "replay",
                "replayed",
                f"{why}; {pick.reason()}; evicted before its episode ended: not rescored",
                parent_id=level.parent_id,
            )
            return
        old = level.score
        score, how = self._score(episode, level)
        self.buffer.rescore(level, score, episode.episode_return)
        self._row(
            episode.task,
            "replay",
            "replayed",
            f"{why}; {pick.reason()}; trained on it: {how}, was {old:.3g}",
            parent_id=level.parent_id,
            score=level.score,
        )
        self._after_replay(level)

    def _after_replay(self, level: Level) -> None:
        """ACCEL edits the replayed level here."""

    def _offer(
        self, episode: Episode, rule: str, why: str, parent: Level | None, edits: int
    ) -> None:
        score, how = self._score(episode, None)
        next_id = self.buffer.next_id
        level, offer_reason = self.buffer.offer(
            episode.task,
            score,
            self.episodes,
            parent_id=None if parent is None else parent.level_id,
            edits=edits,
            mean_return=episode.episode_return,
        )
        outcome = (
            "rejected"
            if level is None
            else "added"
            if self.buffer.next_id > next_id
            else "rescored"
        )
        self._row(
            episode.task,
            rule,
            outcome,
            f"{why}; {how}; {offer_reason}",
            parent_id=None if parent is None else parent.level_id,
            score=score,
        )
        kept = {lv.task for lv in self.buffer.levels}
        self._successes = {t: s for t, s in self._successes.items() if t in kept}

    # -- scores -----------------------------------------------------------------------
    def _score(self, episode: Episode, level: Level | None) -> tuple[float, str]:
        name = LevelScore(self.score_used)
        if name.needs_values:
            return self._value_score(name, episode, level)
        if name == LevelScore.LEARNABILITY:
            return self._learnability(episode)
        return return_regret_score(episode.episode_return, self.best_return)

    def _learnability(self, episode: Episode) -> tuple[float, str]:
        solved, how = _solved(self.space, episode)
        history = self._successes.setdefault(episode.task, [])
        history.append(solved)
        del history[: -self.success_window]
        return learnability_score(history, how)

    def _value_score(
        self, name: LevelScore, episode: Episode, level: Level | None
    ) -> tuple[float, str]:
        needed = "values= and rewards=" if name == LevelScore.POSITIVE_VALUE_LOSS else "values="
        if episode.values is None or (
            name == LevelScore.POSITIVE_VALUE_LOSS and episode.rewards is None
        ):
            raise ValueError(f"score {name.value} needs the episode's {needed} in update()")
        if name == LevelScore.MAX_MC:
            best = max(
                level.max_return if level is not None else float("-inf"), episode.episode_return
            )
            score = max_mc(list(episode.values), best)
            return score, f"MaxMC {score:.3g} (R_max {best:.4g})"
        # rewards and values are given (checked above): one whole episode's trace.
        whole = cast(
            EpisodeTrace,
            SimpleNamespace(rewards=episode.rewards, values=episode.values, last_value=0.0),
        )
        part = episode_parts(whole, continued=False)[0]
        score = part_positive_value_loss(part, self.gamma, self.gae_lambda)
        return score, f"positive value loss {score:.3g}"

    # -- state ------------------------------------------------------------------------
    def _own_state(self) -> dict[str, Any]:
        return {
            "buffer": self.buffer,
            "best_return": self.best_return,
            "successes": self._successes,
        }

    def _load_own_state(self, state: dict[str, Any]) -> None:
        self.buffer = state["buffer"]
        self.best_return = state["best_return"]
        self._successes = state["successes"]


class ACCELSampler(PLRSampler):
    """ACCEL (`accel`): PLR⊥ whose replayed levels are edited; edits are sampled next."""

    name = "accel"
    config_class = ACCELConfig
    config: ACCELConfig

    def _setup(self, **own: Any) -> None:
        super()._setup(**own)
        self._edits: deque[tuple[Task, Level]] = deque()  # (edited level, its parent)

    def _after_replay(self, level: Level) -> None:
        child = edit_level(self.space, level.task, self.config.num_edits, self.rng)
        self._edits.append((child, level))

    def _draw(self) -> tuple[Task, Any]:
        if self._edits:
            child, parent = self._edits.popleft()
            return child, ("edit", "", parent)
        return super()._draw()

    def _observe(self, note: Any, episode: Episode) -> None:
        kind, _, parent = note
        if kind != "edit":
            super()._observe(note, episode)
            return
        if np.isfinite(episode.episode_return):
            self.best_return = max(self.best_return, episode.episode_return)
        num = self.config.num_edits
        edits = parent.edits + num
        why = (
            f"new level from mutation of L{parent.level_id} ({num} edit(s), {edits} since a "
            "base level)"
        )
        self._offer(episode, "edit", why, parent=parent, edits=edits)

    def _own_state(self) -> dict[str, Any]:
        return {**super()._own_state(), "edits": self._edits}

    def _load_own_state(self, state: dict[str, Any]) -> None:
        super()._load_own_state(state)
        self._edits = state["edits"]


class ALPGMMSampler(TaskSampler):
    """ALP-GMM (`alp_gmm`): tasks where absolute learning progress is high."""

    name = "alp_gmm"
    config_class = ALPGMMConfig
    config: ALPGMMConfig

    def _setup(self) -> None:
        ALPGMM.check_space(self.config, self.space)  # a level kind no point decodes to
        self.teacher = new_teacher(self.space, self.config, self.rng)

    def _draw(self) -> tuple[Task, Any]:
        sampled = self.teacher.sample(self.rng)
        return sampled.task, sampled

    def _observe(self, note: Sampled, episode: Episode) -> None:
        fitted_before = self.teacher.mixture
        alp = self.teacher.record(episode.task, episode.episode_return)
        refit = self.teacher.mixture if self.teacher.mixture is not fitted_before else None
        reason = record_reason(note, self.config, episode.episode_return, alp, refit)
        self._row(episode.task, "sample", note.origin, reason, score=alp)

    def _own_state(self) -> dict[str, Any]:
        return {"teacher": self.teacher.state_dict()}

    def _load_own_state(self, state: dict[str, Any]) -> None:
        self.teacher.load_state_dict(state["teacher"])


@dataclass
class SFLRefresh:
    """An SFL refresh under way: its fresh levels and what their scoring episodes said."""

    number: int  # 1 = the first
    began: int  # training episodes reported when it began
    levels: list[Task]
    handed: int = 0  # scoring episodes handed out by sample()
    reported: int = 0  # scoring episodes reported
    solved: list[list[bool]] = field(default_factory=list)  # per level, one per episode
    told: list[int] = field(default_factory=list)  # per level: episodes with success=


class SFLSampler(TaskSampler):
    """Sampling For Learnability (`sfl`): a buffer of the most learnable of a fresh sample of
    levels, refreshed every `refresh_every` x `tasks_per_step` training episodes, mixed
    with fresh uniform levels.

    A refresh draws `levels_sampled` fresh uniform levels, and `sample()` hands out each
    one's `eval_episodes` scoring episodes, level after level. A trainer should not train
    on them (`scoring(task)` says which draws are scoring episodes). When the last of
    them is reported, the buffer becomes the `buffer_size` levels of highest learnability
    p(1 - p), p the share of a level's scoring episodes that succeeded (`success=`, else
    the space's `solved(return)`); a `sample_for_learnability` row per level says why.

    Between refreshes, `sample()` hands out training tasks a step at a time: a run's
    optimizer step's `tasks_per_step` tasks, drawn together at the step's first `sample()`
    as a run plans them (`buffer_share` x `tasks_per_step`, rounded half up, uniformly
    from the buffer, the rest fresh uniform levels; all fresh while the buffer is empty).
    The next refresh begins at the first step after `refresh_every` x `tasks_per_step`
    training episodes (a run's `refresh_every` steps) have been reported since the buffer
    was rebuilt; the first `sample()` begins the first. Training tasks drawn while a
    refresh's last scoring episodes are still being played (several envs) come from the
    buffer as it stands.
    """

    name = "sfl"
    config_class = SFLConfig
    config: SFLConfig

    def _setup(self) -> None:
        check_buffer(self.config)
        self.buffer: list[BufferLevel] = []
        self.refreshes = 0  # refreshes done (buffer rebuilt)
        self.trained = 0  # training episodes reported
        self._rebuilt_at = 0  # `trained` when the buffer was last rebuilt
        self._step: deque[tuple[Task, Any]] = deque()  # the step's tasks not handed out yet
        self.refreshing: SFLRefresh | None = None

    def scoring(self, task: Task) -> bool:
        """Is the oldest unreported draw of `task` a scoring episode (a refresh scores fresh
        levels without training on them: a trainer skips their gradient)?"""
        notes = self._pending.get(task)
        return bool(notes) and notes[0][0] == "score"

    def due(self) -> bool:
        """Whether the next `sample()` begins a refresh: none under way and no step half
        handed out, and never refreshed or `refresh_every` x `tasks_per_step` training
        episodes reported since the last rebuild."""
        if self.refreshing is not None or self._step:
            return False
        every = self.config.refresh_every * self.config.tasks_per_step
        return self.refreshes == 0 or self.trained - self._rebuilt_at >= every

    def _draw(self) -> tuple[Task, Any]:
        if self.due():
            levels = fresh_levels(self.space, self.rng, self.config.levels_sampled)
            self.refreshing = SFLRefresh(
                self.refreshes + 1,
                self.trained,
                levels,
                solved=[[] for _ in levels],
                told=[0 for _ in levels],
            )
        refresh, episodes = self.refreshing, self.config.eval_episodes
        if refresh is not None and refresh.handed < len(refresh.levels) * episodes:
            index = refresh.handed // episodes
            refresh.handed += 1
            return refresh.levels[index], ("score", index)
        if not self._step:
            picks, fresh = plan_step(self.space, self.config, self.buffer, self.rng)
            self._step.extend((pick.task, ("train", pick, picks)) for pick in picks)
            self._step.extend((task, ("train", None, picks)) for task in fresh)
        return self._step.popleft()

    def _observe(self, note: Any, episode: Episode) -> None:
        if note[0] == "score":
            self._observe_score(note[1], episode)
            return
        _, level, picks = note
        self.trained += 1
        rule, why = training_reason(level, picks, self.config.tasks_per_step)
        self._row(
            episode.task,
            rule,
            "trained",
            f"{why}; training return {episode.episode_return:.4g}",
            score=episode.episode_return,
        )

    def _observe_score(self, index: int, episode: Episode) -> None:
        refresh = cast(SFLRefresh, self.refreshing)  # scoring draws come from one under way
        solved, how = _solved(self.space, episode)
        refresh.solved[index].append(solved)
        refresh.told[index] += how == _TRAINER_SAID
        refresh.reported += 1
        if refresh.reported == len(refresh.levels) * self.config.eval_episodes:
            self._rebuild(refresh)

    def _rebuild(self, refresh: SFLRefresh) -> None:
        """The buffer from the refresh's learnabilities, and a row per level saying why."""
        scored = [score_level(t, s) for t, s in zip(refresh.levels, refresh.solved, strict=True)]
        ranking = rank_levels(scored, self.config.buffer_size, refresh.number)
        self.buffer = list(ranking.buffer)
        self.refreshes = refresh.number
        self._rebuilt_at = self.trained
        self.refreshing = None
        head = f"refresh {refresh.number} after {refresh.began} training episodes"
        for i, level in enumerate(ranking.scored):
            success = self._success_words(refresh.told[i], level.episodes)
            outcome, reason = ranking.verdict(i, head, success)
            self._row(
                level.task,
                "sample_for_learnability",
                outcome,
                reason,
                score=level.learnability,
                threshold=ranking.lowest,
                error=level.error,
            )

    def _success_words(self, told: int, episodes: int) -> str:
        """What counted as solved: the trainer's `success=`, the space's threshold, or both."""
        if told == episodes:
            return _TRAINER_SAID
        threshold = f"return >= {self.space.solved_score:g}"
        return threshold if told == 0 else f"{_TRAINER_SAID} in {told}, else {threshold}"

    def _own_state(self) -> dict[str, Any]:
        return {
            "buffer": self.buffer,
            "refreshes": self.refreshes,
            "trained": self.trained,
            "rebuilt_at": self._rebuilt_at,
            "step": self._step,
            "refreshing": self.refreshing,
        }

    def _load_own_state(self, state: dict[str, Any]) -> None:
        self.buffer = state["buffer"]
        self.refreshes = state["refreshes"]
        self.trained = state["trained"]
        self._rebuilt_at = state["rebuilt_at"]
        self._step = state["step"]
        self.refreshing = state["refreshing"]


# name -> sampler class (`register_sampler` adds one).
SAMPLERS: dict[str, type[TaskSampler]] = {
    "dr": DRSampler,
    "plr": PLRSampler,
    "accel": ACCELSampler,
    "alp_gmm": ALPGMMSampler,
    "sfl": SFLSampler,
}


def register_sampler(name: str, cls: type[TaskSampler]) -> None:
    """Make `sampler(name, ...)` build `cls` (a `TaskSampler` subclass); replaces a name."""
    SAMPLERS[name] = cls


def sampler(name: str, space: TaskSpace | str, seed: int = 0, **settings: Any) -> TaskSampler:
    """A task sampler for one of coevo's level-sampling curricula.

    Args:
        name: the curriculum: `dr`, `plr`, `accel`, `alp_gmm`, `sfl` (or one
            `register_sampler` added).
        space: a TaskSpace, or a registered space's name such as `"cartpole"`.
        seed: the seed of the sampler's draws (a run's student 0 with this seed draws the same).
        **settings: the curriculum's own config fields (`buffer_size=...`, `score=...`), plus,
            for plr and accel, `critic` and `success_window` (see the module doc).

    Returns:
        A `TaskSampler`: `sample()` a task, `update(task, ...)` with its episode's outcome.

    Raises:
        ConfigError: an unknown curriculum, or a setting its config class refuses (an unknown
            name gets a "did you mean").
    """
    if name not in SAMPLERS:
        raise ConfigError("sampler", f"unknown '{name}'; known: {', '.join(sorted(SAMPLERS))}")
    if isinstance(space, str):
        from coevo.tasks import registry

        space = registry.get(space)
    return SAMPLERS[name](space, seed=seed, **settings)
