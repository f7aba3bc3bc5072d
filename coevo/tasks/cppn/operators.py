"""E-POET's terrain mutation (cppn.py `get_mutated_params`) and coevo's generator, each
drawn from coevo's generator.

A child is the parent's genome, its output response reset to 1, mutated once by NEAT's
operators (coevo.tasks.cppn.genome), and kept when it is valid, else drawn again:

- the input still reaches the output through the connections (E-POET's `is_genome_valid`);
- it differs from the parent (neat's genome distance > 0, as E-POET), and, in coevo, its
  ground differs too: a child drawing the parent's own ground is a wasted evaluation, as a
  numeric child equal to its parent (`TaskSpace.mutate`);
- its ground rises above the start somewhere (E-POET: `abs(max(y)) > 0`, y from the start).

The ground's peak above the start is then bounded by the output's response, as E-POET: a
peak under `PEAK_LOW` m is scaled to a uniform draw in [0.25, 0.5] m, one over `PEAK_HIGH` m
to one in [12, 16] m. E-POET measures that peak on 200 inputs in [-1, 1), not on the inputs
it draws the ground from; coevo measures it on the drawn course, so the bounds hold for the
ground the walker meets.

`sample` (DR, PLR's new levels) has no E-POET counterpart: E-POET's random starting genome
(a random slope) mutated 1 to `sample_mutations` times.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from coevo.tasks.cppn.genome import genome_distance, mutated, start_genome
from coevo.tasks.cppn.level import INPUT_KEY, OUTPUT_KEY, CppnTerrain
from coevo.tasks.cppn.profile import UndrawableTerrain, peak, relative_heights

PEAK_LOW, PEAK_HIGH = 0.25, 16.0  # m; E-POET's `threshold_` bounds
LOW_TARGET, HIGH_TARGET = (0.25, 0.5), (12.0, 16.0)  # where such a peak is scaled to
# Invalid children are drawn again up to this many times (E-POET: without end).
MUTATION_TRIES = 1000
SEED_BOUND = 2**63


def mutate(level: CppnTerrain, rng: np.random.Generator) -> CppnTerrain:
    """A valid child of `level` (see the module doc).

    Raises:
        RuntimeError: If `MUTATION_TRIES` draws give no valid child.
    """
    for _ in range(MUTATION_TRIES):
        child = mutated(level, int(rng.integers(SEED_BOUND)))
        if not connected(child) or genome_distance(level, child) <= 0:
            continue
        try:
            top = peak(child)
        except UndrawableTerrain:
            continue
        if top <= 0:
            continue
        child = _bounded(child, top, rng)
        if not np.array_equal(relative_heights(child), relative_heights(level)):
            return child
    raise RuntimeError(f"no valid child of {level!r} in {MUTATION_TRIES} NEAT mutations")


def _bounded(child: CppnTerrain, top: float, rng: np.random.Generator) -> CppnTerrain:
    """The child with its peak scaled into E-POET's bounds (the output's response)."""
    if top < PEAK_LOW:
        return child.with_response(rng.uniform(*LOW_TARGET) / top)
    if top > PEAK_HIGH:
        return child.with_response(rng.uniform(*HIGH_TARGET) / top)
    return child


def sample(rng: np.random.Generator, sample_mutations: int) -> CppnTerrain:
    """E-POET's random starting genome, mutated 1 to `sample_mutations` times."""
    level = start_genome(int(rng.integers(SEED_BOUND)))
    for _ in range(int(rng.integers(1, sample_mutations + 1))):
        level = mutate(level, rng)
    return level


def connected(level: CppnTerrain) -> bool:
    """Does a path of connections (enabled or not, as E-POET's check) lead from the input
    to the output?"""
    targets: dict[int, list[int]] = {}
    for c in level.connections:
        targets.setdefault(c.source, []).append(c.target)
    seen, frontier = {INPUT_KEY}, deque([INPUT_KEY])
    while frontier:
        node = frontier.popleft()
        if node == OUTPUT_KEY:
            return True
        for target in targets.get(node, ()):
            if target not in seen:
                seen.add(target)
                frontier.append(target)
    return False
