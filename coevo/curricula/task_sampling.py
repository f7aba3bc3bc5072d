"""Tasks drawn from a task space: uniform (domain randomisation) and from unit-cube points.

Both are the level kind's own hooks (coevo.tasks.level_kind): `space.sample(rng)` (a numeric
space draws each parameter uniformly, keeping `round_to` grids, `type: int` and intervals;
a maze space runs the papers' generator) and `space.decode(point)` (numeric spaces only).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from coevo.tasks.task import Task, TaskSpace


def uniform_task(space: TaskSpace, rng: np.random.Generator) -> Any:
    """A level from the space's generator: for a numeric space, every parameter uniform in
    its bounds (one draw per parameter, in order)."""
    return space.sample(rng)


def decode_task(space: TaskSpace, point: np.ndarray) -> Task:
    """The task at a point of the unit cube (the inverse of `TaskSpace.encode`), clipped to
    the bounds and rounded to each parameter's grid."""
    return space.decode(point)
