"""Tasks drawn from a task space: uniform (domain randomisation) and from unit-cube points.

Both keep the space's rules: values rounded to `round_to` stay on their grid, parameters of
`type: int` stay Python ints (every integer in the bounds equally likely), and interval pairs
(`ordered`) keep low ≤ high.
"""

from __future__ import annotations

import numpy as np

from coevo.tasks.task import Param, Task, TaskSpace


def _uniform_value(param: Param, rng: np.random.Generator) -> int | float:
    if param.high <= param.low:
        return param.clip(param.low)
    is_int = getattr(param, "type", "float") == "int"
    grid = param.round_to or (1.0 if is_int else None)
    if grid:
        # Uniform over the grid points inside the bounds, so each value is equally likely
        # (rounding a continuous draw would halve the chance of the two end points).
        first = np.ceil(param.low / grid - 1e-9)
        last = np.floor(param.high / grid + 1e-9)
        if last >= first:
            return param.clip(float(rng.integers(int(first), int(last) + 1)) * grid)
    return param.clip(float(rng.uniform(param.low, param.high)))


def _fix_intervals(space: TaskSpace, values: dict[str, float]) -> dict[str, float]:
    for low_name, high_name in space.ordered:
        if values[low_name] > values[high_name]:
            values[low_name], values[high_name] = (
                space.param(low_name).clip(values[high_name]),
                space.param(high_name).clip(values[low_name]),
            )
    return values


def uniform_task(space: TaskSpace, rng: np.random.Generator) -> Task:
    """A task with every parameter uniform in its bounds (one draw per parameter, in order);
    a space with a generator of its own (a level kind: `sample(rng)`, e.g. mazes) draws it."""
    sample = getattr(space, "sample", None)
    if sample is not None:
        return sample(rng)
    values = {p.name: _uniform_value(p, rng) for p in space.params}
    return Task(space.name, tuple(_fix_intervals(space, values).items()))


def decode_task(space: TaskSpace, point: np.ndarray) -> Task:
    """The task at a point of the unit cube (the inverse of `TaskSpace.encode`), clipped to
    the bounds and rounded to each parameter's grid."""
    clipped = np.clip(np.asarray(point, dtype=float), 0.0, 1.0)
    values = {
        p.name: p.clip(p.low + float(x) * (p.high - p.low))
        for p, x in zip(space.params, clipped, strict=True)
    }
    return Task(space.name, tuple(_fix_intervals(space, values).items()))
