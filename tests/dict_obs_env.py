"""A task-settable env whose observations are a Dict (a position Box and a Discrete goal),
as many users' own envs are: coevo flattens them for the policy as gymnasium does."""

from __future__ import annotations

import gymnasium as gym
import numpy as np


class GoalDictEnv(gym.Env):
    """Walk on a line from 0 to the goal cell (the task); reward -0.1 per step, +1 at it."""

    def __init__(self) -> None:
        self.goal = 2
        self.observation_space = gym.spaces.Dict(
            {
                "position": gym.spaces.Box(-5.0, 5.0, (1,), np.float32),
                "goal": gym.spaces.Discrete(4),
            }
        )
        self.action_space = gym.spaces.Discrete(2)

    def get_task(self) -> dict:
        return {"goal": self.goal}

    def set_task(self, task: dict) -> None:
        self.goal = int(task["goal"])

    def _obs(self) -> dict:
        return {"position": np.array([self.position], np.float32), "goal": self.goal}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.position = float(self.np_random.integers(-1, 2))
        return self._obs(), {}

    def step(self, action):
        self.position = float(np.clip(self.position + (1 if int(action) == 1 else -1), -5, 5))
        arrived = self.position == self.goal
        return self._obs(), 1.0 if arrived else -0.1, arrived, False, {}
