"""Partially observed variants of a task space: some observation entries hidden.

`masked_space(space, keep, name)` keeps only the observation entries `keep` (e.g. CartPole
without its velocities, `cartpole_pomdp`): a memoryless policy then cannot act well, a
recurrent one can. Tasks, physics and rewards are the base space's; both its env and its
batched slots are wrapped.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import gymnasium as gym
import numpy as np

from coevo.tasks.registry import get, register
from coevo.tasks.task import Task, TaskSpace

# TaskSpace.metadata's key for a space whose observations hide part of the state (a user's
# own space may set it too).
PARTIALLY_OBSERVED = "partially_observed"


class MaskedObsEnv(gym.Env):
    """A task-settable env whose observations are cut to the entries `keep`."""

    def __init__(self, env: Any, keep: tuple[int, ...]):
        self.env = env
        self.keep = np.asarray(keep)
        box = env.observation_space
        self.observation_space = gym.spaces.Box(
            box.low[self.keep], box.high[self.keep], dtype=box.dtype
        )
        self.action_space = env.action_space

    @property
    def render_mode(self) -> str | None:
        """The wrapped env's render mode."""
        return self.env.render_mode

    @render_mode.setter
    def render_mode(self, mode: str | None) -> None:
        """The wrapped env's render mode."""
        self.env.render_mode = mode

    def get_task(self) -> Any:
        """The wrapped env's task."""
        return self.env.get_task()

    def set_task(self, task: Any) -> None:
        """Set the wrapped env's task."""
        self.env.set_task(task)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Reset the wrapped env; the observation keeps only the unmasked entries."""
        obs, info = self.env.reset(seed=seed, options=options)
        return np.asarray(obs)[self.keep], info

    def step(self, action: Any):
        """Step the wrapped env; the observation keeps only the unmasked entries."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        return np.asarray(obs)[self.keep], reward, terminated, truncated, info

    def render(self):
        """The wrapped env's rendering."""
        return self.env.render()

    def close(self) -> None:
        """Close the wrapped env."""
        self.env.close()


@dataclass(frozen=True)
class _MaskedEnvFactory:
    make_env: Any
    keep: tuple[int, ...]

    def __call__(self) -> MaskedObsEnv:
        return MaskedObsEnv(self.make_env(), self.keep)


class MaskedSlots:
    """Batched slots of the base space, observations cut to `keep`."""

    def __init__(self, slots: Any, keep: tuple[int, ...]):
        self.slots = slots
        self.num_slots = slots.num_slots
        self.keep = np.asarray(keep)

    def reset_slot(self, slot: int, task: Task, seed: int) -> np.ndarray:
        """Reset a slot of the wrapped slots; the observation keeps only the unmasked entries."""
        return self.slots.reset_slot(slot, task, seed)[self.keep]

    def step_slots(self, slots: np.ndarray, actions: np.ndarray):
        """Step the wrapped slots; the observations keep only the unmasked entries."""
        obs, rewards, done, errors = self.slots.step_slots(slots, actions)
        return obs[:, self.keep], rewards, done, errors

    def __getattr__(self, name: str) -> Any:
        # save_slot / load_slot (continuing streams) and truncated (the bootstrap) where the
        # base slots have them
        if name in ("save_slot", "load_slot", "truncated"):
            return getattr(self.slots, name)
        raise AttributeError(name)


@dataclass(frozen=True)
class _MaskedSlotsFactory:
    make_slots: Any
    keep: tuple[int, ...]

    def __call__(self, num_slots: int) -> MaskedSlots:
        return MaskedSlots(self.make_slots(num_slots), self.keep)


def masked_space(space: TaskSpace, keep: tuple[int, ...], name: str) -> TaskSpace:
    """`space` with only observation entries `keep` visible, registered as `name`."""
    keep = tuple(int(k) for k in keep)
    slots = _MaskedSlotsFactory(space.make_slots, keep) if space.make_slots else None
    return replace(
        space,
        name=name,
        make_env=_MaskedEnvFactory(space.make_env, keep),
        make_slots=slots,
        # Read by the run's start: a policy without memory is warned of (runner).
        metadata={**space.metadata, PARTIALLY_OBSERVED: True},
    )


@register("cartpole_pomdp")
def cartpole_pomdp() -> TaskSpace:
    """CartPole seeing cart position and pole angle only (velocities hidden)."""
    return masked_space(get("cartpole"), (0, 2), "cartpole_pomdp")
