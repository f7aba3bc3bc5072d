"""One task sampler for envs in Ray actors (RLlib's env runners): the sampler lives in a Ray
actor (`SamplerHost`, started by `serve_on_ray`), each env holds a `RemoteSampler` that asks
it for the next task at reset and reports each finished episode.

- A draw is one round trip (`ray.get`); a report is sent without waiting, and the reports
  an env sent are waited for before its next draw and at `flush()`. Ray runs one caller's
  calls to an actor in the order they were made, so one env runner's episodes reach the
  sampler in the order they ended; envs on several runners interleave as they finish.
- Every draw is reported once, even when its episode is lost: the host knows each env
  runner's unreported draws (`owner`), and hands those of a lost runner (`lost`) to the
  next envs that ask, before drawing anew. A curriculum that waits for every draw (SFL's
  refresh waits for its scoring episodes) goes on.
- `load_state_dict` starts a new epoch: the state's unreported draws (the episodes running
  when it was saved) are handed out again first, and reports of draws made before the load
  are counted as `dropped` instead of applied: they belong to the sampler that drew them.

`CurriculumEnv` is a task space's env for a trainer that builds envs from a config dict
(RLlib: `config.environment(CurriculumEnv, env_config={"space": "cartpole"})`); its sampler
is attached after it is built (`attach_sampler`, which `coevo.integrations.rllib` calls).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import ray

from coevo.curricula.base import Decision
from coevo.curricula.sampler import TaskSampler
from coevo.errors import ConfigError
from coevo.tasks.task import Task, TaskSpace
from coevo.wrappers.curriculum import CurriculumWrapper

ENV_CONFIG_KEYS = ("space",)


class SamplerHost:
    """What the sampler's Ray actor runs: the `TaskSampler`, its epoch, each owner's (env
    runner's) unreported draws and the draws owed again."""

    def __init__(self, sampler: TaskSampler):
        self.sampler = sampler
        self.epoch = 0
        self.dropped = 0  # reports of draws from an earlier epoch
        self.owed: deque[Task] = deque()  # unreported draws whose episodes were lost
        self.held: dict[int, list[Task]] = {}  # owner -> its unreported draws of this epoch

    def space_name(self) -> str:
        """The name of the sampler's task space."""
        return self.sampler.space.name

    def sample(self, owner: int = 0) -> tuple[Task, int]:
        """The next task for an env of `owner` (a draw owed again first) and its epoch."""
        task = self.owed.popleft() if self.owed else self.sampler.sample()
        self.held.setdefault(owner, []).append(task)
        return task, self.epoch

    def update(self, task: Task, report: dict[str, Any], epoch: int, owner: int = 0) -> None:
        """Report a finished episode (`TaskSampler.update`'s keywords); dropped when its task
        was drawn before the last `load_state_dict`."""
        if epoch != self.epoch:
            self.dropped += 1
            return
        self.held[owner].remove(task)
        self.sampler.update(task, **report)

    def lost(self, owners: list[int]) -> None:
        """`owners`' envs are gone (RLlib recreated those env runners): their unreported
        draws are handed out again."""
        for owner in owners:
            self.owed.extend(self.held.pop(owner, []))

    def state_dict(self) -> dict[str, Any]:
        """The sampler's `state_dict()`."""
        return self.sampler.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from a sampler's `state_dict()`; a new epoch starts, and the state's
        unreported draws (its "pending", per task) are handed out again first."""
        self.sampler.load_state_dict(state)
        self.owed = deque(task for task, notes in state["pending"].items() for _ in notes)
        self.held = {}
        self.epoch += 1

    def decisions(self) -> list[Decision]:
        """The sampler's decision rows (eligibility.csv's rows of a run)."""
        return self.sampler.decisions()

    def summary(self) -> dict[str, Any]:
        """Counts for a trainer's log: episodes reported, draws pending (owed ones among
        them), reports dropped."""
        return {
            "sampler": self.sampler.name,
            "episodes": self.sampler.episodes,
            "pending": self.sampler.pending(),
            "owed": len(self.owed),
            "dropped": self.dropped,
        }


def serve_on_ray(sampler: TaskSampler) -> Any:
    """Start a Ray actor (no CPU reserved) serving `sampler`; returns its handle. Ray must be
    initialised; the actor lives as long as its handle is referenced."""
    return ray.remote(num_cpus=0)(SamplerHost).remote(sampler)


class RemoteSampler:
    """The sampler face `CurriculumWrapper` uses (`space`, `sample`, `update`) of a sampler
    served by a `SamplerHost` actor, attached after the env is built."""

    def __init__(self, space: TaskSpace):
        self.space = space
        self.actor: Any = None
        self.owner = 0
        self._epochs: dict[Task, list[int]] = {}  # each unreported draw's epoch, in order
        self._reports: list[Any] = []  # refs of the reports not yet waited for

    def attach(self, actor: Any, space_name: str, owner: int = 0) -> None:
        """Draw from and report to `actor` (a `serve_on_ray` handle) serving `space_name`,
        as one of `owner`'s envs (an RLlib env runner's index).

        Raises:
            ConfigError: the actor's space is not this env's.
        """
        if space_name != self.space.name:
            raise ConfigError(
                "env_config.space",
                f"the env plays '{self.space.name}' tasks but the curriculum's sampler draws "
                f"'{space_name}' tasks: give both the same task space",
            )
        self.actor, self.owner = actor, owner

    def sample(self) -> Task:
        """The next task from the actor, after the reports sent so far were applied."""
        if self.actor is None:
            raise RuntimeError(
                "no sampler attached to this CurriculumEnv: with RLlib, add "
                "coevo.integrations.rllib.curriculum_callback(...) to config.callbacks "
                "(evaluation env runners get none: give evaluation_config a plain env)"
            )
        *_, (task, epoch) = ray.get([*self._take_reports(), self.actor.sample.remote(self.owner)])
        self._epochs.setdefault(task, []).append(epoch)
        return task

    def update(self, task: Task, **report: Any) -> None:
        """Send a finished episode's report (`TaskSampler.update`'s keywords) to the actor."""
        epochs = self._epochs[task]
        epoch = epochs.pop(0)
        if not epochs:
            del self._epochs[task]
        self._reports.append(self.actor.update.remote(task, report, epoch, self.owner))

    def flush(self) -> None:
        """Wait until the reports sent so far are applied (raises what they raised)."""
        ray.get(self._take_reports())

    def _take_reports(self) -> list[Any]:
        reports, self._reports = self._reports, []
        return reports


def space_from_env_config(config: Mapping[str, Any]) -> TaskSpace:
    """The task space an env config names: `{"space": "cartpole"}` (a registered name or
    `package.module:factory`) or `{"space": TaskSpace(...)}`.

    Raises:
        ConfigError: `space` missing, or a key other than `space`.
    """
    unknown = sorted(set(config) - set(ENV_CONFIG_KEYS))
    if unknown:
        raise ConfigError(
            f"env_config.{unknown[0]}", f"unknown key; allowed: {', '.join(ENV_CONFIG_KEYS)}"
        )
    if "space" not in config:
        raise ConfigError(
            "env_config.space", "missing: name the task space, e.g. {'space': 'cartpole'}"
        )
    space = config["space"]
    if isinstance(space, str):
        from coevo.tasks import registry

        return registry.get(space)
    if not isinstance(space, TaskSpace):
        raise ConfigError(
            "env_config.space", f"must be a task space's name or a TaskSpace, got {space!r}"
        )
    return space


class CurriculumEnv(CurriculumWrapper):
    """A task space's env (truncated at its `max_episode_steps`) whose every episode's task
    comes from a sampler served by a Ray actor, attached with `attach_sampler`.

    Args:
        config: `{"space": name or TaskSpace}` (RLlib passes its `env_config` here).
    """

    def __init__(self, config: Mapping[str, Any] | None = None):
        space = space_from_env_config(dict(config or {}))
        env = gym.wrappers.TimeLimit(space.make_env(), space.max_episode_steps)
        super().__init__(env, RemoteSampler(space))

    def attach_sampler(self, actor: Any, space_name: str, owner: int = 0) -> None:
        """Take tasks from `actor` (a `serve_on_ray` handle) serving `space_name`'s tasks,
        as one of `owner`'s envs (an RLlib env runner's index)."""
        self.sampler.attach(actor, space_name, owner)

    def flush_reports(self) -> None:
        """Wait until this env's reports so far are applied by the sampler."""
        self.sampler.flush()
