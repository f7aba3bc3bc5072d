"""torch nn.Modules into policies: a module built from its import path (`policy.module`),
and the TorchPolicy over a module instance. torch is imported inside the functions, so the
policy registry (which imports this module) stays loadable without it."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import gymnasium as gym

from coevo.errors import ConfigError
from coevo.plugins import resolve_entry_point
from coevo.policies.base import ActionSpec, obs_dim_of

if TYPE_CHECKING:  # torch is imported only when a torch policy is built
    from coevo.policies.torch_policy import TorchPolicy

log = logging.getLogger(__name__)


def head_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The action head's settings (policy.action, bounds, log_std_init) as keywords."""
    return {
        "action_mode": options.get("action"),
        "bounds": options.get("bounds", "tanh"),
        "log_std_init": float(options.get("log_std_init", 0.0)),
    }


def torch_policy_for(
    module: Any,
    observation_space: gym.Space,
    action_space: gym.Space,
    options: Mapping[str, Any] | None = None,
    source: str = "module",
    start_from_module: bool = False,
) -> TorchPolicy:
    """A TorchPolicy over `module` (an nn.Module instance) for these spaces; with
    `start_from_module` its current weights are every new pair's starting point."""
    from coevo.policies.torch_policy import DEFAULT_BATCH_BLOCK, TorchPolicy

    options = options or {}
    head = head_options(options)
    spec = ActionSpec.for_space(action_space, head["action_mode"], head["bounds"])
    _warn_double_squash(module, spec, source)
    return TorchPolicy(
        module,
        obs_dim_of(observation_space),
        spec,
        obs_norm=options.get("obs_norm"),
        log_std_init=head["log_std_init"],
        batch_block=int(options.get("batch_block") or DEFAULT_BATCH_BLOCK),
        source=source,
        start_from_module=start_from_module,
    )


def _warn_double_squash(module: Any, spec: ActionSpec, source: str) -> None:
    """A continuous module whose last layer is a tanh already returns actions in [-1, 1];
    tanh bounds squash them again, so they never reach more than tanh(1) = 76% of the
    range. Said once, at the start (the usual RLlib or hand-written deterministic actor)."""
    import torch

    if spec.discrete or spec.bounds != "tanh":
        return
    leaves = [m for m in module.modules() if not list(m.children())]
    if leaves and isinstance(leaves[-1], torch.nn.Tanh | torch.nn.Hardtanh):
        log.warning(
            "%s ends in %s and policy.bounds=tanh squashes its output again: actions reach "
            "at most tanh(1) = 76%% of the action range; for a module that returns actions, "
            "use policy.bounds=clip",
            source,
            type(leaves[-1]).__name__,
        )


def build_module(
    path: str,
    kwargs: Mapping[str, Any],
    obs_dim: int,
    act_dim: int,
    field: str = "policy.module",
) -> Any:
    """Instantiate `package.module:Class` with kwargs; obs_dim / act_dim are passed too when
    the constructor takes them and the kwargs do not say."""
    import torch

    cls = resolve_entry_point(path, field)
    kwargs = dict(kwargs)
    try:
        accepted = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        accepted = {}
    for key, value in (("obs_dim", obs_dim), ("act_dim", act_dim)):
        if key in accepted and key not in kwargs:
            kwargs[key] = value
    try:
        module = cls(**kwargs)
    except Exception as error:
        raise ConfigError(field, f"{path}(**{kwargs}) failed: {error!r}") from None
    if not isinstance(module, torch.nn.Module):
        kind = type(module).__name__
        raise ConfigError(field, f"{path} builds a {kind}, not a torch nn.Module")
    return module
