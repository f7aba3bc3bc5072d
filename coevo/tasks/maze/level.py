"""`Maze`: one maze level (walls, start, goal), and its generator, mutator and encoding.

Coordinates are (x, y) with x the column and y the row, y growing downward, and directions
are MiniGrid's: 0 east, 1 south, 2 west, 3 north. The wall grid is the maze's interior:
everything outside it is wall, as the border of MiniGrid's 15 x 15 grid around the UED
papers' 13 x 13 mazes.

The generator is the papers' domain randomization (dcd's `AdversarialEnv.reset_random` with
`resample_n_clutter`, jaxued's `make_level_generator`): a number of walls drawn up to
`max_walls`, placed on distinct random cells, the start and goal on other random cells and a
random start direction. dcd draws the number from [0, 60); coevo from [0, 60] ("up to 60").
Generated mazes need not be solvable, as in the papers; `shortest_path` says.

The mutator is ACCEL's maze edits as minimax (and jaxued's `make_level_mutator_minimax`)
write them: each edit flips one random wall cell other than the start and goal, or moves the
goal to a random free cell. minimax also draws a no-op edit; coevo leaves it out, and draws
again a child that came out equal to its parent (flips can cancel), as `TaskSpace.mutate`.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from coevo.errors import ConfigError

KIND = "maze"
WALL, FREE = "#", "."
# (dx, dy) of each direction, MiniGrid's order: east, south, west, north.
DIRECTIONS = ((1, 0), (0, 1), (-1, 0), (0, -1))
DEFAULT_SIZE = 13  # the UED papers' maze interior (a 15 x 15 MiniGrid grid with its border)
DEFAULT_MAX_WALLS = 60  # dcd's ACCEL / PLR maze generator (GoalLastVariableBlocks)
DEFAULT_NUM_EDITS = 5  # jaxued's and dcd's ACCEL maze runs
MUTATION_TRIES = 64  # as coevo.tasks.task.MUTATION_TRIES


@dataclass(frozen=True)
class Maze:
    """An immutable maze: `rows` of '#' (wall) and '.' (free), the start cell and
    direction, the goal cell. Equal mazes are equal values with one content `id`."""

    rows: tuple[str, ...]
    start: tuple[int, int]
    start_dir: int
    goal: tuple[int, int]
    # What a `Task` also carries, for the tables and the pool's checks: the space (the kind)
    # it belongs to, and its named numbers (a maze has none; its id names it).
    space: ClassVar[str] = KIND
    params: ClassVar[tuple] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "rows", tuple(str(row) for row in self.rows))
        object.__setattr__(self, "start", (int(self.start[0]), int(self.start[1])))
        object.__setattr__(self, "goal", (int(self.goal[0]), int(self.goal[1])))
        object.__setattr__(self, "start_dir", int(self.start_dir))
        self._validate()

    def _validate(self) -> None:
        if not self.rows or not self.rows[0]:
            raise ConfigError("maze.rows", "a maze needs at least one row and one column")
        if any(len(row) != self.width for row in self.rows):
            raise ConfigError("maze.rows", "every row must have the same length")
        if set("".join(self.rows)) - {WALL, FREE}:
            raise ConfigError("maze.rows", f"cells are '{WALL}' (wall) or '{FREE}' (free)")
        if not 0 <= self.start_dir < len(DIRECTIONS):
            raise ConfigError("maze.start_dir", f"must be 0..3, got {self.start_dir}")
        for name, (x, y) in (("start", self.start), ("goal", self.goal)):
            if not (0 <= x < self.width and 0 <= y < self.height):
                raise ConfigError(f"maze.{name}", f"({x}, {y}) outside the {self.shape_text}")
            if self.rows[y][x] == WALL:
                raise ConfigError(f"maze.{name}", f"({x}, {y}) is a wall")
        if self.start == self.goal:
            raise ConfigError("maze.goal", "the goal must not be the start cell")

    @classmethod
    def from_walls(
        cls, walls: np.ndarray, start: tuple[int, int], start_dir: int, goal: tuple[int, int]
    ) -> Maze:
        """A maze of a boolean wall array [height, width]."""
        rows = tuple("".join(WALL if w else FREE for w in line) for line in np.asarray(walls))
        return cls(rows, start, start_dir, goal)

    @property
    def height(self) -> int:
        """Rows of cells."""
        return len(self.rows)

    @property
    def width(self) -> int:
        """Cells per row."""
        return len(self.rows[0])

    @property
    def shape_text(self) -> str:
        """The size in words, e.g. "13 x 13 maze"."""
        return f"{self.width} x {self.height} maze"

    @cached_property
    def walls(self) -> np.ndarray:
        """The wall grid, bool [height, width], read-only."""
        grid = np.array([[c == WALL for c in row] for row in self.rows], dtype=bool)
        grid.flags.writeable = False
        return grid

    @property
    def num_walls(self) -> int:
        """Wall cells."""
        return sum(row.count(WALL) for row in self.rows)

    def __getstate__(self) -> dict[str, Any]:  # the cached wall array is not part of it
        return {k: v for k, v in self.__dict__.items() if k != "walls"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    @property
    def id(self) -> str:
        """Content hash of the JSON form: the same in every process (no `hash()`)."""
        return hashlib.blake2b(self.to_json().encode(), digest_size=6).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        """The maze as plain values (kind, rows, start, start_dir, goal): `from_dict`'s input."""
        return {
            "kind": KIND,
            "rows": list(self.rows),
            "start": list(self.start),
            "start_dir": self.start_dir,
            "goal": list(self.goal),
        }

    def to_json(self) -> str:
        """`to_dict()` as compact JSON with sorted keys; the `id` is its hash."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Maze:
        """The maze `to_dict()` gave `data`.

        Raises:
            ConfigError: `data` is another kind of level's (its `kind` is not a maze's).
        """
        if data.get("kind", KIND) != KIND:
            raise ConfigError("maze.kind", f"expected '{KIND}', got {data.get('kind')!r}")
        return cls(
            tuple(data["rows"]), tuple(data["start"]), data["start_dir"], tuple(data["goal"])
        )

    @classmethod
    def from_json(cls, text: str) -> Maze:
        """The maze `to_json()` gave `text`."""
        return cls.from_dict(json.loads(text))

    def __str__(self) -> str:
        """The rows with the start as an arrow (> v < ^) and the goal as G."""
        grid = [list(row) for row in self.rows]
        grid[self.start[1]][self.start[0]] = ">v<^"[self.start_dir]
        grid[self.goal[1]][self.goal[0]] = "G"
        return "\n".join("".join(line) for line in grid)

    def __repr__(self) -> str:
        walls = self.num_walls
        return f"Maze({self.id}: {self.shape_text}, {walls} wall{'' if walls == 1 else 's'})"

    @classmethod
    def from_text(cls, text: str) -> Maze:
        """A maze of `str(maze)`'s form: '#', '.', one start arrow (> v < ^) and one 'G'."""
        lines = [line.strip() for line in text.strip().splitlines()]
        start = goal = None
        start_dir = 0
        rows = []
        for y, line in enumerate(lines):
            for x, c in enumerate(line):
                if c in ">v<^":
                    start, start_dir = (x, y), ">v<^".index(c)
                elif c == "G":
                    goal = (x, y)
            rows.append("".join(FREE if c in ">v<^G" else c for c in line))
        if start is None or goal is None:
            raise ConfigError("maze", "the text needs a start arrow (> v < ^) and a goal 'G'")
        return cls(tuple(rows), start, start_dir, goal)


def sample(
    rng: np.random.Generator,
    height: int = DEFAULT_SIZE,
    width: int = DEFAULT_SIZE,
    max_walls: int = DEFAULT_MAX_WALLS,
) -> Maze:
    """A random maze as the UED papers' generator draws one (see the module doc)."""
    cells = height * width
    num_walls = int(rng.integers(0, min(max_walls, cells - 2) + 1))
    order = rng.permutation(cells)  # distinct cells: goal, start, then the walls
    goal, start = divmod(int(order[0]), width), divmod(int(order[1]), width)
    walls = np.zeros(cells, dtype=bool)
    walls[order[2 : 2 + num_walls]] = True
    start_dir = int(rng.integers(0, len(DIRECTIONS)))
    return Maze.from_walls(
        walls.reshape(height, width), (start[1], start[0]), start_dir, (goal[1], goal[0])
    )


def mutate(level: Maze, rng: np.random.Generator, num_edits: int = DEFAULT_NUM_EDITS) -> Maze:
    """A child of `level` by `num_edits` of ACCEL's edits (see the module doc); never a
    wall on the start or the goal. A child equal to its parent is drawn again."""
    child = level
    for _ in range(MUTATION_TRIES):
        child = _edited(level, rng, num_edits)
        if child != level:
            return child
    return child


def _edited(level: Maze, rng: np.random.Generator, num_edits: int) -> Maze:
    walls = level.walls.copy()
    goal = level.goal
    height, width = walls.shape
    for _ in range(num_edits):
        if rng.random() < 0.5:  # flip a wall cell other than the start and the goal
            keep = {level.start[1] * width + level.start[0], goal[1] * width + goal[0]}
            cells = [i for i in range(height * width) if i not in keep]
            y, x = divmod(int(cells[rng.integers(0, len(cells))]), width)
            walls[y, x] = not walls[y, x]
        else:  # move the goal to a free cell other than the start and the goal
            free = np.flatnonzero(~walls.ravel())
            free = [
                i
                for i in free.tolist()
                if i not in (_index(level.start, width), _index(goal, width))
            ]
            if free:
                y, x = divmod(free[int(rng.integers(0, len(free)))], width)
                goal = (x, y)
    return Maze.from_walls(walls, level.start, level.start_dir, goal)


def _index(cell: tuple[int, int], width: int) -> int:
    return cell[1] * width + cell[0]


def shortest_path(level: Maze) -> int | None:
    """Moves on the shortest start-to-goal path (turns not counted), by breadth-first
    search over free cells; None when the goal cannot be reached."""
    walls = level.walls
    height, width = walls.shape
    distance = {level.start: 0}
    frontier = deque([level.start])
    while frontier:
        x, y = frontier.popleft()
        if (x, y) == level.goal:
            return distance[(x, y)]
        for dx, dy in DIRECTIONS:
            nx, ny = x + dx, y + dy
            if 0 <= nx < width and 0 <= ny < height and not walls[ny, nx]:
                if (nx, ny) not in distance:
                    distance[(nx, ny)] = distance[(x, y)] + 1
                    frontier.append((nx, ny))
    return None


def is_solvable(level: Maze) -> bool:
    """Whether the goal can be reached from the start (`shortest_path` finds a path)."""
    return shortest_path(level) is not None


def encoding_size(height: int = DEFAULT_SIZE, width: int = DEFAULT_SIZE) -> int:
    """The length of `encode`'s vector: a wall flag per cell, start and goal x, y, direction."""
    return height * width + 5


def encode(level: Maze) -> np.ndarray:
    """A fixed-length vector in [0, 1] for a curriculum that needs one (ALP-GMM, POET's
    distance): the walls flattened (1 = wall), then start x, y, goal x, y scaled by the
    maze's size, and the start direction / 3."""
    height, width = level.height, level.width
    span_x, span_y = max(width - 1, 1), max(height - 1, 1)
    tail = [
        level.start[0] / span_x,
        level.start[1] / span_y,
        level.goal[0] / span_x,
        level.goal[1] / span_y,
        level.start_dir / 3,
    ]
    return np.concatenate([level.walls.ravel().astype(np.float64), np.array(tail)])


def distance(a: Maze, b: Maze) -> float:
    """Euclidean distance of the encodings (mazes of one size)."""
    return float(np.linalg.norm(encode(a) - encode(b)))


def as_maze(level: Any) -> Maze:
    """A `Maze`, or its dict or JSON form, as a Maze."""
    if isinstance(level, Maze):
        return level
    if isinstance(level, str):
        return Maze.from_json(level)
    if isinstance(level, dict):
        return Maze.from_dict(level)
    raise TypeError(f"expected a Maze or its dict / JSON form, got {type(level).__name__}")
