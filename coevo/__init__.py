"""coevo: open-ended co-evolution of environment tasks and policies on a shared pool.

The public names below are imported on first use (PEP 562), not with the package: every
pool worker process imports `coevo.pool.worker` and a task module, and loading the
curricula, optimizers and pandas with them cost each worker about 0.4 s at start (measured
here, unloaded; twice that under load).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "ACCEL": "coevo.curricula.accel",
    "ACCELConfig": "coevo.curricula.accel",
    "ALPGMM": "coevo.curricula.alp_gmm",
    "ALPGMMConfig": "coevo.curricula.alp_gmm",
    "ARSConfig": "coevo.optimizers.ars",
    "AugmentedRandomSearch": "coevo.optimizers.ars",
    "ConfigError": "coevo.errors",
    "Curriculum": "coevo.curricula",
    "CurriculumConfig": "coevo.curricula",
    "DRConfig": "coevo.curricula.dr",
    "DomainRandomization": "coevo.curricula.dr",
    "ESConfig": "coevo.optimizers.es",
    "EnhancedPoet": "coevo.curricula.poet",
    "EnhancedPoetConfig": "coevo.curricula.poet",
    "EvaluationPool": "coevo.pool",
    "EvolutionStrategy": "coevo.optimizers.es",
    "GenerationResult": "coevo.curricula",
    "MLPPolicy": "coevo.policies",
    "Optimizer": "coevo.optimizers",
    "OptimizerConfig": "coevo.optimizers",
    "PLRConfig": "coevo.curricula.plr",
    "PPO": "coevo.optimizers.ppo",
    "PPOConfig": "coevo.optimizers.ppo_config",
    "Pair": "coevo.curricula.poet",
    "Poet": "coevo.curricula.poet",
    "PoetConfig": "coevo.curricula.poet",
    "Policy": "coevo.policies",
    "Population": "coevo.curricula.poet",
    "PrioritizedLevelReplay": "coevo.curricula.plr",
    "Run": "coevo.run",
    "SFLConfig": "coevo.curricula.sfl",
    "SampleForLearnability": "coevo.curricula.sfl",
    "make_policy": "coevo.policies",
    "tasks": "coevo.tasks",
}

__all__ = [
    "ACCEL",
    "ACCELConfig",
    "ALPGMM",
    "ALPGMMConfig",
    "ARSConfig",
    "AugmentedRandomSearch",
    "ConfigError",
    "Curriculum",
    "CurriculumConfig",
    "DRConfig",
    "DomainRandomization",
    "ESConfig",
    "EnhancedPoet",
    "EnhancedPoetConfig",
    "EvaluationPool",
    "EvolutionStrategy",
    "GenerationResult",
    "MLPPolicy",
    "Optimizer",
    "OptimizerConfig",
    "PLRConfig",
    "PPO",
    "PPOConfig",
    "Pair",
    "Poet",
    "PoetConfig",
    "Policy",
    "Population",
    "PrioritizedLevelReplay",
    "Run",
    "SFLConfig",
    "SampleForLearnability",
    "make_policy",
    "tasks",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'coevo' has no attribute '{name}'")
    value = importlib.import_module(module)
    if name != "tasks":
        value = getattr(value, name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


if TYPE_CHECKING:  # what type checkers and IDEs see
    from coevo import tasks
    from coevo.curricula import Curriculum, CurriculumConfig, GenerationResult
    from coevo.curricula.accel import ACCEL, ACCELConfig
    from coevo.curricula.alp_gmm import ALPGMM, ALPGMMConfig
    from coevo.curricula.dr import DomainRandomization, DRConfig
    from coevo.curricula.plr import PLRConfig, PrioritizedLevelReplay
    from coevo.curricula.poet import (
        EnhancedPoet,
        EnhancedPoetConfig,
        Pair,
        Poet,
        PoetConfig,
        Population,
    )
    from coevo.curricula.sfl import SampleForLearnability, SFLConfig
    from coevo.errors import ConfigError
    from coevo.optimizers import Optimizer, OptimizerConfig
    from coevo.optimizers.ars import ARSConfig, AugmentedRandomSearch
    from coevo.optimizers.es import ESConfig, EvolutionStrategy
    from coevo.optimizers.ppo import PPO
    from coevo.optimizers.ppo_config import PPOConfig
    from coevo.policies import MLPPolicy, Policy, make_policy
    from coevo.pool import EvaluationPool
    from coevo.run import Run
