"""Policy kinds by name (`policy.name`): builders from the env's spaces and the options.

Built in: `mlp` (numpy), `torch` (any nn.Module by import path), `gru`, `lstm` (recurrent
torch nets), `actor_critic` (PPO's) and `conv_actor_critic` (PPO's, a convolution over a
grid observation such as a maze's view first). A kind of your own: `register(name, builder)`, or
`policy.name: package.module:builder` (imported where the run starts, as `task.name` and the
plug-ins are). Saved torchscript and SB3 policies are read by `loaders.py` (pairs files,
`from_module`), not by a kind. torch is imported only when a torch kind is built, so
numpy-only runs and their workers never load it.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym

from coevo.errors import ConfigError
from coevo.policies.base import ActionSpec, Policy, obs_dim_of
from coevo.policies.config import PolicyConfig
from coevo.policies.mlp import MLPPolicy
from coevo.policies.torch_modules import build_module, head_options, torch_policy_for

log = logging.getLogger(__name__)

Builder = Callable[[gym.Space, gym.Space, Mapping[str, Any]], Policy]
_BUILDERS: dict[str, Builder] = {}


def register(name: str, builder: Builder) -> None:
    """Make `policy.name: NAME` build policies with `builder(obs_space, act_space, options)`."""
    _BUILDERS[name] = builder


def names() -> tuple[str, ...]:
    """The names of the built-in policy kinds."""
    return tuple(_BUILDERS)


# Settings that only some built-in kinds read, and which: given to another kind they would
# be ignored silently (policy.file=actor.pt with the default mlp). A kind a user registers
# reads what it likes. (batch_block, a tuning knob, is not checked: older runs' configs
# carry it with any kind.)
_ONLY_FOR = {
    "module": ("torch",),
    "file": ("torch",),
    "kwargs": ("torch", "actor_critic", "conv_actor_critic"),
}
_BUILT_IN = ("mlp", "torch", "gru", "lstm", "actor_critic", "conv_actor_critic")


def make_policy(
    name: str, observation_space: gym.Space, action_space: gym.Space, options: Mapping[str, Any]
) -> Policy:
    """Build a registered policy kind by name (the `policy.name` config field), or the
    builder at `package.module:function` (same signature as `register` takes)."""
    if ":" in name and name not in _BUILDERS:
        from coevo.plugins import import_object

        builder = import_object("policy.name", name)
        wanted = "a builder function (observation_space, action_space, options) -> Policy"
        try:
            if isinstance(builder, type):
                raise TypeError("a class")
            inspect.signature(builder).bind(observation_space, action_space, options)
        except (TypeError, ValueError):  # not callable, or another signature
            raise ConfigError("policy.name", f"'{name}' is not {wanted}") from None
        policy = builder(observation_space, action_space, options)
        if not isinstance(policy, Policy):
            raise ConfigError(
                "policy.name",
                f"'{name}' returned a {type(policy).__name__}, not a coevo Policy ({wanted})",
            )
        return policy
    if name not in _BUILDERS:
        allowed = ", ".join(_BUILDERS)
        raise ConfigError(
            "policy.name",
            f"unknown policy '{name}'; allowed: {allowed}, or package.module:builder",
        )
    if name in _BUILT_IN:
        for key, kinds in _ONLY_FOR.items():
            given = options.get(key)  # unset: None (module, file) or {} (kwargs)
            if name not in kinds and given not in (None, {}):
                raise ConfigError(
                    f"policy.{key}",
                    f"read only by policy={' or policy='.join(kinds)}; policy={name} would "
                    f"ignore it (got {given!r})",
                )
    return _BUILDERS[name](observation_space, action_space, options)


def _mlp(observation_space, action_space, options) -> Policy:
    return MLPPolicy.for_spaces(
        observation_space,
        action_space,
        hidden=options.get("hidden", (16,)),
        activation=options.get("activation", "tanh"),
        **head_options(options),
    )


def _dims(observation_space: gym.Space, action_space: gym.Space) -> tuple[int, int]:
    return obs_dim_of(observation_space), ActionSpec.for_space(action_space).size


def _torch(observation_space, action_space, options) -> Policy:
    path = options.get("module")
    if not path:
        raise ConfigError(
            "policy.module", "required with policy.name=torch ('package.module:Class')"
        )
    _warn_layer_settings(options, path)
    obs_dim, act_dim = _dims(observation_space, action_space)
    module = build_module(path, options.get("kwargs") or {}, obs_dim, act_dim)
    file = options.get("file")
    if file:
        from coevo.policies.loaders import load_state_dict_into  # imports torch

        load_state_dict_into(module, file, "policy.file")
    return torch_policy_for(
        module, observation_space, action_space, options, source=path, start_from_module=bool(file)
    )


def _warn_layer_settings(options: Mapping[str, Any], path: str) -> None:
    """policy.hidden / policy.activation set for policy=torch: the module's own layers
    apply, so say so (a warning, not an error: a preset may set them for its mlp)."""
    defaults = PolicyConfig()
    for key in ("hidden", "activation"):
        value, default = options.get(key, getattr(defaults, key)), getattr(defaults, key)
        if key == "hidden":  # a list from the config, a tuple by default
            value, default = list(value), list(default)
        if value != default:
            log.warning(
                "policy.%s=%s is ignored by policy=torch: %s's constructor makes its layers "
                "(its sizes go in policy.kwargs)",
                key,
                value,
                path,
            )


def _recurrent(kind: str) -> Builder:
    def build(observation_space, action_space, options) -> Policy:
        from coevo.policies.recurrent import GRUNet, LSTMNet

        net = GRUNet if kind == "gru" else LSTMNet
        obs_dim, act_dim = _dims(observation_space, action_space)
        activation = options.get("activation", "tanh")
        module = net(obs_dim, act_dim, options.get("hidden", (16,)), activation)
        return torch_policy_for(module, observation_space, action_space, options, source=kind)

    return build


register("mlp", _mlp)
register("torch", _torch)
register("gru", _recurrent("gru"))
register("lstm", _recurrent("lstm"))


def _actor_critic(observation_space, action_space, options) -> Policy:
    from coevo.policies.actor_critic import make_actor_critic  # the PPO policy

    return make_actor_critic(observation_space, action_space, options)


register("actor_critic", _actor_critic)


def _conv_actor_critic(observation_space, action_space, options) -> Policy:
    from coevo.policies.conv_actor_critic import make_conv_actor_critic

    return make_conv_actor_critic(observation_space, action_space, options)


register("conv_actor_critic", _conv_actor_critic)
