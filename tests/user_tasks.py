"""A task space of a user's own, outside the coevo package: CartPole whose mutations change one
parameter at a time (a custom mutation operator POET and ACCEL use), registered by name from
Python and reachable from coevo-run as `task.name=user_tasks:cartpole_one_at_a_time`.

For the tests that stop a coevo-run process with a signal, its mutation can also hold the run
in generation 3 (`USER_TASKS_HOLD`, see `hold_in_generation_3`): the signal then lands in the
run whatever the machine's load, never after its last generation."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import numpy as np

from coevo import tasks
from coevo.tasks.task import Task, TaskSpace


@dataclasses.dataclass(frozen=True)
class OneAtATime(TaskSpace):
    """A space whose mutation steps one parameter, drawn at random, by its mutation step."""

    def mutate(self, task: Task, rng: np.random.Generator) -> Task:
        hold_in_generation_3()
        values = task.as_dict()
        param = self.params[int(rng.integers(len(self.params)))]
        values[param.name] = param.clip(values[param.name] + rng.choice([-1, 1]) * param.step)
        return self.task(**values)


HELD = "held"  # the file a held run writes in its run directory


def hold_in_generation_3(limit_s: float = 60.0) -> None:
    """With USER_TASKS_HOLD=RUN_DIR in the environment: once RUN_DIR's generation 2
    checkpoint is saved, the run's next mutation (in generation 3) writes RUN_DIR/held and
    waits there until a signal stops the process (at most `limit_s`, once: then the run goes
    on, so that a lost signal shows as a run that ended). Without it, nothing."""
    run_dir = os.environ.get("USER_TASKS_HOLD")
    if not run_dir or (Path(run_dir) / HELD).exists():
        return
    if not (Path(run_dir) / "checkpoints" / "gen_000002.pkl").exists():
        return
    (Path(run_dir) / HELD).touch()
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        time.sleep(0.05)


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
