"""The maze domain (issue 30): MiniGrid-style navigation on UED mazes.

- level.py: `Maze` (the level: walls, start, goal; content id, JSON), `sample`, `mutate`,
  `shortest_path`, `encode`, `distance`
- navigation.py: the rules and observation, `MazeEnv` (one maze, gymnasium)
- slots.py: `MazeSlots` (N mazes stepped at once in numpy, an `EnvSlots`)
- held_out.py: held-out mazes (labyrinth, four rooms, long corridor, perfect mazes, random)
- render.py: PNG pictures and GIFs of mazes and episodes
"""

from coevo.tasks.maze.held_out import held_out_mazes
from coevo.tasks.maze.level import (
    Maze,
    distance,
    encode,
    is_solvable,
    mutate,
    sample,
    shortest_path,
)
from coevo.tasks.maze.navigation import MazeEnv
from coevo.tasks.maze.slots import MazeSlots

__all__ = [
    "Maze",
    "MazeEnv",
    "MazeSlots",
    "distance",
    "encode",
    "held_out_mazes",
    "is_solvable",
    "mutate",
    "sample",
    "shortest_path",
]
