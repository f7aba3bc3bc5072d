"""RLlib RLModule checkpoints (new API stack, torch) as coevo policies
(`pip install 'coevo[rllib]'`).

The driver reads the checkpoint with RLlib (`RLModule.from_checkpoint`: the module's class
and constructor arguments are pickled RLlib objects), then copies the actor's encoder layers
and the pi head's into one plain `torch.nn.Sequential` (`rllib_actor`), so workers never
import RLlib. Where the module is found: `coevo.policies.rllib_files`.

It acts as RLlib's evaluation does (`explore=False`): `forward_inference`, then the
inference distribution's `to_deterministic()`, then the module-to-env connector:

- Discrete actions (TorchCategorical): the argmax of the pi head's logits. `action: sample`
  draws from their softmax instead, as RLlib's exploration does (coevo's keyed noise, so
  not RLlib's numbers).
- Box actions (TorchDiagGaussian): the Gaussian's mean (the head's log_std is dropped). With
  `normalize_actions` (RLlib's default) the mean is taken as lying in [-1, 1], rescaled to
  the bounds and clipped (RLlib's `unsquash_action`); otherwise clipped to the bounds (RLlib's
  `clip_actions=True`; with neither, RLlib hands the env the raw mean, which gymnasium's Box
  envs clip themselves). An algorithm checkpoint's config says whether to normalize; a bare
  module checkpoint takes RLlib's default (it does).

Supported: PPO's default module `DefaultPPOTorchRLModule` (APPO and IMPALA use it too) with
an MLP encoder (`fcnet_*`, LayerNorm included), on 1-D Box observations, Discrete or 1-D
Box actions, and RLlib's default connector pipelines. Refused by name: other module classes
or a subclass with its own forward pass, LSTM or CNN encoders, other action distributions,
and custom env-to-module or module-to-env connectors (a MeanStdFilter, say: coevo feeds the
module the env's observations as they are).
"""

from __future__ import annotations

import copy
import pickle
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from coevo.errors import ConfigError
from coevo.policies.base import ActionSpec
from coevo.policies.rllib_files import CTOR_FILE, module_files

SUPPORTED = "DefaultPPOTorchRLModule (PPO, APPO, IMPALA) with an MLP encoder"
# The algorithm config's keys that change what reaches the module or the env.
CONNECTORS = ("env_to_module", "module_to_env")


def _require_rllib(field: str) -> None:
    try:
        import ray.rllib.core.rl_module  # noqa: F401
    except ImportError as error:  # no ray[rllib] (e.g. dm_tree, its gymnasium pin)
        raise ConfigError(
            field,
            f"reading RLlib checkpoints needs RLlib ({error}): pip install 'coevo[rllib]' "
            "(ray[rllib] pins its own gymnasium: give it a virtual environment of its own)",
        ) from None


def load_rllib(
    path: str | Path, field: str, action: str | None = None
) -> tuple[nn.Module, gym.Space, ActionSpec]:
    """(actor module, observation space, action spec) of the RLlib checkpoint `path`.

    Raises:
        ConfigError: under `field`: RLlib missing, not a checkpoint, or an unsupported
            module, encoder, distribution, space or connector (named).
    """
    _require_rllib(field)
    from ray.rllib.core.rl_module.rl_module import RLModule

    files = module_files(Path(path), field)
    normalize = _normalizes_actions(files.algorithm, field)
    try:
        module = RLModule.from_checkpoint(files.module)
    except Exception as error:
        raise ConfigError(field, f"{files.module}: RLlib cannot read it: {error!r}") from None
    what = f"{files.module}: {type(module).__name__}"
    obs_space, act_space = _spaces(module, what, field)
    mode = action or ("argmax" if isinstance(act_space, gym.spaces.Discrete) else "deterministic")
    if mode == "gaussian":
        raise ConfigError(
            f"{field}.action",
            f"{what}: RLlib rescales a sampled Box action after the draw, which coevo's "
            "gaussian head does not; allowed: deterministic",
        )
    spec = ActionSpec.for_space(act_space, mode, "clip")
    actor = rllib_actor(module, what, field)
    if isinstance(act_space, gym.spaces.Box) and normalize and _bounded(act_space):
        actor.append(_unsquash(act_space))
    return actor.eval(), obs_space, spec


def _spaces(module: Any, what: str, field: str) -> tuple[gym.spaces.Box, gym.Space]:
    """The module's (observation, action) spaces, refused unless 1-D Box and Discrete or
    1-D Box."""
    obs_space, act_space = module.observation_space, module.action_space
    if not isinstance(obs_space, gym.spaces.Box) or len(obs_space.shape) != 1:
        raise ConfigError(
            field, f"{what} on observations {obs_space} is not supported (allowed: 1-D Box)"
        )
    if not isinstance(act_space, gym.spaces.Discrete | gym.spaces.Box) or (
        isinstance(act_space, gym.spaces.Box) and len(act_space.shape) != 1
    ):
        raise ConfigError(
            field, f"{what} with actions {act_space} is not supported (allowed: Discrete, 1-D Box)"
        )
    return obs_space, act_space


def _bounded(space: gym.spaces.Box) -> bool:
    return bool(np.all(space.bounded_below) and np.all(space.bounded_above))


def _normalizes_actions(algorithm: Path | None, field: str) -> bool:
    """`normalize_actions` of the algorithm checkpoint's config, RLlib's default without
    one; a custom connector pipeline is refused by name. (`clip_actions` needs nothing:
    coevo clips to the bounds either way.)"""
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

    defaults = AlgorithmConfig()
    if algorithm is None:
        return bool(defaults.normalize_actions)
    try:
        with (algorithm / CTOR_FILE).open("rb") as handle:
            ctor = pickle.load(handle)  # noqa: S301 - the user's own checkpoint, as RLlib reads it
        config = ctor["ctor_args_and_kwargs"][0][0]
    except Exception as error:
        raise ConfigError(
            field, f"{algorithm}: its algorithm config cannot be read: {error!r}"
        ) from None
    if not isinstance(config, dict):
        config = config.to_dict()
    for pipeline in CONNECTORS:
        if config.get(f"_{pipeline}_connector") is not None or not config.get(
            f"add_default_connectors_to_{pipeline}_pipeline", True
        ):
            raise ConfigError(
                field,
                f"{algorithm}: a custom {pipeline} connector (config.env_runners"
                f"({pipeline}_connector=...)) is not supported: coevo feeds the module the "
                "env's observations as they are and acts on its outputs as RLlib's defaults do",
            )
    return bool(config.get("normalize_actions", defaults.normalize_actions))


def rllib_actor(module: Any, what: str, field: str) -> nn.Sequential:
    """The actor encoder's and pi head's layers of a `DefaultPPOTorchRLModule` as one plain
    `nn.Sequential` (copies: torch's own layer classes only) giving the logits (Discrete)
    or the Gaussian's mean (Box)."""
    from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import (
        DefaultPPOTorchRLModule,
    )
    from ray.rllib.core.distribution.torch.torch_distribution import (
        TorchCategorical,
        TorchDiagGaussian,
    )
    from ray.rllib.core.models.torch.encoder import TorchActorCriticEncoder, TorchMLPEncoder
    from ray.rllib.core.models.torch.heads import TorchFreeLogStdMLPHead, TorchMLPHead
    from ray.rllib.core.rl_module.torch import TorchRLModule

    kind = type(module)
    if not isinstance(module, DefaultPPOTorchRLModule) or (
        kind._forward is not DefaultPPOTorchRLModule._forward
        or kind._forward_inference is not TorchRLModule._forward_inference
    ):
        raise ConfigError(field, f"{what}: unsupported RLModule; supported: {SUPPORTED}")
    encoder = module.encoder
    actor = getattr(encoder, "encoder", None)  # shared with the critic (vf_share_layers)
    if actor is None:
        actor = getattr(encoder, "actor_encoder", None)
    if not isinstance(encoder, TorchActorCriticEncoder) or not isinstance(actor, TorchMLPEncoder):
        inner = type(actor).__name__ if actor is not None else type(encoder).__name__
        raise ConfigError(
            field, f"{what} with the encoder {inner} is not supported (allowed: TorchMLPEncoder)"
        )
    dist = module.get_inference_action_dist_cls()
    if dist not in (TorchCategorical, TorchDiagGaussian):
        raise ConfigError(
            field,
            f"{what}: its action distribution {getattr(dist, '__name__', dist)} is not "
            "supported (allowed: TorchCategorical, TorchDiagGaussian)",
        )
    head = module.pi
    if not isinstance(head, TorchMLPHead | TorchFreeLogStdMLPHead):
        raise ConfigError(field, f"{what}: unsupported pi head {type(head).__name__}")
    layers = [*_torch_layers(actor.net.mlp, what, field), *_torch_layers(head.net.mlp, what, field)]
    if dist is TorchDiagGaussian and isinstance(head, TorchMLPHead):
        layers[-1] = _mean_rows(layers[-1], what, field)  # its outputs: the mean, then log_std
    return nn.Sequential(*layers)


def _torch_layers(stack: nn.Module, what: str, field: str) -> list[nn.Module]:
    """Copies of an RLlib `TorchMLP`'s layers, each one of torch's own classes."""
    layers = list(stack) if isinstance(stack, nn.Sequential) else [stack]
    for layer in layers:
        if not type(layer).__module__.startswith("torch.nn."):
            raise ConfigError(
                field,
                f"{what}: its layer {type(layer).__module__}.{type(layer).__name__} is not "
                "one of torch.nn's (a custom activation?)",
            )
    return [copy.deepcopy(layer) for layer in layers]


def _mean_rows(last: nn.Module, what: str, field: str) -> nn.Linear:
    """The head's last Linear cut to its first half of rows: the Gaussian's mean."""
    if not isinstance(last, nn.Linear) or last.out_features % 2:
        raise ConfigError(
            field, f"{what}: its pi head does not end in a Linear layer giving mean and log_std"
        )
    size = last.out_features // 2
    mean = nn.Linear(last.in_features, size, bias=last.bias is not None)
    with torch.no_grad():
        mean.weight.copy_(last.weight[:size])
        if last.bias is not None:
            mean.bias.copy_(last.bias[:size])
    return mean


def _unsquash(space: gym.spaces.Box) -> nn.Linear:
    """RLlib's `unsquash_action` before its clip: low + (a + 1) * (high - low) / 2, as a
    diagonal Linear layer (coevo's clip bounds do the clip)."""
    low, high = (np.asarray(x, dtype=np.float64).ravel() for x in (space.low, space.high))
    half = (high - low) / 2.0
    layer = nn.Linear(low.size, low.size)
    with torch.no_grad():
        layer.weight.copy_(torch.from_numpy(np.diag(half)))
        layer.bias.copy_(torch.from_numpy(low + half))
    return layer
