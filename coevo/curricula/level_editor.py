"""ACCEL's level editor: a few random edits of a level through the task space's own mutator.

Parker-Holder et al., "Evolving Curricula with Regret-Based Environment Design" (ICML 2022):
levels are edited by small random changes; here one edit is one `TaskSpace.mutate` call (the
mutation POET uses), so every task space that POET can evolve, ACCEL can edit.
"""

from __future__ import annotations

import numpy as np

from coevo.tasks.task import Task, TaskSpace


def edit_level(space: TaskSpace, task: Task, num_edits: int, rng: np.random.Generator) -> Task:
    """`num_edits` successive mutations of `task` (each from the previous one)."""
    if num_edits < 1:
        raise ValueError(f"num_edits must be >= 1, got {num_edits}")
    for _ in range(num_edits):
        task = space.mutate(task, rng)
    return task
