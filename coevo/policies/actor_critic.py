"""An actor-critic MLP whose parameters (and observation statistics) are one flat vector.

The pool ships it like any policy: one float32 row per version. The layout, in order:

    [obs_mean (D), obs_var (D)]          only with normalize_obs; updated by the learner,
                                         never by gradients
    policy trunk  D -> h1 -> ... -> hk   (weights [out, in] row-major, then biases)
    action head   hk -> A                (logits, or the Gaussian mean)
    value trunk   D -> h1 -> ... -> hk   only when not shared
    value head    hk -> 1                (from the value trunk, or the policy trunk if shared)
    log_std (A)                          only for continuous actions (state-independent)

Rollouts run in numpy with stacked matmuls (each row's bits independent of the batch, as for
the MLP policy); the learner uses `ActorCriticModule`, the same function in torch, whose
parameters are views of the same layout. Initialisation follows Stable-Baselines3's
(orthogonal, gain sqrt(2) in the trunks, 0.01 for the action head, 1 for the value head), so
the two PPOs start from comparable networks.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from coevo.errors import ConfigError
from coevo.policies.base import ActionSpec, Policy, PolicyOutput

if TYPE_CHECKING:
    import torch

_ACTIVATIONS = {"tanh": np.tanh, "relu": lambda x: np.maximum(x, 0.0)}
_TORCH_ACTIVATIONS = {"tanh": "Tanh", "relu": "ReLU"}
# Observation normalisation as SB3's VecNormalize: (obs - mean) / sqrt(var + eps), clipped.
OBS_EPSILON = 1e-8
_LOG_2PI = math.log(2.0 * math.pi)


@dataclass(frozen=True)
class Segment:
    """A named slice of the flat vector with its shape."""

    name: str
    start: int
    shape: tuple[int, ...]
    trainable: bool = True

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def stop(self) -> int:
        return self.start + self.size


@dataclass(frozen=True)
class ActorCriticSpec(Policy):
    """A stochastic policy with a value head: categorical (Discrete) or Gaussian (Box).

    As a `Policy` (evaluation episodes) it acts deterministically, as SB3's
    `predict(deterministic=True)`: argmax, or the mean clipped into the bounds. Trajectory
    jobs call `sample` with the stream's noise instead.
    """

    obs_dim: int
    act_dim: int  # number of actions (Discrete) or action dimensions (Box)
    discrete: bool
    hidden: tuple[int, ...] = (64, 64)
    activation: str = "tanh"
    shared: bool = False  # one trunk for policy and value, or two networks (SB3's default)
    act_low: tuple[float, ...] = ()
    act_high: tuple[float, ...] = ()
    log_std_init: float = 0.0
    normalize_obs: bool = False
    obs_clip: float = 10.0

    def __post_init__(self) -> None:
        if self.activation not in _ACTIVATIONS:
            raise ConfigError(
                "policy.activation",
                f"unknown activation '{self.activation}'; allowed: {', '.join(_ACTIVATIONS)}",
            )
        if not self.hidden or any(int(h) <= 0 for h in self.hidden):
            raise ConfigError(
                "policy.hidden", f"needs one or more positive layer sizes, got {self.hidden}"
            )
        if self.obs_clip <= 0:
            raise ConfigError("policy.kwargs.obs_clip", f"must be > 0, got {self.obs_clip}")

    @functools.cached_property
    def action(self) -> ActionSpec:
        mode = "argmax" if self.discrete else "deterministic"
        return ActionSpec(self.discrete, self.act_dim, mode, "clip", self.act_low, self.act_high)

    @classmethod
    def for_spaces(
        cls,
        observation_space: gym.Space,
        action_space: gym.Space,
        hidden: Sequence[int] = (64, 64),
        activation: str = "tanh",
        shared: bool = False,
        log_std_init: float = 0.0,
        normalize_obs: bool = False,
        obs_clip: float = 10.0,
    ) -> ActorCriticSpec:
        obs_dim = int(np.prod(observation_space.shape))
        options = dict(
            hidden=tuple(int(h) for h in hidden),
            activation=activation,
            shared=bool(shared),
            log_std_init=float(log_std_init),
            normalize_obs=bool(normalize_obs),
            obs_clip=float(obs_clip),
        )
        if isinstance(action_space, gym.spaces.Discrete):
            return cls(obs_dim, int(action_space.n), True, **options)
        if isinstance(action_space, gym.spaces.Box):
            low = tuple(float(x) for x in action_space.low.ravel())
            high = tuple(float(x) for x in action_space.high.ravel())
            return cls(obs_dim, len(low), False, act_low=low, act_high=high, **options)
        raise ConfigError("policy", f"action space {action_space} is not Discrete or Box")

    # -- layout ---------------------------------------------------------------------------
    @functools.cached_property
    def segments(self) -> dict[str, Segment]:
        segments: dict[str, Segment] = {}
        offset = 0

        def add(name: str, shape: tuple[int, ...], trainable: bool = True) -> None:
            nonlocal offset
            segments[name] = Segment(name, offset, shape, trainable)
            offset += segments[name].size

        if self.normalize_obs:
            add("obs_mean", (self.obs_dim,), False)
            add("obs_var", (self.obs_dim,), False)
        sizes = (self.obs_dim, *self.hidden)
        for index, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
            add(f"pi.{index}.weight", (fan_out, fan_in))
            add(f"pi.{index}.bias", (fan_out,))
        add("action.weight", (self.act_dim, self.hidden[-1]))
        add("action.bias", (self.act_dim,))
        if not self.shared:
            for index, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
                add(f"vf.{index}.weight", (fan_out, fan_in))
                add(f"vf.{index}.bias", (fan_out,))
        add("value.weight", (1, self.hidden[-1]))
        add("value.bias", (1,))
        if not self.discrete:
            add("log_std", (self.act_dim,))
        return segments

    @property
    def num_params(self) -> int:
        last = list(self.segments.values())[-1]
        return last.stop

    @property
    def num_network_params(self) -> int:
        return self.num_params

    def init_network(self, rng: np.random.Generator) -> np.ndarray:
        return self.init(rng)

    @functools.cached_property
    def trainable_mask(self) -> np.ndarray:
        """True where the vector holds network parameters (not observation statistics)."""
        mask = np.zeros(self.num_params, dtype=bool)
        for segment in self.segments.values():
            mask[segment.start : segment.stop] = segment.trainable
        return mask

    @functools.cached_property
    def _slices(self) -> dict[str, tuple[int, int, tuple[int, ...]]]:
        """(start, stop, shape) by segment name: `view` runs several times per env step."""
        return {n: (s.start, s.stop, s.shape) for n, s in self.segments.items()}

    @functools.cached_property
    def _linears(self) -> dict[str, tuple[int, int, int, int, int]]:
        """(weight start, bias start, bias stop, out, in) of each linear layer by name."""
        out = {}
        for name, (start, stop, shape) in self._slices.items():
            if name.endswith(".weight"):
                layer = name[: -len(".weight")]
                _, bias_stop, _ = self._slices[f"{layer}.bias"]
                out[layer] = (start, stop, bias_stop, shape[0], shape[1])
        return out

    def view(self, theta: np.ndarray, name: str) -> np.ndarray:
        """The segment `name` of one vector (a view, shaped) or of a stack [B, P]."""
        start, stop, shape = self._slices[name]
        return theta[..., start:stop].reshape(theta.shape[:-1] + shape)

    def init(self, rng: np.random.Generator) -> np.ndarray:
        """Orthogonal weights as SB3 initialises them, zero biases, log_std = log_std_init."""
        theta = np.zeros(self.num_params, dtype=np.float32)
        for name, segment in self.segments.items():
            if name.endswith(".weight"):
                gain = {"action": 0.01, "value": 1.0}.get(name.split(".")[0], math.sqrt(2.0))
                theta[segment.start : segment.stop] = _orthogonal(rng, segment.shape, gain).ravel()
        if self.normalize_obs:
            self.view(theta, "obs_var")[:] = 1.0
        if not self.discrete:
            self.view(theta, "log_std")[:] = self.log_std_init
        return theta

    # -- numpy forward (rollouts and evaluation) -------------------------------------------
    @functools.cached_property
    def _bounds(self) -> tuple[np.ndarray, np.ndarray]:
        return (
            np.asarray(self.act_low, dtype=np.float32),
            np.asarray(self.act_high, dtype=np.float32),
        )

    def normalize(self, params: np.ndarray, obs: np.ndarray) -> np.ndarray:
        """Observations as the network sees them, with each row's own statistics."""
        obs = obs.reshape(obs.shape[0], -1).astype(np.float32, copy=False)
        if not self.normalize_obs:
            return obs
        mean = self.view(params, "obs_mean")
        var = self.view(params, "obs_var")
        scaled = (obs - mean) / np.sqrt(var + np.float32(OBS_EPSILON))
        return np.clip(scaled, -self.obs_clip, self.obs_clip).astype(np.float32, copy=False)

    def _trunk(self, params: np.ndarray, h: np.ndarray, prefix: str) -> np.ndarray:
        act = _ACTIVATIONS[self.activation]
        for index in range(len(self.hidden)):
            h = act(self._linear(params, h, f"{prefix}.{index}"))
        return h

    def _linear(self, params: np.ndarray, h: np.ndarray, name: str) -> np.ndarray:
        start, bias, stop, fan_out, fan_in = self._linears[name]
        weight = params[:, start:bias].reshape(params.shape[0], fan_out, fan_in)
        # Stacked matmul: each row gets the same bits whatever the batch around it.
        return np.matmul(weight, h[:, :, None])[:, :, 0] + params[:, bias:stop]

    def forward(self, params: np.ndarray, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(logits or Gaussian means [B, A], values [B]) of B parameter rows on B obs."""
        x = self.normalize(params, obs)
        pi = self._trunk(params, x, "pi")
        out = self._linear(params, pi, "action")
        vf = pi if self.shared else self._trunk(params, x, "vf")
        return out, self._linear(params, vf, "value")[:, 0]

    def network(self, params, obs, state):
        out, values = self.forward(params, obs)
        return out, state, values

    def step(
        self,
        params: np.ndarray,
        obs: np.ndarray,
        state: np.ndarray | None = None,
        noise: np.ndarray | None = None,
        return_info: bool = False,
    ) -> PolicyOutput:
        """Deterministic actions (the `Policy` interface); normalisation is inside."""
        out, values = self.forward(params, obs)
        if self.discrete:
            actions = out.argmax(axis=1)
        else:
            low, high = self._bounds
            actions = np.clip(out, low, high)
        if state is None:
            state = self.initial_state(obs.shape[0])
        if not return_info:
            return PolicyOutput(actions, state)
        return PolicyOutput(actions, state, np.zeros(len(actions)), values)

    def act(
        self, params: np.ndarray, obs: np.ndarray, noise: np.ndarray | None = None
    ) -> np.ndarray:
        """Deterministic env actions (argmax, or the mean clipped into the bounds), as SB3's
        `predict(deterministic=True)` gives them; used for evaluation episodes."""
        return self.step(params, obs).actions

    def sample(
        self, params: np.ndarray, obs: np.ndarray, noise: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Stochastic actions from given noise: (actions, env actions, log-probs, values).

        `noise` is [B, A] standard normal (Gaussian) or [B] uniform in [0, 1) (categorical,
        inverse-CDF sampling), drawn by the caller from the job's seeded generator. Gaussian
        actions are stored unclipped (their log-prob is of the unclipped sample) and clipped
        into the bounds for the env, as SB3 does.
        """
        out, values = self.forward(params, obs)
        if self.discrete:
            logits = out - out.max(axis=1, keepdims=True)
            log_probs_all = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
            cdf = np.cumsum(np.exp(log_probs_all), axis=1)
            actions = (cdf < noise[:, None] * cdf[:, -1:]).sum(axis=1)
            actions = np.minimum(actions, self.act_dim - 1)
            log_probs = np.take_along_axis(log_probs_all, actions[:, None], axis=1)[:, 0]
            return actions, actions, log_probs.astype(np.float32), values.astype(np.float32)
        log_std = self.view(params, "log_std")
        actions = (out + np.exp(log_std) * noise).astype(np.float32)
        log_probs = gaussian_log_prob(actions, out, log_std)
        low, high = self._bounds
        return actions, np.clip(actions, low, high), log_probs, values.astype(np.float32)

    def values(self, params: np.ndarray, obs: np.ndarray) -> np.ndarray:
        """Value estimates [B] of B parameter rows on B observations."""
        return self.forward(params, obs)[1].astype(np.float32)

    # -- torch --------------------------------------------------------------------------
    def to_torch(self, theta: np.ndarray) -> torch.nn.Module:
        """The network as a torch module holding a copy of `theta`'s trainable parameters."""
        module = ActorCriticModule(self)
        module.load_flat(theta)
        return module


def gaussian_log_prob(actions: np.ndarray, mean: np.ndarray, log_std: np.ndarray) -> np.ndarray:
    """Sum over action dimensions of the diagonal Gaussian log-density (float32)."""
    z = (actions - mean) / np.exp(log_std)
    per_dim = -0.5 * z * z - log_std - 0.5 * np.float32(_LOG_2PI)
    return per_dim.sum(axis=-1).astype(np.float32)


def _orthogonal(rng: np.random.Generator, shape: tuple[int, ...], gain: float) -> np.ndarray:
    """An orthogonal matrix of `shape` scaled by `gain` (torch's orthogonal_ construction)."""
    rows, cols = shape
    flat = rng.standard_normal((rows, cols) if rows >= cols else (cols, rows))
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return (gain * q).astype(np.float32)


def _torch_module_class() -> type:
    import torch
    from torch import nn

    class _ActorCriticModule(nn.Module):
        """`ActorCriticSpec`'s function in torch; parameters named as the spec's segments."""

        def __init__(self, spec: ActorCriticSpec):
            super().__init__()
            self.spec = spec
            self.params = nn.ParameterDict()
            for segment in spec.segments.values():
                if segment.trainable:
                    key = segment.name.replace(".", "_")
                    self.params[key] = nn.Parameter(torch.zeros(segment.shape))
            self._act = getattr(nn, _TORCH_ACTIVATIONS[spec.activation])()

        def _p(self, name: str) -> torch.Tensor:
            return self.params[name.replace(".", "_")]

        def load_flat(self, theta: np.ndarray) -> None:
            theta = np.asarray(theta, dtype=np.float32)
            with torch.no_grad():
                for segment in self.spec.segments.values():
                    if segment.trainable:
                        part = theta[segment.start : segment.stop].reshape(segment.shape)
                        self._p(segment.name).copy_(torch.from_numpy(part.copy()))

        def flat_into(self, theta: np.ndarray) -> np.ndarray:
            """`theta` with its trainable parameters replaced by this module's (a copy)."""
            out = np.array(theta, dtype=np.float32, copy=True)
            for segment in self.spec.segments.values():
                if segment.trainable:
                    values = self._p(segment.name).detach().cpu().numpy().ravel()
                    out[segment.start : segment.stop] = values
            return out

        def _trunk(self, x: torch.Tensor, prefix: str) -> torch.Tensor:
            for index in range(len(self.spec.hidden)):
                name = f"{prefix}.{index}"
                x = self._act(
                    nn.functional.linear(x, self._p(f"{name}.weight"), self._p(f"{name}.bias"))
                )
            return x

        def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            """(logits or means, values) of normalised observations."""
            pi = self._trunk(obs, "pi")
            out = nn.functional.linear(pi, self._p("action.weight"), self._p("action.bias"))
            vf = pi if self.spec.shared else self._trunk(obs, "vf")
            value = nn.functional.linear(vf, self._p("value.weight"), self._p("value.bias"))
            return out, value[:, 0]

        def evaluate(
            self, obs: torch.Tensor, actions: torch.Tensor
        ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            """(log-probs, entropies, values) of `actions` at normalised `obs`."""
            out, values = self(obs)
            if self.spec.discrete:
                log_probs_all = torch.log_softmax(out, dim=1)
                log_probs = log_probs_all.gather(1, actions.long().reshape(-1, 1))[:, 0]
                entropy = -(log_probs_all.exp() * log_probs_all).sum(dim=1)
                return log_probs, entropy, values
            log_std = self._p("log_std")
            z = (actions - out) / log_std.exp()
            log_probs = (-0.5 * z * z - log_std - 0.5 * _LOG_2PI).sum(dim=1)
            entropy = (0.5 + 0.5 * _LOG_2PI + log_std).sum().expand(out.shape[0])
            return log_probs, entropy, values

    return _ActorCriticModule


def ActorCriticModule(spec: ActorCriticSpec) -> Any:  # noqa: N802 - a class made on demand
    """A torch module for `spec` (torch is imported only here: rollouts never need it)."""
    return _module_class()(spec)


@functools.cache
def _module_class() -> type:
    return _torch_module_class()


def make_actor_critic(
    observation_space: gym.Space, action_space: gym.Space, options: Mapping[str, Any]
) -> ActorCriticSpec:
    """The spec `policy: {name: actor_critic, hidden, activation, log_std_init, kwargs:
    {shared, normalize_obs, obs_clip}}` describes (actions: sampled in trajectories,
    deterministic in evaluations, clipped into the bounds as SB3 does)."""
    kwargs = dict(options.get("kwargs") or {})
    allowed = ("shared", "normalize_obs", "obs_clip")
    unknown = sorted(set(kwargs) - set(allowed))
    if unknown:
        raise ConfigError(
            f"policy.kwargs.{unknown[0]}",
            f"not an actor_critic option; allowed: {', '.join(allowed)}",
        )
    if options.get("action") not in (None, "sample", "gaussian"):
        raise ConfigError(
            "policy.action",
            f"actor_critic samples in trajectories and acts deterministically in evaluations; "
            f"leave it unset, got '{options.get('action')}'",
        )
    return ActorCriticSpec.for_spaces(
        observation_space,
        action_space,
        hidden=options.get("hidden", (64, 64)),
        activation=options.get("activation", "tanh"),
        log_std_init=float(options.get("log_std_init", 0.0)),
        **kwargs,
    )
