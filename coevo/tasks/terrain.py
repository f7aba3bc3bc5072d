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


@dataclass(frozen=True)
class _Sizes:
    """A task's terrain settings, and the obstacle kinds whose upper size is above zero."""

    roughness: float
    pit: tuple[float, float]
    stump: tuple[float, float]
    stair: tuple[float, float]
    stair_steps: int
    kinds: tuple[str, ...]


def _sizes(task: Mapping[str, float] | Task) -> _Sizes:
    values = task.as_dict() if isinstance(task, Task) else dict(task)
    roughness = float(values.get("roughness", 0.0))
    pit = _interval(values, "pit_gap")
    stump = _interval(values, "stump_height")
    stair = _interval(values, "stair_height")
    stair_steps = int(round(values.get("stair_steps", 0)))
    enabled = (
        ("pit", pit[1] > 0),
        ("stump", stump[1] > 0),
        ("stairs", stair[1] > 0 and stair_steps > 0),
    )
    kinds = tuple(kind for kind, on in enabled if on)
    return _Sizes(roughness, pit, stump, stair, stair_steps, kinds)


def _between(interval: tuple[float, float], u: float) -> float:
    return interval[0] + u * (interval[1] - interval[0])


class _Course:
    """The course drawn so far, left to right: the ground polyline and its obstacles."""

    def __init__(self) -> None:
        self.x: float = TERRAIN_STARTPAD * TERRAIN_STEP
        self.y: float = TERRAIN_HEIGHT
        self.velocity: float = 0.0
        self.points = [(0.0, self.y), (self.x, self.y)]
        self.obstacles: list[Obstacle] = []

    def grass(self, rng: np.random.Generator, roughness: float) -> None:
        """5 to 9 steps of grass, stopping at the course's end."""
        for _ in range(int(rng.integers(TERRAIN_GRASS // 2, TERRAIN_GRASS))):
            # Slope with memory, pulled gently back to the base height, kicked by roughness.
            self.velocity = 0.8 * self.velocity + 0.01 * np.sign(TERRAIN_HEIGHT - self.y)
            self.velocity += roughness * rng.uniform(-1.0, 1.0) / SCALE
            if not GROUND_LOW <= self.y + self.velocity <= GROUND_HIGH:
                self.velocity = 0.0
            self.y += self.velocity
            self.x = min(self.x + TERRAIN_STEP, COURSE_END)
            self.points.append((self.x, self.y))
            if self.x >= COURSE_END:
                break

    def _past_finish(self, width: float) -> bool:
        return self.x + width > FINISH_X - TERRAIN_STEP

    def pit(self, gap: float) -> None:
        """A pit `gap` steps wide, unless it is empty or would reach the finish."""
        width = gap * TERRAIN_STEP
        if width <= 0 or self._past_finish(width):
            return
        bottom = self.y - PIT_DEPTH
        self.points += [(self.x, bottom), (self.x + width, bottom), (self.x + width, self.y)]
        self.obstacles.append(Obstacle("pit", self.x, width, gap))
        self.x += width

    def stump(self, height: float) -> None:
        """A stump `height` steps high, unless it is flat or would reach the finish."""
        if height <= 0 or self._past_finish(STUMP_WIDTH):
            return
        top = self.y + height * TERRAIN_STEP
        self.points += [(self.x, top), (self.x + STUMP_WIDTH, top), (self.x + STUMP_WIDTH, self.y)]
        self.obstacles.append(Obstacle("stump", self.x, STUMP_WIDTH, height))
        self.x += STUMP_WIDTH

    def stairs(self, rise: float, steps: int, u_direction: float) -> None:
        """`steps` stairs of `rise` steps, up or down (the other way, or none, where the
        ground would leave its band); none where they would reach the finish."""
        width = steps * STAIR_WIDTH
        if rise <= 0 or self._past_finish(width):
            return
        direction = 1.0 if u_direction < 0.5 else -1.0
        total = steps * rise * TERRAIN_STEP
        if not GROUND_LOW <= self.y + direction * total <= GROUND_HIGH:
            direction = -direction  # stay in the band: go the other way
            if not GROUND_LOW <= self.y + direction * total <= GROUND_HIGH:
                return
        self.obstacles.append(Obstacle("stairs", self.x, width, direction * rise))
        for _ in range(steps):
            self.y += direction * rise * TERRAIN_STEP
            self.points += [(self.x, self.y), (self.x + STAIR_WIDTH, self.y)]
            self.x += STAIR_WIDTH
        self.velocity = 0.0


def generate_terrain(task: Mapping[str, float] | Task, seed: int) -> Terrain:
    """The course of `task` for reset seed `seed`; the same (task, seed) gives the same course."""
    sizes = _sizes(task)
    rng = np.random.default_rng([int(seed), _TERRAIN_STREAM])
    course = _Course()
    while course.x < COURSE_END:
        course.grass(rng, sizes.roughness)
        # Drawn for every slot, whichever kind it becomes (see the module's docstring).
        u_kind, u_pit, u_stump, u_stair, u_direction = rng.random(5)
        if not sizes.kinds or course.x >= COURSE_END:
            continue
        kind = sizes.kinds[int(u_kind * len(sizes.kinds))]
        if kind == "pit":
            course.pit(_between(sizes.pit, u_pit))
        elif kind == "stump":
            course.stump(_between(sizes.stump, u_stump))
        else:
            course.stairs(_between(sizes.stair, u_stair), sizes.stair_steps, u_direction)
    return Terrain(np.array(course.points, dtype=np.float64), tuple(course.obstacles))


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
