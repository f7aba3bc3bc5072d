"""Curricula behind one interface (`base.Curriculum`), found by name.

`get("poet")` or `get("package.module:Class")` returns the class; a user's curriculum
outside the package needs no registration, its import path in `curriculum.name` is enough.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coevo.curricula.base import (
    Curriculum,
    CurriculumConfig,
    Decision,
    GenerationResult,
    PoliciesForTesting,
)
from coevo.plugins import Registry

if TYPE_CHECKING:
    import numpy as np

    from coevo.optimizers.base import Optimizer
    from coevo.pool import EvaluationPool
    from coevo.tasks.task import TaskSpace

REGISTRY: Registry[Curriculum] = Registry(
    "curriculum",
    Curriculum,
    {
        "poet": "coevo.curricula.poet:Poet",
        "enhanced_poet": "coevo.curricula.poet:EnhancedPoet",
        "dr": "coevo.curricula.dr:DomainRandomization",
        "plr": "coevo.curricula.plr:PrioritizedLevelReplay",
        "accel": "coevo.curricula.accel:ACCEL",
        "alp_gmm": "coevo.curricula.alp_gmm:ALPGMM",
    },
)


def get(name: str) -> type[Curriculum]:
    """The curriculum class registered as `name`, or at import path "package.module:Class"."""
    return REGISTRY.get(name)


def register(name: str, target: type[Curriculum] | str) -> None:
    REGISTRY.register(name, target)


def names() -> list[str]:
    return REGISTRY.names()


def build(
    config: CurriculumConfig,
    space: TaskSpace,
    pool: EvaluationPool,
    optimizer: Optimizer,
    seed: int = 0,
    initial_theta: np.ndarray | None = None,
) -> Curriculum:
    """The curriculum that `config.name` names, built with `config`; its new policies start
    from `initial_theta` when given (a plug-in that does not take it is built without)."""
    start = {} if initial_theta is None else {"initial_theta": initial_theta}
    return get(config.name)(config, space=space, pool=pool, optimizer=optimizer, seed=seed, **start)


__all__ = [
    "Curriculum",
    "CurriculumConfig",
    "Decision",
    "GenerationResult",
    "PoliciesForTesting",
    "build",
    "get",
    "names",
    "register",
]
