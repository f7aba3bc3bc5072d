"""Maze pictures for reports, `coevo-eval` and GIFs: walls, start, goal and the agent.

Drawn with pillow, one square per cell, the maze's outer wall around it. The start is a
blue outlined square, the goal a green square, the agent a red triangle pointing its way.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from coevo.tasks.maze.level import DIRECTIONS, Maze, as_maze

DEFAULT_CELL_PIXELS = 16
COLOURS = {
    "floor": (240, 240, 240),
    "wall": (90, 90, 90),
    "goal": (60, 170, 60),
    "start": (50, 90, 220),
    "agent": (220, 40, 40),
    "grid": (215, 215, 215),
}


def render_maze(
    level: Maze | dict,
    agent: tuple[int, int, int] | None = None,
    cell: int = DEFAULT_CELL_PIXELS,
) -> Image.Image:
    """The maze as an RGB image; `agent` is (x, y, direction), drawn if given."""
    level = as_maze(level)
    width, height = (level.width + 2) * cell, (level.height + 2) * cell
    image = Image.new("RGB", (width, height), COLOURS["wall"])
    draw = ImageDraw.Draw(image)
    for y, row in enumerate(level.rows):
        for x, c in enumerate(row):
            colour = COLOURS["wall"] if c == "#" else COLOURS["floor"]
            draw.rectangle(_box(x, y, cell), fill=colour, outline=COLOURS["grid"])
    draw.rectangle(_box(*level.goal, cell), fill=COLOURS["goal"])
    draw.rectangle(_box(*level.start, cell, inset=2), outline=COLOURS["start"], width=2)
    if agent is not None:
        draw.polygon(_triangle(agent, cell), fill=COLOURS["agent"])
    return image


def _box(x: int, y: int, cell: int, inset: int = 0) -> tuple[int, int, int, int]:
    left, top = (x + 1) * cell, (y + 1) * cell  # +1: the outer wall
    return left + inset, top + inset, left + cell - 1 - inset, top + cell - 1 - inset


def _triangle(agent: tuple[int, int, int], cell: int) -> list[tuple[float, float]]:
    x, y, direction = agent
    cx, cy = (x + 1.5) * cell, (y + 1.5) * cell
    fx, fy = DIRECTIONS[direction]
    rx, ry = DIRECTIONS[(direction + 1) % 4]
    reach = 0.4 * cell
    return [
        (cx + fx * reach, cy + fy * reach),
        (cx - fx * reach + rx * reach, cy - fy * reach + ry * reach),
        (cx - fx * reach - rx * reach, cy - fy * reach - ry * reach),
    ]


def render_maze_png(level: Maze | dict, path: str | Path, cell: int = DEFAULT_CELL_PIXELS) -> Path:
    """The maze with its agent at the start, saved as a PNG; returns the path (the report's
    task-renderer hook, which passes the level's dict form)."""
    level = as_maze(level)
    path = Path(path)
    render_maze(level, (*level.start, level.start_dir), cell).save(path, format="PNG")
    return path


def render_episode_gif(
    level: Maze | dict,
    agents: Sequence[tuple[int, int, int]],
    path: str | Path,
    cell: int = DEFAULT_CELL_PIXELS,
    frame_ms: int = 120,
) -> Path:
    """An episode as a GIF: one frame per (x, y, direction) of the agent."""
    if not agents:
        raise ValueError("an episode GIF needs at least one agent position")
    frames: list[Any] = [render_maze(level, agent, cell) for agent in agents]
    path = Path(path)
    frames[0].save(
        path, format="GIF", save_all=True, append_images=frames[1:], duration=frame_ms, loop=0
    )
    return path
