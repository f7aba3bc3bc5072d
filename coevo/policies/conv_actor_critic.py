"""A convolutional actor-critic for grid observations (`policy=conv_actor_critic`, mazes).

The UED papers' maze agents (dcd, minimax) read the 5 x 5 egocentric view with one small
convolution (16 filters of 3 x 3, no padding, ReLU), join the flattened feature map with
the direction, and put a recurrent core and small actor and critic heads on top. This one
keeps their encoder and, where they have the recurrent core, `ActorCriticSpec`'s trunks
(one or two MLPs of `hidden`, policy and value heads): memoryless, so PPO's learner and the
pool's rollouts need nothing beyond what the MLP actor-critic uses.

The observation is flat: its first height * width * channels entries are the grid
(channel last, row by row), the rest extra features (`coevo.tasks.grid_box.GridBox` says
the layout, and `policy.kwargs.grid` may say it instead). The convolution, shared by actor
and critic, is a matmul of each row's filters with the grid's patches, gathered by one
fixed index: in numpy for rollouts (a stacked matmul, so a row's bits never depend on the
batch) and in torch for the learner. Its parameters lead the vector's trainable part:

    [obs_mean, obs_var]   only with normalize_obs
    conv.weight           [filters, kernel * kernel * channels] (a patch's (row, column,
                          channel) order), then conv.bias [filters]
    the trunks and heads  as `ActorCriticSpec`, on the (filters x positions) feature map
                          (position-major) followed by the extra features

Initialised as the rest of the vector (orthogonal, gain sqrt(2) for the filters).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from coevo.errors import ConfigError
from coevo.policies.actor_critic import KWARGS, ActorCriticSpec, checked_kwargs

KIND = "conv_actor_critic"
# dcd's and minimax's maze encoder: 16 filters of 3 x 3 over the view; then one trunk layer.
DEFAULT_FILTERS = 16
DEFAULT_KERNEL = 3
DEFAULT_HIDDEN = (64,)
CONV_KWARGS = ("grid", "filters", "kernel")


@dataclass(frozen=True)
class ConvActorCriticSpec(ActorCriticSpec):
    """`ActorCriticSpec` with a convolution over the observation's grid (module doc)."""

    grid: tuple[int, int, int] = (1, 1, 1)  # (height, width, channels), channel last
    filters: int = DEFAULT_FILTERS
    kernel: int = DEFAULT_KERNEL

    def __post_init__(self) -> None:
        super().__post_init__()
        if len(self.grid) != 3 or any(int(n) < 1 for n in self.grid):
            raise ConfigError(
                "policy.kwargs.grid", f"needs [height, width, channels] >= 1, got {self.grid}"
            )
        object.__setattr__(self, "grid", tuple(int(n) for n in self.grid))
        height, width, _ = self.grid
        for name, low, high in (("filters", 1, None), ("kernel", 1, min(height, width))):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigError(
                    f"policy.kwargs.{name}", f"must be an integer >= 1, got {value!r}"
                )
            if high is not None and value > high:
                raise ConfigError(
                    f"policy.kwargs.{name}",
                    f"{value} is larger than the {height} x {width} grid; at most {high}",
                )
        if self.grid_size > self.obs_dim:
            raise ConfigError(
                "policy.kwargs.grid",
                f"a {' x '.join(map(str, self.grid))} grid has {self.grid_size} entries; "
                f"the observation has only {self.obs_dim}",
            )

    @property
    def grid_size(self) -> int:
        """The grid's entries at the start of the observation."""
        height, width, channels = self.grid
        return height * width * channels

    @property
    def positions(self) -> int:
        """The convolution's output positions (no padding, stride 1)."""
        height, width, _ = self.grid
        return (height - self.kernel + 1) * (width - self.kernel + 1)

    @property
    def features_dim(self) -> int:
        """The trunks' input: the feature map, then the observation's extra features."""
        return self.positions * self.filters + self.obs_dim - self.grid_size

    def encoder_shapes(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        """The filters [filters, kernel * kernel * channels] and their biases."""
        patch = self.kernel * self.kernel * self.grid[2]
        return (("conv.weight", (self.filters, patch)), ("conv.bias", (self.filters,)))

    @functools.cached_property
    def patch_index(self) -> np.ndarray:
        """[positions, kernel * kernel * channels]: each patch's entries in the observation."""
        height, width, channels = self.grid
        k = self.kernel
        rows = []
        for top in range(height - k + 1):
            for left in range(width - k + 1):
                rows.append(
                    [
                        ((top + dy) * width + left + dx) * channels + c
                        for dy in range(k)
                        for dx in range(k)
                        for c in range(channels)
                    ]
                )
        return np.array(rows, dtype=np.int64)

    def encode(self, params: np.ndarray, obs: np.ndarray) -> np.ndarray:
        """[B, features_dim]: each row's filters (ReLU) on its grid, then its extra features."""
        start, bias, stop, filters, patch = self._linears["conv"]
        rows = obs.shape[0]
        weight = params[:, start:bias].reshape(rows, filters, patch)
        patches = obs[:, self.patch_index]  # [B, positions, patch]
        # Stacked matmul: each row's bits whatever the batch around it.
        maps = np.matmul(patches, weight.transpose(0, 2, 1)) + params[:, None, bias:stop]
        features = np.maximum(maps, np.float32(0.0)).reshape(rows, -1)
        return np.concatenate([features, obs[:, self.grid_size :]], axis=1)

    def encode_torch(self, obs: Any, layer: Any) -> Any:
        """`encode` for P pairs' observations [P, B, D] with their filters `layer("conv")`."""
        import torch

        weight, bias = layer("conv")
        pairs, rows = obs.shape[0], obs.shape[1]
        index = torch.from_numpy(self.patch_index.reshape(-1))
        patches = obs[..., index].reshape(pairs, rows * self.positions, weight.shape[2])
        maps = torch.baddbmm(bias.unsqueeze(1), patches, weight.transpose(1, 2))
        features = torch.relu(maps).reshape(pairs, rows, -1)
        return torch.cat([features, obs[..., self.grid_size :]], dim=-1)


def grid_of(observation_space: gym.Space, given: Any) -> tuple[int, int, int]:
    """The grid's layout: `policy.kwargs.grid` when given, else the space's `grid`.

    Raises:
        ConfigError: If neither says it.
    """
    if given is not None:
        if isinstance(given, str) or len(given) != 3:
            raise ConfigError(
                "policy.kwargs.grid", f"needs [height, width, channels], got {given!r}"
            )
        return (int(given[0]), int(given[1]), int(given[2]))
    grid = getattr(observation_space, "grid", None)
    if grid is None:
        raise ConfigError(
            "policy.kwargs.grid",
            f"the observation space {observation_space} does not say which entries form a "
            "grid (a coevo.tasks.grid_box.GridBox does, as task=maze's); give "
            "policy.kwargs.grid: [height, width, channels] (channel last, at its start)",
        )
    return grid


def make_conv_actor_critic(
    observation_space: gym.Space, action_space: gym.Space, options: Mapping[str, Any]
) -> ConvActorCriticSpec:
    """The spec `policy: {name: conv_actor_critic, hidden, activation, log_std_init, kwargs:
    {grid, filters, kernel, and the actor_critic's kwargs}}` describes."""
    kwargs = checked_kwargs(options, KWARGS + CONV_KWARGS, KIND)
    grid = grid_of(observation_space, kwargs.pop("grid", None))
    conv = {
        "filters": kwargs.pop("filters", DEFAULT_FILTERS),
        "kernel": kwargs.pop("kernel", DEFAULT_KERNEL),
    }
    base = ActorCriticSpec.for_spaces(
        observation_space,
        action_space,
        hidden=options.get("hidden", DEFAULT_HIDDEN),
        activation=options.get("activation", "tanh"),
        log_std_init=float(options.get("log_std_init", 0.0)),
        **kwargs,
    )
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
    return ConvActorCriticSpec(**fields, grid=grid, **conv)
