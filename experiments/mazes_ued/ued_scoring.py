"""The maze claim's scorings: the named held-out mazes and α-CVaR on random solvable mazes.

At each scoring the run's policy plays, through pools of its own (test episodes never count
in the budget):
- the named held-out mazes (coevo.tasks.maze.held_out with no random ones: labyrinth, four
  rooms, long corridor, perfect mazes 0-2), `named_episodes` sampled episodes each:
  `named_solved`, the % of those episodes that reach the goal (the papers' solved rate);
  and one deterministic (argmax) episode each: `named_argmax`, the % of mazes solved so;
- `random_mazes` random solvable mazes of the training generator, seeded apart
  (`RANDOM_SEED`), `random_episodes` sampled episodes each: `random_solved` (% of episodes
  solved) and `cvar`, SFL's α-CVaR (Rutherford et al. 2024): the mazes ranked by their
  solved rate on the even-numbered episodes, the worst ⌈α·n⌉ kept, their solved rate taken
  from the odd-numbered ones (coevo.compare.stats.cvar with `rescore`), so the pick does
  not bias the figure low. Each scoring keeps every maze's two halves.

A run's figures (`late_figures`) are the mean of its last `LAST` scorings; its α-CVaR ranks
each maze on its even halves averaged over those scorings and reports the odd halves' mean,
as coevo-compare's `task_cvar` does over test_scores.csv.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from coevo.compare.stats import cvar
from coevo.pool import EvaluationPool
from coevo.tasks.maze.held_out import held_out_mazes, random_solvable
from coevo.tasks.test_sets import mastery_threshold

ALPHA = 0.1
LAST = 3  # a run's figures: the mean of its last LAST scorings
NAMED_SEED = 0  # the named mazes' perfect mazes: perfect_maze_0..2
RANDOM_SEED = 1  # the random solvable mazes (held_out's own random ones use seed 0)
EPISODE_SEED = 10_000  # test episodes' reset and noise seeds start here


class Scorer:
    """Scores one policy vector on the claim's sets; a context manager holding two local
    pools: one acting as the run's policy does (sampled), one deterministic."""

    def __init__(self, space: Any, policy: Any, mode: Any):
        self.mode = mode
        self.threshold = mastery_threshold(space)
        self.named = list(held_out_mazes(NAMED_SEED, num_random=0).values())
        self.random = random_solvable(mode.random_mazes, RANDOM_SEED)
        self.sampled = EvaluationPool(space, replace(policy, evaluation="sample"), "local", 1)
        deterministic = replace(policy, evaluation="deterministic")
        self.argmax = EvaluationPool(space, deterministic, "local", 1)

    def __enter__(self) -> Scorer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sampled.close()
        self.argmax.close()

    def solved(self, pool: EvaluationPool, theta: np.ndarray, mazes: list, episodes: int):
        """[mazes, episodes] bool: which episodes reached the goal (a failed one did not)."""
        returns, _ = pool.evaluate_detailed([(theta, m) for m in mazes], episodes, EPISODE_SEED)
        return np.nan_to_num(np.asarray(returns, dtype=float), nan=-np.inf) >= self.threshold

    def score(self, theta: np.ndarray) -> dict:
        """One scoring's figures (in %) and the random mazes' halves."""
        mode = self.mode
        named = self.solved(self.sampled, theta, self.named, mode.named_episodes)
        argmax = self.solved(self.argmax, theta, self.named, 1)
        random = self.solved(self.sampled, theta, self.random, mode.random_episodes)
        even, odd = random[:, 0::2].mean(axis=1), random[:, 1::2].mean(axis=1)
        return {
            "named_solved": 100.0 * float(named.mean()),
            "named_argmax": 100.0 * float(argmax.mean()),
            "random_solved": 100.0 * float(random.mean()),
            "cvar": 100.0 * cvar(even, ALPHA, rescore=odd),
            "cvar_same_episodes": 100.0 * cvar(random.mean(axis=1), ALPHA),
            "even": [round(float(v), 4) for v in even],
            "odd": [round(float(v), 4) for v in odd],
        }


def late_figures(curve: list[dict]) -> dict:
    """A run's figures: the mean of its last LAST scorings (α-CVaR: ranked on the even
    halves' mean over them, reported on the odd halves')."""
    late = curve[-LAST:]
    even = np.mean([p["even"] for p in late], axis=0)
    odd = np.mean([p["odd"] for p in late], axis=0)
    figures = {
        f"{name}_late": float(np.mean([p[name] for p in late]))
        for name in ("named_solved", "named_argmax", "random_solved")
    }
    figures["cvar_late"] = 100.0 * cvar(even, ALPHA, rescore=odd)
    figures["named_final"] = curve[-1]["named_solved"]
    return figures
