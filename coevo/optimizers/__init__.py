"""Optimizers behind one ask/tell interface (`base.Optimizer`), found by name.

`get("es")` or `get("package.module:Class")` returns the class; a user's optimizer outside
the package needs no registration, its import path in `optimizer.name` is enough.

From Python, settings as keywords: `ES(population=16)`, `ARS(directions=8)`, `PPO(n_steps=
128)`; the parameter count comes from the pool's policy when a curriculum is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coevo.optimizers.ars import ARSConfig, AugmentedRandomSearch
from coevo.optimizers.base import Asked, Optimizer, OptimizerConfig, StepRecord, Told
from coevo.optimizers.es import ESConfig, EvolutionStrategy
from coevo.optimizers.ppo_config import PPOConfig
from coevo.plugins import Registry

if TYPE_CHECKING:
    from coevo.optimizers.ppo import PPO  # imported on first use by __getattr__

ES = EvolutionStrategy
ARS = AugmentedRandomSearch

REGISTRY: Registry[Optimizer] = Registry(
    "optimizer",
    Optimizer,
    {
        "es": "coevo.optimizers.es:EvolutionStrategy",
        "ars": "coevo.optimizers.ars:AugmentedRandomSearch",
        "ppo": "coevo.optimizers.ppo:PPO",
    },
)


def get(name: str) -> type[Optimizer]:
    """The optimizer class registered as `name`, or at import path "package.module:Class"."""
    return REGISTRY.get(name)


def is_ppo(optimizer_class: type) -> bool:
    """PPO or a subclass: trains the actor-critic on streams of `n_steps` (the run's start
    checks and warnings key on it)."""
    return isinstance(optimizer_class, type) and issubclass(optimizer_class, get("ppo"))


def register(name: str, target: type[Optimizer] | str) -> None:
    REGISTRY.register(name, target)


def names() -> list[str]:
    return REGISTRY.names()


def build(config: OptimizerConfig, num_params: int) -> Optimizer:
    """The optimizer that `config.name` names, built with `config`."""
    return get(config.name)(config, num_params)


def __getattr__(name: str) -> Any:
    # PPO imports torch: only when asked for (its config, PPOConfig, does not).
    if name == "PPO":
        from coevo.optimizers.ppo import PPO

        return PPO
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ARS",
    "ARSConfig",
    "ES",
    "ESConfig",
    "PPO",
    "PPOConfig",
    "Asked",
    "AugmentedRandomSearch",
    "EvolutionStrategy",
    "Optimizer",
    "OptimizerConfig",
    "StepRecord",
    "Told",
    "build",
    "get",
    "names",
    "register",
]
