"""A task-settable CartPole that its task can break, for end-to-end fault tests.

`hazard` 0 is CartPole itself; 1 raises at the third step; 2 rewards NaN and 3 rewards
infinity at the second step (the episode then goes on). Importable by path
(`fragile_env:FragileCartPole`) with tests/ on PYTHONPATH, by the driver and Ray workers.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.classic_control import CartPoleEnv


class FragileCartPole(gym.Env):
    def __init__(self) -> None:
        self.env = CartPoleEnv()
        self.observation_space = self.env.observation_space
        self.action_space = self.env.action_space
        self.task = {"hazard": 0.0}
        self._next = dict(self.task)
        self.t = 0

    def get_task(self) -> dict[str, float]:
        return dict(self._next)

    def set_task(self, task: dict[str, float]) -> None:
        self._next = {k: float(v) for k, v in task.items()}  # applies at the next reset

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        self.task = dict(self._next)
        self.t = 0
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> tuple:
        self.t += 1
        hazard = round(self.task["hazard"])
        if hazard == 1 and self.t == 3:
            raise RuntimeError(f"hazard {hazard}: the cart lost a wheel")
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self.t == 2 and hazard in (2, 3):
            reward = {2: np.nan, 3: np.inf}[hazard]
        return obs, reward, terminated, truncated, info
