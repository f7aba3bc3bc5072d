"""`MazeSlots`' table-driven step: refusals of unknown actions, stepping a subset of slots
against all of them, and the state a step leaves (cells, directions, step counts)."""

import numpy as np
import pytest

from coevo.tasks.maze import Maze, MazeEnv, MazeSlots, sample
from coevo.tasks.maze.held_out import labyrinth
from tests.phrases import assert_says


def _mazes(count, seed=0):
    rng = np.random.default_rng(seed)
    return [sample(rng) for _ in range(count)]


@pytest.mark.parametrize("bad", [-1, 3, 7, -3])
def test_unknown_actions_are_refused_with_the_allowed_ones(bad):
    slots = MazeSlots(3)
    for slot, level in enumerate(_mazes(3)):
        slots.reset_slot(slot, level, 0)
    before = slots.save_slot(1)
    with pytest.raises(ValueError) as refusal:
        slots.step_slots(np.arange(3), np.array([2, bad, 0]))
    assert_says(str(refusal.value), "unknown action", str(bad), "0..2")
    assert slots.save_slot(1) == before  # nothing moved


def test_actions_of_any_integer_or_float_dtype_step_alike():
    levels = _mazes(4, seed=3)
    results = []
    for dtype in (np.int64, np.int32, np.uint8, np.float64):
        slots = MazeSlots(4)
        for slot, level in enumerate(levels):
            slots.reset_slot(slot, level, 0)
        rows = [slots.step_slots(np.arange(4), np.array([2, 0, 1, 2], dtype=dtype))]
        results.append(rows)
    for other in results[1:]:
        for (obs, rewards, done, _), (obs2, rewards2, done2, _) in zip(
            results[0], other, strict=True
        ):
            assert np.array_equal(obs, obs2) and np.array_equal(rewards, rewards2)
            assert np.array_equal(done, done2)


def test_a_subset_of_slots_steps_as_when_all_of_them_do():
    levels = _mazes(6, seed=4) + [labyrinth()]
    actions = np.random.default_rng(5).choice(3, size=(7, 120), p=[0.2, 0.2, 0.6])
    every, some = MazeSlots(7), MazeSlots(7)
    for slots in (every, some):
        for slot, level in enumerate(levels):
            slots.reset_slot(slot, level, 0)
    odd = np.array([1, 3, 5])
    for t in range(actions.shape[1]):
        got = every.step_slots(np.arange(7), actions[:, t])
        part = some.step_slots(odd, actions[odd, t])
        assert np.array_equal(got[0][odd], part[0]) and np.array_equal(got[1][odd], part[1])
        assert np.array_equal(got[2][odd], part[2])
        for slot, level in enumerate(levels):  # restart finished episodes in both
            if got[2][slot]:
                every.reset_slot(slot, level, 0)
                if slot in odd:
                    some.reset_slot(slot, level, 0)
    for slot in (0, 2, 4, 6):  # the others never moved
        assert some.save_slot(slot) == (levels[slot], levels[slot].start, levels[slot].start_dir, 0)


def test_state_after_steps_is_the_single_envs():
    level = Maze.from_text(
        """
        >..#
        .#..
        ...G
        """
    )
    slots, env = MazeSlots(2), MazeEnv(level)
    slots.reset_slot(1, level, 0)
    env.reset()
    for action in (2, 2, 2, 1, 2, 0, 1, 2, 2):
        env.step(action)
        slots.step_slots(np.array([1]), np.array([action]))
        assert slots.cell_of(1) == env.position
        assert int(slots.direction[1]) == env.direction and int(slots.steps[1]) == env.steps
