"""The policy interface the worker uses.

A policy is a function of one flat float32 parameter vector. The worker runs B slots at once:
`step(params [B, P], obs [B, D], state [B, S], noise [B, N])` returns the actions of B
(possibly different) parameter rows, their next recurrent state and, on request, the
log-probabilities and value estimates trajectory collection needs.

Contracts every implementation keeps:
- A row's outputs depend only on that row's inputs, bit for bit, whatever the batch around
  it (so an episode's return never depends on how episodes were batched).
- Stochastic actions read only `noise`: uniforms in (0, 1) that the worker derives from the
  episode's seed and step, so results are deterministic per (policy, task, episode seed).
- Recurrent state is one float32 row of `state_size` per slot, zero at episode start.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from coevo.errors import ConfigError

DISCRETE_MODES = ("argmax", "sample")
CONTINUOUS_MODES = ("deterministic", "gaussian")
BOUNDS = ("clip", "tanh")


def obs_dim_of(observation_space: gym.Space) -> int:
    """The policy's input size for an observation space: a Box's size; any other space
    gymnasium can flatten (Discrete one-hot, Dict, Tuple, MultiDiscrete, MultiBinary) as
    `gymnasium.spaces.flatten` lays it out, which the env slots apply to each observation
    (as SB3 does)."""
    if isinstance(observation_space, gym.spaces.Box):
        return int(np.prod(observation_space.shape))
    try:
        return int(gym.spaces.flatdim(observation_space))
    except (ValueError, NotImplementedError, TypeError):
        raise ConfigError(
            "policy",
            f"observation space {observation_space} cannot be flattened into a vector "
            "(allowed: Box, Discrete, MultiDiscrete, MultiBinary, and Dict / Tuple of them)",
        ) from None


@dataclass(frozen=True)
class ActionSpec:
    """What the env takes and how network outputs become actions.

    Discrete: `size` actions; `mode` argmax (of the logits) or sample (from their softmax).
    Continuous: `size` dimensions in [low, high]; `mode` deterministic (the output is the
    action's mean) or gaussian (mean + exp(log_std) * N(0, 1), log_std learned as the last
    `size` parameters); `bounds` clip (as SB3 does) or tanh (squash into the bounds).
    `log_std_range` (gaussian only): the network gives log_std per observation, as its
    second `size` outputs after the mean, clipped to (min, max) (SB3's SAC actor).
    """

    discrete: bool
    size: int
    mode: str
    bounds: str = "tanh"
    low: tuple[float, ...] = ()
    high: tuple[float, ...] = ()
    log_std_range: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        allowed = DISCRETE_MODES if self.discrete else CONTINUOUS_MODES
        if self.mode not in allowed:
            kind = "discrete" if self.discrete else "continuous"
            raise ConfigError(
                "policy.action",
                f"'{self.mode}' is not a {kind} action mode; allowed: {', '.join(allowed)}",
            )
        if self.bounds not in BOUNDS:
            raise ConfigError(
                "policy.bounds", f"unknown value '{self.bounds}'; allowed: {', '.join(BOUNDS)}"
            )
        if self.log_std_range is not None and self.mode != "gaussian":
            raise ConfigError(
                "policy.action",
                f"a log_std given by the network is for mode 'gaussian', not '{self.mode}'",
            )

    @classmethod
    def for_space(
        cls, action_space: gym.Space, mode: str | None = None, bounds: str = "tanh"
    ) -> ActionSpec:
        """The spec of a Discrete or Box space; mode defaults to argmax / deterministic."""
        if isinstance(action_space, gym.spaces.Discrete):
            return cls(True, int(action_space.n), mode or "argmax", bounds)
        if isinstance(action_space, gym.spaces.Box):
            low = tuple(float(x) for x in action_space.low.ravel())
            high = tuple(float(x) for x in action_space.high.ravel())
            return cls(False, len(low), mode or "deterministic", bounds, low, high)
        raise ConfigError("policy", f"action space {action_space} is not Discrete or Box")

    @property
    def stochastic(self) -> bool:
        """Whether actions are drawn at random (mode `sample` or `gaussian`)."""
        return self.mode in ("sample", "gaussian")

    @functools.cached_property
    def bounds_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(low, high, high - low) as float32 arrays, made once: the head runs every step,
        and rebuilding them cost ~2 us per call, a tenth of a small batch's whole step."""
        low = np.asarray(self.low, dtype=np.float32)
        high = np.asarray(self.high, dtype=np.float32)
        return low, high, high - low

    @property
    def noise_dim(self) -> int:
        """Uniforms per row and step: one to sample a discrete action, two per Gaussian draw."""
        if self.mode == "sample":
            return 1
        if self.mode == "gaussian":
            return 2 * self.size
        return 0

    @property
    def extra_params(self) -> int:
        """Parameters the head adds after the network's: a Gaussian's learned log_std."""
        return self.size if self.mode == "gaussian" and self.log_std_range is None else 0

    @property
    def outputs(self) -> int:
        """The network's outputs per row: `size`, twice it when it gives log_std too."""
        return 2 * self.size if self.log_std_range is not None else self.size


@dataclass(frozen=True)
class ObsNorm:
    """Stored observation statistics: obs -> clip((obs - mean) / sqrt(var + eps), ±clip)."""

    mean: tuple[float, ...]
    var: tuple[float, ...]
    epsilon: float = 1e-8
    clip: float | None = 10.0

    def apply(self, obs: np.ndarray) -> np.ndarray:
        """Normalise observations as SB3's VecNormalize does.

        Args:
            obs: Raw observations.

        Returns:
            `(obs - mean) / sqrt(var + epsilon)`, clipped when `clip` is set, as float32.
        """
        # In float64, then float32: the arithmetic SB3's VecNormalize does (elementwise, so
        # each row's bits are independent of the batch).
        mean = np.asarray(self.mean, dtype=np.float64)
        out = (obs - mean) / np.sqrt(np.asarray(self.var, dtype=np.float64) + self.epsilon)
        if self.clip is not None:
            out = np.clip(out, -self.clip, self.clip)
        return out.astype(np.float32)


@dataclass
class PolicyOutput:
    """One batched step: env actions [B, ...], next state [B, S] (S may be 0), and with
    `return_info` the log-probability of the actions [B] and the value estimates [B]
    (None where the policy has no value head)."""

    actions: np.ndarray
    state: np.ndarray
    log_prob: np.ndarray | None = None
    value: np.ndarray | None = None


def _given_noise(spec: ActionSpec, noise: np.ndarray | None) -> np.ndarray:
    """The uniforms a stochastic head ('sample', 'gaussian') draws from, refused if absent."""
    if noise is None:
        raise ValueError(f"a '{spec.mode}' policy needs noise [B, {spec.noise_dim}]")
    return noise


def gaussian_from_uniforms(noise: np.ndarray, size: int) -> np.ndarray:
    """[B, size] standard normals from [B, 2*size] uniforms in (0, 1) (Box-Muller).

    Elementwise only, so each row's draw is independent of the batch.
    """
    u1, u2 = noise[:, :size], noise[:, size : 2 * size]
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


class Policy(ABC):
    """Base class: parameter layout, action head and observation normalisation.

    Subclasses implement `num_network_params`, `init_network` and `network`: the network's
    raw outputs (logits, or action means) for B parameter rows, with the next state and an
    optional value estimate.
    """

    obs_dim: int
    act_dim: int  # discrete: number of actions; continuous: action dimensions
    discrete: bool
    action: ActionSpec
    obs_norm: ObsNorm | None = None
    # Per-slot recurrent state width; 0 for feed-forward policies.
    state_size: int = 0
    log_std_init: float = 0.0

    # -- what subclasses provide ---------------------------------------------------------------
    @property
    @abstractmethod
    def num_network_params(self) -> int:
        """The number of the network's parameters."""
        ...

    @abstractmethod
    def init_network(self, rng: np.random.Generator) -> np.ndarray:
        """Initial network parameters.

        Args:
            rng: The generator the initialisation uses.

        Returns:
            A flat vector of `num_network_params` values.
        """
        ...

    @abstractmethod
    def network(
        self, params: np.ndarray, obs: np.ndarray, state: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(raw outputs [B, out], next state [B, S], value [B] or None) for network params."""

    # -- shared -------------------------------------------------------------------------------
    @property
    def num_params(self) -> int:
        """The length of the parameter vector: the network's plus the action's extras."""
        return self.num_network_params + self.action.extra_params

    @property
    def noise_dim(self) -> int:
        """The number of noise values one action draw takes."""
        return self.action.noise_dim

    @property
    def recurrent(self) -> bool:
        """Whether the policy carries a state between steps."""
        return self.state_size > 0

    def init(self, rng: np.random.Generator) -> np.ndarray:
        """A fresh parameter vector (float32): the network's, then a Gaussian's log_std."""
        network = self.init_network(rng).astype(np.float32)
        extra = np.full(self.action.extra_params, self.log_std_init, dtype=np.float32)
        return np.concatenate([network, extra]).astype(np.float32)

    def check_fits(self, observation_space: gym.Space, action_space: gym.Space, env: str) -> None:
        """Refuse spaces the policy was not built for (by name, before any episode: inside
        the workers it failed every episode with numpy's broadcast error)."""
        try:
            actions = ActionSpec.for_space(action_space)
        except ConfigError:  # a space only a user's own policy kind knows how to act in
            return
        given = (obs_dim_of(observation_space), actions.discrete, actions.size)
        if given != (self.obs_dim, self.discrete, self.act_dim):
            raise ConfigError(
                "policy",
                f"built for {_spaces_text(self.obs_dim, self.discrete, self.act_dim)}; "
                f"the env of {env} has {_spaces_text(*given)}",
            )

    def signature(self) -> object:
        """Equal for policies that may share one worker skeleton (only parameters differ)."""
        return self

    def initial_state(self, batch: int) -> np.ndarray:
        """Zero state rows, the state at every episode start."""
        return np.zeros((batch, self.state_size), dtype=np.float32)

    def step(
        self,
        params: np.ndarray,
        obs: np.ndarray,
        state: np.ndarray | None = None,
        noise: np.ndarray | None = None,
        return_info: bool = False,
    ) -> PolicyOutput:
        """Actions of B parameter rows on B observations (see the module docstring)."""
        batch = obs.shape[0]
        obs = obs.reshape(batch, -1).astype(np.float32, copy=False)
        if self.obs_norm is not None:
            obs = self.obs_norm.apply(obs)
        if state is None:
            state = self.initial_state(batch)
        net_params = params[:, : self.num_network_params] if self.action.extra_params else params
        out, next_state, value = self.network(net_params, obs, state)
        actions, log_prob = self._head(params, out, noise, return_info)
        return PolicyOutput(actions, next_state, log_prob, value if return_info else None)

    def act(
        self, params: np.ndarray, obs: np.ndarray, noise: np.ndarray | None = None
    ) -> np.ndarray:
        """Env actions of a feed-forward policy for B rows (no state, no info)."""
        return self.step(params, obs, None, noise).actions

    def _head(
        self, params: np.ndarray, out: np.ndarray, noise: np.ndarray | None, return_info: bool
    ) -> tuple[np.ndarray, np.ndarray | None]:
        spec = self.action
        if spec.discrete:
            if spec.mode == "argmax" and not return_info:
                return out.argmax(axis=1), None
            logits = out.astype(np.float64)
            logits -= logits.max(axis=1, keepdims=True)
            log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
            if spec.mode == "argmax":
                actions = out.argmax(axis=1)
            else:  # inverse CDF of the softmax at one uniform per row
                cdf = np.cumsum(np.exp(log_probs), axis=1)
                uniforms = _given_noise(spec, noise)
                actions = np.minimum((cdf < uniforms[:, :1]).sum(axis=1), spec.size - 1)
            rows = np.arange(len(actions))
            return actions, (log_probs[rows, actions] if return_info else None)
        mean = out
        log_prob = None
        if spec.mode == "gaussian":
            if spec.log_std_range is None:
                log_std = params[:, self.num_network_params :]
            else:  # per observation, after the mean (SB3's SAC clamps it so)
                mean, log_std = (
                    out[:, : spec.size],
                    np.clip(out[:, spec.size :], *spec.log_std_range),
                )
            draw = gaussian_from_uniforms(_given_noise(spec, noise), spec.size)
            raw = (mean + np.exp(log_std) * draw).astype(np.float32)
            if return_info:
                log_prob = (-0.5 * draw**2 - log_std - 0.5 * np.log(2.0 * np.pi)).sum(axis=1)
        else:
            raw = mean
            if return_info:
                log_prob = np.zeros(len(mean))
        return self._bound(raw), log_prob

    def _bound(self, raw: np.ndarray) -> np.ndarray:
        low, high, span = self.action.bounds_arrays
        if self.action.bounds == "clip":
            return np.clip(raw, low, high)
        # low + (tanh(raw) + 1) * 0.5 * (high - low), in place on tanh's fresh array: the
        # same operations in the same order, so the same bits, with no temporaries.
        squashed = np.tanh(raw)
        squashed += 1.0
        squashed *= 0.5
        squashed *= span
        squashed += low
        return squashed


def flat_size(shapes: Sequence[tuple[int, ...]]) -> int:
    """The total number of elements of arrays of the given shapes.

    Args:
        shapes: The arrays' shapes.

    Returns:
        The sum of their sizes.
    """
    return int(sum(int(np.prod(s)) for s in shapes))


def _spaces_text(obs_dim: int, discrete: bool, act_dim: int) -> str:
    actions = f"{act_dim} discrete actions" if discrete else f"a {act_dim}-dimensional Box action"
    return f"observations of {obs_dim} values and {actions}"
