"""Env slots: the worker's view of its environments, one episode per slot.

`GymSlots` wraps one gymnasium env per slot. A task space may instead provide a batched
implementation (`TaskSpace.make_slots`) that steps all slots in one numpy call; the worker's
rollout loop is the same for both.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any, Protocol, cast

import numpy as np

from coevo.policies.base import obs_dim_of
from coevo.tasks.task import Task


class EnvSlots(Protocol):
    """N episodes side by side; each slot has its own task."""

    num_slots: int

    def reset_slot(self, slot: int, task: Task, seed: int) -> np.ndarray:
        """Start an episode of `task` in `slot` from reset seed `seed`; returns the obs."""
        ...

    def step_slots(
        self, slots: np.ndarray, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, str]]:
        """Step the given slots; returns (obs, rewards, done, errors by position)."""
        ...

    # Optional (trajectory streams continuing across calls, coevo/pool/trajectories.py):
    # `save_slot(slot) -> snapshot` hands out the slot's episode state, live (the slot must
    # be reset before its next use); `load_slot(slot, snapshot)` puts one back in a slot.
    # Optional (PPO's value bootstrap): a `truncated` attribute, set by each `step_slots`, that
    # says which of its `done` episodes the env cut short (gymnasium's `truncated`) rather
    # than ended; without it every `done` is an end, with no bootstrap.


_FLOAT64 = np.dtype(np.float64)
# A failed env call's traceback: the frames below coevo's own (the env's lines and the
# libraries it calls), at most this many of the innermost.
ERROR_FRAMES = 10
_COEVO_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def env_error_text() -> str:
    """The exception being handled, as a traceback of the env's frames: coevo's calls
    around them (the rollout loop, the slots) are left out, so the env's own lines stay
    whatever their depth; an error raised in coevo itself keeps its last frames."""
    kind, error, trace = sys.exc_info()
    frames = traceback.extract_tb(trace)
    outside = [f for f in frames if not f.filename.startswith(_COEVO_DIR + os.sep)]
    shown = (outside or frames)[-ERROR_FRAMES:]
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(shown)]
    return "".join(lines + traceback.format_exception_only(kind, error))


def _numbers(values: np.ndarray, count: int) -> np.ndarray | None:
    """Rewards inferred as another dtype or shape, as float64s: ints, float32s, bools, or one
    1-element array per slot, still vectorised. None when they are not all numbers (a
    string, None, an object): then they are taken one by one (`GymSlots._rewards`)."""
    if values.dtype.kind not in "fiub" or values.size != count:
        return None
    return values.reshape(count).astype(np.float64, copy=False)


def as_rows(slots: Any, rewards: Any, done: Any, count: int) -> tuple[np.ndarray, np.ndarray]:
    """A batched `step_slots`' rewards and done flags as `count` values each (float64,
    bool): lists or columns (`[n, 1]`) are taken as their values; any other size is the
    slots' bug, named (numpy's broadcast error lost the whole call)."""
    shaped = []
    for name, values, dtype in (("rewards", rewards, np.float64), ("done", done, bool)):
        values = np.asarray(values)
        if values.size != count:
            raise ValueError(
                f"{type(slots).__name__}.step_slots returned {name} of shape {values.shape} "
                f"for {count} slots; expected ({count},)"
            )
        shaped.append(values.reshape(count).astype(dtype, copy=False))
    return shaped[0], shaped[1]


def _is_text(reward: Any) -> bool:
    """A string, or an array of strings: numpy would read '1.0' as a number; coevo does not."""
    if isinstance(reward, str | bytes):
        return True
    try:
        return np.asarray(reward).dtype.kind in "SU"
    except ValueError:  # ragged
        return False


class CallClock:
    """The env call running now: its slot and when it started (-1: none running).

    Written by the calls of a watched `GymSlots`, read by another thread that asks how long
    the current call has run (`EvaluationPool`'s `episode_timeout_s`).
    """

    def __init__(self) -> None:
        self.slot = -1
        self.started = 0.0

    def wrap(self, slot: int, call: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """`call`, timed: the clock records `slot` and the start while it runs."""

        def timed(action: Any) -> Any:
            self.started = time.monotonic()
            self.slot = slot
            try:
                return call(action)
            finally:
                self.slot = -1

        return timed

    def running(self) -> tuple[int, float] | None:
        """(slot, seconds so far) of the env call running now, or None."""
        slot, started = self.slot, self.started
        if slot < 0:
            return None
        return slot, time.monotonic() - started


def observation_flattener(space: Any) -> Callable[[Any], np.ndarray] | None:
    """None for a Box (its observations are used as they are); for any other space
    (Discrete, Dict, Tuple, ...) `gymnasium.spaces.flatten` for it: a Discrete observation
    one-hot, a Dict's entries side by side, as SB3 feeds them to its policies."""
    import gymnasium as gym

    if isinstance(space, gym.spaces.Box):
        return None
    # Every space but Graph and Sequence (which no policy here reads) flattens to one array.
    return cast(
        Callable[[Any], np.ndarray], lambda observation: gym.spaces.flatten(space, observation)
    )


class GymSlots:
    """One task-settable gymnasium env per slot; tasks are swapped with `set_task`."""

    def __init__(self, make_env: Any, num_slots: int, discrete: bool, env_task: Any = Task.as_dict):
        self.num_slots = num_slots
        self.env_task = env_task  # Task -> what set_task takes (TaskSpace.env_task)
        self.make_env = make_env
        self.envs = [make_env() for _ in range(num_slots)]
        self._spares: list[Any] = []  # envs handed back by `load_slot`, for `save_slot`
        self.discrete = discrete
        space = self.envs[0].observation_space
        self._flatten = observation_flattener(space)
        self.obs_dim = obs_dim_of(space)
        # Bound methods looked up once per episode, not per step (see step_slots).
        self._step = [env.step for env in self.envs]
        self._tasks: list[Task | None] = [None] * num_slots
        self.clock: CallClock | None = None
        # The last step_slots' episodes that the env itself cut short (see EnvSlots).
        self.truncated = np.zeros(0, dtype=bool)

    def watch(self) -> CallClock:
        """Time every env call from now on (~0.2 us each); the clock says which one runs."""
        self.clock = CallClock()
        return self.clock

    def reset_slot(self, slot: int, task: Task, seed: int) -> np.ndarray:
        """Reset the slot's env on `task`, and keep its `step` (timed when watched)."""
        clock = self.clock
        if clock is None:
            obs = self._reset(slot, task, seed)
        else:
            obs = clock.wrap(slot, lambda _: self._reset(slot, task, seed))(None)
        step = self.envs[slot].step  # looked up again per episode: an env may rebind it
        self._step[slot] = step if clock is None else clock.wrap(slot, step)
        return obs

    def save_slot(self, slot: int) -> tuple[Any, Task | None]:
        """The slot's env itself, with its task (a spare or new env takes its place)."""
        saved = (self.envs[slot], self._tasks[slot])
        self._put_env(slot, self._spares.pop() if self._spares else self.make_env(), None)
        return saved

    def load_slot(self, slot: int, snapshot: tuple[Any, Task | None]) -> None:
        """Put a saved env back in `slot`; the one there becomes a spare."""
        if len(self._spares) < self.num_slots:
            self._spares.append(self.envs[slot])
        self._put_env(slot, *snapshot)

    def _put_env(self, slot: int, env: Any, task: Task | None) -> None:
        self.envs[slot] = env
        self._tasks[slot] = task
        clock = self.clock
        self._step[slot] = env.step if clock is None else clock.wrap(slot, env.step)

    def _reset(self, slot: int, task: Task, seed: int) -> np.ndarray:
        env = self.envs[slot]
        if self._tasks[slot] != task:
            self._tasks[slot] = None  # unknown until set_task succeeds
            env.set_task(self.env_task(task))
            self._tasks[slot] = task
        obs, _ = env.reset(seed=seed)
        if self._flatten is not None:
            obs = self._flatten(obs)
        return np.asarray(obs, dtype=np.float32).ravel()

    def step_slots(
        self, slots: np.ndarray, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, str]]:
        """Step the given slots' envs; an env that raises ends its episode with an error."""
        # Once per env step, so only list work here: observations, rewards and flags are
        # gathered in lists and turned into arrays once per call (a numpy row assignment per
        # slot cost more than the list appends and one conversion).
        step = self._step
        # Discrete envs get numpy int64 scalars, as `action_space.sample()` and gymnasium's
        # vector envs give them: `Discrete.contains` checks a Python int against the dtype's
        # limits (`np.iinfo`), ~0.5 us more per CartPole step. Continuous envs get a row each.
        moves = list(actions.astype(np.int64, copy=False)) if self.discrete else list(actions)
        observations: list[Any] = []
        rewards: list[float] = []
        done: list[bool] = []
        cut: list[bool] = []
        errors: dict[int, str] | None = None
        for position, slot in enumerate(slots.tolist()):
            try:
                ob, reward, terminated, truncated, _ = step[slot](moves[position])
            except Exception:  # an env that fails on a task fails that episode only
                errors = errors or {}
                errors[position] = env_error_text()
                self._tasks[slot] = None
                ob, reward, terminated, truncated = None, 0.0, True, False
            observations.append(ob)
            rewards.append(reward)
            done.append(terminated or truncated)
            cut.append(truncated and not terminated)  # both: an end, as gymnasium reads it
        self.truncated = np.array(cut, dtype=bool)
        flatten = self._flatten
        if flatten is not None:  # not a Box: each observation flattened (Dict, Discrete, ...)
            observations = [None if ob is None else flatten(ob) for ob in observations]
        errors = errors or {}
        stacked = self._stack(observations, errors)
        try:
            # dtype inferred, not forced: float64 would turn a string '1.0' into 1.0.
            reward_array = np.array(rewards)
        except (TypeError, ValueError):  # ragged: arrays beside numbers
            reward_array = None
        if reward_array is not None and (
            reward_array.ndim != 1 or reward_array.dtype is not _FLOAT64
        ):  # checked once per call
            reward_array = _numbers(reward_array, len(rewards))
        if reward_array is None:
            reward_array = self._rewards(rewards, errors)
        return (
            stacked,
            reward_array,
            np.array([d or p in errors for p, d in enumerate(done)], dtype=bool)
            if errors
            else np.array(done, dtype=bool),
            errors,
        )

    def _rewards(self, rewards: list[Any], errors: dict[int, str]) -> np.ndarray:
        """The rewards one by one: one that holds exactly one value (a 1-element array, as
        hand-written envs and some wrappers return) is that number, as gymnasium's and
        SB3's wrappers take it; any other fails its slot's episode (in `errors`)."""
        out = np.zeros(len(rewards), dtype=np.float64)
        for position, reward in enumerate(rewards):
            if position in errors:
                continue
            text = _is_text(reward)
            try:
                value = None if text else np.asarray(reward, np.float64)
            except (TypeError, ValueError):
                value = None
            if value is not None and value.size == 1:
                out[position] = value.reshape(())
            elif not text and (value is not None or hasattr(reward, "shape")):
                errors[position] = (
                    f"ValueError: step() returned a reward of shape {np.shape(reward)}; "
                    "expected a number"
                )
            else:
                errors[position] = (
                    f"TypeError: step() returned a reward of type {type(reward).__name__} "
                    f"({reward!r:.40}); expected a number"
                )
        return out

    def _stack(self, observations: list[Any], errors: dict[int, str]) -> np.ndarray:
        """The observations as rows; one that does not fit the observation space fails its
        slot's episode (in `errors`), as an exception inside `step` does."""
        count = len(observations)
        try:
            stacked = np.array(observations, dtype=np.float32)
        except (TypeError, ValueError):  # a failed slot's None, or ragged observations
            stacked = None
        if stacked is not None and stacked.size == count * self.obs_dim:
            return stacked.reshape(count, self.obs_dim)  # no copy for flat observations
        out = np.zeros((count, self.obs_dim), dtype=np.float32)
        for position, ob in enumerate(observations):
            if ob is None:
                continue
            try:
                out[position] = np.ravel(ob)
            except (TypeError, ValueError):
                errors[position] = (
                    f"ValueError: step() returned an observation of shape {np.shape(ob)}; "
                    f"the observation space has {self.obs_dim} values"
                )
        return out
