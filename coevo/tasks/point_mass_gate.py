"""The point-mass gate of Klink et al. (SPDL, NeurIPS 2020; CurrOT, ICML 2022): a point mass on
a plane must pass a gate in a wall to reach a goal behind it; the gate's position and width
are the task.

The physics, as the papers' `ContextualPointMass2D` (psclklnk/currot, written here anew):

- The plane is [-4, 4]²; the mass starts at rest at (0, 3), the goal is (0, -3). Positions
  are clipped to the plane (velocities are not); there is no friction (the 2-D context).
- The wall is the line y = 0 except the gate [position - width/2, position + width/2].
  Crossing y = 0 outside the gate (either way, as CurrOT's env checks) is a crash: the
  mass stops where it met the wall and the episode ends.
- An action is a force in [-10, 10]² (clipped); one step is 10 Euler substeps of 0.01 s,
  the acceleration 1.5 x force plus Gaussian noise of std 0.05 per substep and axis.
- The reward per step is exp(-0.6 x distance to the goal); episodes last 100 steps.
- The observation is (x, vx, y, vy, gate position, gate width): the papers' state with the
  task visible (their `context_visible=True`).

One change, for coevo's success test (a return threshold): the first step the mass comes
within 0.25 of the goal (CurrOT's `info["success"]` radius) pays a one-off bonus of
`GOAL_BONUS` = 100. Without it every step is worth at most exp(-0.6 x 0.25) < 0.87, so an
episode that never reaches the goal returns less than 87 and one that does at least 100:
`solved_score` 100 is "reached the goal", exactly.

The target of both papers is the narrow gates (width 0.5); CurrOT's, used here, is an even
mix of gates at positions -3 and 3 (std 0.01 each, redrawn when out of bounds). The space's
`test_tasks` (coevo.tasks.test_sets) draws the held-out test set from it, so "% mastered"
is the success rate on the target. The initial task is the easiest: the widest gate,
centred, i.e. no wall at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from coevo.tasks.protocol import PendingTaskMixin
from coevo.tasks.registry import register
from coevo.tasks.task import Param, Task, TaskSpace

ARENA = 4.0  # positions are clipped to [-ARENA, ARENA]
START = (0.0, 3.0)
GOAL = (0.0, -3.0)
MAX_FORCE = 10.0
FORCE_GAIN = 1.5  # acceleration per unit of force
SUBSTEPS = 10
DT = 0.01  # seconds per substep
NOISE_STD = 0.05  # of the acceleration, per substep and axis
DISTANCE_SCALE = 0.6  # reward exp(-DISTANCE_SCALE x distance)
SUCCESS_RADIUS = 0.25
GOAL_BONUS = 100.0
HORIZON = 100
# CurrOT's target distribution: gates of width 0.5 at -3 and at 3, in equal parts.
TARGET_GATES = ((-3.0, 0.5), (3.0, 0.5))
TARGET_STD = 0.01
POSITION_BOUNDS = (-4.0, 4.0)
WIDTH_BOUNDS = (0.5, 8.0)
PAPERS_BOUNDS = {"gate_position": POSITION_BOUNDS, "gate_width": WIDTH_BOUNDS}
TEST_DECIMALS = 3  # test tasks are rounded to 0.001, the parameters' grid


class PointMassGateEnv(PendingTaskMixin, gym.Env):
    """The point mass and the gate (see the module doc); the task applies at the next reset."""

    def __init__(self, task: dict[str, float] | None = None):
        self._task = {"gate_position": 0.0, "gate_width": WIDTH_BOUNDS[1]}
        low = [-ARENA, -np.inf, -ARENA, -np.inf, POSITION_BOUNDS[0], WIDTH_BOUNDS[0]]
        high = [ARENA, np.inf, ARENA, np.inf, POSITION_BOUNDS[1], WIDTH_BOUNDS[1]]
        self.observation_space = spaces.Box(
            np.array(low, np.float32), np.array(high, np.float32), dtype=np.float32
        )
        self.action_space = spaces.Box(-MAX_FORCE, MAX_FORCE, shape=(2,), dtype=np.float32)
        self.state = (START[0], 0.0, START[1], 0.0)  # x, vx, y, vy
        self.reached = False  # has this episode come within SUCCESS_RADIUS of the goal
        if task:
            self.set_task(task)
            self._apply_pending_task()

    def _apply_task(self, task: dict[str, float]) -> None:
        self._task = dict(task)

    @property
    def gate(self) -> tuple[float, float]:
        """The gate's (position, width) this episode."""
        return float(self._task["gate_position"]), float(self._task["gate_width"])

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Apply the pending task and put the mass at rest at the start."""
        self._apply_pending_task()
        gym.Env.reset(self, seed=seed)
        self.state = (START[0], 0.0, START[1], 0.0)
        self.reached = False
        return self._observation(), {}

    def step(self, action):
        """Ten substeps under the clipped force; a crash into the wall ends the episode."""
        force = [min(max(float(f), -MAX_FORCE), MAX_FORCE) for f in np.ravel(action)[:2]]
        noise = self.np_random.normal(0.0, NOISE_STD, size=(SUBSTEPS, 2)).tolist()
        self.state, crashed = substeps(self.state, force, noise, self.gate)
        distance = math.hypot(self.state[0] - GOAL[0], self.state[2] - GOAL[1])
        reward = math.exp(-DISTANCE_SCALE * distance)
        if distance < SUCCESS_RADIUS and not self.reached:
            self.reached = True
            reward += GOAL_BONUS
        return self._observation(), reward, crashed, False, {"success": self.reached}

    def _observation(self) -> np.ndarray:
        return np.array([*self.state, *self.gate], dtype=np.float32)


def substeps(
    state: tuple[float, float, float, float],
    force: list[float],
    noise: list[list[float]],
    gate: tuple[float, float],
) -> tuple[tuple[float, float, float, float], bool]:
    """One env step: Euler substeps (one per row of `noise`) of the mass under `force`;
    the new (x, vx, y, vy) and whether it crashed into the wall (then it stops there)."""
    x, vx, y, vy = state
    position, width = gate
    for noise_x, noise_y in noise:
        new_x = min(max(x + DT * vx, -ARENA), ARENA)
        new_y = min(max(y + DT * vy, -ARENA), ARENA)
        vx += DT * (FORCE_GAIN * force[0] + noise_x)
        vy += DT * (FORCE_GAIN * force[1] + noise_y)
        if (y >= 0.0 > new_y) or (y <= 0.0 < new_y):
            share = (0.0 - y) / (new_y - y)
            crossing = share * new_x + (1.0 - share) * x
            if abs(crossing - position) > 0.5 * width:
                return (crossing, 0.0, 0.0, 0.0), True
        x, y = new_x, new_y
    return (x, vx, y, vy), False


def target_tasks(space: TaskSpace, size: int, seed: int) -> list[Task]:
    """`size` tasks drawn from CurrOT's target distribution (a gate of `TARGET_GATES` picked
    evenly, each parameter Gaussian with std `TARGET_STD` about it, drawn again while out of
    the papers' bounds), rounded to 0.001, from a generator seeded by `seed`."""
    rng = np.random.default_rng([seed, 31])
    out = []
    for _ in range(size):
        out.append(target_task(space, rng))
    return out


def target_task(space: TaskSpace, rng: np.random.Generator) -> Task:
    """One task of CurrOT's target distribution (see `target_tasks`); a task of `space`,
    whose bounds must hold it (the redraws test the papers' bounds, which always do)."""
    position, width = TARGET_GATES[int(rng.integers(len(TARGET_GATES)))]
    while True:
        values = {
            name: round(float(rng.normal(mean, TARGET_STD)), TEST_DECIMALS)
            for name, mean in zip(PAPERS_BOUNDS, (position, width), strict=True)
        }
        if all(low <= values[name] <= high for name, (low, high) in PAPERS_BOUNDS.items()):
            return space.task(**values)


@dataclass(frozen=True)
class PointMassGateSpace(TaskSpace):
    """The gate's position and width; held-out tests drawn from the papers' target."""

    def test_tasks(self, size: int, seed: int) -> list[Task]:
        """The held-out test set (coevo.tasks.test_sets): `size` draws of the target
        distribution (narrow gates near -3 and 3), duplicates dropped. The target is the
        papers' whatever bounds this space trains within."""
        papers = {name: {"low": low, "high": high} for name, (low, high) in PAPERS_BOUNDS.items()}
        return list(dict.fromkeys(target_tasks(self.with_overrides(papers), size, seed)))


@register("point_mass_gate")
def point_mass_gate() -> PointMassGateSpace:
    """The task space of the point-mass gate: gate position and width (CurrOT's bounds)."""
    return PointMassGateSpace(
        name="point_mass_gate",
        params=(
            Param("gate_position", *POSITION_BOUNDS, init=0.0, step=0.5, round_to=0.001),
            Param("gate_width", *WIDTH_BOUNDS, init=WIDTH_BOUNDS[1], step=0.5, round_to=0.001),
        ),
        make_env=PointMassGateEnv,
        max_episode_steps=HORIZON,
        # Success = the goal reached: the bonus alone is 100, and a return without it is
        # below 87 (see the module doc).
        solved_score=GOAL_BONUS,
    )
