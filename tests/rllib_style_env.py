"""A task-settable env written the way RLlib's documented curriculum example is: the task
is an int difficulty level (`set_task(level)`, `get_task() -> level`), the constructor takes
one config dict, and the level applies at the next reset. Our own code (a corridor with
pits), not a copy of RLlib's.

Level L: a corridor of 4 + 2L cells, the goal at the far end and L - 1 pits on the way,
reward 1 at the goal scaled by 10 ** (L - 1), -0.01 per step otherwise. Observations are the
agent's cell index (Discrete), actions 0: left, 1: right, 2: jump (two cells, over a pit).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

MAX_LEVEL = 5


class CorridorLevelsEnv(gym.Env):
    def __init__(self, config: dict):
        self.level = config.get("start_level", 1)
        self.max_timesteps = config.get("max_timesteps", 30)
        self.observation_space = gym.spaces.Discrete(4 + 2 * MAX_LEVEL)
        self.action_space = gym.spaces.Discrete(3)
        self._rebuild = True
        self._build()

    def _build(self) -> None:
        # list() of range(level): an int level or it raises (as RLlib's map lookup does)
        pits = [3 + 2 * k for k in list(range(self.level))[1:]]
        self.length = 4 + 2 * self.level
        self.pits = set(pits)
        self._rebuild = False

    def get_task(self) -> int:
        return self.level

    def set_task(self, task: int) -> None:
        self.level = task
        self._rebuild = True

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if self._rebuild:
            self._build()
        self.position = 0
        self.steps = 0
        return self.position, {}

    def step(self, action: int):
        self.steps += 1
        move = {0: -1, 1: 1, 2: 2}[int(action)]
        self.position = int(np.clip(self.position + move, 0, self.length - 1))
        if self.position in self.pits:
            return self.position, -1.0, True, False, {}
        if self.position == self.length - 1:
            return self.position, float(10 ** (self.level - 1)), True, False, {}
        return self.position, -0.01, False, self.steps >= self.max_timesteps, {}


def level_as_dict_value(task: dict) -> int:
    """A `task_format` function: the env's task from coevo's parameter dict."""
    return task["level"]
