"""`MazeSlots`: N maze episodes stepped at once in numpy, each with its own maze.

Each slot holds its maze as a map of cells (free, wall, goal) padded with `view_size - 1`
walls on every side, so a view never reads outside it; the slots' maps lie end to end in
one array, and the agent's position is an index into it. A step is a few gathers and
elementwise integer operations, and the reward is MiniGrid's float64 formula per row
(tabulated by step count): a row's numbers depend on its own maze and actions only, never
on the batch around it. The rules are `MazeEnv`'s (navigation.py), and tests/test_maze.py
checks the two agree step for step.

It implements `EnvSlots` (coevo/pool/slots.py), including `save_slot` / `load_slot`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from coevo.tasks.maze.level import DIRECTIONS, Maze, as_maze
from coevo.tasks.maze.navigation import (
    DEFAULT_MAX_STEPS,
    DEFAULT_VIEW_SIZE,
    FORWARD,
    LEFT,
    RIGHT,
    agent_cell,
    observation_size,
    view_offsets,
)

FREE_CELL, WALL_CELL, GOAL_CELL = 0, 1, 2
# The direction after each action from each direction: TURNS[direction, action].
TURNS = np.array([[(d - (a == LEFT) + (a == RIGHT)) % 4 for a in range(3)] for d in range(4)])
# Each cell's (wall, goal) observation pair by its value: FREE_CELL, WALL_CELL, GOAL_CELL.
_CELL_PAIRS = np.array([[0, 0], [1, 0], [0, 1]], dtype=np.float32)
_DIRECTION_ONE_HOT = np.eye(len(DIRECTIONS), dtype=np.float32)


class MazeSlots:
    """N maze episodes side by side (see the module doc)."""

    def __init__(
        self,
        num_slots: int,
        view_size: int = DEFAULT_VIEW_SIZE,
        max_steps: int = DEFAULT_MAX_STEPS,
        level_of: Any = as_maze,
    ):
        if num_slots < 1:
            raise ValueError(f"num_slots must be >= 1, got {num_slots}")
        self.num_slots = num_slots
        self.view_size = view_size
        self.max_steps = max_steps
        self.obs_dim = observation_size(view_size)
        self._agent_cell = agent_cell(view_size)
        # MiniGrid's success reward after each step count (elementwise IEEE arithmetic: the
        # same bits as its Python floats); the count never passes max_steps.
        self._goal_rewards = 1 - 0.9 * (np.arange(max_steps + 1) / max_steps)
        self.level_of = level_of  # what reset_slot is given -> a Maze
        self._pad = view_size - 1
        self._levels: list[Maze | None] = [None] * num_slots
        self.position = np.zeros(num_slots, dtype=np.int64)
        self.direction = np.zeros(num_slots, dtype=np.int64)
        self.steps = np.zeros(num_slots, dtype=np.int64)
        self._map_size = 0
        self._resize(0, 0)

    def _resize(self, height: int, width: int) -> None:
        """Room for mazes up to height x width; the slots' mazes and positions are kept."""
        agents = [self.cell_of(slot) for slot in range(self.num_slots)] if self._map_size else []
        self._map_height, self._map_width = height + 2 * self._pad, width + 2 * self._pad
        self._map_size = self._map_height * self._map_width
        self.maps = np.full((self.num_slots, self._map_size), WALL_CELL, np.int8)
        self._cells = self.maps.reshape(-1)  # a view: positions index it directly
        self._origins = np.arange(self.num_slots) * self._map_size
        for slot, level in enumerate(self._levels):
            if level is not None:
                self._draw(slot, level)
                self.position[slot] = self._index(slot, agents[slot])
        stride = self._map_width
        self._moves = np.array([dy * stride + dx for dx, dy in DIRECTIONS])
        self._views = np.array(
            [[dy * stride + dx for dx, dy in view_offsets(d, self.view_size)] for d in range(4)]
        )

    def _draw(self, slot: int, level: Maze) -> None:
        """Write `level` into the slot's map (walls all around it)."""
        cells = self.maps[slot].reshape(self._map_height, self._map_width)
        cells[:] = WALL_CELL
        top = self._pad
        cells[top : top + level.height, top : top + level.width] = np.where(
            level.walls, WALL_CELL, FREE_CELL
        )
        cells[top + level.goal[1], top + level.goal[0]] = GOAL_CELL

    def _index(self, slot: int, cell: tuple[int, int]) -> int:
        """The position (an index of `_cells`) of maze cell (x, y) in the slot's map."""
        row, column = cell[1] + self._pad, cell[0] + self._pad
        return slot * self._map_size + row * self._map_width + column

    def reset_slot(self, slot: int, task: Any, seed: int) -> np.ndarray:
        """Start `task`'s maze in `slot`; the seed draws nothing (the maze fixes the start)."""
        level = self.level_of(task)
        if self._levels[slot] is not level and self._levels[slot] != level:
            if level.height + 2 * self._pad > self._map_height or (
                level.width + 2 * self._pad > self._map_width
            ):
                self._resize(
                    max(level.height, self._map_height - 2 * self._pad),
                    max(level.width, self._map_width - 2 * self._pad),
                )
            self._levels[slot] = None  # unknown until drawn
            self._draw(slot, level)
            self._levels[slot] = level
        self.position[slot] = self._index(slot, level.start)
        self.direction[slot] = level.start_dir
        self.steps[slot] = 0
        rows = slice(slot, slot + 1)
        return self._observe(self.position[rows], self.direction[rows])[0]

    def step_slots(
        self, slots: np.ndarray, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, str]]:
        actions = np.asarray(actions).astype(np.int64, copy=False)
        if actions.min() < 0 or actions.max() > FORWARD:
            raise ValueError(f"unknown action in {actions.tolist()}; actions are 0..{FORWARD}")
        # Every slot steps (the worker passes sorted slot numbers): no gather or scatter.
        where = slice(None) if len(slots) == self.num_slots else np.asarray(slots)
        position, direction = self.position[where], self.direction[where]
        front = position + self._moves[direction]
        ahead = self._cells.take(front)
        forward = actions == FORWARD
        position = np.where(forward & (ahead != WALL_CELL), front, position)
        direction = TURNS[direction, actions]
        steps = self.steps[where] + 1
        reached = forward & (ahead == GOAL_CELL)
        rewards = self._goal_rewards.take(steps) * reached
        done = reached | (steps >= self.max_steps)
        self.position[where], self.direction[where], self.steps[where] = position, direction, steps
        return self._observe(position, direction), rewards, done, {}

    def _observe(self, position: np.ndarray, direction: np.ndarray) -> np.ndarray:
        view = self._cells.take(position[:, None] + self._views[direction])
        view[:, self._agent_cell] = FREE_CELL  # the agent's own cell reads empty
        pairs = _CELL_PAIRS.take(view, axis=0).reshape(len(view), -1)  # [n, 2 * cells]
        return np.concatenate((pairs, _DIRECTION_ONE_HOT.take(direction, axis=0)), axis=1)

    def save_slot(self, slot: int) -> tuple[Maze | None, tuple[int, int], int, int]:
        """The slot's episode: its maze, position, direction and steps so far."""
        level = self._levels[slot]
        x, y = self.cell_of(slot)
        return level, (x, y), int(self.direction[slot]), int(self.steps[slot])

    def load_slot(self, slot: int, snapshot: tuple[Maze | None, Any, int, int]) -> None:
        level, (x, y), direction, steps = snapshot
        if level is not None:
            self.reset_slot(slot, level, 0)
            self.position[slot] = self._index(slot, (x, y))
        self.direction[slot], self.steps[slot] = direction, steps

    def cell_of(self, slot: int) -> tuple[int, int]:
        """The (x, y) maze cell of the slot's agent."""
        y, x = divmod(int(self.position[slot]) - slot * self._map_size, self._map_width)
        return x - self._pad, y - self._pad
