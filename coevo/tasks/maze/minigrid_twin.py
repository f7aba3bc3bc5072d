"""The `minigrid` package's own env on a coevo `Maze`: the reference the tests and the step
rate benchmark compare `MazeEnv` and `MazeSlots` with (`pip install coevo[maze]`).

The grid is the maze inside MiniGrid's outer wall (a 13 x 13 maze is a 15 x 15 grid, as the
UED papers' mazes), walls seen through (dcd's and jaxued's default), view 5, 250 steps.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from coevo.tasks.maze.level import Maze
from coevo.tasks.maze.navigation import DEFAULT_MAX_STEPS, DEFAULT_VIEW_SIZE

# MiniGrid's OBJECT_TO_IDX entries for what a maze holds.
MINIGRID_WALL, MINIGRID_GOAL = 2, 8


def minigrid_maze_env(
    level: Maze, view_size: int = DEFAULT_VIEW_SIZE, max_steps: int = DEFAULT_MAX_STEPS
) -> Any:
    """A `minigrid.MiniGridEnv` that lays out `level` at every reset."""
    from minigrid.core.grid import Grid
    from minigrid.core.mission import MissionSpace
    from minigrid.core.world_object import Goal, Wall
    from minigrid.minigrid_env import MiniGridEnv

    class CoevoMaze(MiniGridEnv):
        def __init__(self) -> None:
            super().__init__(
                mission_space=MissionSpace(mission_func=lambda: "get to the green goal square"),
                width=level.width + 2,
                height=level.height + 2,
                max_steps=max_steps,
                see_through_walls=True,
                agent_view_size=view_size,
            )

        def _gen_grid(self, width: int, height: int) -> None:
            self.grid = Grid(width, height)
            self.grid.wall_rect(0, 0, width, height)
            for y, x in zip(*np.nonzero(level.walls), strict=True):
                self.grid.set(int(x) + 1, int(y) + 1, Wall())
            self.put_obj(Goal(), level.goal[0] + 1, level.goal[1] + 1)
            self.agent_pos = (level.start[0] + 1, level.start[1] + 1)
            self.agent_dir = level.start_dir
            self.mission = "get to the green goal square"

    return CoevoMaze()


def coevo_observation(obs: dict, view_size: int = DEFAULT_VIEW_SIZE) -> np.ndarray:
    """MiniGrid's observation dict in coevo's layout (navigation.py): its image is indexed
    [column, row] of the view, coevo's cells row by row."""
    objects = obs["image"][:, :, 0].T.ravel()  # [row, column], flattened
    pairs = np.stack([objects == MINIGRID_WALL, objects == MINIGRID_GOAL], axis=1)
    direction = np.zeros(4, dtype=np.float32)
    direction[int(obs["direction"])] = 1.0
    return np.concatenate([pairs.ravel().astype(np.float32), direction])
