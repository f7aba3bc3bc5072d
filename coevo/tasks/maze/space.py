"""`task=maze`: the maze level kind (coevo.tasks.level_kind) in the `TaskSpace` seat.

A `MazeSpace` is a `TaskSpace` without numeric parameters whose tasks are `Maze` levels: it
draws them (`sample`, the papers' generator), edits them (`mutate`: one ACCEL edit per call,
so ACCEL's `num_edits` counts edits as in dcd), encodes them for curricula that need a
vector, and builds the env (`MazeEnv`) and the batched slots (`MazeSlots`) that play them.
Everything that holds tasks (jobs, buffers, histories, checkpoints) holds the `Maze` itself:
it is immutable, picklable and carries a content id, as a `Task` does. A curriculum drawing
a task calls `space.sample(rng)`, as on every level kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, ClassVar

import numpy as np

from coevo.errors import ConfigError
from coevo.tasks.level_space import LevelSpace
from coevo.tasks.maze import level as levels
from coevo.tasks.maze.held_out import held_out_mazes, random_solvable
from coevo.tasks.maze.level import Maze
from coevo.tasks.maze.navigation import (
    DEFAULT_MAX_STEPS,
    DEFAULT_VIEW_SIZE,
    MazeEnv,
    empty_maze,
    goal_reward,
)
from coevo.tasks.maze.render import render_maze_png
from coevo.tasks.maze.slots import MazeSlots
from coevo.tasks.registry import register


def _unused_env() -> Any:  # replaced in __post_init__; TaskSpace needs a field value
    raise NotImplementedError


@dataclass(frozen=True)
class MazeSpace(LevelSpace):
    """Mazes of `height` x `width` with up to `max_walls` generated walls (see the module
    doc); episodes of `max_episode_steps` steps, a `view_size` view."""

    name: str = levels.KIND
    params: tuple = ()
    make_env: Any = _unused_env
    max_episode_steps: int = DEFAULT_MAX_STEPS
    # Success = goal reached: the least return that reaching it pays (at the last step),
    # 1 - 0.9 whatever max_steps; an episode that misses it returns 0.
    solved_score: float | None = goal_reward(1, 1)
    metadata: Mapping[str, Any] = field(default_factory=lambda: {"render_png": render_maze_png})
    height: int = levels.DEFAULT_SIZE
    width: int = levels.DEFAULT_SIZE
    max_walls: int = levels.DEFAULT_MAX_WALLS
    view_size: int = DEFAULT_VIEW_SIZE
    edits_per_mutation: int = 1
    batched: bool = True  # False: one MazeEnv per slot (GymSlots), the reference path
    level_type: ClassVar[type] = Maze  # what its tasks are (a numeric space's: Task)
    kind_words: ClassVar[str] = "a maze space"

    def __post_init__(self) -> None:
        super().__post_init__()
        steps, view = self.max_episode_steps, self.view_size
        # Built from the fields: `replace(space, max_episode_steps=...)` rebuilds them.
        env = partial(MazeEnv, None, view, steps, timeout_is_terminal=True)
        object.__setattr__(self, "make_env", env)
        slots = partial(MazeSlots, view_size=view, max_steps=steps) if self.batched else None
        object.__setattr__(self, "make_slots", slots)

    @property
    def best_return(self) -> float:
        """The highest return an episode can reach (the goal at the first step): POET's
        thresholds above it are warned of at the start (coevo.run_setup.scale_warnings)."""
        return goal_reward(1, self.max_episode_steps)

    # -- the level kind -------------------------------------------------------------------
    def sample(self, rng: np.random.Generator) -> Maze:
        """A random maze of this space's size with at most `max_walls` walls."""
        return levels.sample(rng, self.height, self.width, self.max_walls)

    def mutate(self, task: Maze, rng: np.random.Generator) -> Maze:
        """A child of `task` with `edits_per_mutation` random edits."""
        return levels.mutate(task, rng, self.edits_per_mutation)

    def encode(self, task: Maze) -> np.ndarray:
        """The maze as a fixed-length vector in [0, 1]."""
        return levels.encode(task)

    def distance(self, a: Maze, b: Maze) -> float:
        """The distance between two mazes' encodings."""
        return levels.distance(a, b)

    def level_from_json(self, text: str) -> Maze:
        """The maze whose `to_json()` gave `text`."""
        return Maze.from_json(text)

    def test_tasks(self, size: int, seed: int) -> list[Maze]:
        """The held-out test set (coevo.tasks.test_sets), `size` mazes: on 13 x 13 the
        designed families first (labyrinth, four rooms, long corridor, perfect mazes), then
        seeded random solvable mazes; on another size (the designs are 13 x 13) seeded
        random solvable mazes of this space's size and walls only."""
        if (self.height, self.width) != (levels.DEFAULT_SIZE, levels.DEFAULT_SIZE):
            return random_solvable(size, seed, self.height, self.width, self.max_walls)
        designed = held_out_mazes(seed, num_random=0)
        extra = max(0, size - len(designed))
        return list(held_out_mazes(seed, num_random=extra).values())[:size]

    def named_levels(self) -> dict[str, Maze]:
        """The designed held-out mazes by name (13 x 13 spaces; none on another size), which
        `coevo-eval RUN task=NAME` plays: labyrinth, four_rooms, long_corridor,
        perfect_maze_0 .. perfect_maze_2."""
        if (self.height, self.width) != (levels.DEFAULT_SIZE, levels.DEFAULT_SIZE):
            return {}
        return held_out_mazes(num_random=0)

    # -- the TaskSpace seat ---------------------------------------------------------------
    def initial_task(self) -> Maze:
        """An empty maze, start top-left facing east, goal bottom-right (ACCEL grows its
        levels from empty rooms)."""
        level = empty_maze(self.height)
        if self.width != self.height:
            rows = tuple("." * self.width for _ in range(self.height))
            level = Maze(rows, (0, 0), 0, (self.width - 1, self.height - 1))
        return level

    def check(self, task: Any) -> None:
        """Refuse a level that is not a maze of this space's size.

        Raises:
            ConfigError: If `task` is not a Maze, or has another size.
        """
        if not isinstance(task, Maze):
            raise ConfigError("task", f"a maze space takes Maze levels, got {type(task).__name__}")
        if (task.height, task.width) != (self.height, self.width):
            raise ConfigError(
                "task", f"a {task.shape_text} given to '{self.name}' ({self.width} x {self.height})"
            )

    def _shape_text(self) -> str:
        return (
            f"'{self.name}' ({self.width} x {self.height}, up to {self.max_walls} walls, "
            f"view {self.view_size})"
        )


@register("maze")
def maze() -> MazeSpace:
    """The UED papers' maze space (`task=maze`, registered in coevo.tasks.registry)."""
    return MazeSpace()
