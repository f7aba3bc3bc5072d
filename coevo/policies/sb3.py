"""Stable-Baselines3 zips as coevo policies (optional extra: `pip install coevo[sb3]`).

The zip's policy is rebuilt with SB3, then its actor is copied into a plain torch module
(`SB3Actor`), so workers never import SB3. Mapped as SB3's `predict(deterministic=True)`
acts, which is what `evaluate_policy` runs by default:

- ActorCriticPolicy (PPO, A2C `MlpPolicy`): flattened observations (Box as they are;
  Discrete, MultiDiscrete one-hot, as SB3 preprocesses them) through
  `mlp_extractor.policy_net` (its activation included) and `action_net`; discrete actions
  by argmax of the logits; continuous by the Gaussian's mean, clipped to the bounds, or
  squashed when the policy sets `squash_output`. The Gaussian's `log_std` is kept for
  `action: gaussian`.
- DQNPolicy (DQN `MlpPolicy`): argmax of `q_net`.
- SACPolicy (SAC `MlpPolicy`, Box actions): tanh of the Gaussian mean (`latent_pi`, `mu`),
  rescaled to the action bounds. `action: gaussian` samples as `predict(deterministic=False)`
  does: tanh of mean + exp(log_std) * N(0, 1), the actor's per-observation `log_std` clamped
  to SAC's range, rescaled.
- TD3Policy (TD3, DDPG `MlpPolicy`, Box actions): the actor's `mu` (ending in tanh),
  rescaled to the action bounds. TD3's `predict` ignores `deterministic=False`, so
  `action: gaussian` is refused.
- A VecNormalize file (`vecnormalize: FILE.pkl`) adds its stored observation statistics.

Anything else (CNN or Dict observations, gSDE, MultiDiscrete actions, other algorithms'
policies) is refused with a message naming the class.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from coevo.errors import ConfigError
from coevo.policies.base import ActionSpec, ObsNorm

SUPPORTED = (
    "ActorCriticPolicy (PPO/A2C MlpPolicy), DQNPolicy (DQN MlpPolicy), SACPolicy (SAC "
    "MlpPolicy), TD3Policy (TD3/DDPG MlpPolicy)"
)
FLAT_OBSERVATIONS = (
    gym.spaces.Box,
    gym.spaces.Discrete,
    gym.spaces.MultiDiscrete,
    gym.spaces.MultiBinary,
)


class SB3Actor(nn.Module):
    """An SB3 actor as a plain module: flat obs -> policy latent -> action outputs."""

    def __init__(self, latent: nn.Module, head: nn.Module):
        super().__init__()
        self.latent = latent
        self.head = head

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """The action head's output for `obs`."""
        return self.head(self.latent(obs))


def _require_sb3(field: str) -> Any:
    try:
        import stable_baselines3
    except ImportError:
        raise ConfigError(
            field, "reading SB3 zips needs stable-baselines3: pip install 'coevo[sb3]'"
        ) from None
    return stable_baselines3


@dataclass(frozen=True)
class _ActorParts:
    """What one SB3 policy class contributes: its features extractor, the actor module
    coevo runs, how raw outputs meet the bounds, and a state-independent log_std if any."""

    extractor: nn.Module
    actor: nn.Module
    bounds: str  # "clip" or "tanh"
    log_std: np.ndarray | None = None  # PPO / A2C's Gaussian log_std
    log_std_range: tuple[float, float] | None = None  # SAC: the actor gives log_std


def load_sb3(
    file: str | Path,
    field: str,
    vecnormalize: str | Path | None = None,
    action: str | None = None,
) -> tuple[nn.Module, gym.Space, ActionSpec, ObsNorm | None, np.ndarray | None]:
    """(actor module, observation space, action spec, obs normalisation, log_std or None)."""
    _require_sb3(field)
    from stable_baselines3.common.torch_layers import FlattenExtractor

    policy, obs_space, act_space = _read_policy(Path(file), field)
    kind = type(policy).__name__
    mode = action or ("argmax" if isinstance(act_space, gym.spaces.Discrete) else "deterministic")
    parts = _actor_parts(policy, mode, f"{file}: {kind}", field)
    if not isinstance(parts.extractor, FlattenExtractor):
        raise ConfigError(
            field,
            f"{file}: unsupported features extractor {type(parts.extractor).__name__} of "
            f"{kind}; supported: FlattenExtractor (MlpPolicy)",
        )
    spec = ActionSpec.for_space(act_space, mode, parts.bounds)
    if parts.log_std_range is not None:
        spec = dataclasses.replace(spec, log_std_range=parts.log_std_range)
    norm = _vecnormalize(vecnormalize, f"{field}.vecnormalize") if vecnormalize else None
    return parts.actor.eval(), obs_space, spec, norm, parts.log_std


def _read_policy(path: Path, field: str) -> tuple[Any, gym.Space, gym.Space]:
    """The zip's policy, rebuilt by SB3 with its saved weights, and its spaces; refused
    by name unless its class and observation space are supported."""
    from stable_baselines3.common.policies import ActorCriticPolicy
    from stable_baselines3.common.save_util import load_from_zip_file
    from stable_baselines3.dqn.policies import DQNPolicy
    from stable_baselines3.sac.policies import SACPolicy
    from stable_baselines3.td3.policies import TD3Policy

    if not path.is_file():
        raise ConfigError(field, f"{path} not found")
    try:
        data, params, _ = load_from_zip_file(path, device="cpu")
    except Exception as error:
        raise ConfigError(field, f"{path} is not an SB3 zip SB3 can read: {error}") from None
    if not isinstance(data, dict) or "observation_space" not in data:  # e.g. a torch .pt
        raise ConfigError(field, f"{path} is not an SB3 zip (no SB3 model data in it)")
    policy_class = data.get("policy_class")
    kind = getattr(policy_class, "__name__", repr(policy_class))
    obs_space, act_space = data["observation_space"], data["action_space"]
    supported = ActorCriticPolicy | DQNPolicy | SACPolicy | TD3Policy
    if not isinstance(policy_class, type) or not issubclass(policy_class, supported):
        raise ConfigError(
            field, f"{path}: unsupported SB3 policy class {kind}; supported: {SUPPORTED}"
        )
    # SB3 one-hots Discrete / MultiDiscrete observations before its FlattenExtractor, as
    # gymnasium's `flatten` (what the env slots apply) lays them out; Dict observations go
    # through SB3's CombinedExtractor instead, which is refused here.
    if not isinstance(obs_space, FLAT_OBSERVATIONS):
        raise ConfigError(
            field,
            f"{path}: {kind} with {type(obs_space).__name__} observations is not "
            "supported (allowed: Box, Discrete, MultiDiscrete, MultiBinary)",
        )
    policy = policy_class(obs_space, act_space, lambda _: 0.0, **data.get("policy_kwargs", {}))
    # SB3 annotates `params` as tensors; each entry is a module's state dict.
    policy.load_state_dict(cast(dict[str, Any], params["policy"]))
    return policy.eval(), obs_space, act_space


def _actor_parts(policy: Any, mode: str, what: str, field: str) -> _ActorParts:
    """The actor of a supported policy class (`what` names the file and class in errors)."""
    from stable_baselines3.dqn.policies import DQNPolicy
    from stable_baselines3.sac.policies import SACPolicy
    from stable_baselines3.td3.policies import TD3Policy

    if isinstance(policy, DQNPolicy):
        q_net = policy.q_net
        return _ActorParts(q_net.features_extractor, _actor(nn.Identity(), q_net.q_net), "clip")
    if isinstance(policy, SACPolicy):
        return _sac_parts(policy, mode, what, field)
    if isinstance(policy, TD3Policy):
        return _td3_parts(policy, mode, what, field)
    return _actor_critic_parts(policy, what, field)


def _actor(latent: nn.Module, head: nn.Module) -> SB3Actor:
    """Copies of SB3's modules as one actor: the zip's policy object keeps its own."""
    return SB3Actor(copy.deepcopy(latent), copy.deepcopy(head))


def _actor_critic_parts(policy: Any, what: str, field: str) -> _ActorParts:
    """PPO / A2C: `mlp_extractor.policy_net`, then `action_net` (logits or the mean)."""
    from stable_baselines3.common.distributions import (
        CategoricalDistribution,
        DiagGaussianDistribution,
    )

    dist = policy.action_dist
    if not isinstance(dist, CategoricalDistribution | DiagGaussianDistribution):
        raise ConfigError(
            field,
            f"{what}: unsupported SB3 action distribution {type(dist).__name__}; "
            "supported: Categorical (Discrete), DiagGaussian (Box, no gSDE)",
        )
    log_std = None
    if isinstance(dist, DiagGaussianDistribution):
        log_std = policy.log_std.detach().numpy().astype(np.float32).ravel()
    actor = _actor(policy.mlp_extractor.policy_net, policy.action_net)
    bounds = "tanh" if policy.squash_output else "clip"
    return _ActorParts(policy.pi_features_extractor, actor, bounds, log_std)


def _sac_parts(policy: Any, mode: str, what: str, field: str) -> _ActorParts:
    """SAC: `latent_pi`, then `mu` (the mean; deterministic) or `mu` and `log_std` side by
    side in one Linear layer (gaussian), tanh-squashed into the bounds as SB3 does."""
    from stable_baselines3.sac.policies import LOG_STD_MAX, LOG_STD_MIN

    actor = policy.actor
    if actor.use_sde:
        raise ConfigError(
            field, f"{what} with gSDE (use_sde=True) is not supported; supported: SAC without it"
        )
    if mode != "gaussian":
        return _ActorParts(actor.features_extractor, _actor(actor.latent_pi, actor.mu), "tanh")
    both = nn.Linear(actor.mu.in_features, 2 * actor.mu.out_features)
    with torch.no_grad():
        both.weight.copy_(torch.cat([actor.mu.weight, actor.log_std.weight]))
        both.bias.copy_(torch.cat([actor.mu.bias, actor.log_std.bias]))
    parts = _actor(actor.latent_pi, both)
    return _ActorParts(actor.features_extractor, parts, "tanh", None, (LOG_STD_MIN, LOG_STD_MAX))


def _td3_parts(policy: Any, mode: str, what: str, field: str) -> _ActorParts:
    """TD3 / DDPG: `mu` up to its closing tanh; coevo's tanh bounds apply that tanh and
    rescale to the bounds, as SB3's `predict` does."""
    if mode == "gaussian":
        raise ConfigError(
            f"{field}.action",
            f"{what} acts deterministically (SB3's TD3 predict ignores deterministic=False); "
            "allowed: deterministic",
        )
    actor = policy.actor
    layers = list(actor.mu)
    if not layers or not isinstance(layers[-1], nn.Tanh):
        raise ConfigError(field, f"{what}: its actor does not end in tanh, as TD3's MlpPolicy does")
    return _ActorParts(
        actor.features_extractor, _actor(nn.Sequential(*layers[:-1]), nn.Identity()), "tanh"
    )


def _vecnormalize(file: str | Path, field: str) -> ObsNorm | None:
    path = Path(file)
    if not path.is_file():
        raise ConfigError(field, f"{file} not found")
    try:
        with path.open("rb") as handle:
            stats = pickle.load(handle)  # noqa: S301 - the user's own file, as SB3 loads it
        rms = stats.obs_rms
    except Exception as error:
        raise ConfigError(field, f"{file} is not a saved VecNormalize: {error!r}") from None
    if not getattr(stats, "norm_obs", True):
        return None
    return ObsNorm(
        tuple(float(x) for x in np.ravel(rms.mean)),
        tuple(float(x) for x in np.ravel(rms.var)),
        float(stats.epsilon),
        float(stats.clip_obs),
    )
