"""POET-style terrain for the bipedal walker, as a pure function of (task, seed).

The ground is one polyline from the start pad to the end of the course (vertical segments
allowed), so pits, stumps and stairs are all parts of it. Sizes are in terrain steps
(gymnasium's TERRAIN_STEP, 14/30 m), as in POET:

- `roughness` scales the random slope changes of the grass (0 is flat; 1 is about
  gymnasium's normal walker);
- a pit is a gap `uniform(pit_gap_low, pit_gap_high)` steps wide and 4 steps deep;
- a stump is one step wide and `uniform(stump_height_low, stump_height_high)` steps high;
- stairs (optional) are `stair_steps` steps, each 4 terrain steps wide and
  `uniform(stair_height_low, stair_height_high)` high, going up or down.

An obstacle kind appears only when its upper size is above zero; between obstacles lie
5 to 9 steps of grass. Every obstacle slot draws the same random numbers whichever kind it
becomes, so tasks that differ a little give similar courses for the same seed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gymnasium.envs.box2d.bipedal_walker import (
    SCALE,
    TERRAIN_GRASS,
    TERRAIN_HEIGHT,
    TERRAIN_LENGTH,
    TERRAIN_STARTPAD,
    TERRAIN_STEP,
)

from coevo.tasks.task import Task

PIT_DEPTH = 4 * TERRAIN_STEP
STUMP_WIDTH = TERRAIN_STEP
STAIR_WIDTH = 4 * TERRAIN_STEP
# The ground stays in this band, so a pit's floor stays above y = 0 (the bottom of the view).
GROUND_LOW = TERRAIN_HEIGHT - 1.2
GROUND_HIGH = TERRAIN_HEIGHT + 4.0
COURSE_END = (TERRAIN_LENGTH - 1) * TERRAIN_STEP
# gymnasium's walker ends the episode (success) past this x; obstacles stay before it.
FINISH_X = (TERRAIN_LENGTH - TERRAIN_GRASS) * TERRAIN_STEP
# A constant mixed into the seed keeps terrain draws apart from gymnasium's np_random,
# which is seeded from the same reset seed.
_TERRAIN_STREAM = 0x7E3A1


@dataclass(frozen=True)
class Obstacle:
    """One obstacle of a terrain: a pit, a stump or stairs."""

    kind: str  # "pit", "stump" or "stairs"
    x: float  # where it starts (m)
    width: float  # along x (m)
    size: float  # gap, height or stair rise (terrain steps); negative rise = stairs down


@dataclass(frozen=True)
class Terrain:
    """A generated terrain: its ground polyline and its obstacles."""

    points: np.ndarray  # [K, 2] ground polyline, x non-decreasing from 0 to COURSE_END
    obstacles: tuple[Obstacle, ...]


def _interval(task: Mapping[str, float], name: str) -> tuple[float, float]:
    return float(task.get(f"{name}_low", 0.0)), float(task.get(f"{name}_high", 0.0))


def generate_terrain(task: Mapping[str, float] | Task, seed: int) -> Terrain:
    """The course of `task` for reset seed `seed`; the same (task, seed) gives the same course."""
    values = task.as_dict() if isinstance(task, Task) else dict(task)
    roughness = float(values.get("roughness", 0.0))
    pit = _interval(values, "pit_gap")
    stump = _interval(values, "stump_height")
    stair = _interval(values, "stair_height")
    stair_steps = int(round(values.get("stair_steps", 0)))
    kinds = [
        kind
        for kind, enabled in (
            ("pit", pit[1] > 0),
            ("stump", stump[1] > 0),
            ("stairs", stair[1] > 0 and stair_steps > 0),
        )
        if enabled
    ]
    rng = np.random.default_rng([int(seed), _TERRAIN_STREAM])
    x, y, velocity = TERRAIN_STARTPAD * TERRAIN_STEP, TERRAIN_HEIGHT, 0.0
    points = [(0.0, y), (x, y)]
    obstacles: list[Obstacle] = []
    while x < COURSE_END:
        for _ in range(int(rng.integers(TERRAIN_GRASS // 2, TERRAIN_GRASS))):
            # Slope with memory, pulled gently back to the base height, kicked by roughness.
            velocity = 0.8 * velocity + 0.01 * np.sign(TERRAIN_HEIGHT - y)
            velocity += roughness * rng.uniform(-1.0, 1.0) / SCALE
            if not GROUND_LOW <= y + velocity <= GROUND_HIGH:
                velocity = 0.0
            y += velocity
            x = min(x + TERRAIN_STEP, COURSE_END)
            points.append((x, y))
            if x >= COURSE_END:
                break
        u_kind, u_pit, u_stump, u_stair, u_direction = rng.random(5)
        if not kinds or x >= COURSE_END:
            continue
        kind = kinds[int(u_kind * len(kinds))]
        if kind == "pit":
            gap = pit[0] + u_pit * (pit[1] - pit[0])
            width = gap * TERRAIN_STEP
            if width <= 0 or x + width > FINISH_X - TERRAIN_STEP:
                continue
            bottom = y - PIT_DEPTH
            points += [(x, bottom), (x + width, bottom), (x + width, y)]
            obstacles.append(Obstacle("pit", x, width, gap))
            x += width
        elif kind == "stump":
            height = stump[0] + u_stump * (stump[1] - stump[0])
            if height <= 0 or x + STUMP_WIDTH > FINISH_X - TERRAIN_STEP:
                continue
            top = y + height * TERRAIN_STEP
            points += [(x, top), (x + STUMP_WIDTH, top), (x + STUMP_WIDTH, y)]
            obstacles.append(Obstacle("stump", x, STUMP_WIDTH, height))
            x += STUMP_WIDTH
        else:
            rise = stair[0] + u_stair * (stair[1] - stair[0])
            width = stair_steps * STAIR_WIDTH
            if rise <= 0 or x + width > FINISH_X - TERRAIN_STEP:
                continue
            direction = 1.0 if u_direction < 0.5 else -1.0
            total = stair_steps * rise * TERRAIN_STEP
            if not GROUND_LOW <= y + direction * total <= GROUND_HIGH:
                direction = -direction  # stay in the band: go the other way
                if not GROUND_LOW <= y + direction * total <= GROUND_HIGH:
                    continue
            obstacles.append(Obstacle("stairs", x, width, direction * rise))
            for _ in range(stair_steps):
                y += direction * rise * TERRAIN_STEP
                points += [(x, y), (x + STAIR_WIDTH, y)]
                x += STAIR_WIDTH
            velocity = 0.0
    return Terrain(np.array(points, dtype=np.float64), tuple(obstacles))


def render_terrain_png(task: Mapping[str, float] | Task, path: str | Path, seed: int = 0) -> Path:
    """Draw the course of (task, seed) to a PNG file; returns its path."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    terrain = generate_terrain(task, seed)
    xs, ys = terrain.points[:, 0], terrain.points[:, 1]
    figure = Figure(figsize=(14, 3.2), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.subplots()
    axes.fill(np.r_[xs, xs[-1], xs[0]], np.r_[ys, 0.0, 0.0], color="#66994c", lw=0)
    axes.plot(xs, ys, color="#2d4d1f", lw=1)
    axes.axvline(TERRAIN_STARTPAD * TERRAIN_STEP / 2, color="#7f33e5", lw=1.5, label="start")
    axes.axvline(FINISH_X, color="black", ls="--", lw=1, label="finish")
    counts = {k: sum(o.kind == k for o in terrain.obstacles) for k in ("pit", "stump", "stairs")}
    values = task.as_dict() if isinstance(task, Task) else dict(task)
    space = f"{task.space}, " if isinstance(task, Task) else ""
    axes.set_title(
        f"{space}seed {seed}: "
        + ", ".join(f"{k} {n}" for k, n in counts.items())
        + "\n"
        + ", ".join(f"{k}={v:g}" for k, v in values.items()),
        fontsize=9,
    )
    axes.set_xlim(0, COURSE_END)
    axes.set_ylim(0, GROUND_HIGH + 2.0)
    axes.set_aspect("equal")
    axes.set_xlabel("x (m)")
    axes.legend(loc="upper right", fontsize=8)
    figure.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    return path
