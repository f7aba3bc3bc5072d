"""`MazeSlots`: N maze episodes stepped at once in numpy, each with its own maze.

Each slot holds its maze as a map of cells (free, wall, goal) padded with `view_size - 1`
walls on every side, so a view never reads outside it; the slots' maps lie end to end in
one array, and the agent's position is an index into it. A step is a handful of gathers
on tables made once, so that no numpy call is spent on what a table can say:

- the agent's *heading* is its direction times 9, and heading + 3 * action + the code of
  the cell ahead is the step's *case* (36 of them): whether the agent moves, whether it
  reaches the goal and its next heading are three lookups by case;
- the observation is one gather from `_pairs`, the maps as (wall, goal) pairs (each pair
  one 8-byte item), followed by long runs of the constant pairs (0, 0), (1, 0) and (0, 1):
  a view cell is the position plus an offset, and the direction one-hot and the agent's
  own cell (which MiniGrid shows empty) are offsets into those runs;
- the reward is MiniGrid's float64 formula, tabulated by step count.

A row's numbers depend on its own maze and actions only, never on the batch around it. The
rules are `MazeEnv`'s (navigation.py), and tests/tasks/test_maze.py checks the two agree
step for step (and `MazeEnv` the `minigrid` package's own env).

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
CELL_KINDS = 3
NUM_ACTIONS = FORWARD + 1
HEADING = NUM_ACTIONS * CELL_KINDS  # a heading is direction * HEADING
# The direction after each action from each direction: TURNS[direction, action].
TURNS = np.array([[(d - (a == LEFT) + (a == RIGHT)) % 4 for a in range(3)] for d in range(4)])
# Each action's part of a case, then (read by actions -1..-3, which a gather takes as
# Python does) a part that puts the case beyond the case tables, so that they refuse it as
# they refuse an action from 3 on.
_ACTION_CASES = np.concatenate([np.arange(NUM_ACTIONS) * CELL_KINDS, [1 << 40] * NUM_ACTIONS])
# By case = heading + action * 3 + the cell ahead: moves, reaches the goal, next heading.
_CASES = [(d, a, c) for d in range(4) for a in range(NUM_ACTIONS) for c in range(CELL_KINDS)]
_CASE_MOVES = np.array([a == FORWARD and c != WALL_CELL for d, a, c in _CASES])
_CASE_REACHES = np.array([a == FORWARD and c == GOAL_CELL for d, a, c in _CASES])
_CASE_HEADING = np.array([TURNS[d, a] * HEADING for d, a, c in _CASES])
# Each cell's (wall, goal) observation pair by its value: FREE_CELL, WALL_CELL, GOAL_CELL.
_CELL_PAIRS = np.array([[0, 0], [1, 0], [0, 1]], dtype=np.float32)
# The direction one-hot as two pairs of cell kinds: direction d's pairs read these cells.
_ONE_HOT_CELLS = ((WALL_CELL, FREE_CELL), (GOAL_CELL, FREE_CELL))
_ONE_HOT_CELLS += ((FREE_CELL, WALL_CELL), (FREE_CELL, GOAL_CELL))


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
        # MiniGrid's success reward after each step count (elementwise IEEE arithmetic: the
        # same bits as its Python floats); the count never passes max_steps.
        self._goal_rewards = 1 - 0.9 * (np.arange(max_steps + 1) / max_steps)
        self.level_of = level_of  # what reset_slot is given -> a Maze
        self._pad = view_size - 1
        self._levels: list[Maze | None] = [None] * num_slots
        self.position = np.zeros(num_slots, dtype=np.int64)
        self.heading = np.zeros(num_slots, dtype=np.int64)  # direction * HEADING
        self.steps = np.zeros(num_slots, dtype=np.int64)
        self._map_size = 0
        self._resize(0, 0)

    @property
    def direction(self) -> np.ndarray:
        """Each slot's direction (0 east, 1 south, 2 west, 3 north), a copy."""
        return self.heading // HEADING

    def _resize(self, height: int, width: int) -> None:
        """Room for mazes up to height x width; the slots' mazes and positions are kept."""
        agents = [self.cell_of(slot) for slot in range(self.num_slots)] if self._map_size else []
        self._map_height, self._map_width = height + 2 * self._pad, width + 2 * self._pad
        self._map_size = self._map_height * self._map_width
        total = self.num_slots * self._map_size
        self.maps = np.full((self.num_slots, self._map_size), WALL_CELL, np.int64)
        self._cells = self.maps.reshape(-1)  # a view: positions index it directly
        # The maps' pairs, then a run of `total` copies of each cell kind's pair: position +
        # total * (1 + kind) reads that kind's pair wherever the agent is.
        kinds = np.concatenate([self._cells, np.repeat(np.arange(CELL_KINDS), total)])
        self._pairs = _CELL_PAIRS[kinds].view(np.int64).reshape(-1)
        for slot, level in enumerate(self._levels):
            if level is not None:
                self._draw(slot, level)
                self.position[slot] = self._index(slot, agents[slot])
        self._moves, self._views = self._layout_tables(total)

    def _layout_tables(self, total: int) -> tuple[np.ndarray, np.ndarray]:
        """By heading: the position's move forward and the view's offsets from it (view
        cells, then the direction one-hot; the agent's own cell reads the free run)."""
        stride = self._map_width
        moves = np.array([dy * stride + dx for dx, dy in DIRECTIONS])
        own = agent_cell(self.view_size)
        views = []
        for direction in range(len(DIRECTIONS)):
            offsets = [dy * stride + dx for dx, dy in view_offsets(direction, self.view_size)]
            offsets[own] = total * (1 + FREE_CELL)
            offsets += [total * (1 + kind) for kind in _ONE_HOT_CELLS[direction]]
            views.append(offsets)
        return np.repeat(moves, HEADING), np.repeat(np.array(views), HEADING, axis=0)

    def _draw(self, slot: int, level: Maze) -> None:
        """Write `level` into the slot's map (walls all around it) and its pairs."""
        cells = self.maps[slot].reshape(self._map_height, self._map_width)
        cells[:] = WALL_CELL
        top = self._pad
        cells[top : top + level.height, top : top + level.width] = np.where(
            level.walls, WALL_CELL, FREE_CELL
        )
        cells[top + level.goal[1], top + level.goal[0]] = GOAL_CELL
        rows = slice(slot * self._map_size, (slot + 1) * self._map_size)
        self._pairs[rows] = _CELL_PAIRS[self._cells[rows]].view(np.int64).reshape(-1)

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
        self.heading[slot] = level.start_dir * HEADING
        self.steps[slot] = 0
        rows = slice(slot, slot + 1)
        return self._observe(self.position[rows], self.heading[rows])[0]

    def step_slots(
        self, slots: np.ndarray, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, str]]:
        """Step every given slot's agent: turn left, turn right or move forward.

        Raises:
            ValueError: If an action is not one of the maze's actions.
        """
        actions = np.asarray(actions)
        if actions.dtype != np.intp:
            actions = actions.astype(np.intp)
        # Every slot steps (the worker passes sorted slot numbers): no gather or scatter.
        every = len(slots) == self.num_slots
        where = slice(None) if every else np.asarray(slots)
        position, heading = self.position[where], self.heading[where]
        front = position + self._moves.take(heading)
        try:  # an unknown action's case is out of the tables' range (see _ACTION_CASES)
            case = heading + _ACTION_CASES.take(actions)
            case += self._cells.take(front)
            moves = _CASE_MOVES.take(case)
        except IndexError:
            raise ValueError(
                f"unknown action in {actions.tolist()}; actions are 0..{FORWARD}"
            ) from None
        position = np.where(moves, front, position)
        heading = _CASE_HEADING.take(case)
        reached = _CASE_REACHES.take(case)
        steps = self.steps[where] + 1
        rewards = self._goal_rewards.take(steps) * reached
        done = reached | (steps >= self.max_steps)
        if every:  # the new arrays are the state: nothing copied back
            self.position, self.heading, self.steps = position, heading, steps
        else:
            self.position[where], self.heading[where] = position, heading
            self.steps[where] = steps
        return self._observe(position, heading), rewards, done, {}

    def _observe(self, position: np.ndarray, heading: np.ndarray) -> np.ndarray:
        view = self._views.take(heading, axis=0)
        view += position[:, None]
        return self._pairs.take(view).view(np.float32)  # [n, 2 * (cells + 2)]

    def save_slot(self, slot: int) -> tuple[Maze | None, tuple[int, int], int, int]:
        """The slot's episode: its maze, position, direction and steps so far."""
        level = self._levels[slot]
        x, y = self.cell_of(slot)
        return level, (x, y), int(self.heading[slot]) // HEADING, int(self.steps[slot])

    def load_slot(self, slot: int, snapshot: tuple[Maze | None, Any, int, int]) -> None:
        """Restore a slot from a snapshot: its level (if given), position, direction and steps."""
        level, (x, y), direction, steps = snapshot
        if level is not None:
            self.reset_slot(slot, level, 0)
            self.position[slot] = self._index(slot, (x, y))
        self.heading[slot], self.steps[slot] = direction * HEADING, steps

    def cell_of(self, slot: int) -> tuple[int, int]:
        """The (x, y) maze cell of the slot's agent."""
        y, x = divmod(int(self.position[slot]) - slot * self._map_size, self._map_width)
        return x - self._pad, y - self._pad
