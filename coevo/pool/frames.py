"""pandas views of pool results (kept apart: workers never import pandas)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from coevo.tasks.task import Task

if TYPE_CHECKING:
    from coevo.pool.pool import EvaluationPool


def cross_evaluate_frame(
    pool: EvaluationPool,
    policies: Mapping[str, np.ndarray] | Sequence[np.ndarray],
    tasks: Mapping[str, Task] | Sequence[Task],
    episodes: int = 1,
    seed: int = 0,
) -> pd.DataFrame:
    """Mean return of every policy (rows) on every task (columns): named by the keys of a
    mapping, or by position in a list (as `cross_evaluate` takes them)."""
    policies, tasks = _named(policies), _named(tasks)
    matrix = pool.cross_evaluate(list(policies.values()), list(tasks.values()), episodes, seed)
    return pd.DataFrame(matrix, index=list(policies), columns=list(tasks))


def _named(items: Mapping[Any, Any] | Sequence[Any]) -> Mapping[Any, Any]:
    return items if isinstance(items, Mapping) else dict(enumerate(items))
