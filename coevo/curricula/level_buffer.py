"""The PLR⊥ level buffer: which levels to keep, which to replay, and why.

Robust Prioritized Level Replay (Jiang, Dennis, Parker-Holder, Foerster, Grefenstette,
Rocktäschel, "Replay-Guided Adversarial Environment Design", NeurIPS 2021). One small object
with explicit state; every random draw takes the caller's generator, so a fixed generator
gives a fixed sequence of decisions (the unit tests rely on it).

- Score prioritisation by rank: h(S_i) = 1 / rank(S_i), P_S(i) = h(S_i)^(1/β) / Σ_j h(S_j)^(1/β),
  rank 1 = highest score. Ties share the best rank of their group (competition ranking:
  scores 5, 3, 3, 1 get ranks 1, 2, 2, 4), so equal scores get equal priority whatever their
  order in the buffer. (dcd breaks ties by argsort position instead; ours does not depend on
  insertion order.)
- Staleness: P_C(i) = (c - C_i) / Σ_j (c - C_j), c the clock, C_i its value when level i
  was last sampled, seen again or added; uniform when every level is fresh. `staleness_clock`:
  `draws` (default) ticks on every replay draw and every level offered, so a batch of n new
  levels ages the buffer by n (minimax 0.2); `replays` ticks on replay draws and on a level
  offered again only, a new level entering fresh (dcd's `_update_staleness`).
- P_replay = (1 - ρ) P_S + ρ P_C.
- Replay decision: replay with probability `replay_prob` once the buffer holds at least
  `min_fill` of its capacity (dcd's `level_replay_rho`), else a new level. On a space whose
  new levels reach fewer distinct tasks than that (a few int levels), `fill_cap` lowers the
  fill to what they reach, as dcd's buffer is the whole level set when the set is small.
- Insertion: while not full a new level is added. When full, `eviction` picks the level a
  new one may replace: `replay_support` (dcd's default `level_replay_seed_buffer_priority`,
  and minimax 0.2) the level of lowest replay probability P_replay, staleness included,
  replaced when the new score is at least its score (ties admitted); `score` the
  lowest-scored level, replaced only by a strictly higher score. The first of equal
  candidates is taken (deterministic).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from coevo.tasks.task import Task

EVICTIONS = ("replay_support", "score")
STALENESS_CLOCKS = ("draws", "replays")


def competition_ranks(scores: Sequence[float]) -> np.ndarray:
    """Rank 1 for the highest score; tied scores share the best rank of their group."""
    values = np.asarray(scores, dtype=float)
    # rank = 1 + number of strictly higher scores: ties share, order in the buffer irrelevant.
    return 1 + (values[None, :] > values[:, None]).sum(axis=1)


def rank_weights(scores: Sequence[float], temperature: float) -> np.ndarray:
    """P_S: h(S_i)^(1/β) normalised, h = 1/rank."""
    if len(scores) == 0:
        return np.zeros(0)
    h = 1.0 / competition_ranks(scores).astype(float)
    weights = h ** (1.0 / temperature)
    return weights / weights.sum()


def staleness_weights(last_sampled: Sequence[int], clock: int) -> np.ndarray:
    """P_C: (c - C_i) / Σ_j (c - C_j); uniform when all are zero."""
    stale = clock - np.asarray(last_sampled, dtype=float)
    if len(stale) == 0:
        return np.zeros(0)
    total = stale.sum()
    if total <= 0:
        return np.full(len(stale), 1.0 / len(stale))
    return stale / total


def replay_distribution(
    scores: Sequence[float],
    last_sampled: Sequence[int],
    clock: int,
    temperature: float,
    staleness_coef: float,
) -> np.ndarray:
    """P_replay = (1 - ρ) P_S + ρ P_C."""
    return (1.0 - staleness_coef) * rank_weights(scores, temperature) + (
        staleness_coef * staleness_weights(last_sampled, clock)
    )


@dataclass
class Level:
    """One buffer entry: the task, its latest score and the bookkeeping behind its priority."""

    level_id: int
    task: Task
    score: float
    last_sampled: int  # the draw count when it was last replayed (or added)
    added_at: int  # generation it entered the buffer
    parent_id: int | None = None  # the level it was mutated from (ACCEL)
    edits: int = 0  # mutations applied since a base level (ACCEL)
    replays: int = 0
    max_return: float = float("-inf")  # best mean return seen on it (MaxMC / regret proxies)
    last_return: float = float("nan")

    def row(self) -> dict[str, Any]:
        """The level as a population.csv row: ids, task parameters, score and times."""
        return {
            "level_id": self.level_id,
            "task_id": self.task.id,
            **{f"task.{k}": v for k, v in self.task.params},
            "score": self.score,
            "last_sampled": self.last_sampled,
            "added_at": self.added_at,
            "parent_id": self.parent_id,
            "edits": self.edits,
            "replays": self.replays,
            "max_return": self.max_return,
            "last_return": self.last_return,
        }


@dataclass(frozen=True)
class Pick:
    """A replayed level and the numbers that chose it (for the eligibility table)."""

    level: Level
    probability: float
    rank: int
    staleness: int
    size: int
    # The level's score when drawn: its rank and P come from it, while `level.score` is
    # rewritten once the replay rescores the level.
    score: float

    def reason(self) -> str:
        """Why the level was replayed, in words: score, rank, staleness and probability."""
        return (
            f"replayed level L{self.level.level_id}: score {self.score:.3g}, rank "
            f"{self.rank} of {self.size}, staleness {self.staleness}, P {self.probability:.3f}"
        )


def levels_for_replay(min_fill: float, capacity: int) -> int:
    """Levels a buffer must hold before its first replay: `min_fill` of its capacity, and at
    least one."""
    return max(1, int(np.ceil(min_fill * capacity)))


@dataclass
class LevelBuffer:
    """The PLR⊥ buffer with its sampling clock; see the module docstring for the rules."""

    capacity: int
    temperature: float
    staleness_coef: float
    replay_prob: float
    min_fill: float
    levels: list[Level] = field(default_factory=list)
    clock: int = 0  # draws so far (c in P_C)
    next_id: int = 0
    # The distinct new levels the level generator can give, when fewer than the fill replay
    # would otherwise need (None: no cap). A state saved without it loads with None.
    fill_cap: int | None = None
    eviction: str = "score"  # or "replay_support" (see the module docstring)
    staleness_clock: str = "draws"  # or "replays" (see the module docstring)

    def __post_init__(self) -> None:
        if self.capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {self.capacity}")
        if self.staleness_clock not in STALENESS_CLOCKS:
            raise ValueError(
                f"staleness_clock must be one of {STALENESS_CLOCKS}, got {self.staleness_clock!r}"
            )
        if self.eviction not in EVICTIONS:
            raise ValueError(f"eviction must be one of {EVICTIONS}, got {self.eviction!r}")
        if self.temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")
        for name in ("staleness_coef", "replay_prob", "min_fill"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {value}")

    def __len__(self) -> int:
        return len(self.levels)

    @property
    def full(self) -> bool:
        """Whether the buffer holds `capacity` levels."""
        return len(self.levels) >= self.capacity

    def find(self, task: Task) -> Level | None:
        """The buffered level of `task`, or None."""
        return next((level for level in self.levels if level.task == task), None)

    def by_id(self, level_id: int) -> Level | None:
        """The buffered level with id `level_id`, or None."""
        return next((level for level in self.levels if level.level_id == level_id), None)

    def distribution(self) -> np.ndarray:
        """The replay probabilities of the buffered levels, in order."""
        return replay_distribution(
            [lv.score for lv in self.levels],
            [lv.last_sampled for lv in self.levels],
            self.clock,
            self.temperature,
            self.staleness_coef,
        )

    def replay_fill(self) -> int:
        """Levels the buffer must hold before its first replay: `min_fill` of capacity (at
        least one), or `fill_cap` when that is fewer."""
        need = levels_for_replay(self.min_fill, self.capacity)
        return need if self.fill_cap is None else max(1, min(need, self.fill_cap))

    def replay_ready(self) -> bool:
        """Enough levels to replay (`replay_fill`)."""
        return len(self.levels) >= self.replay_fill()

    def decide_replay(self, rng: np.random.Generator) -> tuple[bool, str]:
        """Replay (True) or a new level (False), with the reason. Draws once either way, so
        the generator's sequence does not depend on the buffer's fill."""
        draw = float(rng.random())
        if not self.replay_ready():
            need = self.replay_fill()
            why = f"min_fill {self.min_fill:g}"
            if need < levels_for_replay(self.min_fill, self.capacity):
                why += f", capped at the {need} distinct new levels"
            return False, (
                f"new level: buffer holds {len(self.levels)} of {self.capacity}, replay needs "
                f"{need} ({why})"
            )
        if draw < self.replay_prob:
            return True, f"replay: draw {draw:.3f} < replay_prob {self.replay_prob:g}"
        return False, f"new level: draw {draw:.3f} ≥ replay_prob {self.replay_prob:g}"

    def sample(self, rng: np.random.Generator, count: int = 1) -> list[Pick]:
        """Draw `count` levels (with replacement, one clock tick each) from P_replay; each
        drawn level becomes fresh (C_i = c) for the draws after it."""
        picks = []
        for _ in range(count):
            probabilities = self.distribution()
            ranks = competition_ranks([lv.score for lv in self.levels])
            index = int(rng.choice(len(self.levels), p=probabilities))
            level = self.levels[index]
            staleness = self.clock - level.last_sampled
            picks.append(
                Pick(
                    level,
                    float(probabilities[index]),
                    int(ranks[index]),
                    staleness,
                    len(self),
                    level.score,
                )
            )
            self.clock += 1
            level.last_sampled = self.clock
            level.replays += 1
        return picks

    def offer(
        self,
        task: Task,
        score: float,
        generation: int,
        parent_id: int | None = None,
        edits: int = 0,
        mean_return: float = float("nan"),
    ) -> tuple[Level | None, str]:
        """Add a new level if there is room or it beats the lowest score; returns the level
        (None if rejected) and the reason."""
        known = self.find(task)
        if known is not None or getattr(self, "staleness_clock", "draws") == "draws":
            self.clock += 1  # seeing a level is a draw too (replays: only a level seen again)
        if known is not None:
            known.last_sampled = self.clock
            self.rescore(known, score, mean_return)
            if not np.isfinite(score):  # a failed evaluation: the level keeps its score
                return known, (
                    f"already in buffer as L{known.level_id}; score kept at {known.score:.3g}"
                )
            return known, f"already in buffer as L{known.level_id}; score updated to {score:.3g}"
        if not np.isfinite(score):
            return None, f"not added: score {score} is not finite"
        replaced = ""
        if self.full:
            by_support = getattr(self, "eviction", "score") == "replay_support"
            weights = self.distribution() if by_support else [lv.score for lv in self.levels]
            lowest = int(np.argmin(weights))  # first of the lowest: deterministic
            worst = self.levels[lowest]
            admitted = score >= worst.score if by_support else score > worst.score
            if not admitted and by_support:
                return None, (
                    f"not added: score {score:.3g} < {worst.score:.3g} of L{worst.level_id}, "
                    f"the level of lowest replay probability ({weights[lowest]:.3g}) in the "
                    "full buffer"
                )
            if not admitted:
                return None, (
                    f"not added: score {score:.3g} ≤ lowest in full buffer "
                    f"{worst.score:.3g} (L{worst.level_id})"
                )
            self.levels.pop(lowest)
            support = f", P {weights[lowest]:.3g} lowest" if by_support else ""
            replaced = f", replacing L{worst.level_id} (score {worst.score:.3g}{support})"
        level = Level(self.next_id, task, float(score), self.clock, generation, parent_id, edits)
        self._note_return(level, mean_return)
        self.next_id += 1
        self.levels.append(level)
        return level, f"added as L{level.level_id} with score {score:.3g}{replaced}"

    def rescore(self, level: Level, score: float, mean_return: float = float("nan")) -> None:
        """A replayed level's new score (dcd's default α = 1: the latest score replaces it)."""
        if np.isfinite(score):
            level.score = float(score)
        self._note_return(level, mean_return)

    @staticmethod
    def _note_return(level: Level, mean_return: float) -> None:
        if np.isfinite(mean_return):
            level.last_return = float(mean_return)
            level.max_return = max(level.max_return, float(mean_return))

    def rows(self) -> list[dict[str, Any]]:
        """One row per level, most likely to be replayed first."""
        probabilities = self.distribution() if self.levels else []
        ranks = competition_ranks([lv.score for lv in self.levels])
        rows = [
            {**lv.row(), "rank": int(r), "replay_probability": float(p)}
            for lv, r, p in zip(self.levels, ranks, probabilities, strict=True)
        ]
        return sorted(rows, key=lambda row: (-row["replay_probability"], row["level_id"]))
