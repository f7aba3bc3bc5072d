"""Recurrent policy networks (GRU, LSTM) written with linear layers so vmap batches them.

torch's own `nn.GRUCell` runs under vmap only through a slow per-row fallback and
`nn.LSTMCell` not at all (torch 2.13), so the gates are spelled out here. Both follow the
TorchPolicy conventions: unbatched `forward(obs, state) -> (out, state)`, `state_size`.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

_ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU}


def _feed_forward(sizes: Sequence[int], activation: str) -> nn.Sequential:
    layers: list[nn.Module] = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
        layers += [nn.Linear(fan_in, fan_out), _ACTIVATIONS[activation]()]
    return nn.Sequential(*layers)


class GRUNet(nn.Module):
    """obs -> feed-forward layers (all of `hidden` but the last) -> GRU cell -> linear out."""

    def __init__(
        self, obs_dim: int, act_dim: int, hidden: Sequence[int] = (32,), activation: str = "tanh"
    ):
        super().__init__()
        *pre, size = (int(h) for h in hidden)
        self.encoder = _feed_forward((obs_dim, *pre), activation)
        width = pre[-1] if pre else obs_dim
        self.x2h = nn.Linear(width, 3 * size)
        self.h2h = nn.Linear(size, 3 * size)
        self.out = nn.Linear(size, act_dim)
        self.size = size
        self.state_size = size

    def forward(self, obs: torch.Tensor, state: torch.Tensor):
        """One GRU step: the outputs and the new hidden state."""
        x = self.encoder(obs)
        xr, xz, xn = self.x2h(x).chunk(3, dim=-1)
        hr, hz, hn = self.h2h(state).chunk(3, dim=-1)
        reset = torch.sigmoid(xr + hr)
        update = torch.sigmoid(xz + hz)
        candidate = torch.tanh(xn + reset * hn)
        h = (1.0 - update) * candidate + update * state
        return self.out(h), h


class LSTMNet(nn.Module):
    """Like `GRUNet` with an LSTM cell; the state row is [h, c] (2 x the cell size)."""

    def __init__(
        self, obs_dim: int, act_dim: int, hidden: Sequence[int] = (32,), activation: str = "tanh"
    ):
        super().__init__()
        *pre, size = (int(h) for h in hidden)
        self.encoder = _feed_forward((obs_dim, *pre), activation)
        width = pre[-1] if pre else obs_dim
        self.x2h = nn.Linear(width, 4 * size)
        self.h2h = nn.Linear(size, 4 * size)
        self.out = nn.Linear(size, act_dim)
        self.size = size
        self.state_size = 2 * size

    def forward(self, obs: torch.Tensor, state: torch.Tensor):
        """One LSTM step: the outputs and the new state (h and c, concatenated)."""
        h, c = state[..., : self.size], state[..., self.size :]
        gates = self.x2h(self.encoder(obs)) + self.h2h(h)
        i, f, g, o = gates.chunk(4, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        return self.out(h), torch.cat([h, c], dim=-1)
