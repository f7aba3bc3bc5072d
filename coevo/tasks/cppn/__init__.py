"""CPPN terrains (issue 30): Enhanced POET's terrain generator for the walker.

- level.py: `CppnTerrain` (the genome's genes as an immutable level; content id, JSON)
- genome.py: neat-python's side: E-POET's genome settings and activations, genes to and from
  neat genomes, seeded NEAT mutation, the network
- profile.py: the genome drawn into the course's height profile; `encode`, `distance`
- operators.py: E-POET's mutation rules (valid child, peak rescaled) and `sample`
- walker.py: `CppnBipedalWalker` (the terrain walker on the genome's ground)
- render.py: PNG pictures of a terrain
- space.py: `CppnTerrainSpace`, registered as `bipedal_cppn`
"""

from coevo.tasks.cppn.level import Connection, CppnTerrain, Node, flat_terrain
from coevo.tasks.cppn.operators import mutate, sample
from coevo.tasks.cppn.profile import course_points, relative_heights
from coevo.tasks.cppn.render import render_cppn_png
from coevo.tasks.cppn.walker import CppnBipedalWalker

__all__ = [
    "Connection",
    "CppnBipedalWalker",
    "CppnTerrain",
    "Node",
    "course_points",
    "flat_terrain",
    "mutate",
    "relative_heights",
    "render_cppn_png",
    "sample",
]
