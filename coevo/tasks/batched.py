"""Batched classic-control physics: one numpy env stepping N episodes, each with its own task.

A subclass states its physics once, in column form: `state` is [state_size, n] float64,
`consts` is [num_consts, n] (per-slot task-derived constants), one column per episode.
It implements `EnvSlots` (coevo/pool/slots.py), so the worker uses it instead of one
gymnasium env per slot.

Determinism: an episode's numbers must not depend on the batch around it. Elementwise
+ - * / and comparisons are exact IEEE operations; the transcendental functions used here
(np.sin, np.cos, np.mod) were checked on this machine to give every element the same bits
whatever the array length or offset (SIMD tails included), and tests/test_env_batched.py
re-checks it by running the same episodes in different batch compositions.

Agreement with gymnasium: each subclass repeats gymnasium's arithmetic in the same order and
with the same dtypes (including where gymnasium mixes float32 and float64), and draws the
initial state from gymnasium's own per-seed generator, so trajectories match its single env.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from gymnasium.utils import seeding

from coevo.tasks.task import Task

# Initial states depend on the reset seed only; cache them (gymnasium's seeding costs ~20 us).
_SEED_CACHE_SIZE = 4096


class BatchedSlots:
    """Base of the numpy batched envs; subclasses define the physics of one env."""

    param_names: tuple[str, ...] = ()
    state_size: int = 0
    num_consts: int = 0
    # Per-slot arrays beyond `state` a subclass keeps (e.g. a first-step flag): saved and
    # loaded with the state by `save_slot` / `load_slot`.
    slot_arrays: tuple[str, ...] = ()

    def __init__(self, num_slots: int):
        if num_slots < 1:
            raise ValueError(f"num_slots must be >= 1, got {num_slots}")
        self.num_slots = num_slots
        self.state = np.zeros((self.state_size, num_slots), dtype=np.float64)
        self.consts = np.zeros((self.num_consts, num_slots), dtype=np.float64)
        self._tasks: list[Task | None] = [None] * num_slots
        self._initial: dict[int, np.ndarray] = {}

    # -- physics, per subclass ---------------------------------------------------------------
    def constants(self, task: Mapping[str, float]) -> tuple[float, ...]:
        """Per-slot constants, computed in Python floats as gymnasium computes them."""
        raise NotImplementedError

    def initial_state(self, rng: np.random.Generator) -> np.ndarray:
        """The initial state column, drawn as gymnasium's reset draws it."""
        raise NotImplementedError

    def observe(self, state: np.ndarray) -> np.ndarray:
        """Observations [n, obs_dim] float32 of state columns [state_size, n]."""
        raise NotImplementedError

    def dynamics(
        self, state: np.ndarray, consts: np.ndarray, actions: np.ndarray, slots: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One step of the given columns: (new state, rewards float64, terminated bool)."""
        raise NotImplementedError

    def initial_observation(self, state: np.ndarray) -> np.ndarray:
        """The observation reset returns; differs from `observe` where gymnasium's reset
        state has another dtype than its step state."""
        return self.observe(state)

    def on_reset(self, slot: int) -> None:
        """Hook for per-slot bookkeeping beyond the state (e.g. a first-step flag)."""

    # -- EnvSlots ----------------------------------------------------------------------------
    def reset_slot(self, slot: int, task: Task, seed: int) -> np.ndarray:
        """Put `task` in `slot` and start its episode.

        Args:
            slot: The slot's index.
            task: The task it plays.
            seed: The episode's seed.

        Returns:
            The slot's first observation.

        Raises:
            KeyError: If the task lacks a parameter the slots need.
        """
        if self._tasks[slot] != task:
            values = task.as_dict()
            missing = [name for name in self.param_names if name not in values]
            if missing:
                raise KeyError(f"task {task} lacks parameters {', '.join(missing)}")
            self._tasks[slot] = None  # unknown until the constants are in place
            self.consts[:, slot] = self.constants(values)
            self._tasks[slot] = task
        self.state[:, slot] = self._initial_state(int(seed))
        self.on_reset(slot)
        return self.initial_observation(self.state[:, slot : slot + 1])[0]

    def save_slot(self, slot: int) -> tuple[Task | None, np.ndarray, np.ndarray, tuple]:
        """A copy of the slot's episode: task, state column, constants, `slot_arrays`."""
        extra = tuple(getattr(self, name)[slot].copy() for name in self.slot_arrays)
        return self._tasks[slot], self.state[:, slot].copy(), self.consts[:, slot].copy(), extra

    def load_slot(self, slot: int, snapshot: tuple[Task | None, np.ndarray, np.ndarray, tuple]):
        """Put a saved episode in `slot`."""
        task, state, consts, extra = snapshot
        self._tasks[slot] = task
        self.state[:, slot] = state
        self.consts[:, slot] = consts
        for name, value in zip(self.slot_arrays, extra, strict=True):
            getattr(self, name)[slot] = value

    def step_slots(
        self, slots: np.ndarray, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, str]]:
        """Step the given slots together.

        Args:
            slots: The slots' indices.
            actions: One action per slot.

        Returns:
            Observations, rewards, done flags, and error messages by slot.
        """
        slots = np.asarray(slots)
        actions = np.asarray(actions)
        if len(slots) == self.num_slots:
            # Every slot steps (the worker passes sorted slot numbers): no gather or scatter.
            state, rewards, terminated = self.dynamics(self.state, self.consts, actions, slots)
            self.state = state
        else:
            state, rewards, terminated = self.dynamics(
                self.state[:, slots], self.consts[:, slots], actions, slots
            )
            self.state[:, slots] = state
        return self.observe(state), rewards, terminated, {}

    def _initial_state(self, seed: int) -> np.ndarray:
        cached = self._initial.get(seed)
        if cached is None:
            rng, _ = seeding.np_random(seed)  # exactly the generator gymnasium's reset makes
            cached = np.asarray(self.initial_state(rng), dtype=np.float64)
            if len(self._initial) >= _SEED_CACHE_SIZE:
                self._initial.clear()
            self._initial[seed] = cached
        return cached
