"""`task=bipedal_cppn`: Enhanced POET's CPPN terrains for the walker, a level kind in the
`TaskSpace` seat (coevo.tasks.level_kind).

The levels are `CppnTerrain` genomes (coevo.tasks.cppn.level); a child is one NEAT mutation
under E-POET's rules (`mutate`, coevo.tasks.cppn.operators); the env is the terrain walker
with the genome's ground (`CppnBipedalWalker`). POET starts on flat ground. Novelty by
PATA-EC (Enhanced POET) needs nothing of the kind; by `params` (POET) it uses `encode`, the
ground's profile. There is no `decode` (no point of the profile's cube is a genome), so
ALP-GMM is refused by name.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, ClassVar

import numpy as np

from coevo.errors import ConfigError
from coevo.tasks.cppn import operators, profile
from coevo.tasks.cppn.level import KIND, CppnTerrain, flat_terrain
from coevo.tasks.cppn.render import render_cppn_png
from coevo.tasks.cppn.walker import CppnBipedalWalker
from coevo.tasks.level_space import LevelSpace
from coevo.tasks.registry import register

DEFAULT_SAMPLE_MUTATIONS = 8


def _unused_env() -> Any:  # replaced in __post_init__; TaskSpace needs a field value
    raise NotImplementedError


@dataclass(frozen=True)
class CppnTerrainSpace(LevelSpace):
    """CPPN terrains for the walker (see the module doc); `sample` mutates E-POET's random
    starting genome 1 to `sample_mutations` times."""

    name: str = KIND
    params: tuple = ()
    make_env: Any = _unused_env
    max_episode_steps: int = 2000
    solved_score: float | None = 230.0  # POET's repro threshold for the walker
    metadata: Mapping[str, Any] = field(default_factory=lambda: {"render_png": render_cppn_png})
    sample_mutations: int = DEFAULT_SAMPLE_MUTATIONS
    level_type: ClassVar[type] = CppnTerrain
    kind_words: ClassVar[str] = "a CPPN terrain space"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.sample_mutations, int) or self.sample_mutations < 1:
            raise ConfigError(
                "task.sample_mutations", f"a positive integer, got {self.sample_mutations!r}"
            )
        object.__setattr__(self, "make_env", partial(CppnBipedalWalker, None))

    # -- the level kind -------------------------------------------------------------------
    def sample(self, rng: np.random.Generator) -> CppnTerrain:
        """A random terrain: E-POET's starting genome mutated 1 to `sample_mutations` times."""
        return operators.sample(rng, self.sample_mutations)

    def mutate(self, task: CppnTerrain, rng: np.random.Generator) -> CppnTerrain:
        """A child of `task`: one NEAT mutation under E-POET's rules."""
        return operators.mutate(task, rng)

    def encode(self, task: CppnTerrain) -> np.ndarray:
        """The ground's profile as a fixed-length vector in (0, 1)."""
        return profile.encode(task)

    def distance(self, a: CppnTerrain, b: CppnTerrain) -> float:
        """The distance between two terrains' profiles (flat ground to a terrain: how far
        it departs from flat, which orders the test set easy to hard)."""
        return profile.distance(a, b)

    def level_from_json(self, text: str) -> CppnTerrain:
        """The terrain whose `to_json()` gave `text`."""
        return CppnTerrain.from_json(text)

    def test_tasks(self, size: int, seed: int) -> list[CppnTerrain]:
        """The test set (coevo.tasks.test_sets): `size` distinct terrains of `sample`,
        drawn from (seed, the space's name)."""
        rng = np.random.default_rng([seed, zlib.crc32(self.name.encode())])
        levels: dict[CppnTerrain, None] = {}
        for _ in range(100 * size):
            if len(levels) == size:
                break
            levels.setdefault(self.sample(rng), None)
        return list(levels)

    # -- the TaskSpace seat ---------------------------------------------------------------
    def initial_task(self) -> CppnTerrain:
        """Flat ground (E-POET starts from one random slope; docs/guide/tasks.md says why)."""
        return flat_terrain()

    def check(self, task: Any) -> None:
        """Refuse a level that is not a CPPN terrain the walker can draw.

        Raises:
            ConfigError: If `task` is not a CppnTerrain, or its network fails on the course.
        """
        if not isinstance(task, CppnTerrain):
            raise ConfigError(
                "task", f"a CPPN terrain space takes CppnTerrain levels, got {type(task).__name__}"
            )
        try:
            profile.relative_heights(task)
        except profile.UndrawableTerrain as error:
            raise ConfigError("task", str(error)) from None

    def _shape_text(self) -> str:
        return f"'{self.name}' (CPPN terrains, sample_mutations {self.sample_mutations})"


@register(KIND)
def bipedal_cppn() -> CppnTerrainSpace:
    """Enhanced POET's CPPN terrain walker (`task=bipedal_cppn`, coevo.tasks.registry)."""
    return CppnTerrainSpace()
