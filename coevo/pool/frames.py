"""pandas views of pool results (kept apart: workers never import pandas)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from coevo.tasks.task import Task

if TYPE_CHECKING:
    from coevo.pool.pool import EvaluationPool


def cross_evaluate_frame(
    pool: EvaluationPool,
    policies: dict[str, np.ndarray],
    tasks: dict[str, Task],
    episodes: int = 1,
    seed: int = 0,
) -> pd.DataFrame:
    """Mean return of every named policy (rows) on every named task (columns)."""
    matrix = pool.cross_evaluate(list(policies.values()), list(tasks.values()), episodes, seed)
    return pd.DataFrame(matrix, index=list(policies), columns=list(tasks))
