"""The generation loop: optimize, evaluate, eligibility, reproduce, capacity, transfer."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from coevo.evolve import rules
from coevo.evolve.es import EvolutionStrategy
from coevo.evolve.population import Pair, Population
from coevo.evolve.rules import Decision
from coevo.pool import EvaluationPool
from coevo.tasks.task import Task, TaskSpace


@dataclass(frozen=True)
class EvolutionConfig:
    generations: int = 20
    initial_pairs: int = 1
    es_steps: int = 2  # ES steps per active pair per generation
    eval_episodes: int = 3
    repro_threshold: float = 200.0
    reproduce_every: int = 2
    max_children: int = 8  # mutation trials per reproduction
    max_admitted: int = 1
    mc_lower: float = 50.0
    mc_upper: float = 450.0
    max_active: int = 6
    novelty_k: int = 5
    transfer_every: int = 2  # 0 turns transfer off


# Columns of summary.csv that measure time or depend on how work was split over workers;
# everything else is determined by config and seed.
RUNTIME_COLUMNS = (
    "wall_s",
    "steps_per_s",
    "cache_hits",
    "cache_misses",
    "bytes_shipped",
    "worker_busy_s",
)


@dataclass
class GenerationResult:
    generation: int
    summary: dict[str, Any]
    decisions: list[Decision] = field(default_factory=list)


class Coevolution:
    """Co-evolves (task, policy) pairs; one `step()` is one generation.

    Never starts Ray and never writes files: the pool is given, results are returned.
    """

    def __init__(
        self,
        space: TaskSpace,
        pool: EvaluationPool,
        optimizer: EvolutionStrategy,
        config: EvolutionConfig,
        seed: int = 0,
        initial_tasks: list[Task] | None = None,
    ):
        self.space = space
        self.pool = pool
        self.optimizer = optimizer
        self.config = config
        self.rng = np.random.default_rng(seed)
        self.generation = 0
        self.population = Population()
        tasks = initial_tasks or [space.initial_task()] * config.initial_pairs
        for task in tasks:
            space.check(task)
            theta = pool.policy.init(self.rng)
            self.population.add(task, theta, optimizer.init_state(), None, 0)

    # -- one generation --------------------------------------------------------------------
    def step(self) -> GenerationResult:
        self.generation += 1
        gen, cfg = self.generation, self.config
        started = time.perf_counter()
        stats_before = self.pool.stats_snapshot()
        decisions: list[Decision] = []
        counts: dict[str, float] = {}

        counts["es_mean_return"] = self._optimize()
        scores = self._evaluate(self.population.active)
        eligible = self._eligibility(scores, decisions)
        counts["eligible"] = len(eligible)
        tried = passed = admitted = 0
        if eligible and gen % cfg.reproduce_every == 0:
            tried, passed, admitted = self._reproduce(eligible, decisions)
        counts.update(children_tried=tried, children_passed_mc=passed, admitted=admitted)
        counts["archived_now"] = self._apply_capacity(decisions)
        counts["transfers"] = (
            self._transfer(decisions) if cfg.transfer_every and gen % cfg.transfer_every == 0 else 0
        )
        summary = self._summary(counts, stats_before, time.perf_counter() - started)
        return GenerationResult(gen, summary, decisions)

    def run(self, generations: int | None = None, callback=None) -> list[GenerationResult]:
        results = []
        while self.generation < (generations or self.config.generations):
            result = self.step()
            results.append(result)
            if callback:
                callback(result)
        return results

    def _optimize(self) -> float:
        active = self.population.active
        mean_return = float("nan")
        for _ in range(self.config.es_steps):
            steps = self.optimizer.step_many(
                [p.theta for p in active],
                [p.es_state for p in active],
                [p.task for p in active],
                self.rng,
            )
            for pair, step in zip(active, steps, strict=True):
                pair.theta = step.theta
            mean_return = float(np.nanmean([s.mean_return for s in steps]))
        return mean_return

    def _evaluate(self, pairs: list[Pair]) -> np.ndarray:
        seed = int(self.rng.integers(0, 2**31 - 1))
        returns = self.pool.evaluate(
            [(p.theta, p.task) for p in pairs], self.config.eval_episodes, seed
        )
        # A failed episode makes the pair's score NaN: failures are never scores.
        scores = returns.mean(axis=1)
        for pair, score in zip(pairs, scores, strict=True):
            pair.scores.append(float(score))
        return scores

    def _eligibility(self, scores: np.ndarray, decisions: list[Decision]) -> list[Pair]:
        eligible = []
        threshold = self.config.repro_threshold
        for pair, score in zip(self.population.active, scores, strict=True):
            ok, reason = rules.eligibility(float(score), threshold)
            decisions.append(
                self._decision(
                    pair.task,
                    kind="parent",
                    rule="eligibility",
                    outcome="eligible" if ok else "ineligible",
                    reason=reason,
                    pair_id=pair.pair_id,
                    parent_id=pair.parent_id,
                    score=float(score),
                    threshold=threshold,
                )
            )
            if ok:
                eligible.append(pair)
        return eligible

    def _reproduce(self, eligible: list[Pair], decisions: list[Decision]) -> tuple[int, int, int]:
        cfg = self.config
        known = {task: pair.pair_id for pair in self.population.all_pairs() for task in [pair.task]}
        candidates: list[tuple[Pair, Task]] = []
        for _ in range(cfg.max_children):
            parent = eligible[int(self.rng.integers(len(eligible)))]
            child = self.space.mutate(parent.task, self.rng)
            if child in known or any(child == task for _, task in candidates):
                owner = known.get(child)
                where = f"pair {owner}" if owner is not None else "another child"
                decisions.append(
                    self._decision(
                        child,
                        kind="child",
                        rule="duplicate",
                        outcome="rejected",
                        reason=f"child rejected: task identical to that of {where}",
                        parent_id=parent.pair_id,
                    )
                )
                continue
            candidates.append((parent, child))
        if not candidates:
            return 0, 0, 0
        seed = int(self.rng.integers(0, 2**31 - 1))
        returns = self.pool.evaluate(
            [(parent.theta, child) for parent, child in candidates], cfg.eval_episodes, seed
        )
        passing: list[tuple[Pair, Task, float]] = []
        for (parent, child), score in zip(candidates, returns.mean(axis=1), strict=True):
            ok, reason = rules.minimal_criterion(float(score), cfg.mc_lower, cfg.mc_upper)
            if ok:
                passing.append((parent, child, float(score)))
            else:
                decisions.append(
                    self._decision(
                        child,
                        kind="child",
                        rule="minimal_criterion",
                        outcome="rejected",
                        reason=reason,
                        parent_id=parent.pair_id,
                        score=float(score),
                        lower=cfg.mc_lower,
                        upper=cfg.mc_upper,
                    )
                )
        admitted = 0
        if passing:
            reference = np.stack([self.space.encode(t) for t in self.population.tasks()])
            encoded = np.stack([self.space.encode(child) for _, child, _ in passing])
            novelty = rules.knn_novelty(encoded, reference, cfg.novelty_k)
            for rank, index in enumerate(rules.admission_order(list(novelty)), start=1):
                parent, child, score = passing[index]
                ok, admit_reason = rules.admission(rank, cfg.max_admitted, float(novelty[index]))
                _, mc_reason = rules.minimal_criterion(score, cfg.mc_lower, cfg.mc_upper)
                pair_id = None
                if ok:
                    pair = self.population.add(
                        child,
                        parent.theta,
                        self.optimizer.init_state(),
                        parent.pair_id,
                        self.generation,
                    )
                    pair_id = pair.pair_id
                    admitted += 1
                decisions.append(
                    self._decision(
                        child,
                        kind="child",
                        rule="novelty",
                        outcome="admitted" if ok else "not_admitted",
                        reason=f"{mc_reason}; {admit_reason}",
                        pair_id=pair_id,
                        parent_id=parent.pair_id,
                        score=score,
                        lower=cfg.mc_lower,
                        upper=cfg.mc_upper,
                        novelty=float(novelty[index]),
                    )
                )
        return len(candidates), len(passing), admitted

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

    def _transfer(self, decisions: list[Decision]) -> int:
        """Each task takes the best active policy on it when that beats its own."""
        active = self.population.active
        if len(active) < 2:
            return 0
        seed = int(self.rng.integers(0, 2**31 - 1))
        matrix = self.pool.cross_evaluate(
            [p.theta for p in active], [p.task for p in active], self.config.eval_episodes, seed
        )
        thetas = [p.theta.copy() for p in active]
        transfers = 0
        for column, pair in enumerate(active):
            scores = np.where(np.isfinite(matrix[:, column]), matrix[:, column], -np.inf)
            best = int(scores.argmax())
            own = float(scores[column])
            if best != column and scores[best] > own:
                pair.theta = thetas[best]
                pair.es_state = self.optimizer.init_state()
                transfers += 1
                outcome, reason = (
                    "transferred",
                    f"policy of pair {active[best].pair_id} scores {scores[best]:.1f} > "
                    f"own {own:.1f}",
                )
            else:
                outcome, reason = "kept", f"own policy is best: {own:.1f}"
            decisions.append(
                self._decision(
                    pair.task,
                    kind="transfer",
                    rule="transfer",
                    outcome=outcome,
                    reason=reason,
                    pair_id=pair.pair_id,
                    parent_id=active[best].pair_id,
                    score=float(scores[best]),
                    threshold=own,
                )
            )
        return transfers

    # -- helpers ---------------------------------------------------------------------------
    def _decision(self, task: Task, **fields: Any) -> Decision:
        return Decision(generation=self.generation, task_id=task.id, task=task.to_json(), **fields)

    def _summary(self, counts: dict, before: dict, wall_s: float) -> dict[str, Any]:
        after = self.pool.stats_snapshot()
        scores = np.array([p.score for p in self.population.active], dtype=float)
        finite = scores[np.isfinite(scores)]
        env_steps = after["env_steps"] - before["env_steps"]
        pool_wall = after["wall_s"] - before["wall_s"]
        return {
            "generation": self.generation,
            "active": len(self.population.active),
            "archived": len(self.population.archive),
            **counts,
            "best_score": float(finite.max()) if finite.size else float("nan"),
            "median_score": float(np.median(finite)) if finite.size else float("nan"),
            "episodes": after["episodes"] - before["episodes"],
            "env_steps": env_steps,
            "steps_per_s": env_steps / pool_wall if pool_wall > 0 else 0.0,
            "cache_hits": after["cache_hits"] - before["cache_hits"],
            "cache_misses": after["cache_misses"] - before["cache_misses"],
            "bytes_shipped": after["bytes_shipped"] - before["bytes_shipped"],
            "worker_busy_s": after["busy_s"] - before["busy_s"],
            "wall_s": wall_s,
        }

    # -- checkpointing ---------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "rng": self.rng.bit_generator.state,
            "population": self.population,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.generation = state["generation"]
        self.rng.bit_generator.state = state["rng"]
        self.population = state["population"]
