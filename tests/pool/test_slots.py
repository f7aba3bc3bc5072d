"""GymSlots: one gymnasium env per slot, stepped as the worker steps them."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from fragile_env import FragileCartPole

from coevo import tasks
from coevo.pool.slots import GymSlots


def test_gym_slots_give_each_slot_what_its_own_env_gives():
    space = tasks.get("pendulum")
    slots = GymSlots(space.make_env, 3, discrete=False)
    reference = [space.make_env() for _ in range(3)]
    task_list = [space.task(gravity=g) for g in (4.0, 9.0, 14.0)]
    for slot, (task, env) in enumerate(zip(task_list, reference, strict=True)):
        env.set_task(task.as_dict())
        expected, _ = env.reset(seed=slot)
        np.testing.assert_array_equal(slots.reset_slot(slot, task, slot), expected)
    actions = np.random.default_rng(0).uniform(-2, 2, size=(5, 3, 1)).astype(np.float32)
    for step_actions in actions:
        active = np.array([0, 2])  # slot 1 idles: it is neither stepped nor reported
        obs, rewards, done, errors = slots.step_slots(active, step_actions[active])
        for position, slot in enumerate(active):
            ob, reward, terminated, truncated, _ = reference[slot].step(step_actions[slot])
            np.testing.assert_array_equal(obs[position], ob)
            assert rewards[position] == reward
            assert done[position] == (terminated or truncated)
        assert obs.dtype == np.float32 and obs.shape == (2, 3) and errors == {}


def test_a_slot_whose_env_raises_fails_alone():
    slots = GymSlots(FragileCartPole, 3, discrete=True)
    for slot, hazard in enumerate((0.0, 1.0, 0.0)):  # hazard 1 raises at the third step
        slots.reset_slot(slot, tasks.Task("fragile", (("hazard", hazard),)), seed=slot)
    active = np.arange(3)
    for _ in range(2):
        _, _, done, errors = slots.step_slots(active, np.zeros(3, dtype=np.int64))
        assert errors == {} and not done.any()
    obs, rewards, done, errors = slots.step_slots(active, np.zeros(3, dtype=np.int64))
    assert list(errors) == [1] and "lost a wheel" in errors[1]
    assert done.tolist() == [False, True, False]
    assert rewards.tolist() == [1.0, 0.0, 1.0]
    np.testing.assert_array_equal(obs[1], 0.0)
    assert np.abs(obs[[0, 2]]).sum() > 0


class _GridEnv(gym.Env):
    """Observations are 2 x 2 grids: slots hand the worker flat rows."""

    observation_space = gym.spaces.Box(0.0, 10.0, (2, 2), np.float64)
    action_space = gym.spaces.Discrete(2)

    def get_task(self):
        return {}

    def set_task(self, task):
        pass

    def reset(self, *, seed=None, options=None):
        self.t = 0.0
        return np.full((2, 2), self.t), {}

    def step(self, action):
        self.t += 1.0 + action
        return np.arange(4.0).reshape(2, 2) + self.t, 1.0, False, False, {}


def test_grid_observations_become_flat_float32_rows():
    slots = GymSlots(_GridEnv, 2, discrete=True)
    for slot in range(2):
        slots.reset_slot(slot, tasks.Task("grid", ()), seed=0)
    obs, _, _, _ = slots.step_slots(np.arange(2), np.array([0, 1]))
    assert obs.dtype == np.float32
    np.testing.assert_array_equal(obs, [[1, 2, 3, 4], [2, 3, 4, 5]])
