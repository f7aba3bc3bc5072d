"""mountain_car_reach: the goal ends the episode, -1 per step, scaled observations, the batched
physics equal to the env, and the stepping-stones premise (pumping reaches the hilltop with
the weak engine, pushing right reaches only goals near the valley)."""

import numpy as np
import pytest

from coevo import tasks
from coevo.errors import ConfigError
from coevo.tasks.mountain_car_reach import MAX_SPEED, MountainCarReachSlots

WEAK = 0.0004  # the engine of experiments/stepping_stones' mountain_car_hilltop


def _pump(obs):
    """Push along the velocity (the hand-written controller of the stepping-stones study)."""
    return np.array([1.0 if obs[1] >= 0 else -1.0], dtype=np.float32)


def _push_right(obs):
    return np.array([1.0], dtype=np.float32)


def _episode(task, controller, seed):
    """(return, steps, terminated, observations) of one episode on the gymnasium env, with
    the batched physics stepped alongside and required to agree bit for bit."""
    space = tasks.get("mountain_car_reach")
    env = space.make_env()
    env.set_task(task.as_dict())
    obs, _ = env.reset(seed=seed)
    slots = MountainCarReachSlots(1)
    np.testing.assert_array_equal(slots.reset_slot(0, task, seed), obs)
    total, seen, terminated = 0.0, [obs], False
    for _ in range(space.max_episode_steps):
        action = controller(obs)
        obs, reward, terminated, truncated, _ = env.step(action)
        got, rewards, done, _ = slots.step_slots(np.array([0]), action[None])
        np.testing.assert_array_equal(got[0], obs)
        assert rewards[0] == reward == -1.0 and bool(done[0]) == terminated and not truncated
        total += reward
        seen.append(obs)
        if terminated:
            break
    return total, len(seen) - 1, terminated, np.array(seen), env


def test_goal_ends_the_episode_and_every_step_costs_one():
    space = tasks.get("mountain_car_reach")
    total, steps, terminated, _, env = _episode(
        space.task(power=WEAK, goal_position=0.0), _pump, seed=1
    )
    assert terminated and total == -steps and steps < 999
    position, velocity = env.unwrapped.state
    assert position >= 0.0 and velocity >= 0.0  # at or past the goal, moving right
    # A farther goal takes longer with the same controller.
    farther, *_ = _episode(space.task(power=WEAK, goal_position=0.3), _pump, seed=1)
    assert farther < total


def test_observations_are_scaled_into_minus_one_one():
    space = tasks.get("mountain_car_reach")
    env = space.make_env()
    assert np.all(env.observation_space.low == -1) and np.all(env.observation_space.high == 1)
    *_, seen, env = _episode(space.task(power=WEAK, goal_position=0.45), _pump, seed=2)
    assert np.all(np.abs(seen) <= 1.0)
    # The velocity spans a good part of [-1, 1] (gymnasium's raw velocity stays within 0.07).
    assert 0.5 < np.abs(seen[:, 1]).max() <= 1.0
    position, velocity = env.unwrapped.state
    np.testing.assert_allclose(seen[-1], [(position + 0.3) / 0.9, velocity / MAX_SPEED], 1e-6)


def test_pumping_reaches_the_hilltop_with_the_weak_engine_and_pushing_right_does_not():
    """The premise of the stepping-stones domain: the hard task is solvable (the hand-written
    controller is far above the -500 threshold); the near goal takes one small swing."""
    space = tasks.get("mountain_car_reach")
    hard = space.task(power=WEAK, goal_position=0.45)
    pumped = [_episode(hard, _pump, seed)[0] for seed in range(10)]
    assert min(pumped) > -350.0
    pushed = [_episode(hard, _push_right, seed)[0] for seed in range(3)]
    assert pushed == [-999.0] * 3
    near = space.task(power=WEAK, goal_position=-0.4)
    assert [_episode(near, _push_right, seed)[2] for seed in range(4)] == [False, False, True, True]
    assert max(_episode(near, _pump, seed)[1] for seed in range(4)) < 100


def test_a_goal_outside_the_track_names_the_field():
    space = tasks.get("mountain_car_reach")
    with pytest.raises(ConfigError) as info:
        space.task(goal_position=0.7)
    assert str(info.value).startswith("task.goal_position: 0.7 outside bounds [-0.4, 0.5]")
