"""The toy task space of Portelas et al. 2019 (CoRL, "Teacher algorithms for curriculum
learning of Deep RL in continuously parameterized environments") and the teachers run on it.

The rules, as in the authors' code (flowersteam/teachDeepRL, teachDRL/toy_env/toy_env.py),
written here from reading it:

- The task space is the unit square cut into a 10 x 10 grid of cells (a point on the upper
  edge falls in the last cell).
- One episode on a task adds 1 to its cell's competence (capped at 100) if the cell is
  learnable, and returns the cell's competence scaled to [0, 1] as the episode's return.
- Cell (0, 0) is always learnable; any other cell only while one of its "previous" neighbours
  (one step down in one or both indices: left, below or the diagonal below-left) has a
  competence >= 75.
- A cell counts as mastered when its competence is > 75; the score is the % of cells mastered.

The teachers: coevo's own ALP-GMM teacher (`ALPGMMTeacher`), uniform random sampling, and an
oracle that knows the rules and samples a uniform point in a uniformly chosen learnable,
unmastered cell (the ideal order: it never wastes an episode).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from coevo.curricula.alp_gmm_teacher import ALPGMMTeacher
from coevo.tasks.task import Param, Task, TaskSpace

CELLS_PER_SIDE = 10
MAX_COMPETENCE = 100
UNLOCKS_AT = 75  # a neighbour with competence >= this makes a cell learnable
MASTERED_ABOVE = 75  # a cell with competence > this is mastered

# ALP-GMM as the paper ran it (teachDeepRL's ALPGMM defaults): fit every 250 episodes after
# 250 random ones, 20 % random tasks, 2..10 components chosen by AIC, one EM init, raw ALP.
PAPER_ALP_GMM = {
    "fit_rate": 250,
    "bootstrap": 250,
    "random_ratio": 0.2,
    "min_components": 2,
    "max_components": 10,
    "criterion": "aic",
    "em_inits": 1,
    "min_history": 5,
    "alp_scale": "none",
}


def toy_space() -> TaskSpace:
    """The unit square as a coevo task space (the teacher only encodes and decodes tasks)."""

    def no_env() -> None:
        raise RuntimeError("the toy space has no environment: episodes are CellGrid.episode")

    params = tuple(Param(name, 0.0, 1.0, 0.0, 0.1) for name in ("x", "y"))
    return TaskSpace("alp_gmm_toy", params, no_env, max_episode_steps=1)


@dataclass
class CellGrid:
    """The learner: one competence counter per cell."""

    side: int = CELLS_PER_SIDE
    competence: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.competence = np.zeros((self.side, self.side), dtype=int)

    def cell_of(self, point: np.ndarray) -> tuple[int, int]:
        i, j = (min(int(v * self.side), self.side - 1) for v in point)
        return i, j

    def learnable(self, cell: tuple[int, int]) -> bool:
        i, j = cell
        if i == 0 and j == 0:
            return True
        previous = [(i - 1, j), (i, j - 1), (i - 1, j - 1)]
        return any(a >= 0 and b >= 0 and self.competence[a, b] >= UNLOCKS_AT for a, b in previous)

    def episode(self, point: np.ndarray) -> float:
        cell = self.cell_of(point)
        if self.learnable(cell):
            self.competence[cell] = min(self.competence[cell] + 1, MAX_COMPETENCE)
        return float(self.competence[cell]) / MAX_COMPETENCE

    def mastered_percent(self) -> float:
        return 100.0 * float((self.competence > MASTERED_ABOVE).mean())

    def open_cells(self) -> list[tuple[int, int]]:
        """Learnable cells not yet mastered (row-major order)."""
        return [
            (i, j)
            for i in range(self.side)
            for j in range(self.side)
            if self.competence[i, j] <= MASTERED_ABOVE and self.learnable((i, j))
        ]


def run_random(grid: CellGrid, rng: np.random.Generator, seed: int) -> Callable:
    def step() -> None:
        grid.episode(rng.random(2))

    return step


def run_oracle(grid: CellGrid, rng: np.random.Generator, seed: int) -> Callable:
    def step() -> None:
        cells = grid.open_cells()
        if not cells:  # everything mastered: nothing left to teach
            grid.episode(rng.random(2))
            return
        i, j = cells[int(rng.integers(len(cells)))]
        grid.episode((np.array([i, j]) + rng.random(2)) / grid.side)

    return step


def run_alp_gmm(grid: CellGrid, rng: np.random.Generator, seed: int) -> Callable:
    space = toy_space()
    # As teachDeepRL seeds every GMM fit with the run's seed.
    teacher = ALPGMMTeacher(space, **PAPER_ALP_GMM, gmm_seed=seed)

    def step() -> None:
        task: Task = teacher.sample(rng).task
        teacher.record(task, grid.episode(space.encode(task)))

    return step


ARMS: dict[str, Callable] = {
    "random": run_random,
    "alp_gmm": run_alp_gmm,
    "oracle": run_oracle,
}


def mastery_curve(arm: str, seed: int, episodes: int, every: int) -> np.ndarray:
    """% of cells mastered after 0, every, 2 * every, ... episodes (episodes a multiple of
    every) of one arm from one seed."""
    if episodes % every:
        raise ValueError(f"episodes ({episodes}) must be a multiple of every ({every})")
    grid = CellGrid()
    rng = np.random.default_rng([seed, list(ARMS).index(arm)])
    step = ARMS[arm](grid, rng, seed)
    curve = [grid.mastered_percent()]
    for done in range(1, episodes + 1):
        step()
        if done % every == 0:
            curve.append(grid.mastered_percent())
    return np.asarray(curve)
