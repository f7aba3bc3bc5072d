"""coevo: open-ended co-evolution of environment tasks and policies on a shared pool."""

from coevo import tasks
from coevo.errors import ConfigError
from coevo.evolve import (
    Coevolution,
    ESConfig,
    EvolutionConfig,
    EvolutionStrategy,
    Pair,
    Population,
)
from coevo.policies import MLPPolicy, Policy, PolicySpec, make_policy
from coevo.pool import EvaluationPool

__all__ = [
    "Coevolution",
    "ConfigError",
    "ESConfig",
    "EvaluationPool",
    "EvolutionConfig",
    "EvolutionStrategy",
    "MLPPolicy",
    "Pair",
    "Policy",
    "PolicySpec",
    "Population",
    "make_policy",
    "tasks",
]
