"""`MazeSlots`: N maze episodes stepped at once in numpy, each with its own maze.

Each slot holds its maze as a map of cells (free, wall, goal) padded with `view_size - 1`
walls on every side, so a view never reads outside it, flattened; the agent's position is a
flat index into that map. A step is a few gathers and elementwise integer operations, and
the reward is MiniGrid's float64 formula per row: a row's numbers depend on its own maze and
actions only, never on the batch around it. The rules are `MazeEnv`'s (navigation.py), and
tests/test_maze.py checks the two agree step for step.

It implements `EnvSlots` (coevo/pool/slots.py), including `save_slot` / `load_slot`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from coevo.tasks.maze.level import DIRECTIONS, Maze
from coevo.tasks.maze.navigation import (
    DEFAULT_MAX_STEPS,
    DEFAULT_VIEW_SIZE,
    FORWARD,
    LEFT,
    RIGHT,
    agent_cell,
    as_maze,
    observation_size,
    view_offsets,
)

FREE_CELL, WALL_CELL, GOAL_CELL = 0, 1, 2
# The direction after each action from each direction: TURNS[direction, action].
TURNS = np.array([[(d - (a == LEFT) + (a == RIGHT)) % 4 for a in range(3)] for d in range(4)])


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
        self.level_of = level_of  # what reset_slot is given -> a Maze
        self._pad = view_size - 1
        self._levels: list[Maze | None] = [None] * num_slots
        self.position = np.zeros(num_slots, dtype=np.int64)
        self.direction = np.zeros(num_slots, dtype=np.int64)
        self.steps = np.zeros(num_slots, dtype=np.int64)
        self._all_rows = np.arange(num_slots)
        self._resize(0, 0)

    def _resize(self, height: int, width: int) -> None:
        """Room for mazes up to height x width; the slots' mazes and positions are kept."""
        old = getattr(self, "maps", None)
        old_width = getattr(self, "_map_width", 0)
        self._map_height, self._map_width = height + 2 * self._pad, width + 2 * self._pad
        self.maps = np.full(
            (self.num_slots, self._map_height * self._map_width), WALL_CELL, np.int8
        )
        if old is not None and old_width:
            for slot, level in enumerate(self._levels):
                if level is not None:
                    x, y = divmod(int(self.position[slot]), old_width)[::-1]
                    self._draw(slot, level)
                    self.position[slot] = y * self._map_width + x
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

    def _index(self, cell: tuple[int, int]) -> int:
        return (cell[1] + self._pad) * self._map_width + cell[0] + self._pad

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
        self.position[slot] = self._index(level.start)
        self.direction[slot] = level.start_dir
        self.steps[slot] = 0
        rows = np.array([slot])
        return self._observe(rows, self.position[rows], self.direction[rows])[0]

    def step_slots(
        self, slots: np.ndarray, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, str]]:
        slots = np.asarray(slots)
        actions = np.asarray(actions).astype(np.int64, copy=False)
        if np.any((actions < 0) | (actions >= 3)):
            raise ValueError(f"unknown action in {actions.tolist()}; actions are 0..2")
        every = len(slots) == self.num_slots  # the worker passes sorted slot numbers
        rows = self._all_rows if every else slots
        where = slice(None) if every else slots
        position, direction = self.position[where], self.direction[where]
        front = position + self._moves[direction]
        ahead = self.maps[rows, front]
        forward = actions == FORWARD
        position = np.where(forward & (ahead != WALL_CELL), front, position)
        direction = TURNS[direction, actions]
        steps = self.steps[where] + 1
        reached = forward & (ahead == GOAL_CELL)
        rewards = np.where(reached, 1 - 0.9 * (steps / self.max_steps), 0.0)
        done = reached | (steps >= self.max_steps)
        self.position[where], self.direction[where], self.steps[where] = position, direction, steps
        return self._observe(rows, position, direction), rewards, done, {}

    def _observe(self, rows: np.ndarray, position: np.ndarray, direction: np.ndarray) -> np.ndarray:
        cells = self.view_size * self.view_size
        view = self.maps[rows[:, None], position[:, None] + self._views[direction]]
        view[:, agent_cell(self.view_size)] = FREE_CELL  # the agent's own cell reads empty
        obs = np.zeros((len(rows), self.obs_dim), dtype=np.float32)
        obs[:, :cells] = view == WALL_CELL
        obs[:, cells : 2 * cells] = view == GOAL_CELL
        obs[np.arange(len(rows)), 2 * cells + direction] = 1.0
        return obs

    def save_slot(self, slot: int) -> tuple[Maze | None, int, int, int]:
        """The slot's episode: its maze, position, direction and steps so far."""
        level = self._levels[slot]
        x, y = self.cell_of(slot)
        return level, (x, y), int(self.direction[slot]), int(self.steps[slot])

    def load_slot(self, slot: int, snapshot: tuple[Maze | None, Any, int, int]) -> None:
        level, (x, y), direction, steps = snapshot
        if level is not None:
            self.reset_slot(slot, level, 0)
            self.position[slot] = self._index((x, y))
        self.direction[slot], self.steps[slot] = direction, steps

    def cell_of(self, slot: int) -> tuple[int, int]:
        """The (x, y) maze cell of the slot's agent."""
        y, x = divmod(int(self.position[slot]), self._map_width)
        return x - self._pad, y - self._pad
