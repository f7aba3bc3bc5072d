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
- A VecNormalize file (`vecnormalize: FILE.pkl`) adds its stored observation statistics.

Anything else (CNN or Dict observations, gSDE, MultiDiscrete actions, other algorithms'
policies) is refused with a message naming the class.
"""

from __future__ import annotations

import copy
import pickle
from pathlib import Path
from typing import Any, cast

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from coevo.errors import ConfigError
from coevo.policies.base import ActionSpec, ObsNorm

SUPPORTED = "ActorCriticPolicy (PPO/A2C MlpPolicy), DQNPolicy (DQN MlpPolicy)"
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


def load_sb3(
    file: str | Path,
    field: str,
    vecnormalize: str | Path | None = None,
    action: str | None = None,
) -> tuple[nn.Module, gym.Space, ActionSpec, ObsNorm | None, np.ndarray | None]:
    """(actor module, observation space, action spec, obs normalisation, log_std or None)."""
    _require_sb3(field)
    from stable_baselines3.common.distributions import (
        CategoricalDistribution,
        DiagGaussianDistribution,
    )
    from stable_baselines3.common.policies import ActorCriticPolicy
    from stable_baselines3.common.save_util import load_from_zip_file
    from stable_baselines3.common.torch_layers import FlattenExtractor
    from stable_baselines3.dqn.policies import DQNPolicy

    path = Path(file)
    if not path.is_file():
        raise ConfigError(field, f"{file} not found")
    try:
        data, params, _ = load_from_zip_file(path, device="cpu")
    except Exception as error:
        raise ConfigError(field, f"{file} is not an SB3 zip SB3 can read: {error}") from None
    if not isinstance(data, dict) or "observation_space" not in data:  # e.g. a torch .pt
        raise ConfigError(field, f"{file} is not an SB3 zip (no SB3 model data in it)")
    policy_class = data.get("policy_class")
    kind = getattr(policy_class, "__name__", repr(policy_class))
    obs_space, act_space = data["observation_space"], data["action_space"]
    if not isinstance(policy_class, type) or not issubclass(
        policy_class, ActorCriticPolicy | DQNPolicy
    ):
        raise ConfigError(
            field, f"{file}: unsupported SB3 policy class {kind}; supported: {SUPPORTED}"
        )
    # SB3 one-hots Discrete / MultiDiscrete observations before its FlattenExtractor, as
    # gymnasium's `flatten` (what the env slots apply) lays them out; Dict observations go
    # through SB3's CombinedExtractor instead, which is refused below.
    if not isinstance(obs_space, FLAT_OBSERVATIONS):
        raise ConfigError(
            field,
            f"{file}: {kind} with {type(obs_space).__name__} observations is not "
            "supported (allowed: Box, Discrete, MultiDiscrete, MultiBinary)",
        )
    policy = policy_class(obs_space, act_space, lambda _: 0.0, **data.get("policy_kwargs", {}))
    # SB3 annotates `params` as tensors; each entry is a module's state dict.
    policy.load_state_dict(cast(dict[str, Any], params["policy"]))
    policy.eval()
    log_std = None
    if isinstance(policy, DQNPolicy):
        extractor, latent, head = policy.q_net.features_extractor, nn.Identity(), policy.q_net.q_net
        squash = False
    else:
        extractor = policy.pi_features_extractor
        dist = policy.action_dist
        if not isinstance(dist, CategoricalDistribution | DiagGaussianDistribution):
            raise ConfigError(
                field,
                f"{file}: unsupported SB3 action distribution {type(dist).__name__} of {kind}; "
                "supported: Categorical (Discrete), DiagGaussian (Box, no gSDE)",
            )
        latent, head = policy.mlp_extractor.policy_net, policy.action_net
        squash = bool(policy.squash_output)
        if isinstance(dist, DiagGaussianDistribution):
            log_std = policy.log_std.detach().numpy().astype(np.float32).ravel()
    if not isinstance(extractor, FlattenExtractor):
        raise ConfigError(
            field,
            f"{file}: unsupported features extractor {type(extractor).__name__} of {kind}; "
            "supported: FlattenExtractor (MlpPolicy)",
        )
    actor = SB3Actor(copy.deepcopy(latent), copy.deepcopy(head)).eval()
    mode = action or ("argmax" if isinstance(act_space, gym.spaces.Discrete) else "deterministic")
    spec = ActionSpec.for_space(act_space, mode, "tanh" if squash else "clip")
    norm = _vecnormalize(vecnormalize, f"{field}.vecnormalize") if vecnormalize else None
    return actor, obs_space, spec, norm, log_std


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
