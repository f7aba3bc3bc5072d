"""Maze navigation as MiniGrid and the UED papers play it, for one maze at a time.

The agent turns left, turns right or moves forward (MiniGrid's first three actions; the
papers' agents have MiniGrid's seven, the other four doing nothing in a maze). Moving into a
wall or out of the maze leaves it in place; moving onto the goal ends the episode with
reward 1 - 0.9 * (steps / max_steps), MiniGrid's `_reward`; after `max_steps` steps the
episode is truncated (250, dcd's and jaxued's mazes; the maze space's env and `MazeSlots`
end it as terminated instead, as dcd trains on it: no value bootstrap).

The observation is the agent's partial egocentric view (`view_size` x `view_size`, 5 as in
dcd and jaxued; walls seen through, as both do by default) as a flat float32 array: for each
view cell (rows from the farthest to the agent's own, columns from the agent's left to its
right) the pair (wall, goal), outside the maze being wall and the agent's own cell empty, as
MiniGrid shows it; then the direction one-hot. An MLP policy takes it as it is; the space is
a `GridBox` whose `grid` (view, view, 2) a conv policy (`policy=conv_actor_critic`) reads.

`MazeEnv` is the plain single-env implementation (gymnasium, `get_task` / `set_task`);
`MazeSlots` (slots.py) steps many mazes at once and must agree with it step for step.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from coevo.tasks.grid_box import GridBox
from coevo.tasks.maze.level import DIRECTIONS, Maze, as_maze

ACTIONS = ("left", "right", "forward")
LEFT, RIGHT, FORWARD = range(3)
DEFAULT_VIEW_SIZE = 5
DEFAULT_MAX_STEPS = 250


def observation_size(view_size: int = DEFAULT_VIEW_SIZE) -> int:
    """The observation's length: a (wall, goal) pair per cell of the view, then the direction."""
    return 2 * view_size * view_size + len(DIRECTIONS)


def view_offsets(direction: int, view_size: int) -> list[tuple[int, int]]:
    """(dx, dy) from the agent of each view cell, row by row from the farthest row (the
    agent's row last), left to right as the agent faces `direction`."""
    fx, fy = DIRECTIONS[direction]
    rx, ry = DIRECTIONS[(direction + 1) % 4]  # the agent's right
    offsets = []
    for row in range(view_size):
        ahead = view_size - 1 - row
        for column in range(view_size):
            side = column - view_size // 2
            offsets.append((fx * ahead + rx * side, fy * ahead + ry * side))
    return offsets


def agent_cell(view_size: int) -> int:
    """The view index of the agent's own cell (last row, middle column)."""
    return (view_size - 1) * view_size + view_size // 2


def goal_reward(steps: int, max_steps: int) -> float:
    """MiniGrid's success reward after `steps` steps (the last one included)."""
    return 1 - 0.9 * (steps / max_steps)


def empty_maze(size: int = 13) -> Maze:
    """A maze without walls, start top-left facing east, goal bottom-right."""
    return Maze(tuple("." * size for _ in range(size)), (0, 0), 0, (size - 1, size - 1))


class MazeEnv(gym.Env):
    """One maze, MiniGrid-style (see the module doc); the maze given to `set_task` applies
    at the next reset."""

    # One frame per move: coevo-eval's GIFs keep each at this rate (coevo.replay).
    metadata = {"render_modes": ["rgb_array"], "render_fps": 8}

    def __init__(
        self,
        level: Maze | None = None,
        view_size: int = DEFAULT_VIEW_SIZE,
        max_steps: int = DEFAULT_MAX_STEPS,
        render_mode: str | None = None,
        timeout_is_terminal: bool = False,
    ):
        self.view_size = view_size
        self.max_steps = max_steps
        # True: the time-out is an end (`terminated`), not a cut, as dcd's MiniGrid mazes
        # train with no value bootstrap there, and as `MazeSlots` plays it (the maze space).
        self.timeout_is_terminal = timeout_is_terminal
        self.render_mode = render_mode
        self.action_space = gym.spaces.Discrete(len(ACTIONS))
        # The view as a grid [view, view, (wall, goal)], then the direction one-hot.
        self.observation_space = GridBox((view_size, view_size, 2), len(DIRECTIONS))
        self._level = level or empty_maze()
        self._pending: Maze | None = None
        self._views = [view_offsets(d, view_size) for d in range(len(DIRECTIONS))]
        self.position = self._level.start
        self.direction = self._level.start_dir
        self.steps = 0

    def get_task(self) -> Maze:
        """The maze of the next episode (the one set last), else the current one."""
        return self._pending if self._pending is not None else self._level

    def set_task(self, level: Any) -> None:
        """Play `level` (a `Maze` or its dict / JSON form) from the next reset on."""
        self._pending = as_maze(level)

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[np.ndarray, dict]:
        """Start an episode at the level's start (a pending level takes effect first)."""
        super().reset(seed=seed)  # a maze episode draws nothing: the level fixes it
        if self._pending is not None:
            self._level, self._pending = self._pending, None
        self.position = self._level.start
        self.direction = self._level.start_dir
        self.steps = 0
        return self._observe(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Turn left, turn right or move forward; reaching the goal ends the episode.

        Raises:
            ValueError: If the action is not one of the maze's actions.
        """
        action = int(action)
        if not 0 <= action < len(ACTIONS):
            raise ValueError(f"unknown action {action}; actions are 0..{len(ACTIONS) - 1}")
        self.steps += 1
        reward, reached = 0.0, False
        if action == LEFT:
            self.direction = (self.direction - 1) % 4
        elif action == RIGHT:
            self.direction = (self.direction + 1) % 4
        else:
            dx, dy = DIRECTIONS[self.direction]
            front = (self.position[0] + dx, self.position[1] + dy)
            if not self._is_wall(*front):
                self.position = front
            if front == self._level.goal:
                reached = True
                reward = goal_reward(self.steps, self.max_steps)
        timed_out = self.steps >= self.max_steps
        if self.timeout_is_terminal:
            return self._observe(), reward, reached or timed_out, False, {"success": reached}
        return self._observe(), reward, reached, timed_out, {"success": reached}

    def _is_wall(self, x: int, y: int) -> bool:
        level = self._level
        return not (0 <= x < level.width and 0 <= y < level.height) or level.rows[y][x] == "#"

    def _observe(self) -> np.ndarray:
        obs = np.zeros(observation_size(self.view_size), dtype=np.float32)
        x, y = self.position
        me = agent_cell(self.view_size)
        for i, (dx, dy) in enumerate(self._views[self.direction]):
            if i == me:  # the agent's own cell reads empty, as in MiniGrid
                continue
            if self._is_wall(x + dx, y + dy):
                obs[2 * i] = 1.0
            elif (x + dx, y + dy) == self._level.goal:
                obs[2 * i + 1] = 1.0
        obs[2 * self.view_size * self.view_size + self.direction] = 1.0
        return obs

    def render(self) -> np.ndarray:
        """An RGB array of the current maze with the agent drawn at its cell and direction."""
        from coevo.tasks.maze.render import render_maze

        agent = (*self.position, self.direction)
        return np.asarray(render_maze(self._level, agent=agent))
