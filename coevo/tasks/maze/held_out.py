"""Held-out mazes: coevo's own designs after the UED papers' named test families, and a
seeded set of random solvable mazes.

dcd, minimax and jaxued test on hand-drawn mazes (labyrinths, rooms, corridors, perfect
mazes); these are drawn here, by construction, not copied: a labyrinth of concentric rings,
four rooms, one long serpentine corridor, and perfect mazes carved by recursive
backtracking from a seed. All are 13 x 13 (the papers' size) and solvable.
"""

from __future__ import annotations

import numpy as np

from coevo.tasks.maze.level import (
    DEFAULT_MAX_WALLS,
    DEFAULT_SIZE,
    DIRECTIONS,
    Maze,
    is_solvable,
    sample,
)

DEFAULT_NUM_RANDOM = 20
DEFAULT_SEED = 0
NUM_PERFECT = 3  # perfect mazes in the held-out set: seeds seed .. seed + 2


def labyrinth(size: int = DEFAULT_SIZE) -> Maze:
    """Concentric wall rings, each with one gap, the gaps on alternate sides: the path
    winds ring by ring from the outer corner to the goal in the centre."""
    walls = np.zeros((size, size), dtype=bool)
    middle = size // 2
    for ring in range(1, middle, 2):
        far = size - 1 - ring
        walls[ring, ring : far + 1] = walls[far, ring : far + 1] = True
        walls[ring : far + 1, ring] = walls[ring : far + 1, far] = True
        gap_row = far if (ring // 2) % 2 == 0 else ring  # bottom, top, bottom, ...
        walls[gap_row, middle] = False
    return Maze.from_walls(walls, (0, 0), 0, (middle, middle))


def four_rooms(size: int = DEFAULT_SIZE) -> Maze:
    """Four rooms split by a wall cross, one doorway in each of its four arms; start in
    the top-left room, goal in the bottom-right one."""
    walls = np.zeros((size, size), dtype=bool)
    middle = size // 2
    walls[middle, :] = walls[:, middle] = True
    quarter, three_quarters = middle // 2, middle + (size - middle) // 2
    for door in (quarter, three_quarters):
        walls[middle, door] = walls[door, middle] = False
    return Maze.from_walls(walls, (1, 1), 0, (size - 2, size - 2))


def long_corridor(size: int = DEFAULT_SIZE) -> Maze:
    """One corridor snaking through the maze: wall rows every other row, each open at one
    end, the ends alternating; start at the top-left, goal at the far end."""
    walls = np.zeros((size, size), dtype=bool)
    last = size - 1
    open_right = True
    for row in range(1, last, 2):
        walls[row, :] = True
        walls[row, last if open_right else 0] = False
        open_right = not open_right
    # The last wall row's opening (the one before the flip) is where the bottom row starts.
    goal_x = last if open_right else 0
    return Maze.from_walls(walls, (0, 0), 0, (goal_x, last))


def perfect_maze(seed: int, size: int = DEFAULT_SIZE) -> Maze:
    """A perfect maze (one path between any two cells) carved by recursive backtracking
    from the top-left on the even cells of an odd-sized grid; the goal is the cell farthest
    from the start."""
    rng = np.random.default_rng(seed)
    cells = (size + 1) // 2
    walls = np.ones((size, size), dtype=bool)
    walls[0, 0] = False
    seen = {(0, 0)}
    stack = [(0, 0)]
    while stack:
        x, y = stack[-1]
        options = [
            (x + dx, y + dy)
            for dx, dy in DIRECTIONS
            if 0 <= x + dx < cells and 0 <= y + dy < cells and (x + dx, y + dy) not in seen
        ]
        if not options:
            stack.pop()
            continue
        nx, ny = options[int(rng.integers(0, len(options)))]
        walls[2 * ny, 2 * nx] = walls[y + ny, x + nx] = False  # the cell and the wall between
        seen.add((nx, ny))
        stack.append((nx, ny))
    goal = _farthest(walls, (0, 0))
    return Maze.from_walls(walls, (0, 0), 0, goal)


def _farthest(walls: np.ndarray, start: tuple[int, int]) -> tuple[int, int]:
    """The free cell farthest from `start` by moves (the first such in breadth-first order)."""
    height, width = walls.shape
    order = [start]
    seen = {start}
    for x, y in order:
        for dx, dy in DIRECTIONS:
            nx, ny = x + dx, y + dy
            if 0 <= nx < width and 0 <= ny < height and not walls[ny, nx] and (nx, ny) not in seen:
                seen.add((nx, ny))
                order.append((nx, ny))
    return order[-1]


def random_solvable(
    count: int,
    seed: int = DEFAULT_SEED,
    height: int = DEFAULT_SIZE,
    width: int = DEFAULT_SIZE,
    max_walls: int = DEFAULT_MAX_WALLS,
) -> list[Maze]:
    """`count` mazes of the training generator (`level.sample`, of that size and walls) that
    can be solved, drawn in order from one seeded generator."""
    rng = np.random.default_rng(seed)
    mazes: list[Maze] = []
    while len(mazes) < count:
        level = sample(rng, height, width, max_walls)
        if is_solvable(level):
            mazes.append(level)
    return mazes


def held_out_mazes(
    seed: int = DEFAULT_SEED, num_random: int = DEFAULT_NUM_RANDOM
) -> dict[str, Maze]:
    """The held-out set by name (13 x 13): the designed families, then the random solvable
    ones (`random_0`, ...)."""
    mazes = {
        "labyrinth": labyrinth(),
        "four_rooms": four_rooms(),
        "long_corridor": long_corridor(),
    }
    for offset in range(NUM_PERFECT):
        mazes[f"perfect_maze_{seed + offset}"] = perfect_maze(seed + offset)
    for number, level in enumerate(random_solvable(num_random, seed)):
        mazes[f"random_{number}"] = level
    return mazes
