"""coevo: open-ended co-evolution of environment tasks and policies on a shared pool."""

from coevo import tasks
from coevo.curricula import Curriculum, CurriculumConfig, GenerationResult
from coevo.curricula.poet import (
    EnhancedPoet,
    EnhancedPoetConfig,
    Pair,
    Poet,
    PoetConfig,
    Population,
)
from coevo.errors import ConfigError
from coevo.optimizers import Optimizer, OptimizerConfig
from coevo.optimizers.ars import ARSConfig, AugmentedRandomSearch
from coevo.optimizers.es import ESConfig, EvolutionStrategy
from coevo.policies import MLPPolicy, Policy, PolicySpec, make_policy
from coevo.pool import EvaluationPool

__all__ = [
    "ARSConfig",
    "AugmentedRandomSearch",
    "ConfigError",
    "Curriculum",
    "CurriculumConfig",
    "ESConfig",
    "EnhancedPoet",
    "EnhancedPoetConfig",
    "EvaluationPool",
    "EvolutionStrategy",
    "GenerationResult",
    "MLPPolicy",
    "Optimizer",
    "OptimizerConfig",
    "Pair",
    "Poet",
    "PoetConfig",
    "Policy",
    "PolicySpec",
    "Population",
    "make_policy",
    "tasks",
]
