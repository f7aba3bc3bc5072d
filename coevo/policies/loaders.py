"""Policies from files: a torch state_dict for a module, a TorchScript file, an SB3 zip.

Each loader fails with a `ConfigError` naming the field it was given under (e.g.
`pairs.yaml: pairs[2].policy.torch`) and what went wrong.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from coevo.errors import ConfigError


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
    path = Path(file)
    if not path.is_file():
        raise ConfigError(field, f"{file} not found")
    try:
        return torch.jit.load(str(path), map_location="cpu")
    except Exception as error:
        raise ConfigError(field, f"{file} is not a TorchScript file: {error}") from None
