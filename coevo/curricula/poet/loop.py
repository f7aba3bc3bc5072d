"""The generation loop of POET / Enhanced POET, as a `Curriculum`.

Per generation: optimize (the run's optimizer), evaluate, eligibility, reproduce (mutate,
drop duplicates, minimal criterion, novelty rank, admit with the best transferred policy,
capacity), transfer (direct and after one proposal optimizer step), ANNECS. Every decision
becomes a `Decision` row.

A generation is work in job batches (`coevo.batches`): each step that needs the pool
yields its jobs and receives their results, so `ask()`/`tell()` can hand every batch out
and `step()` runs them on the pool, through the same code.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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
from coevo.curricula.poet import rules
from coevo.curricula.poet.novelty import Characterization, ScoreCache, novelty_work
from coevo.curricula.poet.population import Pair, Population
from coevo.curricula.poet.transfer import TransferCandidate, best_policies_work, pick_best
from coevo.curricula.training import evaluate_work, mean_extras, train_work
from coevo.errors import ConfigError
from coevo.run_files import CROSS_SCORES_STEM
from coevo.settings import setting
from coevo.tasks.level_kind import level_type
from coevo.tasks.task import Task

if TYPE_CHECKING:
    from coevo.optimizers.base import Optimizer, StepRecord
    from coevo.pool import EvaluationPool
    from coevo.tasks.task import TaskSpace


@dataclass(frozen=True)
class PoetConfig(CurriculumConfig):
    """POET's generation loop (Wang et al. 2019, arXiv:1901.01753)."""

    name: str = setting("poet", doc="registry name or package.module:Class")
    generations: int = setting(30, low=1, doc="generations to run")
    initial_pairs: int = setting(1, low=1)
    optimizer_steps: int = setting(2, low=0, doc="optimizer steps per active pair per gen.")
    eval_episodes: int = setting(3, low=1, doc="episodes behind every score")
    repro_threshold: float = setting(200.0, doc="a pair may reproduce when its score reaches this")
    reproduce_every: int = setting(2, low=1)
    max_children: int = setting(8, low=0, doc="mutation trials per reproduction")
    max_admitted: int = setting(1, low=0)
    mc_lower: float = setting(50.0, doc="minimal criterion: lower <= parent's score on child")
    mc_upper: float = setting(475.0, doc="minimal criterion: parent's score on child <= upper")
    max_active: int = setting(6, low=1, doc="above this the oldest active pairs are archived")
    novelty: str = setting(
        Characterization.PARAMS.value,
        choices=tuple(c.value for c in Characterization),
        doc="params (POET) or pata_ec (Enhanced POET)",
    )
    novelty_k: int = setting(5, low=1)
    transfer_every: int = setting(2, low=0, doc="0 turns transfer off")
    admission_transfer: bool = setting(
        True,
        doc="an admitted child starts with the best active policy on it; false: with its "
        "parent's (with transfer_every 0: POET without transfer)",
    )
    transfer_proposal: bool = setting(True, doc="also try each policy after one optimizer step")
    transfer_history: int = setting(5, low=1, doc="a transfer must beat the best of this many")
    solved_threshold: float | None = setting(None, doc="null: the task space's solved score")

    def check(self) -> None:
        """Refuse inconsistent POET settings.

        Raises:
            ConfigError: If `initial_pairs` exceeds `max_active`, `mc_lower` exceeds `mc_upper`,
                or another setting contradicts its counterpart.
        """
        if self.initial_pairs > self.max_active:  # they would all stay active until archived
            raise ConfigError(
                "curriculum.initial_pairs",
                f"must be <= curriculum.max_active ({self.max_active}), got {self.initial_pairs}",
            )
        if self.mc_lower > self.mc_upper:
            raise ConfigError(
                "curriculum.mc_lower",
                f"must be <= curriculum.mc_upper ({self.mc_upper:g}), got {self.mc_lower:g}",
            )


@dataclass(frozen=True)
class EnhancedPoetConfig(PoetConfig):
    """Enhanced POET (Wang et al. 2020, arXiv:2003.08536): PATA-EC novelty; a larger
    population admitting more children per reproduction."""

    name: str = setting("enhanced_poet", doc="registry name or package.module:Class")
    novelty: str = setting(
        Characterization.PATA_EC.value,
        choices=tuple(c.value for c in Characterization),
        doc="params (POET) or pata_ec (Enhanced POET)",
    )
    max_active: int = setting(8, low=1, doc="above this the oldest active pairs are archived")
    max_admitted: int = setting(2, low=0)


class Poet(Curriculum):
    """Co-evolves (task, policy) pairs; one `step()` is one generation.

    Never starts Ray and never writes files: the pool is given, results are returned.
    """

    config_class = PoetConfig
    config: PoetConfig

    def __init__(
        self,
        config: PoetConfig,
        *,
        space: TaskSpace,
        pool: EvaluationPool,
        optimizer: Optimizer,
        seed: int = 0,
        initial_tasks: list[Task] | None = None,
        initial_theta: np.ndarray | None = None,
    ):
        super().__init__(
            config,
            space=space,
            pool=pool,
            optimizer=optimizer,
            seed=seed,
            initial_theta=initial_theta,
        )
        self.characterization = Characterization(config.novelty)
        self.solved_threshold = (
            config.solved_threshold if config.solved_threshold is not None else space.solved_score
        )
        self.rng = np.random.default_rng(seed)
        # PATA-EC scores use one fixed seed, so a frozen policy's score on a task never changes.
        self.pata_seed = int(np.random.default_rng([seed, 1]).integers(0, 2**31 - 1))
        self.scores = ScoreCache()
        self._errors: dict[int, str] = {}  # pair id -> why its last evaluation failed
        self.population = Population()
        for task in self._initial_tasks(initial_tasks):
            theta = self.new_theta(self.rng)
            self.population.add(task, theta, optimizer.init_state(theta, self.rng), None, 0)

    def _initial_tasks(self, given: Iterable[Task] | None) -> list[Task]:
        """The first pairs' tasks: `initial_pairs` pairs on the space's initial task, or one
        pair per task given (then `initial_pairs` is unused). Given tasks are refused where
        a run would quietly change them: an empty list (it fell back to the default), more
        than `max_active` (all stayed active until the first reproduction), duplicates (POET
        drops a child whose task a pair already has)."""
        cfg = self.config
        if given is None:
            return [self.space.initial_task()] * cfg.initial_pairs
        # A numeric space's levels are Tasks; a maze space's, Mazes: any kind's levels start
        # pairs, as DR, PLR and ACCEL take them.
        kind = level_type(self.space)
        if isinstance(given, kind | Task | str | Mapping) or not isinstance(given, Iterable):
            one = isinstance(given, kind | Task)
            raise TypeError(
                f"initial_tasks must be a list of {kind.__name__}s, got {type(given).__name__}"
                + (" (one task: initial_tasks=[task])" if one else "")
            )
        tasks = list(given)
        for index, task in enumerate(tasks):
            if not isinstance(task, kind):
                example = " (e.g. space.task(...))" if kind is Task else ""
                raise TypeError(
                    f"initial_tasks[{index}] must be a {kind.__name__} level of task space "
                    f"'{self.space.name}'{example}, got {type(task).__name__}"
                )
            self.space.check(task)
        if not tasks:
            raise ConfigError(
                "initial_tasks",
                "empty; give at least one task, or leave it out for curriculum.initial_pairs "
                "pairs on the space's initial task",
            )
        counts = Counter(tasks)
        if len(counts) < len(tasks):
            task, times = counts.most_common(1)[0]
            raise ConfigError(
                "initial_tasks",
                f"{len(tasks)} tasks but {len(counts)} distinct ({task!r} {times} times); "
                "give distinct tasks: POET drops a child whose task a pair already has",
            )
        if len(tasks) > cfg.max_active:
            raise ConfigError(
                "initial_tasks",
                f"{len(tasks)} tasks > curriculum.max_active {cfg.max_active}; allowed: 1.."
                f"{cfg.max_active} (one active pair per task)",
            )
        return tasks

    # -- one generation --------------------------------------------------------------------
    def run_generation(self) -> Work[GenerationResult]:
        """One POET generation: optimise the active pairs; when due, create children
        (archiving pairs beyond `max_active`) and try transfers.

        Returns:
            Work that yields the pool's batches and returns the generation's result.
        """
        gen, cfg = self.generation, self.config
        solved_before = self.population.annecs()
        decisions: list[Decision] = []
        active = self.population.active
        counts: dict[str, float] = yield from self._optimize(active, decisions)
        yield from self._evaluate(active)
        eligible = self._eligibility(decisions)
        # Counted from the decision rows, so the summary and eligibility.csv always agree.
        counts["eligible"] = sum(
            1 for d in decisions if d.rule == "eligibility" and d.outcome == "eligible"
        )
        tried = passed = admitted = archived = 0
        if eligible and gen % cfg.reproduce_every == 0:
            tried, passed, admitted = yield from self._reproduce(eligible, decisions)
            archived = self._apply_capacity(decisions)
        counts.update(
            children_tried=tried,
            children_passed_mc=passed,
            admitted=admitted,
            archived_now=archived,
        )
        cross_scores: list[tuple[int, int, float]] = []
        counts["transfers"] = 0
        if cfg.transfer_every and gen % cfg.transfer_every == 0:
            counts["transfers"] = yield from self._transfer(decisions, cross_scores)
        counts.update(self._annecs_counts(solved_before))
        cross = [
            {"generation": gen, "policy_pair_id": p, "task_pair_id": t, "score": score}
            for p, t, score in cross_scores
        ]
        return GenerationResult(gen, self._summary(counts), decisions, {CROSS_SCORES_STEM: cross})

    def _optimize(self, active: list[Pair], decisions: list[Decision]) -> Work[dict[str, float]]:
        """`optimizer_steps` steps for each active pair; returns the summary's training
        columns. A step the optimizer explains (e.g. a refused update: the pair kept its
        weights) becomes a decision row."""
        step_reasons: list[tuple[int, StepRecord]] = []
        records: list[Any] = []
        mean_return = yield from train_work(
            self.optimizer,
            active,
            [[p.task] for p in active],
            self.config.optimizer_steps,
            self.rng,
            self.pool.register,
            step_reasons,
            records,
        )
        counts = {"train_mean_return": mean_return, **mean_extras(records)}  # e.g. PPO's losses
        for index, record in step_reasons:
            pair = active[index]
            decisions.append(
                self._decision(
                    pair.task,
                    kind="parent",
                    rule="optimizer",
                    outcome=record.outcome,
                    reason=record.reason,
                    pair_id=pair.pair_id,
                    parent_id=pair.parent_id,
                )
            )
        return counts

    def _annecs_counts(self, solved_before: int) -> dict[str, float]:
        """The summary's ANNECS columns, and the tasks newly solved this generation."""
        annecs = self.population.annecs()
        return dict(
            annecs=annecs,
            annecs_reference=self.population.annecs_reference(),
            newly_solved=annecs - solved_before,
            admitted_total=sum(p.admitted_by_mc for p in self.population.all_pairs()),
        )

    def _evaluate(self, pairs: list[Pair]) -> Work[None]:
        seed = int(self.rng.integers(0, 2**31 - 1))
        returns, errors = yield from evaluate_work(
            self.pool.register, [(p.theta, p.task) for p in pairs], self.config.eval_episodes, seed
        )
        self._errors = {pairs[i].pair_id: message for i, message in errors.items()}
        # A failed episode makes the pair's score NaN: failures are never scores.
        for pair, score in zip(pairs, returns.mean(axis=1), strict=True):
            pair.scores.append(float(score))
            self._note_score(pair, float(score))

    def _note_score(self, pair: Pair, score: float) -> None:
        """ANNECS: the first time some policy reaches the solved threshold on a pair's task."""
        if (
            self.solved_threshold is not None
            and pair.solved_at is None
            and np.isfinite(score)
            and score >= self.solved_threshold
            and (pair.born < self.generation or not pair.admitted_by_mc)
        ):
            pair.solved_at = self.generation

    def _eligibility(self, decisions: list[Decision]) -> list[Pair]:
        eligible = []
        threshold = self.config.repro_threshold
        for pair in self.population.active:
            ok, reason = rules.eligibility(pair.score, threshold)
            decisions.append(
                self._decision(
                    pair.task,
                    kind="parent",
                    rule="eligibility",
                    outcome="eligible" if ok else "ineligible",
                    reason=reason,
                    pair_id=pair.pair_id,
                    parent_id=pair.parent_id,
                    score=pair.score,
                    threshold=threshold,
                    error=self._errors.get(pair.pair_id, ""),
                )
            )
            if ok:
                eligible.append(pair)
        return eligible

    # -- reproduction ----------------------------------------------------------------------
    def _reproduce(
        self, eligible: list[Pair], decisions: list[Decision]
    ) -> Work[tuple[int, int, int]]:
        """Mutation trials from the eligible pairs, the minimal criterion, then admission by
        novelty; returns how many children were tried, passed the MC, were admitted."""
        candidates = self._mutation_trials(eligible, decisions)
        if not candidates:
            return 0, 0, 0
        passing = yield from self._minimal_criterion(candidates, decisions)
        if not passing:
            return len(candidates), 0, 0
        admitted = yield from self._admit(passing, decisions)
        return len(candidates), len(passing), admitted

    def _minimal_criterion(
        self, candidates: list[tuple[Pair, Task]], decisions: list[Decision]
    ) -> Work[list[tuple[Pair, Task, float, str]]]:
        """Each child scored by its parent's policy: those that pass the minimal criterion,
        with that score and the reason; a decision row for each that fails."""
        cfg = self.config
        seed = int(self.rng.integers(0, 2**31 - 1))
        returns, errors = yield from evaluate_work(
            self.pool.register,
            [(parent.theta, child) for parent, child in candidates],
            cfg.eval_episodes,
            seed,
        )
        passing: list[tuple[Pair, Task, float, str]] = []
        for index, ((parent, child), score) in enumerate(
            zip(candidates, returns.mean(axis=1), strict=True)
        ):
            ok, reason = rules.minimal_criterion(float(score), cfg.mc_lower, cfg.mc_upper)
            if ok:
                passing.append((parent, child, float(score), reason))
                continue
            decisions.append(
                self._child_decision(
                    parent,
                    child,
                    "minimal_criterion",
                    "rejected",
                    reason,
                    score,
                    error=errors.get(index, ""),
                )
            )
        return passing

    def _admit(
        self, passing: list[tuple[Pair, Task, float, str]], decisions: list[Decision]
    ) -> Work[int]:
        """The `max_admitted` most novel children become pairs; a decision row for every
        child, admitted or not. Returns how many were admitted."""
        cfg = self.config
        novelty = yield from self._novelty([child for _, child, _, _ in passing])
        order = rules.admission_order(list(novelty))
        admit = [index for rank, index in enumerate(order, 1) if rank <= cfg.max_admitted]
        starts = yield from self._starting_policies([passing[i] for i in admit])
        against_archive = yield from self._mc_against_archive([passing[i][1] for i in admit])
        for rank, index in enumerate(order, start=1):
            parent, child, score, mc_reason = passing[index]
            ok, reason = rules.admission(rank, cfg.max_admitted, float(novelty[index]))
            pair_id = None
            if ok:
                theta, origin = starts[admit.index(index)]
                mc_vs_archive, archive_reason = against_archive[admit.index(index)]
                pair_id = self._add_child(parent, child, theta, mc_vs_archive).pair_id
                reason = f"{reason}; starts with {origin}; {archive_reason}"
            decisions.append(
                self._child_decision(
                    parent,
                    child,
                    "novelty",
                    "admitted" if ok else "not_admitted",
                    f"{mc_reason}; {reason}",
                    score,
                    pair_id=pair_id,
                    novelty=float(novelty[index]),
                )
            )
        return len(admit)

    def _add_child(self, parent: Pair, child: Task, theta: np.ndarray, mc_vs_archive: bool) -> Pair:
        """An admitted child as a new active pair, starting with `theta`."""
        pair = self.population.add(
            child,
            theta,
            self.optimizer.init_state(theta, self.rng),
            parent.pair_id,
            self.generation,
        )
        pair.admitted_by_mc = True
        pair.mc_vs_archive = mc_vs_archive
        return pair

    def _mc_against_archive(self, children: list[Task]) -> Work[list[tuple[bool, str]]]:
        """The reference code's ANNECS test, per admitted child: does the best archived
        policy's score on it pass the minimal criterion? (Frozen policies: scores cached.)"""
        archive = self.population.archive
        if not archive:
            return [(True, "archive empty: counts for annecs_reference")] * len(children)
        cfg = self.config
        scores = yield from self.scores.matrix_work(
            self.pool.register,
            [p.theta for p in archive],
            children,
            cfg.eval_episodes,
            self.pata_seed,
        )
        out = []
        for column in scores.T:
            finite = column[np.isfinite(column)]
            best = float(finite.max()) if finite.size else float("nan")
            ok, _ = rules.minimal_criterion(best, cfg.mc_lower, cfg.mc_upper)
            verdict = "passes" if ok else "fails"
            out.append((ok, f"best archived policy {best:.1f} {verdict} the MC (annecs_reference)"))
        return out

    def _mutation_trials(
        self, eligible: list[Pair], decisions: list[Decision]
    ) -> list[tuple[Pair, Task]]:
        known = {pair.task: pair.pair_id for pair in self.population.all_pairs()}
        candidates: list[tuple[Pair, Task]] = []
        for _ in range(self.config.max_children):
            parent = eligible[int(self.rng.integers(len(eligible)))]
            child = self.space.mutate(parent.task, self.rng)
            if child in known or any(child == task for _, task in candidates):
                owner = known.get(child)
                where = f"pair {owner}" if owner is not None else "another child"
                reason = f"child rejected: task identical to that of {where}"
                decisions.append(
                    self._child_decision(parent, child, "duplicate", "rejected", reason)
                )
                continue
            candidates.append((parent, child))
        return candidates

    def _novelty(self, children: list[Task]) -> Work[np.ndarray]:
        cfg = self.config
        everyone = self.population.all_pairs()
        return (
            yield from novelty_work(
                self.characterization,
                self.space,
                children,
                [p.task for p in everyone],
                cfg.novelty_k,
                register=self.pool.register,
                policies=[p.theta for p in everyone],
                cache=self.scores,
                episodes=cfg.eval_episodes,
                seed=self.pata_seed,
                bounds=(cfg.mc_lower, cfg.mc_upper),
            )
        )

    def _starting_policies(
        self, admitted: list[tuple[Pair, Task, float, str]]
    ) -> Work[list[tuple[np.ndarray, str]]]:
        """Each admitted child starts with the best active policy on it (parent on ties), or
        with its parent's when `admission_transfer` is off (then nothing is evaluated)."""
        if not admitted:
            return []
        if not self.config.admission_transfer:
            return [
                (parent.theta.copy(), f"parent's policy ({score:.1f}; admission_transfer off)")
                for parent, _, score, _ in admitted
            ]
        active = self.population.active
        found = yield from best_policies_work(
            self.pool.register,
            None,
            [p.theta for p in active],
            [child for _, child, _, _ in admitted],
            None,
            self.config.eval_episodes,
            self.rng,
        )
        starts = []
        for (parent, _, parent_score, _), candidates in zip(admitted, found, strict=True):
            best = pick_best(candidates)
            # The parent is compared on the same episodes as the others (its minimal-criterion
            # score came from other seeds): another policy must beat it there, a tie keeps it.
            own = [c.score for c in candidates if active[c.source] is parent]
            reference = own[0] if own and np.isfinite(own[0]) else parent_score
            source = active[best.source]
            if source is not parent and np.isfinite(best.score) and best.score > reference:
                starts.append(
                    (best.theta.copy(), f"policy of pair {source.pair_id} ({best.score:.1f})")
                )
            else:
                starts.append((parent.theta.copy(), f"parent's policy ({reference:.1f})"))
        return starts

    def _apply_capacity(self, decisions: list[Decision]) -> int:
        excess = rules.capacity(len(self.population.active), self.config.max_active)
        oldest = sorted(self.population.active, key=lambda p: (p.born, p.pair_id))[:excess]
        for pair in oldest:
            self.population.move_to_archive(pair, self.generation)
            decisions.append(
                self._decision(
                    pair.task,
                    kind="capacity",
                    rule="capacity",
                    outcome="archived",
                    reason=(
                        f"archived: among the {excess} oldest of "
                        f"{self.config.max_active + excess} active > max_active "
                        f"{self.config.max_active}"
                    ),
                    pair_id=pair.pair_id,
                    parent_id=pair.parent_id,
                    score=pair.score,
                )
            )
        return len(oldest)

    # -- transfer --------------------------------------------------------------------------
    def _transfer(
        self, decisions: list[Decision], cross_scores: list[tuple[int, int, float]]
    ) -> Work[int]:
        """Each task tries every other active policy, directly and after one proposal step;
        the best replaces its own when it beats the best of the task's recent scores."""
        active = self.population.active
        if len(active) < 2:
            return 0
        cfg = self.config
        found = yield from best_policies_work(
            self.pool.register,
            self.optimizer if cfg.transfer_proposal else None,
            [p.theta for p in active],
            [p.task for p in active],
            [p.state for p in active],
            cfg.eval_episodes,
            self.rng,
        )
        transfers = 0
        for target, (pair, candidates) in enumerate(zip(active, found, strict=True)):
            cross_scores.extend(
                (active[c.source].pair_id, pair.pair_id, c.score)
                for c in candidates
                if c.via == "direct"
            )
            if self._transfer_to(pair, target, candidates, active, decisions):
                transfers += 1
        return transfers

    def _transfer_to(
        self,
        pair: Pair,
        target: int,
        candidates: list[TransferCandidate],
        active: list[Pair],
        decisions: list[Decision],
    ) -> bool:
        """The best other policy replaces `pair`'s (active[target]) when it beats the best of
        the task's recent scores; the decision is noted either way. Whether it did."""
        cfg = self.config
        others = [c for c in candidates if c.source != target]
        best = pick_best(others)
        source = active[best.source]
        label = f"policy of pair {source.pair_id} ({best.via})"
        recent = pair.recent_best(cfg.transfer_history)
        own = next(c.score for c in candidates if c.source == target and c.via == "direct")
        ok, reason = rules.transfer(best.score, label, recent, cfg.transfer_history, own)
        if ok:
            pair.theta = best.theta.copy()
            pair.state = self.optimizer.init_state(pair.theta, self.rng)
            pair.steps = 0
            pair.scores.append(best.score)
            self._note_score(pair, best.score)
        decisions.append(
            self._decision(
                pair.task,
                kind="transfer",
                rule="transfer",
                outcome="transferred" if ok else "kept",
                reason=reason,
                pair_id=pair.pair_id,
                parent_id=source.pair_id,
                score=best.score,
                # The bar the transfer was judged against: a new child's own policy's
                # score in this evaluation when it has no recent score of its own.
                threshold=recent if np.isfinite(recent) else own,
            )
        )
        return ok

    # -- helpers ---------------------------------------------------------------------------
    def _decision(self, task: Task, **fields: Any) -> Decision:
        return Decision(generation=self.generation, task_id=task.id, task=task.to_json(), **fields)

    def _child_decision(
        self,
        parent: Pair,
        child: Task,
        rule: str,
        outcome: str,
        reason: str,
        score: float = float("nan"),
        **fields: Any,
    ) -> Decision:
        bounds = {}
        if rule != "duplicate":
            bounds = {"lower": self.config.mc_lower, "upper": self.config.mc_upper}
        return self._decision(
            child,
            kind="child",
            rule=rule,
            outcome=outcome,
            reason=reason,
            parent_id=parent.pair_id,
            score=float(score),
            **bounds,
            **fields,
        )

    def _summary(self, counts: dict) -> dict[str, Any]:
        scores = np.array([p.score for p in self.population.active], dtype=float)
        finite = scores[np.isfinite(scores)]
        return {
            "active": len(self.population.active),
            "archived": len(self.population.archive),
            **counts,
            "best_score": float(finite.max()) if finite.size else float("nan"),
            "median_score": float(np.median(finite)) if finite.size else float("nan"),
        }

    # -- checkpointing ---------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The checkpoint state: generation, generator state and population."""
        return self.tagged_state(
            {
                "generation": self.generation,
                "rng": self.rng.bit_generator.state,
                "population": self.population,
            }
        )

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state that `state_dict` returned.

        Raises:
            ConfigError: If the state lacks keys or its pairs do not fit this run's policy or
                task space.
        """
        self.check_state(state, ("generation", "rng", "population"))
        pairs = list(state["population"].all_pairs())
        self.check_state(
            state, thetas=[p.theta for p in pairs], task_spaces=[p.task.space for p in pairs]
        )
        self.generation = state["generation"]
        self.rng.bit_generator.state = state["rng"]
        self.population = state["population"]

    # -- tables and tests --------------------------------------------------------------------
    def population_frame(self) -> pd.DataFrame:
        """The population as population.csv's table."""
        return self.population.to_frame()

    def policies_for_testing(self) -> PoliciesForTesting:
        """Every active pair's policy; a test task's score is the best of them (POET's
        population specialises: some member should handle a task, not every member)."""
        return PoliciesForTesting(
            {f"pair_{p.pair_id}": p.theta for p in self.population.active}, best_of=True
        )

    def progress_line(self, result: GenerationResult, total: int) -> str:
        """One console line of a generation's pairs, children, transfers, ANNECS and scores."""
        s = result.summary
        return (
            f"gen {result.generation:>3}/{total} | active {s['active']:>2} archived "
            f"{s['archived']:>2} | eligible {s['eligible']:>2} | children "
            f"{s['children_tried']:>2} tried {s['children_passed_mc']:>2} passed MC "
            f"{s['admitted']:>2} admitted | transfers {s['transfers']:>2} | ANNECS "
            f"{s['annecs']:>2} | best {s['best_score']:7.1f} median {s['median_score']:7.1f} | "
            f"{s['steps_per_s'] / 1000:6.1f}k steps/s | {s['wall_s']:5.1f}s"
        )


class EnhancedPoet(Poet):
    """Enhanced POET: the same loop with PATA-EC novelty by default."""

    config_class = EnhancedPoetConfig
