"""A CPPN terrain's height profile, drawn as E-POET draws it (bipedal_walker_custom.py).

The course is gymnasium's walker course: `TERRAIN_LENGTH` (200) points `TERRAIN_STEP` apart.
The first `TERRAIN_STARTPAD` + 1 points are flat at `TERRAIN_HEIGHT` (the start pad); from
there on a point at x has height TERRAIN_HEIGHT + f(x') - f(x'_0), where f is the genome's
network, x' = (x - mid) * pi / mid maps the course onto [-pi, pi) (mid: half the course) and
x'_0 is the first point after the pad, so the ground leaves the pad without a step.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from gymnasium.envs.box2d.bipedal_walker import (
    TERRAIN_HEIGHT,
    TERRAIN_LENGTH,
    TERRAIN_STARTPAD,
    TERRAIN_STEP,
)

from coevo.tasks.cppn.genome import network
from coevo.tasks.cppn.level import CppnTerrain

COURSE_X = np.arange(TERRAIN_LENGTH) * TERRAIN_STEP
MID = TERRAIN_LENGTH * TERRAIN_STEP / 2.0
FIRST_DRAWN = TERRAIN_STARTPAD + 1  # the pad's points are flat
NETWORK_INPUTS = (COURSE_X[FIRST_DRAWN:] - MID) * np.pi / MID
# `encode` squashes heights (m above the start) by tanh(h / ENCODE_SCALE) into (0, 1).
ENCODE_SCALE = 4.0


class UndrawableTerrain(ValueError):
    """The network's output is not a finite number somewhere on the course."""


@lru_cache(maxsize=1024)
def relative_heights(level: CppnTerrain) -> np.ndarray:
    """Heights above the start (m) at the course's `TERRAIN_LENGTH` points, read-only.

    Raises:
        UndrawableTerrain: If the network overflows or gives a non-finite height.
    """
    net = network(level)
    try:
        drawn = np.array([net.activate((float(x),))[0] for x in NETWORK_INPUTS], dtype=float)
    except (OverflowError, ValueError, ZeroDivisionError) as error:
        raise UndrawableTerrain(f"{level!r}: the network fails on the course ({error})") from None
    if not np.all(np.isfinite(drawn)):
        raise UndrawableTerrain(f"{level!r}: the network gives a non-finite height")
    heights = np.zeros(TERRAIN_LENGTH)
    heights[FIRST_DRAWN:] = drawn - drawn[0]
    heights.flags.writeable = False
    return heights


def course_points(level: CppnTerrain) -> np.ndarray:
    """The ground polyline [TERRAIN_LENGTH, 2]: x and absolute height (m)."""
    return np.stack([COURSE_X, TERRAIN_HEIGHT + relative_heights(level)], axis=1)


def peak(level: CppnTerrain) -> float:
    """The highest point above the start (m, >= 0): what E-POET's rescaling bounds."""
    return float(relative_heights(level).max())


def encode(level: CppnTerrain) -> np.ndarray:
    """The profile as a fixed-length vector in (0, 1): 0.5 + 0.5 tanh(height / 4 m) at each
    course point (flat ground is all 0.5)."""
    return 0.5 + 0.5 * np.tanh(relative_heights(level) / ENCODE_SCALE)


def distance(a: CppnTerrain, b: CppnTerrain) -> float:
    """Euclidean distance of the encodings: how differently the two grounds run."""
    return float(np.linalg.norm(encode(a) - encode(b)))
