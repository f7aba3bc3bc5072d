"""Policies from files: a torch state_dict for a module, a TorchScript file, an SB3 zip, an
RLlib RLModule checkpoint directory.

Each loader fails with a `ConfigError` naming the field it was given under (e.g.
`pairs.yaml: pairs[2].policy.torch`) and what went wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from coevo.errors import ConfigError
from coevo.policies.base import ActionSpec, Policy, obs_dim_of
from coevo.policies.torch_modules import build_module, torch_policy_for


def _torch_load(file: str | Path, field: str, weights_only: bool = True) -> Any:
    path = Path(file)
    if not path.is_file():
        raise ConfigError(field, f"{file} not found")
    try:
        return torch.load(path, map_location="cpu", weights_only=weights_only)
    except Exception as error:
        raise ConfigError(field, f"{file} is not a file torch.load reads: {error}") from None


def load_state_dict_into(module: torch.nn.Module, file: str | Path, field: str) -> None:
    """Load a saved `state_dict` into `module`; a misfit names the first differing key."""
    state = _torch_load(file, field)
    if isinstance(state, torch.nn.Module):
        state = state.state_dict()
    if not isinstance(state, dict):
        raise ConfigError(field, f"{file} holds a {type(state).__name__}, not a state_dict")
    expected = module.state_dict()
    for key, tensor in expected.items():
        if key not in state:
            raise ConfigError(
                field,
                f"{file} does not fit {type(module).__name__}: key '{key}' (shape "
                f"{tuple(tensor.shape)} in the module) is missing from the file",
            )
        if tuple(state[key].shape) != tuple(tensor.shape):
            raise ConfigError(
                field,
                f"{file} does not fit {type(module).__name__}: key '{key}' has shape "
                f"{tuple(state[key].shape)} in the file, {tuple(tensor.shape)} in the module",
            )
    extra = [key for key in state if key not in expected]
    if extra:
        raise ConfigError(
            field,
            f"{file} does not fit {type(module).__name__}: key '{extra[0]}' (shape "
            f"{tuple(state[extra[0]].shape)} in the file) is not in the module",
        )
    module.load_state_dict(state)


def load_torchscript(file: str | Path, field: str) -> torch.nn.Module:
    """Load a TorchScript module onto the CPU.

    Args:
        file: The module's file.
        field: The config key named in errors.

    Returns:
        The module.

    Raises:
        ConfigError: If the file is missing or is not TorchScript.
    """
    path = Path(file)
    if not path.is_file():
        raise ConfigError(field, f"{file} not found")
    try:
        return torch.jit.load(str(path), map_location="cpu")
    except Exception as error:
        if _holds_state_dict(path):
            raise ConfigError(
                field,
                f"{file} holds a torch state_dict (torch.save), not a TorchScript module "
                "(torch.jit.save): a state_dict needs its module class, e.g. in a pairs file "
                "{torch: FILE, module: 'package.module:Class'}",
            ) from None
        raise ConfigError(field, f"{file} is not a TorchScript file: {error}") from None


def _holds_state_dict(path: Path) -> bool:
    """Whether torch.load reads a mapping of tensors (weights only) from `path`."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception:  # noqa: BLE001 - anything unreadable is simply not a state_dict
        return False
    return isinstance(state, dict) and all(isinstance(v, torch.Tensor) for v in state.values())


@dataclass(frozen=True)
class LoadedPolicy:
    """A policy with its parameter vector, as loaded from a file or given as a module."""

    policy: Policy
    theta: np.ndarray
    source: str


def from_module(
    module: torch.nn.Module,
    observation_space: gym.Space,
    action_space: gym.Space,
    options: Mapping[str, Any] | None = None,
    source: str = "module",
) -> LoadedPolicy:
    """A module instance (the Python API's way in): its current weights are the vector."""
    policy = torch_policy_for(module, observation_space, action_space, options, source)
    return LoadedPolicy(policy, policy.init_from_module(), source)


def load_torch(
    file: str | Path,
    module_path: str,
    kwargs: Mapping[str, Any],
    observation_space: gym.Space,
    action_space: gym.Space,
    field: str = "policy",  # names the setting in error messages
    options: Mapping[str, Any] | None = None,
) -> LoadedPolicy:
    """`{torch: FILE.pt, module: "package.module:Class", kwargs: {...}}`."""
    obs_dim = obs_dim_of(observation_space)
    act_dim = ActionSpec.for_space(action_space).size
    module = build_module(module_path, kwargs, obs_dim, act_dim, field=f"{field}.module")
    load_state_dict_into(module, file, f"{field}.torch")
    return from_module(module, observation_space, action_space, options, str(file))


def load_torchscript_policy(
    file: str | Path,
    observation_space: gym.Space,
    action_space: gym.Space,
    field: str = "policy",  # names the setting in error messages
    options: Mapping[str, Any] | None = None,
) -> LoadedPolicy:
    """`{torchscript: FILE.pt}`: a scripted module taking a batch of observations."""
    module = load_torchscript(file, field)
    return from_module(module, observation_space, action_space, options, str(file))


def load_sb3_policy(
    file: str | Path,
    field: str = "policy",  # names the setting in error messages
    vecnormalize: str | Path | None = None,
    options: Mapping[str, Any] | None = None,
) -> LoadedPolicy:
    """`{sb3: FILE.zip, vecnormalize: FILE.pkl}`: acts as SB3's `predict(deterministic=True)`."""
    from coevo.policies.sb3 import load_sb3
    from coevo.policies.torch_policy import DEFAULT_BATCH_BLOCK, TorchPolicy

    options = dict(options or {})
    actor, obs_space, spec, norm, log_std = load_sb3(
        file, field, vecnormalize, options.get("action")
    )
    policy = TorchPolicy(
        actor,
        obs_dim_of(obs_space),
        spec,
        obs_norm=norm,
        log_std_init=float(log_std.mean()) if log_std is not None else 0.0,
        batch_block=int(options.get("batch_block") or DEFAULT_BATCH_BLOCK),
        source=str(file),
    )
    theta = policy.init_from_module()
    if spec.extra_params and log_std is not None:
        theta[policy.num_network_params :] = log_std
    return LoadedPolicy(policy, theta, str(file))


def load_rllib_policy(
    path: str | Path,
    field: str = "policy",  # names the setting in error messages
    options: Mapping[str, Any] | None = None,
) -> LoadedPolicy:
    """`{rllib: DIR}`: an RLlib algorithm or RLModule checkpoint directory (new API stack,
    PPO's default torch module), acting as RLlib's `forward_inference` with `explore=False`
    (coevo.policies.rllib_module); the driver needs RLlib, the workers do not."""
    from coevo.policies.rllib_module import load_rllib
    from coevo.policies.torch_policy import DEFAULT_BATCH_BLOCK, TorchPolicy

    options = dict(options or {})
    actor, obs_space, spec = load_rllib(path, field, options.get("action"))
    policy = TorchPolicy(
        actor,
        obs_dim_of(obs_space),
        spec,
        batch_block=int(options.get("batch_block") or DEFAULT_BATCH_BLOCK),
        source=str(path),
    )
    return LoadedPolicy(policy, policy.init_from_module(), str(path))
