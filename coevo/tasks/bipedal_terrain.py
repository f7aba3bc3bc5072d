"""POET's benchmark: gymnasium's BipedalWalker on terrain made from the task.

The walker, its physics, observations and rewards are gymnasium's; only the terrain differs:
`coevo.tasks.terrain.generate_terrain(task, seed)` replaces gymnasium's generator, so the
course is a function of (task, reset seed). `render_terrain_png` draws a task's course.

Rollouts run this env millions of times unrendered, so it leaves out what only drawing needs
and what Python makes slow, with the same arithmetic, so that returns are the same bits as
gymnasium's own code gives on the same course (a test runs both side by side):

- `step` applies the four motor commands from one vectorized sign/abs/clip instead of twelve
  scalar numpy calls, and skips the lidar end points that only `render` draws;
- a reset reuses one edge fixture definition for the ground, builds the polygons `render`
  draws only when asked for them, and skips the clouds when nothing renders (drawing the
  same random numbers, so the walker's initial push is unchanged);
- the course of a (task, seed) is cached: the pool resets with the same seeds again and again.

Each episode runs in a new Box2D world (`reset` says why), so it does not depend on the
episodes the env ran before.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import Box2D
import numpy as np
from gymnasium.envs.box2d.bipedal_walker import (
    FPS,
    FRICTION,
    LIDAR_RANGE,
    MOTORS_TORQUE,
    SCALE,
    SPEED_HIP,
    SPEED_KNEE,
    TERRAIN_GRASS,
    TERRAIN_LENGTH,
    TERRAIN_STEP,
    VIEWPORT_H,
    VIEWPORT_W,
    BipedalWalker,
)

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
_SPEEDS = (SPEED_HIP, SPEED_KNEE, SPEED_HIP, SPEED_KNEE)
# Lidar ray offsets from the hull, as gymnasium computes them every step.
_LIDAR_OFFSETS = tuple(
    (math.sin(1.5 * i / 10.0) * LIDAR_RANGE, -math.cos(1.5 * i / 10.0) * LIDAR_RANGE)
    for i in range(10)
)
# gymnasium's clouds: TERRAIN_LENGTH // 20 of them, 1 + 2 x 5 uniform draws each.
_CLOUD_DRAWS = (TERRAIN_LENGTH // 20) * 11
_FINISH_X = (TERRAIN_LENGTH - TERRAIN_GRASS) * TERRAIN_STEP
# Courses kept per env: a worker's slot sees a few tasks x the call's episode seeds.
_COURSE_CACHE = 64
# A course and its ground polyline's points as floats (what Box2D's edges take).
_Course = tuple[Terrain, list[tuple[float, float]]]


class TaskBipedalWalker(PendingTaskMixin, BipedalWalker):
    """gymnasium's BipedalWalker whose terrain comes from the task and the reset seed."""

    initial_task: dict[str, float] = FLAT

    def __init__(self, task: dict[str, float] | None = None, render_mode: str | None = None):
        super().__init__(render_mode=render_mode, hardcore=False)
        self._task = dict(self.initial_task)
        self._terrain_seed: int | None = None
        self.course: Terrain | None = None
        self._courses: OrderedDict[tuple, _Course] = OrderedDict()
        # One definition for every ground edge; CreateFixture copies its shape.
        self._edge = Box2D.b2FixtureDef(
            shape=Box2D.b2EdgeShape(vertices=[(0.0, 0.0), (1.0, 0.0)]),
            friction=FRICTION,
            categoryBits=0x0001,
        )
        if task:
            self.set_task(task)
            self._apply_pending_task()

    def _apply_task(self, task: dict[str, float]) -> None:
        pass  # the terrain is built from self._task at every reset

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Reset in a fresh Box2D world, generating the terrain from `seed`.

        gymnasium reuses its world across episodes; Box2D then numbers the new bodies'
        collision proxies in an order the past episodes left, which orders the contacts and
        so the solver's arithmetic: a walker meeting two ground edges at once moved by
        different bits after different histories (one env per slot, so worker counts
        changed returns). A new world per episode makes an episode a function of
        (task, seed, actions) alone.
        """
        self._terrain_seed = seed  # the terrain is generated inside BipedalWalker.reset
        self._destroy()
        self.world = Box2D.b2World()
        return super().reset(seed=seed, options=options)

    def _generate_terrain(self, hardcore: bool) -> None:
        """Called by BipedalWalker.reset after seeding: build our course in the Box2D world."""
        seed = self._terrain_seed
        if seed is None:  # an unseeded reset continues the env's own generator
            seed = int(self.np_random.integers(2**31))
        self.course, points = self._course(seed)
        ground = self.world.CreateStaticBody()
        edge = self._edge
        for start, end in zip(points[:-1], points[1:], strict=True):
            if start == end:
                continue
            edge.shape.vertices = [start, end]
            ground.CreateFixture(edge)
        ground.color1 = ground.color2 = (76, 230, 76)
        self.terrain: list[Box2D.b2Body] = [ground]
        self.terrain_x = [p[0] for p in points]
        self.terrain_y = [p[1] for p in points]

    def _course(self, seed: int) -> _Course:
        task = self._task
        return self._cached_course(
            (tuple(sorted(task.items())), seed), lambda: generate_terrain(task, seed)
        )

    def _cached_course(self, key: Any, build: Callable[[], Terrain]) -> _Course:
        """The course under `key` (least recently used first out), built when missing."""
        cached = self._courses.get(key)
        if cached is None:
            course = build()
            cached = course, [(float(x), float(y)) for x, y in course.points]
            self._courses[key] = cached
            if len(self._courses) > _COURSE_CACHE:
                self._courses.popitem(last=False)
        else:
            self._courses.move_to_end(key)
        return cached

    @property
    def terrain_poly(self) -> list:
        """The ground polygons `render` fills (built on demand: rollouts never draw)."""
        points = list(zip(self.terrain_x, self.terrain_y, strict=True))
        return [
            ([start, end, (end[0], 0), (start[0], 0)], _GROUND_COLOR)
            for start, end in zip(points[:-1], points[1:], strict=True)
            if start != end
        ]

    def _generate_clouds(self) -> None:
        if self.render_mode is not None:
            super()._generate_clouds()
            return
        # Nothing draws them, but the walker's initial push is drawn after them.
        self.np_random.uniform(size=_CLOUD_DRAWS)
        self.cloud_poly = []

    def step(self, action: np.ndarray):
        """gymnasium's BipedalWalker step (same arithmetic, same bits), with less Python.

        Scalar numpy calls cost microseconds each: sign, abs and clip of the four motor
        commands are taken once on the whole action, and their elements then combined
        exactly as gymnasium combines its scalars.
        """
        assert self.hull is not None
        strengths = self._drive_motors(action)
        self.world.Step(1.0 / FPS, 6 * 30, 2 * 30)
        pos = self.hull.position
        self._cast_lidar(pos)
        state = self._state()
        self.scroll = pos.x - VIEWPORT_W / SCALE / 5
        reward = self._reward(pos, state, strengths)
        terminated = False
        if self.game_over or pos[0] < 0:
            reward = -100
            terminated = True
        if pos[0] > _FINISH_X:
            terminated = True
        if self.render_mode == "human":
            self.render()
        return np.array(state, dtype=np.float32), reward, terminated, False, {}

    def _drive_motors(self, action: np.ndarray) -> np.ndarray:
        """Set the four joints' motor speeds and torques; the commands' strengths."""
        command = np.asarray(action)
        signs = np.sign(command)
        strengths = np.clip(np.abs(command), 0, 1)
        motors = zip(self.joints, _SPEEDS, signs, strengths, strict=True)
        for joint, speed, sign, strength in motors:
            joint.motorSpeed = float(speed * sign)
            joint.maxMotorTorque = float(MOTORS_TORQUE * strength)
        return strengths

    def _cast_lidar(self, pos: Any) -> None:
        """Cast the ten lidar rays from the hull at `pos` (each keeps its hit fraction)."""
        x, y = pos[0], pos[1]
        drawn = self.render_mode is not None
        world = self.world
        for lidar, (dx, dy) in zip(self.lidar, _LIDAR_OFFSETS, strict=True):
            lidar.fraction = 1.0
            end = (x + dx, y + dy)
            if drawn:  # only render reads the ray's end points
                lidar.p1, lidar.p2 = pos, end
            world.RayCast(lidar, pos, end)

    def _state(self) -> list[float]:
        """The observation as gymnasium builds it: hull, joints, leg contacts, lidar."""
        hull, joints, legs = self.hull, self.joints, self.legs
        assert hull is not None
        vel = hull.linearVelocity
        # BipedalWalker's contact listener sets `ground_contact` on its leg bodies.
        return [
            hull.angle,
            2.0 * hull.angularVelocity / FPS,
            0.3 * vel.x * (VIEWPORT_W / SCALE) / FPS,
            0.3 * vel.y * (VIEWPORT_H / SCALE) / FPS,
            joints[0].angle,
            joints[0].speed / SPEED_HIP,
            joints[1].angle + 1.0,
            joints[1].speed / SPEED_KNEE,
            1.0 if legs[1].ground_contact else 0.0,  # pyright: ignore[reportAttributeAccessIssue]
            joints[2].angle,
            joints[2].speed / SPEED_HIP,
            joints[3].angle + 1.0,
            joints[3].speed / SPEED_KNEE,
            1.0 if legs[3].ground_contact else 0.0,  # pyright: ignore[reportAttributeAccessIssue]
            *[lidar.fraction for lidar in self.lidar],
        ]

    def _reward(self, pos: Any, state: list[float], strengths: np.ndarray) -> Any:
        """The step's shaping gain less the torque cost (before the end-of-episode rules)."""
        shaping = 130 * pos[0] / SCALE  # forward progress
        shaping -= 5.0 * abs(state[0])  # keep the hull level
        reward = 0
        if self.prev_shaping is not None:
            reward = shaping - self.prev_shaping
        self.prev_shaping = shaping
        for strength in strengths:  # torque cost, one motor after the other as gymnasium
            reward -= 0.00035 * MOTORS_TORQUE * strength
        return reward


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
