"""A task space of a user's own, outside the coevo package: CartPole whose mutations change one
parameter at a time (a custom mutation operator POET and ACCEL use), registered by name from
Python and reachable from coevo-run as `task.name=user_tasks:cartpole_one_at_a_time`."""

from __future__ import annotations

import dataclasses

import numpy as np

from coevo import tasks
from coevo.tasks.task import Task, TaskSpace


@dataclasses.dataclass(frozen=True)
class OneAtATime(TaskSpace):
    """A space whose mutation steps one parameter, drawn at random, by its mutation step."""

    def mutate(self, task: Task, rng: np.random.Generator) -> Task:
        values = task.as_dict()
        param = self.params[int(rng.integers(len(self.params)))]
        values[param.name] = param.clip(values[param.name] + rng.choice([-1, 1]) * param.step)
        return self.task(**values)


@tasks.register("cartpole_one_at_a_time")
def cartpole_one_at_a_time() -> TaskSpace:
    base = tasks.get("cartpole")
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
    return OneAtATime(**{**fields, "name": "cartpole_one_at_a_time"})


def cartpole_solved_at_20() -> TaskSpace:
    """CartPole on another scale of "solved": a space whose `solved_score` is 20, not 475
    (what `eligible.threshold` and test sets default to), as `task.name=user_tasks:...`."""
    return dataclasses.replace(
        tasks.get("cartpole"), name="cartpole_solved_at_20", solved_score=20.0
    )


def cartpole_never_solved() -> TaskSpace:
    """CartPole declaring no solved score: a threshold must then be given."""
    return dataclasses.replace(
        tasks.get("cartpole"), name="cartpole_never_solved", solved_score=None
    )
