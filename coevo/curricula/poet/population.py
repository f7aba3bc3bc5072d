"""Pairs of (task, policy), the active population, the archive and the lineage."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from coevo.tasks.task import Task


@dataclass
class Pair:
    """A task with the policy that is being optimized on it."""

    pair_id: int
    task: Task
    theta: np.ndarray
    state: Any  # the optimizer's state for this pair's policy
    parent_id: int | None
    born: int  # generation at which it was created
    scores: list[float] = field(default_factory=list)  # evaluation score per generation
    archived_at: int | None = None
    admitted_by_mc: bool = False  # created as a child that passed the minimal criterion
    solved_at: int | None = None  # first generation a policy reached the solved threshold
    # At admission, the best archived policy's score on the task passed the minimal criterion
    # (the reference code's ANNECS; True for a child admitted while the archive was empty).
    mc_vs_archive: bool = False
    steps: int = 0  # optimizer steps of the current policy on this task (0 after a transfer)

    def recent_best(self, history: int) -> float:
        """The best finite score of the pair's last `history` evaluations.

        Args:
            history: How many recent scores to look at.

        Returns:
            The best of them, or -inf if none is finite.
        """
        finite = [s for s in self.scores[-history:] if np.isfinite(s)]
        return max(finite) if finite else float("-inf")

    @property
    def score(self) -> float:
        """The pair's latest score, or NaN before its first."""
        return self.scores[-1] if self.scores else float("nan")

    def __repr__(self) -> str:
        # The parameter vector and optimizer state are left out: thousands of numbers.
        best = max(self.scores) if self.scores else float("nan")
        parts = [f"{self.task!r}", f"score {self.score:.1f} (best {best:.1f})"]
        parts.append(
            f"born {self.born}" + ("" if self.parent_id is None else f" of pair {self.parent_id}")
        )
        parts.append(f"{self.steps} steps")
        if self.solved_at is not None:
            parts.append(f"solved at {self.solved_at}")
        if self.archived_at is not None:
            parts.append(f"archived at {self.archived_at}")
        return f"Pair {self.pair_id}: {', '.join(parts)}"


class Population:
    """Active pairs (in order of creation), archived pairs, and who descends from whom."""

    def __init__(self) -> None:
        self.active: list[Pair] = []
        self.archive: list[Pair] = []
        self.next_id = 0

    def add(
        self,
        task: Task,
        theta: np.ndarray,
        state: Any,
        parent_id: int | None,
        generation: int,
    ) -> Pair:
        """Add a new active pair (its parameters copied).

        Args:
            task: The pair's level.
            theta: The policy's parameters.
            state: The optimizer's state.
            parent_id: The parent pair's id, or None for an initial pair.
            generation: The generation it is created in.

        Returns:
            The new pair.
        """
        pair = Pair(self.next_id, task, theta.copy(), state, parent_id, generation)
        self.next_id += 1
        self.active.append(pair)
        return pair

    def move_to_archive(self, pair: Pair, generation: int) -> None:
        """Move an active pair to the archive.

        Args:
            pair: An active pair.
            generation: The generation it is archived in.
        """
        self.active.remove(pair)
        pair.archived_at = generation
        self.archive.append(pair)

    def __repr__(self) -> str:
        head = (
            f"Population: {len(self.active)} active, {len(self.archive)} archived, "
            f"ANNECS {self.annecs()}"
        )
        return "\n".join([head, *(f"  {pair!r}" for pair in self.active)])

    def all_pairs(self) -> list[Pair]:
        """The active pairs, then the archived ones."""
        return [*self.active, *self.archive]

    def tasks(self) -> list[Task]:
        """The levels of all pairs, active and archived."""
        return [pair.task for pair in self.all_pairs()]

    def get(self, pair_id: int) -> Pair:
        """The pair with id `pair_id`, active or archived.

        Raises:
            KeyError: If no pair has that id.
        """
        for pair in self.all_pairs():
            if pair.pair_id == pair_id:
                return pair
        raise KeyError(f"no pair with id {pair_id}")

    def annecs(self) -> int:
        """The papers' ANNECS (Wang et al. 2020): tasks admitted through the minimal criterion
        and later solved by some policy."""
        return sum(1 for p in self.all_pairs() if p.admitted_by_mc and p.solved_at is not None)

    def annecs_reference(self) -> int:
        """The reference code's ANNECS: admitted tasks that, at admission, also passed the
        minimal criterion against the archived policies (counted whether solved or not)."""
        return sum(1 for p in self.all_pairs() if p.admitted_by_mc and p.mc_vs_archive)

    def to_frame(self) -> pd.DataFrame:
        """All pairs as population.csv's table, one row per pair."""
        rows = []
        for pair in self.all_pairs():
            rows.append(
                {
                    "pair_id": pair.pair_id,
                    "status": "archived" if pair.archived_at is not None else "active",
                    "parent_id": pair.parent_id,
                    "born": pair.born,
                    "archived_at": pair.archived_at,
                    "task_id": pair.task.id,
                    **{f"task.{k}": v for k, v in pair.task.params},
                    "score": pair.score,
                    "best_score": max(pair.scores) if pair.scores else float("nan"),
                    "optimizer_steps": pair.steps,
                    "admitted_by_mc": pair.admitted_by_mc,
                    "solved_at": pair.solved_at,
                    "mc_vs_archive": pair.mc_vs_archive,
                }
            )
        return pd.DataFrame(rows)
