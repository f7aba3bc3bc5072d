"""`plr`: robust Prioritized Level Replay (PLR⊥).

Jiang, Dennis, Parker-Holder, Foerster, Grefenstette, Rocktäschel, "Replay-Guided Adversarial
Environment Design", NeurIPS 2021. Each round a student either

- replays (probability `replay_prob`, once the buffer is `min_fill` full): `tasks_per_step`
  levels drawn from P_replay = (1 - ρ) P_S + ρ P_C, one optimizer step on them, and each
  replayed level is rescored from that step's episodes; or
- tries new levels: evaluated with the current policy, NOT trained on (the "robust" ⊥
  variant: only replayed levels give gradient), scored and offered to the buffer.

The rules live in `level_buffer.py` (buffer, priorities, decisions) and `level_scores.py`
(scores). Defaults and where each comes from: `PLRConfig` below and conf/curriculum/plr.yaml.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from coevo.curricula.base import Decision
from coevo.curricula.level_buffer import (
    EVICTIONS,
    STALENESS_CLOCKS,
    Level,
    LevelBuffer,
    Pick,
    levels_for_replay,
)
from coevo.curricula.level_sampling import (
    LevelSamplingConfig,
    LevelSamplingCurriculum,
    Outcome,
    Plan,
    Signal,
    Student,
    has_critic,
    log,
    warn_if_run_too_short,
)
from coevo.curricula.level_scores import (
    RETURN_REGRET_WARNING,
    EpisodePart,
    LevelScore,
    Partial,
    episode_parts,
    learnability,
    max_mc,
    merge_partial,
    part_positive_value_loss,
    return_regret,
)
from coevo.curricula.task_sampling import uniform_task
from coevo.errors import ConfigError
from coevo.settings import setting
from coevo.tasks.task import Task

SCORES = tuple(score.value for score in LevelScore)
FALLBACKS = (LevelScore.LEARNABILITY.value, LevelScore.RETURN_REGRET.value, "none")
# New-level batches in a row that added nothing to a buffer still short of its replay
# fill, before the run says so (the space may not hold that many distinct new levels).
STALLED_BATCHES = 10
NEW_LEVELS = ("uniform", "easy")
PARTIAL_EPISODES = ("carry", "commit")
# Cut episodes' partial scores kept per student (the oldest go first: an episode whose
# continuation never came, e.g. after a refused update).
PARTIALS_KEPT = 4096


@dataclass(frozen=True)
class PLRConfig(LevelSamplingConfig):
    """PLR⊥ settings, named and defaulted as in facebookresearch/dcd, with a smaller buffer
    (64) so that replay starts within a short run.
    """

    name: str = setting("plr", doc="registry name or package.module:Class")
    # dcd's MiniGrid runs keep 4000 levels (level_replay_seed_buffer_size) over tens of
    # thousands of updates; with min_fill 0.5 nothing is replayed, so nothing trained, before
    # 2000 new levels: past the end of coevo's default 30 generations x 4 levels. 64 starts
    # replay after 32 new levels (8 generations); set 4000 for dcd's scale.
    buffer_size: int = setting(
        64, low=1, doc="level buffer capacity (dcd level_replay_seed_buffer_size: 4000)"
    )
    temperature: float = setting(
        0.3, low=0.0, open_low=True, doc="β of rank prioritisation (dcd MiniGrid PLR⊥: 0.3)"
    )
    staleness_coef: float = setting(
        0.3, low=0.0, high=1.0, doc="ρ, weight of staleness (dcd staleness_coef default 0.3)"
    )
    replay_prob: float = setting(
        0.5, low=0.0, high=1.0, doc="P(replay) once warm (dcd PLR⊥ level_replay_prob 0.5)"
    )
    min_fill: float = setting(
        0.5, low=0.0, high=1.0, doc="buffer fill before any replay (dcd level_replay_rho 0.5)"
    )
    score: str = setting(
        LevelScore.POSITIVE_VALUE_LOSS.value,
        choices=SCORES,
        doc="level score (paper and dcd: positive_value_loss; needs a critic; see "
        "coevo/curricula/level_scores.py)",
    )
    score_fallback: str = setting(
        LevelScore.LEARNABILITY.value,
        choices=FALLBACKS,
        doc="score used when the optimizer gives no value predictions (ES, ARS): "
        "learnability (Rutherford et al. 2024; needs task.solved_score), return_regret "
        "(favours unsolvable levels), none: refuse",
    )
    # One discount for the critic and the score (dcd scores the learner's own GAE): unset,
    # the optimizer's gamma / gae_lambda; a different value is refused.
    gamma: float | None = setting(
        None, low=0.0, high=1.0, doc="GAE discount of value scores (null: optimizer.gamma)"
    )
    gae_lambda: float | None = setting(
        None, low=0.0, high=1.0, doc="GAE λ of value scores (null: optimizer.gae_lambda)"
    )
    partial_episodes: str = setting(
        "carry",
        choices=PARTIAL_EPISODES,
        doc="an episode a PPO training step cut: carry (its score so far merges with its "
        "rest when it ends) or commit (scored as an episode at the update: dcd's "
        "after_update)",
    )
    staleness_clock: str = setting(
        "draws",
        choices=STALENESS_CLOCKS,
        doc="what ages the buffer's levels: draws (every replay draw and new level offered, "
        "minimax 0.2) or replays (replay draws and levels seen again only: dcd)",
    )
    eviction: str = setting(
        "replay_support",
        choices=EVICTIONS,
        doc="which level a new one may replace in a full buffer: replay_support (dcd's "
        "default seed_buffer_priority, minimax 0.2: lowest replay probability, ties "
        "admitted) or score (lowest score, strictly beaten)",
    )
    new_levels: str = setting(
        "uniform",
        choices=NEW_LEVELS,
        doc="uniform: tasks drawn from the whole space (PLR's level generator); easy: the "
        "space's initial task edited num_edits times (ACCEL's easy base levels)",
    )


class PrioritizedLevelReplay(LevelSamplingCurriculum):
    """PLR⊥ (Jiang et al. 2021): trains only on replayed levels, picked by estimated regret
    and staleness; new levels are scored without training and enter the buffer.

    Takes the same arguments as `DomainRandomization`, with a `PLRConfig`. Value-based
    scores need an optimizer with value predictions (PPO); with ES or ARS it falls back to
    `score_fallback` (learnability by default) and says so.
    """

    config_class = PLRConfig
    config: PLRConfig
    # A subclass with a level score of its own overrides `level_score` and names its score
    # here: summary.csv's `level_score` column says it, and `curriculum.score`'s checks and
    # fallback warning (about the built-in scores) are left out. An override left unnamed
    # may call the built-in score (super()), so those stay; its column reads
    # "ClassName.level_score".
    score_name: str | None = None

    def __init__(self, config, **kwargs):
        super().__init__(config, **kwargs)
        # The built-in score (what `level_score` of this class computes, and what an
        # override calling super() gets).
        if self.score_name is not None:  # a score of its own, declared
            try:
                self.score_used = _score_used(config, self.optimizer, warn=False)
            except ConfigError:  # score_fallback=none: the built-in score is not used
                self.score_used = LevelScore.RETURN_REGRET.value
            self.score_reported = self.score_name
        else:
            overridden = type(self).level_score is not PrioritizedLevelReplay.level_score
            owner = type(self).__name__ if overridden else None
            self.score_used = _score_used(config, self.optimizer, warn=True, override=owner)
            self.score_reported = f"{owner}.level_score" if owner else self.score_used
        self.gamma, self.gae_lambda = value_discount(config, self.optimizer)
        if self.score_name is None and LevelScore(self.score_used).needs_success:
            self.space.solved(0.0)  # a space that cannot say what success is: refused now
        if self.score_used == LevelScore.RETURN_REGRET and self.score_name is None:
            log.warning("%s: %s", config.name, RETURN_REGRET_WARNING)
        self.fill_cap = fill_cap = self._fill_cap()
        self.buffers: dict[int, LevelBuffer] = {
            s.index: new_buffer(config, fill_cap) for s in self.students
        }
        fill = (
            f"the {fill_cap} distinct new levels (capped, above)"
            if fill_cap is not None
            else f"min_fill {config.min_fill:g} x buffer_size {config.buffer_size} levels"
        )
        warn_if_run_too_short(
            config,
            next(iter(self.buffers.values())).replay_fill(),
            f"PLR⊥ trains on replayed levels only, and replay starts once the buffer holds {fill}",
            "Lower curriculum.buffer_size or curriculum.min_fill",
        )
        # Best mean return each student has reached on any level (return_regret's anchor).
        self.best_return: dict[int, float] = {s.index: float("-inf") for s in self.students}
        # Per student, per cut episode: the level and score so far of an episode a training
        # step cut (carried into the next step; see `_episode_scores`), by its continuation's
        # key (a stream's index, or None, for a result without one: a signal built by hand).
        self._partials: dict[int, dict[str | int | None, tuple[Task, Partial]]] = {}
        # A warning's bookkeeping only (results never depend on it): not in the state.
        self._stalled: dict[int, int] = {s.index: 0 for s in self.students}

    def _fill_cap(self) -> int | None:
        """When the level generator cannot reach the replay fill (min_fill x buffer_size
        distinct levels: a few int levels, ACCEL's easy levels near the initial task), the
        distinct levels as many draws as that fill reach; else None. Replay then starts once
        the buffer holds them, instead of never (dcd keeps a small level set whole). Counted
        on draws from a generator of its own: the students' draws stay as they are."""
        counted = count_new_levels(self.new_level_from, self.config)
        if counted is None:
            return None
        within_need, reachable = counted
        need = levels_for_replay(self.config.min_fill, self.config.buffer_size)
        # Not the whole reachable set: its rare levels can take thousands of draws to come.
        log.warning(
            "%s: new levels (new_levels=%s) reach only %d distinct tasks of task space "
            "'%s', fewer than the %d (min_fill %g x buffer_size %d) replay needs: replay "
            "starts once the buffer holds %d, the distinct levels %d draws give here",
            self.config.name,
            self.config.new_levels,
            reachable,
            self.space.name,
            need,
            self.config.min_fill,
            self.config.buffer_size,
            within_need,
            need,
        )
        return within_need

    @classmethod
    def check(cls, config: Any, optimizer: Any) -> None:
        """Refuse a configuration PLR cannot run.

        Raises:
            ConfigError: If the optimizer cannot serve `tasks_per_step`, a value score is asked
                of an optimizer without values, or the discount is set twice.
        """
        super().check(config, optimizer)
        if cls.score_name is None:  # the built-in score may be used: checked
            _score_used(config, optimizer, warn=False)  # a value score without values: refused
        value_discount(config, optimizer)  # a second γ / λ: refused

    @classmethod
    def check_space(cls, config: Any, space: Any) -> None:
        """Refuse a space that cannot say which returns solve a level, when the score needs it.

        Raises:
            ConfigError: If the configured score needs success and the space has no threshold.
        """
        super().check_space(config, space)
        # A success-based score named in config, on a space that cannot say what success is:
        # refused before the pool starts (as a fallback, it is refused when built).
        if cls.score_name is None and LevelScore(config.score).needs_success:
            space.solved(0.0)

    # -- planning --------------------------------------------------------------------------
    def begin_generation(self) -> None:
        """Reset this generation's replay and level counts."""
        self._counts = {"replays": 0, "new_batches": 0, "levels_added": 0, "levels_rejected": 0}

    def new_level(self, student: Student) -> Task:
        """A new level from the level generator, drawn with `student`'s generator."""
        return self.new_level_from(student.rng)

    def new_level_from(self, rng: np.random.Generator) -> Task:
        """A new level from the level generator (`new_levels`), drawn with `rng`."""
        return new_level(self.space, self.config, rng)

    def _base_edits(self) -> int:
        return base_edits(self.config)

    def plan(self, student: Student, decisions: list[Decision]) -> Plan:
        """Replay buffered levels for training, or score a batch of new ones."""
        buffer = self.buffers[student.index]
        replay, why = buffer.decide_replay(student.rng)
        if replay:
            picks = buffer.sample(student.rng, self.config.tasks_per_step)
            return Plan(train=[p.level.task for p in picks], note=("replay", why, picks))
        tasks = [self.new_level(student) for _ in range(self.config.tasks_per_step)]
        return Plan(score=tasks, note=("new", why, None))

    # -- observing -------------------------------------------------------------------------
    def observe(
        self, student: Student, plan: Plan, outcome: Outcome, decisions: list[Decision]
    ) -> list[Task]:
        """Add scored new levels to the buffer, or rescore the replayed ones."""
        kind, why, picks = plan.note
        buffer = self.buffers[student.index]
        if kind == "new":
            self._counts["new_batches"] += 1
            self._note_returns(student, outcome.scored)
            added = 0
            for signal in outcome.scored:
                score, how = self.level_score(student, signal, None)
                next_id = buffer.next_id
                level, offer_reason = buffer.offer(
                    signal.task,
                    score,
                    self.generation,
                    edits=self._base_edits(),
                    mean_return=signal.mean_return,
                )
                offered = self._count_offer(level, buffer.next_id > next_id)
                added += offered == "added"
                decisions.append(
                    self.decision(
                        student,
                        signal.task,
                        "new_level",
                        offered,
                        f"{why}; evaluated without training: {how}; {offer_reason}",
                        score=score,
                        error=signal.error,
                    )
                )
            if any(np.isfinite(signal.mean_return) for signal in outcome.scored):
                self._watch_fill(student, buffer, added)  # failed evaluations: another story
            return []
        self._counts["replays"] += 1
        by_task = {signal.task: signal for signal in outcome.trained}
        self._note_returns(student, outcome.trained)
        seen: set[int] = set()
        picks = [pick for pick in picks if pick.level.task in by_task]  # unplayed: see Outcome
        for pick in picks:
            level = pick.level
            signal = by_task[level.task]
            if level.level_id in seen:
                decisions.append(self._replay_row(student, pick, why, "drawn again this step"))
                continue
            seen.add(level.level_id)
            old = level.score
            score, how = self.level_score(student, signal, level)
            buffer.rescore(level, score, signal.mean_return)
            decisions.append(
                self._replay_row(
                    student,
                    pick,
                    why,
                    f"{_trained_words(outcome)}: {how}, was {old:.3g}",
                    score=level.score,
                    error=signal.error,
                )
            )
        self._rescore_continued(student, outcome, {p.level.task for p in picks}, decisions)
        return self.after_replay(student, picks, decisions)

    def _rescore_continued(
        self, student: Student, outcome: Outcome, picked: set[Task], decisions: list[Decision]
    ) -> None:
        """Levels of earlier replays that PPO's streams kept until their episodes ended
        (a new level only at a reset, as dcd): rescored from this step's episodes."""
        buffer = self.buffers[student.index]
        for signal in outcome.trained:
            level = buffer.find(signal.task) if signal.task not in picked else None
            if level is None:
                continue  # evicted since: its episodes trained the policy, nothing to score
            old = level.score
            score, how = self.level_score(student, signal, level)
            buffer.rescore(level, score, signal.mean_return)
            decisions.append(
                self.decision(
                    student,
                    signal.task,
                    "replay",
                    "continued",
                    f"L{level.level_id}'s episode went on from an earlier step (a stream keeps "
                    f"its level until the episode ends); {_trained_words(outcome)}: {how}, "
                    f"was {old:.3g}",
                    parent_id=level.parent_id,
                    score=level.score,
                    error=signal.error,
                )
            )

    def _watch_fill(self, student: Student, buffer: LevelBuffer, added: int) -> None:
        """Warn once when new levels have stopped coming while the buffer is still short of
        what replay needs: with few distinct tasks (e.g. int levels, easy base levels) it
        may never get there, and the policy would never be trained."""
        stalled = 0 if added or buffer.replay_ready() else self._stalled[student.index] + 1
        self._stalled[student.index] = stalled
        if stalled == STALLED_BATCHES:
            need = buffer.replay_fill()
            log.warning(
                "%s: the level buffer has held %d levels for %d new-level batches in a row "
                "(no new one); replay, and so training, needs %d (%s). New levels "
                "(new_levels=%s) may not reach that many distinct tasks on this space: lower "
                "curriculum.buffer_size or curriculum.min_fill%s",
                student.name,
                len(buffer),
                stalled,
                need,
                f"min_fill {buffer.min_fill:g} x buffer_size {buffer.capacity}"
                if buffer.fill_cap is None
                else "the distinct new levels counted at the start",
                self.config.new_levels,
                ", or use curriculum.new_levels=uniform"
                if self.config.new_levels == "easy"
                else "",
            )

    def after_replay(
        self, student: Student, picks: list[Pick], decisions: list[Decision]
    ) -> list[Task]:
        """Tasks to score with the updated policy (none for PLR; ACCEL's edits)."""
        return []

    def _replay_row(self, student: Student, pick: Pick, why: str, what: str, **fields) -> Decision:
        return self.decision(
            student,
            pick.level.task,
            "replay",
            "replayed",
            f"{why}; {pick.reason()}; {what}",
            parent_id=pick.level.parent_id,
            **fields,
        )

    def _count_offer(self, level: Level | None, new: bool) -> str:
        """An offer's outcome, counted: added (a new level: the buffer's next level id moved
        on, `new`), rejected, or rescored (a level the buffer already held)."""
        if level is None:
            self._counts["levels_rejected"] += 1
            return "rejected"
        if new:
            self._counts["levels_added"] += 1
            return "added"
        return "rescored"

    def _note_returns(self, student: Student, signals: list[Signal]) -> None:
        """Raise the student's best return by a batch's returns, before any of the batch is
        scored: levels evaluated together are judged against the same best, whatever
        their order in the batch."""
        for signal in signals:
            if np.isfinite(signal.mean_return):
                self.best_return[student.index] = max(
                    self.best_return[student.index], signal.mean_return
                )

    # -- scores ----------------------------------------------------------------------------
    def level_score(
        self, student: Student, signal: Signal, level: Level | None
    ) -> tuple[float, str]:
        """The level's score from this signal, and a short account of it."""
        if signal.error:  # a failed stream's arrays are zeros, not a score: never offered
            return float("nan"), "evaluation failed, no score"
        name = self.score_used
        trajectories = signal.trajectories()
        if LevelScore(name).needs_values and not trajectories:
            # e.g. a level scored by plain episodes although the optimizer has a critic
            name = LevelScore.RETURN_REGRET.value
        if name == LevelScore.POSITIVE_VALUE_LOSS:
            score, episodes = self._episode_scores(
                student,
                signal,
                level,
                lambda part: part_positive_value_loss(part, self.gamma, self.gae_lambda),
            )
            return score, f"positive value loss {score:.3g}, {episodes}"
        if name == LevelScore.MAX_MC:
            seen = [r for r in (*signal.episode_returns, signal.mean_return) if np.isfinite(r)]
            best = max([level.max_return if level is not None else float("-inf"), *seen])
            score, episodes = self._episode_scores(
                student, signal, level, lambda part: max_mc(part.values, best)
            )
            return score, f"MaxMC {score:.3g} (R_max {best:.4g}), {episodes}"
        if name == LevelScore.LEARNABILITY:
            solved = [self.space.solved(r) for r in signal.episode_returns]
            return learnability_score(solved, f"return >= {self.space.solved_score:g}")
        return return_regret_score(signal.mean_return, self.best_return[student.index])

    def _episode_scores(
        self,
        student: Student,
        signal: Signal,
        level: Level | None,
        part_score: Callable[[EpisodePart], float],
    ) -> tuple[float, str]:
        """A value score per finished episode, as dcd's `_update_with_rollouts`: each
        finished episode's score replaces the level's (dcd's default α = 1), in the order
        the streams ran. An episode a training step cut is scored over its steps so far and
        merged step-weighted with its rest when it ends (`partial_episodes=carry`), or
        counts now (`commit`, dcd's `after_update`). An episode an evaluation cut (nothing
        goes on) is left out, as dcd's mazes leave out a rollout's cut "cliffhanger"
        episodes (`handle_timelimits`); only when no episode finished does it count (dcd
        would leave the level unscored). NaN when no episode counted."""
        carry = signal.trained and self.config.partial_episodes == "carry"
        held = self._partials.setdefault(student.index, {})
        score, counted, cut, left_out = float("nan"), 0, 0, None
        jobs = signal.jobs or (None,) * len(signal.results)  # a signal built by hand
        for job, result in zip(jobs, signal.results, strict=True):
            if not (hasattr(result, "values") and hasattr(result, "rewards")):
                continue
            stream = getattr(job, "stream", None)
            ahead = getattr(job, "continuation", None)
            continued = ahead is not None
            before = _held_part(held, stream, ahead) if signal.trained and continued else None
            for part in episode_parts(result, continued):
                prior = None
                if part.continued and before is not None and before[0] == signal.task:
                    prior = before[1]
                merged = merge_partial(prior, part_score(part), part.steps)
                if carry and not part.finished:
                    going_on = getattr(result, "continuation", None)
                    held[going_on.key if going_on is not None else stream] = (signal.task, merged)
                    while len(held) > PARTIALS_KEPT:  # continuations never continued
                        del held[next(iter(held))]
                    cut += 1
                elif not signal.trained and not part.finished:
                    left_out = merged.score
                else:
                    score = merged.score  # the latest episode replaces (dcd: alpha 1)
                    counted += 1
        return _scored(score, counted, cut, left_out)

    # -- tables and state ------------------------------------------------------------------
    def curriculum_summary(self) -> dict[str, Any]:
        """Replay and level counts, mean buffer size and score."""
        sizes = [len(b) for b in self.buffers.values()]
        scores = [lv.score for b in self.buffers.values() for lv in b.levels]
        return {
            **self._counts,
            "buffer_size": float(np.mean(sizes)),
            "buffer_mean_score": float(np.mean(scores)) if scores else float("nan"),
            "level_score": self.score_reported,
        }

    def student_rows(self, student: Student) -> list[dict[str, Any]]:
        """The student's buffered levels."""
        return self.buffers[student.index].rows()

    def curriculum_state(self) -> dict[str, Any]:
        """The buffers, best returns and partial episode scores."""
        return {
            "buffers": self.buffers,
            "best_return": dict(self.best_return),
            "partials": {i: dict(held) for i, held in self._partials.items()},
        }

    def load_curriculum_state(self, state: dict[str, Any]) -> None:
        """Restore what `curriculum_state` returned."""
        self.buffers = state["buffers"]
        for buffer in self.buffers.values():
            # Derived from the config and space, as when the run started (a checkpoint
            # saved before there was a cap gets it too).
            buffer.fill_cap = self.fill_cap
            buffer.eviction = self.config.eviction
            buffer.staleness_clock = self.config.staleness_clock
        self.best_return = dict(state["best_return"])
        # A checkpoint from before episodes were carried: none held.
        self._partials = {int(i): dict(held) for i, held in state.get("partials", {}).items()}

    def progress_line(self, result, total: int) -> str:
        """One console line of a generation's replays, new levels, buffer and best score."""
        s = result.summary
        return (
            f"gen {result.generation:>3}/{total} | replays {s['replays']:>2} new "
            f"{s['new_batches']:>2} | buffer {s['buffer_size']:6.0f} added "
            f"{s['levels_added']:>2} | best {s['best_score']:7.1f} | {s['wall_s']:5.1f}s"
        )


# -- the rules both faces use: coevo's runs (above) and coevo.curricula.sampler -----------
def _scored(score: float, counted: int, cut: int, left_out: float | None) -> tuple[float, str]:
    """`_episode_scores`' score and its account: an evaluation's cut episode counts only
    where no episode finished."""
    if left_out is not None and not counted:
        return left_out, "no episode finished: the cut one scored"
    words = f"{counted} episode(s) scored"
    if cut:
        words += f", {cut} unfinished carried to the next step"
    if left_out is not None:
        words += ", the cut one left out"
    return score, words


def _held_part(
    held: dict[str | int | None, tuple[Task, Partial]], stream: int | None, ahead: Any
) -> tuple[Task, Partial] | None:
    """The partial score carried for the episode a job continues: by its continuation's key
    (several of a stream's levels may be scored in one round, in any order), else by the
    stream's index (the part a result without a continuation left: a signal built by hand)."""
    found = held.pop(getattr(ahead, "key", None), None)
    return found if found is not None else held.pop(stream, None)


def new_buffer(config: PLRConfig, fill_cap: int | None) -> LevelBuffer:
    """A student's level buffer, as `config` sets it."""
    return LevelBuffer(
        config.buffer_size,
        config.temperature,
        config.staleness_coef,
        config.replay_prob,
        config.min_fill,
        fill_cap=fill_cap,
        eviction=config.eviction,
        staleness_clock=config.staleness_clock,
    )


def new_level(space: Any, config: PLRConfig, rng: np.random.Generator) -> Task:
    """A new level from the level generator (`config.new_levels`), drawn with `rng`."""
    if config.new_levels == "easy":
        from coevo.curricula.level_editor import edit_level

        return edit_level(space, space.initial_task(), base_edits(config), rng)
    return uniform_task(space, rng)


def base_edits(config: PLRConfig) -> int:
    """Edits a new level holds: easy ones are the initial task edited num_edits times."""
    if config.new_levels != "easy":
        return 0
    return max(1, getattr(config, "num_edits", 1))


def count_new_levels(
    draw: Callable[[np.random.Generator], Task], config: PLRConfig
) -> tuple[int, int] | None:
    """None when `draw` (the level generator) reaches the replay fill (min_fill x
    buffer_size distinct levels); else (distinct levels within that many draws, distinct
    levels reached in all draws tried). Drawn from a generator of its own."""
    need = levels_for_replay(config.min_fill, config.buffer_size)
    rng = np.random.default_rng(0)
    drawn = [draw(rng) for _ in range(need)]
    within_need = len(set(drawn))
    if within_need >= need:
        return None  # all distinct: continuous, or levels enough
    reachable = set(drawn)
    for _ in range(max(2000, 20 * need) - need):
        reachable.add(draw(rng))
        if len(reachable) >= need:
            return None  # the fill can be reached, if slowly: min_fill stands
    return within_need, len(reachable)


def learnability_score(solved: list[bool], success: str) -> tuple[float, str]:
    """Learnability of a level's finished episodes (solved or not), and its account;
    `success` says what counted as solved."""
    score = learnability(solved)
    return score, (
        f"learnability {score:.3g}: solved {sum(solved)} of {len(solved)} finished "
        f"episodes ({success})"
    )


def return_regret_score(level_return: float, best: float) -> tuple[float, str]:
    """return_regret against the best return reached, and its account."""
    score = return_regret(level_return, best)
    return score, f"return regret {score:.3g} = best return {best:.4g} - return {level_return:.4g}"


def value_discount(config: PLRConfig, optimizer: Any) -> tuple[float, float]:
    """The γ and λ of value scores: the learner's own (dcd scores the advantages its learner
    computes). A curriculum setting that differs from the learner's is refused: a critic
    trained with one discount and scored with another ranks mastered levels first."""
    learner = getattr(optimizer, "config", None)
    pair = []
    for name, dcd_default in (("gamma", 0.995), ("gae_lambda", 0.95)):
        own = getattr(learner, name, None)
        given = getattr(config, name)
        if own is not None and given is not None and float(given) != float(own):
            raise ConfigError(
                f"curriculum.{name}",
                f"{given:g} differs from optimizer.{name} {own:g}: value scores use the "
                f"learner's own {name} (one pair for critic and score, as dcd); leave "
                f"curriculum.{name} unset",
            )
        # No learner value (ES, ARS: no value scores) and none given: dcd's default.
        pair.append(float(own if own is not None else given if given is not None else dcd_default))
    return pair[0], pair[1]


def _score_used(config: PLRConfig, optimizer: Any, warn: bool, override: str | None = None) -> str:
    """The configured score, or the fallback when the optimizer gives no value predictions.
    `override`: the class of an unnamed `level_score` override, which may or may not call
    the built-in score: the warning then says it concerns the built-in score only."""
    wanted = LevelScore(config.score)
    if not wanted.needs_values or has_critic(optimizer):
        return wanted.value
    optimizer_name = getattr(getattr(optimizer, "config", None), "name", type(optimizer).__name__)
    message = (
        f"{wanted.value} needs the value predictions of an actor-critic optimizer; optimizer "
        f"'{optimizer_name}' gives returns only"
    )
    if config.score_fallback == "none":
        raise ConfigError(
            "curriculum.score",
            f"{message}. Use curriculum.score=learnability, or "
            "curriculum.score_fallback=learnability",
        )
    if warn:
        curriculum = "ACCEL" if hasattr(config, "num_edits") else "PLR"  # ACCELConfig
        fallback = config.score_fallback
        if override is None:
            log.warning("%s: %s scores levels by %s instead", message, curriculum, fallback)
        else:
            log.warning(
                "%s: the built-in score, which %s.level_score may call, is %s instead (if it "
                "does not call it, set %s's score_name to say what it scores)",
                message,
                override,
                fallback,
                override,
            )
    return config.score_fallback


def _trained_words(outcome: Outcome) -> str:
    """A replay row's account of the step: trained on the level, or not (the step kept the
    weights: every stream failed, a refused update; the optimizer row says why)."""
    if outcome.step is not None and not outcome.step.applied:
        return "not trained on it (the step kept the weights)"
    return "trained on it"
