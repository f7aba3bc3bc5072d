"""POET's benchmark: gymnasium's BipedalWalker on terrain made from the task.

The walker, its physics, observations and rewards are gymnasium's; only the terrain differs:
`coevo.tasks.terrain.generate_terrain(task, seed)` replaces gymnasium's generator, so the
course is a function of (task, reset seed). `render_terrain_png` draws a task's course.
"""

from __future__ import annotations

import Box2D
from Box2D.b2 import edgeShape, fixtureDef
from gymnasium.envs.box2d.bipedal_walker import FRICTION, BipedalWalker

from coevo.tasks.protocol import PendingTaskMixin
from coevo.tasks.registry import register
from coevo.tasks.task import Param, TaskSpace
from coevo.tasks.terrain import Terrain, generate_terrain, render_terrain_png

__all__ = ["TaskBipedalWalker", "TaskBipedalWalkerStairs", "generate_terrain", "render_terrain_png"]

FLAT = {
    "roughness": 0.0,
    "pit_gap_low": 0.0,
    "pit_gap_high": 0.0,
    "stump_height_low": 0.0,
    "stump_height_high": 0.0,
}
FLAT_WITH_STAIRS = {**FLAT, "stair_height_low": 0.0, "stair_height_high": 0.0, "stair_steps": 2.0}
_GROUND_COLOR = (102, 153, 76)


class TaskBipedalWalker(PendingTaskMixin, BipedalWalker):
    """gymnasium's BipedalWalker whose terrain comes from the task and the reset seed."""

    initial_task: dict[str, float] = FLAT

    def __init__(self, task: dict[str, float] | None = None, render_mode: str | None = None):
        super().__init__(render_mode=render_mode, hardcore=False)
        self._task = dict(self.initial_task)
        self._terrain_seed: int | None = None
        self.course: Terrain | None = None
        if task:
            self.set_task(task)
            self._apply_pending_task()

    def _apply_task(self, task: dict[str, float]) -> None:
        pass  # the terrain is built from self._task at every reset

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self._terrain_seed = seed  # the terrain is generated inside BipedalWalker.reset
        return super().reset(seed=seed, options=options)

    def _generate_terrain(self, hardcore: bool) -> None:
        """Called by BipedalWalker.reset after seeding: build our course in the Box2D world."""
        seed = self._terrain_seed
        if seed is None:  # an unseeded reset continues the env's own generator
            seed = int(self.np_random.integers(2**31))
        self.course = generate_terrain(self._task, seed)
        points = [tuple(map(float, p)) for p in self.course.points]
        ground = self.world.CreateStaticBody()
        self.terrain_poly = []
        for start, end in zip(points[:-1], points[1:], strict=True):
            if start == end:
                continue
            ground.CreateFixture(
                fixtureDef(
                    shape=edgeShape(vertices=[start, end]), friction=FRICTION, categoryBits=0x0001
                )
            )
            polygon = [start, end, (end[0], 0), (start[0], 0)]
            self.terrain_poly.append((polygon, _GROUND_COLOR))
        ground.color1 = ground.color2 = (76, 230, 76)
        self.terrain: list[Box2D.b2Body] = [ground]
        self.terrain_x = [p[0] for p in points]
        self.terrain_y = [p[1] for p in points]


class TaskBipedalWalkerStairs(TaskBipedalWalker):
    """The same walker; its task also has stairs (flat until stair_height_high > 0)."""

    initial_task = FLAT_WITH_STAIRS


def _base_params() -> tuple[Param, ...]:
    return (
        Param("roughness", low=0.0, high=10.0, init=0.0, step=0.6, round_to=0.1),
        Param("pit_gap_low", low=0.0, high=8.0, init=0.0, step=0.4, round_to=0.1),
        Param("pit_gap_high", low=0.0, high=8.0, init=0.0, step=0.4, round_to=0.1),
        Param("stump_height_low", low=0.0, high=5.0, init=0.0, step=0.2, round_to=0.1),
        Param("stump_height_high", low=0.0, high=5.0, init=0.0, step=0.2, round_to=0.1),
    )


_INTERVALS = (("pit_gap_low", "pit_gap_high"), ("stump_height_low", "stump_height_high"))


@register("bipedal_terrain")
def bipedal_terrain() -> TaskSpace:
    """POET's space: ground roughness, pit gap and stump height; starts on flat ground."""
    return TaskSpace(
        name="bipedal_terrain",
        params=_base_params(),
        make_env=TaskBipedalWalker,
        max_episode_steps=2000,
        solved_score=230.0,  # POET's repro threshold for the walker
        ordered=_INTERVALS,
        metadata={"render_png": render_terrain_png},  # the report draws each task's course
    )


@register("bipedal_terrain_stairs")
def bipedal_terrain_stairs() -> TaskSpace:
    """POET's space plus stairs: stair rise as an interval and the number of stair steps."""
    return TaskSpace(
        name="bipedal_terrain_stairs",
        params=(
            *_base_params(),
            Param("stair_height_low", low=0.0, high=2.0, init=0.0, step=0.2, round_to=0.1),
            Param("stair_height_high", low=0.0, high=2.0, init=0.0, step=0.2, round_to=0.1),
            Param("stair_steps", low=1.0, high=5.0, init=2.0, step=1.0, round_to=1.0),
        ),
        make_env=TaskBipedalWalkerStairs,
        max_episode_steps=2000,
        solved_score=230.0,
        ordered=(*_INTERVALS, ("stair_height_low", "stair_height_high")),
        metadata={"render_png": render_terrain_png},
    )
