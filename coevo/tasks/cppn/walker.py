"""gymnasium's BipedalWalker on a CPPN terrain: coevo's terrain walker, ground from a genome.

Everything but the ground is `TaskBipedalWalker`'s (gymnasium's walker, its physics, rewards
and finish line, with the same fast step). Its task is a `CppnTerrain`; the ground is the
terrain's profile (coevo.tasks.cppn.profile) whatever the reset seed, as in E-POET (its CPPN
walker draws no obstacles and no random grass), so the seed only moves the walker's initial
push.
"""

from __future__ import annotations

from typing import Any

from coevo.tasks.bipedal_terrain import TaskBipedalWalker
from coevo.tasks.cppn.level import CppnTerrain, as_terrain, flat_terrain
from coevo.tasks.cppn.profile import course_points
from coevo.tasks.terrain import Terrain


class CppnBipedalWalker(TaskBipedalWalker):
    """The terrain walker whose ground is a CPPN terrain's profile; `set_task` takes the
    level (or its dict / JSON form) and applies it at the next reset."""

    def __init__(self, task: CppnTerrain | None = None, render_mode: str | None = None):
        super().__init__(None, render_mode)
        self._level = flat_terrain()
        self._pending_level: CppnTerrain | None = None
        if task is not None:
            self._level = as_terrain(task)

    def get_task(self) -> CppnTerrain:  # pyright: ignore[reportIncompatibleMethodOverride]
        """The level set for the next reset if any, else the one played."""
        return self._pending_level if self._pending_level is not None else self._level

    def set_task(self, task: Any) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
        """Play `task` (a CppnTerrain, or its dict / JSON form) from the next reset."""
        self._pending_level = as_terrain(task)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Apply the pending level, then reset (the ground built from the level)."""
        if self._pending_level is not None:
            self._level, self._pending_level = self._pending_level, None
        return super().reset(seed=seed, options=options)

    def _course(self, seed: int) -> tuple[Terrain, list[tuple[float, float]]]:
        level = self._level  # the ground is the genome's alone: the seed does not change it
        return self._cached_course(("cppn", level.id), lambda: Terrain(course_points(level), ()))
