"""CPPN terrain pictures for the report and lineage: the course's ground as a side view."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from gymnasium.envs.box2d.bipedal_walker import TERRAIN_HEIGHT, TERRAIN_STARTPAD, TERRAIN_STEP

from coevo.tasks.cppn.level import CppnTerrain, as_terrain
from coevo.tasks.cppn.profile import course_points
from coevo.tasks.terrain import COURSE_END, FINISH_X

GROUND, EDGE = "#66994c", "#2d4d1f"


def render_cppn_png(level: CppnTerrain | dict | str, path: str | Path, **_: Any) -> Path:
    """Draw the terrain's course to a PNG file; returns its path (the report's task-picture
    hook, which passes the level's dict form)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    level = as_terrain(level)
    points = course_points(level)
    xs, ys = points[:, 0], points[:, 1]
    floor = min(0.0, float(ys.min()) - 1.0)  # the ground filled down to y = 0 or below
    figure = Figure(figsize=(10, 2.6), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.subplots()
    axes.fill(np.r_[xs, xs[-1], xs[0]], np.r_[ys, floor, floor], color=GROUND, lw=0)
    axes.plot(xs, ys, color=EDGE, lw=1)
    axes.axvline(TERRAIN_STARTPAD * TERRAIN_STEP / 2, color="#7f33e5", lw=1.5, label="start")
    axes.axvline(FINISH_X, color="black", ls="--", lw=1, label="finish")
    activations = ", ".join(sorted({n.activation for n in level.nodes}))
    axes.set_title(
        f"CPPN terrain {level.id}: {level.size_text} "
        f"({activations}); height {ys.min() - ys[0]:+.2f} to {ys.max() - ys[0]:+.2f} m",
        fontsize=9,
    )
    axes.set_xlim(0, COURSE_END)
    # Heights exaggerated (a course is 93 m long, its hills a few m): the axes say by how much.
    axes.set_ylim(floor, max(float(ys.max()) + 1.0, TERRAIN_HEIGHT + 3.0))
    axes.set_xlabel("x (m)")
    axes.set_ylabel("height (m)")
    axes.legend(loc="upper right", fontsize=8)
    figure.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    return path
