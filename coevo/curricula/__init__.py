"""Curricula behind one interface (`base.Curriculum`), found by name.

`get("poet")` or `get("package.module:Class")` returns the class; a user's curriculum
outside the package needs no registration, its import path in `curriculum.name` is enough.

From Python, each is built from the pool, settings as keywords, e.g. `Poet(pool,
optimizer=ES(population=16), max_active=8, seed=0)`, `PLR(pool, buffer_size=64)`; the
classes and the bases a curriculum of one's own extends (`Curriculum`, `CurriculumConfig`,
`LevelSamplingCurriculum`, `Plan`, `Student`, `Outcome`, `Signal`, `Decision`, ...) are
importable from here. The algorithms are imported on first use, except through
`sampler(name, space, seed=0, **settings)`: the curricula as task samplers for any trainer
(`coevo/curricula/sampler.py`; the function shadows the module's name here, so import the
module's other names with `from coevo.curricula.sampler import ...`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from coevo.curricula.base import (
    Curriculum,
    CurriculumConfig,
    Decision,
    GenerationFailed,
    GenerationResult,
    PoliciesForTesting,
)
from coevo.curricula.level_sampling import (
    LevelSamplingConfig,
    LevelSamplingCurriculum,
    Outcome,
    Plan,
    Signal,
    Student,
)
from coevo.plugins import Registry

if TYPE_CHECKING:
    import numpy as np

    # The algorithms that __getattr__ imports on first use (`_ALGORITHMS`), for type checkers.
    from coevo.curricula.accel import ACCEL, ACCELConfig
    from coevo.curricula.alp_gmm import ALPGMM, ALPGMMConfig
    from coevo.curricula.dr import DomainRandomization, DRConfig
    from coevo.curricula.dr import DomainRandomization as DR
    from coevo.curricula.plr import PLRConfig, PrioritizedLevelReplay
    from coevo.curricula.plr import PrioritizedLevelReplay as PLR
    from coevo.curricula.poet import EnhancedPoet, EnhancedPoetConfig, Poet, PoetConfig
    from coevo.curricula.sfl import SampleForLearnability, SFLConfig
    from coevo.curricula.sfl import SampleForLearnability as SFL
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
        "sfl": "coevo.curricula.sfl:SampleForLearnability",
    },
)


def get(name: str) -> type[Curriculum]:
    """The curriculum class registered as `name`, or at import path "package.module:Class"."""
    return REGISTRY.get(name)


def register(name: str, target: type[Curriculum] | str) -> None:
    """Register a curriculum under `name`.

    Args:
        name: The name `curriculum.name` selects it by.
        target: The Curriculum subclass, or its "package.module:Class" path.
    """
    REGISTRY.register(name, target)


def names() -> list[str]:
    """The registered curricula's names, sorted."""
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


# name -> (module, attribute): the algorithms, on first use (PEP 562).
_ALGORITHMS = {
    "Poet": ("coevo.curricula.poet", "Poet"),
    "PoetConfig": ("coevo.curricula.poet", "PoetConfig"),
    "EnhancedPoet": ("coevo.curricula.poet", "EnhancedPoet"),
    "EnhancedPoetConfig": ("coevo.curricula.poet", "EnhancedPoetConfig"),
    "DR": ("coevo.curricula.dr", "DomainRandomization"),
    "DomainRandomization": ("coevo.curricula.dr", "DomainRandomization"),
    "DRConfig": ("coevo.curricula.dr", "DRConfig"),
    "PLR": ("coevo.curricula.plr", "PrioritizedLevelReplay"),
    "PrioritizedLevelReplay": ("coevo.curricula.plr", "PrioritizedLevelReplay"),
    "PLRConfig": ("coevo.curricula.plr", "PLRConfig"),
    "ACCEL": ("coevo.curricula.accel", "ACCEL"),
    "ACCELConfig": ("coevo.curricula.accel", "ACCELConfig"),
    "ALPGMM": ("coevo.curricula.alp_gmm", "ALPGMM"),
    "ALPGMMConfig": ("coevo.curricula.alp_gmm", "ALPGMMConfig"),
    "SFL": ("coevo.curricula.sfl", "SampleForLearnability"),
    "SampleForLearnability": ("coevo.curricula.sfl", "SampleForLearnability"),
    "SFLConfig": ("coevo.curricula.sfl", "SFLConfig"),
}


def __getattr__(name: str) -> Any:
    if name in _ALGORITHMS:
        module, attribute = _ALGORITHMS[name]
        return getattr(importlib.import_module(module), attribute)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ACCEL",
    "ACCELConfig",
    "ALPGMM",
    "ALPGMMConfig",
    "DR",
    "DRConfig",
    "Curriculum",
    "CurriculumConfig",
    "Decision",
    "DomainRandomization",
    "EnhancedPoet",
    "EnhancedPoetConfig",
    "GenerationFailed",
    "GenerationResult",
    "LevelSamplingConfig",
    "LevelSamplingCurriculum",
    "Outcome",
    "PLR",
    "PLRConfig",
    "Plan",
    "PoliciesForTesting",
    "Poet",
    "PoetConfig",
    "PrioritizedLevelReplay",
    "SFL",
    "SFLConfig",
    "SampleForLearnability",
    "Signal",
    "Student",
    "build",
    "get",
    "names",
    "register",
    "sampler",
]

# Last: the sampler module imports the algorithms, which import this package's bases.
from coevo.curricula.sampler import sampler  # noqa: E402
