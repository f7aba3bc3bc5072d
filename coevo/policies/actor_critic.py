"""An actor-critic MLP whose parameters (and observation statistics) are one flat vector.

The pool ships it like any policy: one float32 row per version. The layout, in order:

    [obs_mean (D), obs_var (D)]          only with normalize_obs; updated by the learner,
                                         never by gradients
    policy trunk  D -> h1 -> ... -> hk   (weights [out, in] row-major, then biases)
    action head   hk -> A                (logits, or the Gaussian mean)
    value trunk   D -> h1 -> ... -> hk   only when not shared
    value head    hk -> 1                (from the value trunk, or the policy trunk if shared)
    log_std (A)                          only for continuous actions (state-independent);
                                         with gSDE (use_sde) [h_k, A], or [h_k, 1] without
                                         full_std: the exploration matrix's log std

Rollouts run in numpy with stacked matmuls (each row's bits independent of the batch, as for
the MLP policy); the learner uses `ActorCriticModule`, the same function in torch, whose
parameters are views of the same layout. Initialisation follows Stable-Baselines3's
(orthogonal, gain sqrt(2) in the trunks, 0.01 for the action head, 1 for the value head), so
the two PPOs start from comparable networks.

gSDE (generalised state-dependent exploration, `use_sde`, as Stable-Baselines3 defines it):
the action noise is the policy trunk's last features times an exploration matrix W [h_k, A],
W ~ N(0, std^2) elementwise with std = exp(log_std) (or expln); a stream draws a new W every
`sde_sample_freq` steps and at each rollout's start (-1: only there), from its own generator.
The log-probability is that of N(mean, sqrt(features^2 @ std^2 + SDE_EPSILON)) per action
dimension, with the features taken as constants (SB3's `learn_features=False`).
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
from coevo.policies.base import (
    ActionSpec,
    Policy,
    PolicyOutput,
    gaussian_from_uniforms,
    obs_dim_of,
)

if TYPE_CHECKING:
    import torch

# SB3 MlpPolicy's layers: the actor-critic's default on every entry point (coevo-run's
# policy=actor_critic preset, parse_config, make_policy).
DEFAULT_HIDDEN = (64, 64)

_ACTIVATIONS = {"tanh": np.tanh, "relu": lambda x: np.maximum(x, 0.0)}
_TORCH_ACTIVATIONS = {"tanh": "Tanh", "relu": "ReLU"}
# Observation normalisation as SB3's VecNormalize: (obs - mean) / sqrt(var + eps), clipped.
OBS_EPSILON = 1e-8
_LOG_2PI = math.log(2.0 * math.pi)
# SB3's StateDependentNoiseDistribution epsilon: added to the variance, and to the positive
# log std inside expln.
SDE_EPSILON = 1e-6
# How evaluation episodes act (`policy.kwargs.evaluation`): deterministic as SB3's
# predict(deterministic=True), or sampled from the policy's distribution, as the UED papers'
# test rollouts and SFL's level scoring do (on a deterministic level kind such as task=maze,
# every deterministic episode of a level is the same episode).
EVALUATIONS = ("deterministic", "sample")


@dataclass(frozen=True)
class Segment:
    """A named slice of the flat vector with its shape."""

    name: str
    start: int
    shape: tuple[int, ...]
    trainable: bool = True

    @property
    def size(self) -> int:
        """The number of parameters in the segment."""
        return int(np.prod(self.shape))

    @property
    def stop(self) -> int:
        """The index just past the segment in the flat parameter vector."""
        return self.start + self.size


@dataclass(frozen=True)
class ActorCriticSpec(Policy):
    """A stochastic policy with a value head: categorical (Discrete) or Gaussian (Box).

    As a `Policy` (evaluation episodes) it acts deterministically, as SB3's
    `predict(deterministic=True)`: argmax, or the mean clipped into the bounds; with
    `evaluation="sample"` it samples from its distribution instead, from the episode's own
    noise (one uniform per step, two per action dimension for a Gaussian). Trajectory jobs
    call `sample` with the stream's noise either way.
    """

    obs_dim: int
    act_dim: int  # number of actions (Discrete) or action dimensions (Box)
    discrete: bool
    hidden: tuple[int, ...] = DEFAULT_HIDDEN
    activation: str = "tanh"
    shared: bool = False  # one trunk for policy and value, or two networks (SB3's default)
    act_low: tuple[float, ...] = ()
    act_high: tuple[float, ...] = ()
    log_std_init: float = 0.0
    normalize_obs: bool = False
    obs_clip: float = 10.0
    # gSDE (continuous actions only); defaults as SB3's ActorCriticPolicy / PPO.
    use_sde: bool = False
    sde_sample_freq: int = -1  # a new exploration matrix every n steps; -1: once per rollout
    full_std: bool = True  # log_std [h_k, A]; False: [h_k, 1], shared by the action dims
    use_expln: bool = False  # std = expln(log_std) (the gSDE paper's), else exp(log_std)
    evaluation: str = "deterministic"  # how evaluation episodes act (EVALUATIONS)

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
        for name in ("use_sde", "full_std", "use_expln"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(
                    f"policy.kwargs.{name}", f"must be true or false, got {getattr(self, name)!r}"
                )
        freq = self.sde_sample_freq
        if isinstance(freq, bool) or not isinstance(freq, int) or not (freq == -1 or freq >= 1):
            raise ConfigError(
                "policy.kwargs.sde_sample_freq",
                f"must be -1 (once per rollout) or an integer >= 1, got {freq!r}",
            )
        if self.use_sde and self.discrete:
            raise ConfigError(
                "policy.kwargs.use_sde", "gSDE needs continuous (Box) actions; allowed: false"
            )
        self._check_evaluation()

    def _check_evaluation(self) -> None:
        if self.evaluation not in EVALUATIONS:
            raise ConfigError(
                "policy.kwargs.evaluation",
                f"unknown value {self.evaluation!r}; allowed: {', '.join(EVALUATIONS)}",
            )
        if self.evaluation == "sample" and self.use_sde:
            raise ConfigError(
                "policy.kwargs.evaluation",
                "sampled evaluation episodes are not written for gSDE (use_sde: true); "
                "allowed with it: deterministic",
            )

    @functools.cached_property
    def action(self) -> ActionSpec:
        """How evaluation episodes choose actions: argmax for discrete actions, else the
        clipped mean; with `evaluation="sample"` a draw from the categorical (`sample`) or
        the Gaussian (`gaussian`, clipped)."""
        sampled = self.evaluation == "sample"
        if self.discrete:
            mode = "sample" if sampled else "argmax"
        else:
            mode = "gaussian" if sampled else "deterministic"
        return ActionSpec(self.discrete, self.act_dim, mode, "clip", self.act_low, self.act_high)

    @classmethod
    def for_spaces(
        cls,
        observation_space: gym.Space,
        action_space: gym.Space,
        hidden: Sequence[int] = DEFAULT_HIDDEN,
        activation: str = "tanh",
        shared: bool = False,
        log_std_init: float = 0.0,
        normalize_obs: bool = False,
        obs_clip: float = 10.0,
        use_sde: bool = False,
        sde_sample_freq: int = -1,
        full_std: bool = True,
        use_expln: bool = False,
        evaluation: str = "deterministic",
    ) -> ActorCriticSpec:
        """The spec of an actor-critic for the given observation and action spaces.

        Args:
            observation_space: The env's observation space.
            action_space: The env's action space (Discrete or Box).
            hidden: The hidden layers' widths.
            activation: The hidden layers' activation.
            shared: Whether actor and critic share their hidden layers.
            log_std_init: The initial log standard deviation of continuous actions.
            normalize_obs: Whether observations are normalised.
            obs_clip: The bound of normalised observations.
            use_sde: Whether exploration uses state-dependent noise (gSDE).
            sde_sample_freq: How often gSDE redraws its noise (-1: once per rollout).
            full_std: Whether gSDE has one std per hidden unit and action.
            use_expln: Whether gSDE uses expln instead of exp for the std.
            evaluation: How evaluation episodes act: deterministic or sample.

        Returns:
            The spec.
        """
        obs_dim = obs_dim_of(observation_space)
        options: dict[str, Any] = dict(
            hidden=tuple(int(h) for h in hidden),
            activation=activation,
            shared=bool(shared),
            log_std_init=float(log_std_init),
            normalize_obs=bool(normalize_obs),
            obs_clip=float(obs_clip),
            use_sde=use_sde,
            sde_sample_freq=sde_sample_freq,
            full_std=full_std,
            use_expln=use_expln,
            evaluation=evaluation,
        )
        return cls(obs_dim, **_action_fields(action_space), **options)

    # -- layout ---------------------------------------------------------------------------
    @functools.cached_property
    def segments(self) -> dict[str, Segment]:
        """The named slices of the flat parameter vector, in order."""
        segments: dict[str, Segment] = {}
        offset = 0

        def add(name: str, shape: tuple[int, ...], trainable: bool = True) -> None:
            nonlocal offset
            segments[name] = Segment(name, offset, shape, trainable)
            offset += segments[name].size

        if self.normalize_obs:
            add("obs_mean", (self.obs_dim,), False)
            add("obs_var", (self.obs_dim,), False)
        for name, shape in self.encoder_shapes():
            add(name, shape)
        sizes = (self.features_dim, *self.hidden)
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
            add("log_std", self.log_std_shape)
        return segments

    # -- the encoder: what the trunks read (here the observation itself) ----------------
    @property
    def features_dim(self) -> int:
        """The trunks' input size: the observation's (a subclass's encoder may change it)."""
        return self.obs_dim

    def encoder_shapes(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        """(name, shape) of the encoder's parameters, laid out before the trunks: none."""
        return ()

    def encode(self, params: np.ndarray, obs: np.ndarray) -> np.ndarray:
        """The trunks' input [B, features_dim] from normalised observations [B, D] (numpy)."""
        return obs

    def encode_torch(self, obs: Any, layer: Any) -> Any:
        """`encode` in torch on [P, B, D]; `layer(name)` gives a layer's (weight
        [P, out, in], bias [P, out]) of the P pairs."""
        return obs

    @property
    def log_std_shape(self) -> tuple[int, ...]:
        """The shape of the log std: per action, or per hidden unit and action with gSDE."""
        if not self.use_sde:
            return (self.act_dim,)
        return (self.hidden[-1], self.act_dim if self.full_std else 1)

    @property
    def num_params(self) -> int:
        """The length of the flat parameter vector."""
        last = list(self.segments.values())[-1]
        return last.stop

    @property
    def num_network_params(self) -> int:
        """The length of the flat parameter vector (all of it is the network's)."""
        return self.num_params

    def init_network(self, rng: np.random.Generator) -> np.ndarray:
        """Initial parameters, as `init` draws them."""
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
        out, values, _ = self._forward(params, obs)
        return out, values

    def _forward(
        self, params: np.ndarray, obs: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(logits or means [B, A], values [B], the policy trunk's features [B, h_k])."""
        x = self.encode(params, self.normalize(params, obs))
        pi = self._trunk(params, x, "pi")
        out = self._linear(params, pi, "action")
        vf = pi if self.shared else self._trunk(params, x, "vf")
        return out, self._linear(params, vf, "value")[:, 0], pi

    def network(self, params, obs, state):
        """The actor's outputs and the critic's values for `obs`; the state passes through."""
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
        """Evaluation actions (the `Policy` interface): deterministic, or with
        `evaluation="sample"` drawn from `noise` ([B, noise_dim] uniforms in (0, 1), the
        episode's own); normalisation is inside."""
        if self.evaluation == "sample":
            return self._sampled_step(params, obs, state, noise, return_info)
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

    def _sampled_step(
        self,
        params: np.ndarray,
        obs: np.ndarray,
        state: np.ndarray | None,
        noise: np.ndarray | None,
        return_info: bool,
    ) -> PolicyOutput:
        """`step` with `evaluation="sample"`: `sample` from the episode's uniforms (inverse
        CDF for a categorical, Box-Muller normals for a Gaussian)."""
        if noise is None:
            raise ValueError(
                f"evaluation='sample' needs noise [B, {self.noise_dim}] (the episode's uniforms)"
            )
        draws = noise[:, 0] if self.discrete else gaussian_from_uniforms(noise, self.act_dim)
        _, actions, log_probs, values = self.sample(params, obs, draws.astype(np.float32))
        if state is None:
            state = self.initial_state(obs.shape[0])
        if not return_info:
            return PolicyOutput(actions, state)
        return PolicyOutput(actions, state, log_probs, values)

    def act(
        self, params: np.ndarray, obs: np.ndarray, noise: np.ndarray | None = None
    ) -> np.ndarray:
        """Evaluation env actions: deterministic (argmax, or the mean clipped into the bounds),
        as SB3's `predict(deterministic=True)` gives them, or sampled from `noise` with
        `evaluation="sample"`."""
        return self.step(params, obs, noise=noise).actions

    # -- rollout noise ---------------------------------------------------------------------
    def draw_noise(self, rng: np.random.Generator, horizon: int) -> np.ndarray:
        """A stream's noise for `horizon` steps, drawn up front from its generator: [T]
        uniform (categorical), [T, A] standard normal (Gaussian), or with gSDE one standard
        normal matrix [h_k, A] per exploration period ([ceil(T / sde_sample_freq), h_k, A];
        one with sde_sample_freq -1). `noise[noise_index(t)]` is step t's."""
        if self.discrete:
            return rng.random(horizon)
        if not self.use_sde:
            return rng.standard_normal((horizon, self.act_dim), np.float32)
        periods = 1 if self.sde_sample_freq < 1 else -(-horizon // self.sde_sample_freq)
        return rng.standard_normal((periods, self.hidden[-1], self.act_dim), np.float32)

    def noise_index(self, t: int) -> int:
        """Which of a stream's noise draws step t of its rollout uses: a new exploration
        matrix at the rollout's start and every sde_sample_freq steps (SB3's cadence)."""
        if not self.use_sde:
            return t
        return 0 if self.sde_sample_freq < 1 else t // self.sde_sample_freq

    def sde_std(self, log_std: np.ndarray) -> np.ndarray:
        """The exploration matrix's std [..., h_k, A] from log_std [..., h_k, A or 1]."""
        if self.use_expln:
            # exp below 0, log1p above: the std grows slowly (the gSDE paper's expln).
            positive = log_std > 0
            safe = np.where(positive, log_std, 0.0) + np.float32(SDE_EPSILON)
            std = np.where(positive, np.log1p(safe) + 1.0, np.exp(np.minimum(log_std, 0.0)))
        else:
            std = np.exp(log_std)
        return np.broadcast_to(std, (*std.shape[:-1], self.act_dim)).astype(np.float32)

    def sample(
        self, params: np.ndarray, obs: np.ndarray, noise: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Stochastic actions from given noise: (actions, env actions, log-probs, values).

        `noise` is [B, A] standard normal (Gaussian), [B] uniform in [0, 1) (categorical,
        inverse-CDF sampling) or, with gSDE, [B, h_k, A] standard normal (each row's
        exploration matrix before scaling by its std), drawn by the caller from the job's
        seeded generator (`draw_noise`). Gaussian actions are stored unclipped (their
        log-prob is of the unclipped sample) and clipped into the bounds for the env, as
        SB3 does.
        """
        out, values, latent = self._forward(params, obs)
        if self.use_sde:
            std = self.sde_std(self.view(params, "log_std"))  # [B, h_k, A]
            # Stacked matmuls: each row's bits do not depend on the batch.
            shift = np.matmul(latent[:, None, :], std * noise)[:, 0, :]
            actions = (out + shift).astype(np.float32)
            variance = np.matmul((latent * latent)[:, None, :], std * std)[:, 0, :]
            log_scale = 0.5 * np.log(variance + np.float32(SDE_EPSILON))
            log_probs = gaussian_log_prob(actions, out, log_scale.astype(np.float32))
            low, high = self._bounds
            return actions, np.clip(actions, low, high), log_probs, values.astype(np.float32)
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
    """The torch module class, made on first use: rollouts never import torch."""
    from torch import nn

    class _ActorCriticModule(_TorchActorCritic, nn.Module):
        """`ActorCriticSpec`'s function in torch; parameters named as the spec's segments."""

    return _ActorCriticModule


class _TorchActorCritic:
    """The methods of the torch module: `_torch_module_class` joins them to `nn.Module`
    (a base only torch can give, so the class is made when torch is first needed)."""

    def __init__(self, spec: ActorCriticSpec):
        import torch
        from torch import nn

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
        """Copy `theta`'s trainable parameters into this module's."""
        import torch

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
        from torch import nn

        for index in range(len(self.spec.hidden)):
            name = f"{prefix}.{index}"
            x = self._act(
                nn.functional.linear(x, self._p(f"{name}.weight"), self._p(f"{name}.bias"))
            )
        return x

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(logits or means, values) of normalised observations."""
        out, value, _ = self.features(obs)
        return out, value

    def _layer(self, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        """A layer's (weight, bias) as one pair's: [1, out, in], [1, out]."""
        return self._p(f"{name}.weight")[None], self._p(f"{name}.bias")[None]

    def features(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(logits or means, values, the policy trunk's features)."""
        from torch import nn

        obs = self.spec.encode_torch(obs[None], self._layer)[0]
        pi = self._trunk(obs, "pi")
        out = nn.functional.linear(pi, self._p("action.weight"), self._p("action.bias"))
        vf = pi if self.spec.shared else self._trunk(obs, "vf")
        value = nn.functional.linear(vf, self._p("value.weight"), self._p("value.bias"))
        return out, value[:, 0], pi

    def evaluate(
        self, obs: torch.Tensor, actions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(log-probs, entropies, values) of `actions` at normalised `obs`."""
        out, values, latent = self.features(obs)
        if self.spec.use_sde:
            log_probs, entropy = self._sde_distribution(out, latent, actions)
        elif self.spec.discrete:
            log_probs, entropy = self._categorical(out, actions)
        else:
            log_probs, entropy = self._gaussian(out, actions)
        return log_probs, entropy, values

    def _sde_distribution(
        self, out: torch.Tensor, latent: torch.Tensor, actions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(log-probs, entropies) under gSDE: the features taken as constants."""
        import torch

        log_std = self._p("log_std")
        if self.spec.use_expln:
            positive = log_std > 0
            safe = torch.where(positive, log_std, 0.0) + SDE_EPSILON
            std = torch.where(positive, torch.log1p(safe) + 1.0, torch.exp(log_std.clamp(max=0.0)))
        else:
            std = log_std.exp()
        std = std.expand(-1, self.spec.act_dim)
        variance = (latent.detach() ** 2) @ (std**2)
        log_scale = 0.5 * torch.log(variance + SDE_EPSILON)
        z = (actions - out) / log_scale.exp()
        log_probs = (-0.5 * z * z - log_scale - 0.5 * _LOG_2PI).sum(dim=1)
        entropy = (0.5 + 0.5 * _LOG_2PI + log_scale).sum(dim=1)
        return log_probs, entropy

    def _categorical(
        self, out: torch.Tensor, actions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(log-probs, entropies) of discrete actions under the logits `out`."""
        import torch

        log_probs_all = torch.log_softmax(out, dim=1)
        log_probs = log_probs_all.gather(1, actions.long().reshape(-1, 1))[:, 0]
        entropy = -(log_probs_all.exp() * log_probs_all).sum(dim=1)
        return log_probs, entropy

    def _gaussian(
        self, out: torch.Tensor, actions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(log-probs, entropies) under the diagonal Gaussian of means `out`."""
        log_std = self._p("log_std")
        z = (actions - out) / log_std.exp()
        log_probs = (-0.5 * z * z - log_std - 0.5 * _LOG_2PI).sum(dim=1)
        entropy = (0.5 + 0.5 * _LOG_2PI + log_std).sum().expand(out.shape[0])
        return log_probs, entropy


def ActorCriticModule(spec: ActorCriticSpec) -> Any:  # noqa: N802 - a class made on demand
    """A torch module for `spec` (torch is imported only here: rollouts never need it)."""
    return _module_class()(spec)


@functools.cache
def _module_class() -> type:
    return _torch_module_class()


# The actor-critic's `policy.kwargs`.
KWARGS = ("shared", "normalize_obs", "obs_clip", "use_sde", "sde_sample_freq", "full_std")
KWARGS += ("use_expln", "evaluation")


def checked_kwargs(options: Mapping[str, Any], allowed: Sequence[str], kind: str) -> dict:
    """`options`' kwargs, refusing one `allowed` does not name and a `policy.action` (an
    actor-critic samples in trajectories; `kwargs.evaluation` says how evaluations act).

    Raises:
        ConfigError: naming the field and what is allowed.
    """
    kwargs = dict(options.get("kwargs") or {})
    unknown = sorted(set(kwargs) - set(allowed))
    if unknown:
        raise ConfigError(
            f"policy.kwargs.{unknown[0]}",
            f"not an option of policy={kind}; allowed: {', '.join(allowed)}",
        )
    if options.get("action") not in (None, "sample", "gaussian"):
        raise ConfigError(
            "policy.action",
            f"{kind} samples in trajectories and acts as policy.kwargs.evaluation says in "
            f"evaluations (deterministic or sample); leave it unset, got "
            f"'{options.get('action')}'",
        )
    return kwargs


def make_actor_critic(
    observation_space: gym.Space, action_space: gym.Space, options: Mapping[str, Any]
) -> ActorCriticSpec:
    """The spec `policy: {name: actor_critic, hidden, activation, log_std_init, kwargs:
    {shared, normalize_obs, obs_clip, use_sde, sde_sample_freq, full_std, use_expln,
    evaluation}}` describes (actions: sampled in trajectories; in evaluations deterministic,
    or sampled with evaluation: sample; clipped into the bounds as SB3 does)."""
    kwargs = checked_kwargs(options, KWARGS, "actor_critic")
    return ActorCriticSpec.for_spaces(
        observation_space,
        action_space,
        hidden=options.get("hidden", DEFAULT_HIDDEN),
        activation=options.get("activation", "tanh"),
        log_std_init=float(options.get("log_std_init", 0.0)),
        **kwargs,
    )


def _action_fields(action_space: gym.Space) -> dict[str, Any]:
    """The spec's action fields for a Discrete or Box action space; a ConfigError else."""
    if isinstance(action_space, gym.spaces.Discrete):
        return {"act_dim": int(action_space.n), "discrete": True}
    if isinstance(action_space, gym.spaces.Box):
        low = tuple(float(x) for x in action_space.low.ravel())
        high = tuple(float(x) for x in action_space.high.ravel())
        return {"act_dim": len(low), "discrete": False, "act_low": low, "act_high": high}
    raise ConfigError("policy", f"action space {action_space} is not Discrete or Box")
