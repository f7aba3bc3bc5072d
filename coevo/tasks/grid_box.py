"""`GridBox`: a flat observation Box that says which of its entries form a grid.

An env whose observation starts with a picture (a maze's egocentric view) and goes on with a
few plain features (the direction) gives its observation space as a `GridBox`: still a flat
float Box for every policy, plus `grid = (height, width, channels)`, the layout of the first
`height * width * channels` entries (channel last, row by row). A convolutional policy
(`policy=conv_actor_critic`) reads its input shape from it.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np


class GridBox(gym.spaces.Box):
    """A flat Box in [low, high] of `height * width * channels + extra` entries, the first
    ones a grid [height, width, channels] (channel last), the rest `extra` features."""

    def __init__(
        self,
        grid: tuple[int, int, int],
        extra: int,
        low: float = 0.0,
        high: float = 1.0,
        dtype: type = np.float32,
    ):
        height, width, channels = (int(n) for n in grid)
        size = height * width * channels + int(extra)
        super().__init__(low, high, (size,), dtype=dtype)
        self.grid = (height, width, channels)
