"""Batched numpy physics: agreement with gymnasium's single envs, and batch independence."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from coevo import tasks
from coevo.policies import MLPPolicy
from coevo.pool import EpisodeJob, EvaluationPool, Stored, Worker
from coevo.tasks.acrobot import AcrobotSlots
from coevo.tasks.acrobot_reach import AcrobotReachSlots
from coevo.tasks.cartpole import CartPoleSlots
from coevo.tasks.mountain_car import MountainCarContinuousSlots
from coevo.tasks.mountain_car_reach import MountainCarReachSlots
from coevo.tasks.pendulum import PendulumSlots

BATCHED = {
    "cartpole": CartPoleSlots,
    "pendulum": PendulumSlots,
    "mountain_car_continuous": MountainCarContinuousSlots,
    "mountain_car_reach": MountainCarReachSlots,
    "acrobot": AcrobotSlots,
    "acrobot_reach": AcrobotReachSlots,
}


def _mixed_tasks(space, count, seed=0):
    """The initial task and tasks a few mutations away, with their parameters far apart."""
    rng = np.random.default_rng(seed)
    found = [space.initial_task()]
    task = space.initial_task()
    while len(found) < count:
        for _ in range(3):
            task = space.mutate(task, rng)
        found.append(task)
    return found


def _random_actions(action_space, count, rng):
    if hasattr(action_space, "n"):
        return rng.integers(0, action_space.n, size=count)
    low, high = action_space.low, action_space.high
    return rng.uniform(low, high, size=(count, low.size)).astype(np.float32)


@pytest.mark.parametrize("name", sorted(BATCHED))
def test_batched_env_matches_gymnasium_single_envs(name):
    """Same tasks, seeds and actions: same observations, rewards and ends as gymnasium."""
    space = tasks.get(name)
    count = 6
    task_list = _mixed_tasks(space, count)
    envs = [space.make_env() for _ in range(count)]
    slots = BATCHED[name](count)
    for slot, (env, task) in enumerate(zip(envs, task_list, strict=True)):
        env.set_task(task.as_dict())
        expected, _ = env.reset(seed=40 + slot)
        got = slots.reset_slot(slot, task, 40 + slot)
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
    rng = np.random.default_rng(1)
    active = np.arange(count)
    last_obs = np.stack([slots.observe(slots.state[:, [s]])[0] for s in range(count)])
    compared = ended = 0
    for _ in range(300):
        actions = _random_actions(envs[0].action_space, active.size, rng)
        if name.startswith("acrobot"):  # mostly pump energy, so that episodes reach the goal
            pump = np.where(last_obs[active, 5] > 0, 2, 0)
            actions = np.where(rng.random(active.size) < 0.8, pump, actions)
        obs, rewards, done, errors = slots.step_slots(active, actions)
        assert errors == {} and obs.dtype == np.float32 and obs.shape[0] == active.size
        still = []
        for position, slot in enumerate(active.tolist()):
            action = actions[position]
            ob, reward, terminated, _, _ = envs[slot].step(
                int(action) if np.ndim(action) == 0 else action
            )
            np.testing.assert_allclose(obs[position], ob, rtol=1e-6, atol=1e-7)
            assert rewards[position] == pytest.approx(reward, rel=1e-9, abs=1e-9)
            assert bool(done[position]) == terminated
            compared += 1
            ended += terminated
            if not terminated:
                still.append(slot)
        last_obs[active] = obs
        active = np.array(still, dtype=np.int64)
        if active.size == 0:
            break
    assert compared >= 6 * 10
    if name in ("cartpole", "acrobot", "acrobot_reach"):
        assert ended >= 4  # terminations are compared too


def _mountain_car_drive(obs):
    """Push along the velocity: builds momentum, hits the speed limit, reaches the goal."""
    return np.where(obs[:, 1:2] >= 0, 1.0, -1.0).astype(np.float32)


def test_mountain_car_clipping_and_goal_match_gymnasium():
    """The speed limit, the left wall and the goal reward behave as gymnasium's."""
    space = tasks.get("mountain_car_continuous")
    task_list = [
        space.initial_task(),
        space.task(power=0.003, max_speed=0.04),  # speed-limited
        space.task(power=0.0025, goal_position=0.3),
    ]
    envs = [space.make_env() for _ in task_list]
    slots = MountainCarContinuousSlots(len(task_list))
    obs = np.zeros((len(task_list), 2), np.float32)
    for slot, (env, task) in enumerate(zip(envs, task_list, strict=True)):
        env.set_task(task.as_dict())
        env.reset(seed=slot)
        obs[slot] = slots.reset_slot(slot, task, slot)
    active = np.arange(len(task_list))
    totals = np.zeros(len(task_list))
    saw_limit = saw_wall = False
    for _ in range(400):
        actions = _mountain_car_drive(obs[active])
        got, rewards, done, _ = slots.step_slots(active, actions)
        still = []
        for position, slot in enumerate(active.tolist()):
            ob, reward, terminated, _, _ = envs[slot].step(actions[position])
            np.testing.assert_allclose(got[position], ob, rtol=1e-6, atol=1e-7)
            assert rewards[position] == pytest.approx(reward) and done[position] == terminated
            saw_limit |= bool(abs(ob[1]) >= np.float32(0.04)) and slot == 1
            saw_wall |= bool(ob[0] <= np.float32(-1.2))
            totals[slot] += reward
            if not terminated:
                still.append(slot)
        obs[active] = got
        active = np.array(still, dtype=np.int64)
        if active.size == 0:
            break
    assert active.size == 0, "every car reaches its goal"
    assert saw_limit and saw_wall
    assert (totals > 50).all()


def _run_episodes(slots, action_space, jobs, order, width):
    """Run (task, seed, action seed) episodes through `slots`, `width` at a time, in `order`.

    Returns each episode's observation trajectory, rewards and length.
    """
    results = {}
    queue = list(order)
    slot_job = {}
    rngs = {}
    free = list(range(width))
    while queue or slot_job:
        while queue and free:
            slot, index = free.pop(0), queue.pop(0)
            task, seed, action_seed = jobs[index]
            first = slots.reset_slot(slot, task, seed)
            results[index] = ([first.copy()], [])
            rngs[index] = np.random.default_rng(action_seed)
            slot_job[slot] = index
        active = np.array(sorted(slot_job), dtype=np.int64)
        actions = [_random_actions(action_space, 1, rngs[slot_job[s]])[0] for s in active.tolist()]
        obs, rewards, done, _ = slots.step_slots(active, np.array(actions))
        for position, slot in enumerate(active.tolist()):
            index = slot_job[slot]
            results[index][0].append(obs[position].copy())
            results[index][1].append(rewards[position])
            if done[position] or len(results[index][1]) >= 60:
                del slot_job[slot]
                free.append(slot)
    return results


@pytest.mark.parametrize("name", sorted(BATCHED))
def test_episodes_are_bit_identical_whatever_the_batch(name):
    """Which slot, how many slots, and which episodes run beside: no bit may change."""
    space = tasks.get(name)
    action_space = space.make_env().action_space
    task_list = _mixed_tasks(space, 5, seed=3)
    jobs = [(task_list[i % 5], 100 + i, 7 * i) for i in range(11)]
    alone = {}
    for index in range(len(jobs)):
        alone.update(_run_episodes(BATCHED[name](1), action_space, jobs, [index], 1))
    for width, total, order in [
        (3, 3, list(range(11))),
        (5, 9, list(reversed(range(11)))),
        (11, 11, [4, 0, 9, 2, 7, 1, 10, 3, 8, 5, 6]),
        (16, 16, list(range(11))),
    ]:
        batched = _run_episodes(BATCHED[name](total), action_space, jobs, order, width)
        for index, (obs, rewards) in alone.items():
            got_obs, got_rewards = batched[index]
            assert len(got_obs) == len(obs)
            assert np.array_equal(np.stack(got_obs), np.stack(obs)), (name, width, index)
            assert np.array_equal(np.array(got_rewards), np.array(rewards)), (name, width, index)


@pytest.mark.parametrize(
    "op",
    [np.sin, np.cos, np.square, lambda x: np.mod(x, 2 * np.pi), lambda x: x**2],
    ids=["sin", "cos", "square", "mod", "power2"],
)
def test_numpy_ops_used_by_the_batched_envs_are_row_stable(op):
    """An element's result must not depend on the array's length or its offset in memory
    (SIMD bodies and tails may differ); the batched envs rely on this."""
    values = np.random.default_rng(0).normal(scale=4.0, size=300)
    reference = np.array([op(np.array([v]))[0] for v in values])
    for length in (2, 3, 7, 8, 9, 16, 17, 33, 64, 300):
        for offset in range(4):
            buffer = np.zeros(length + offset)
            buffer[offset:] = values[:length]
            assert np.array_equal(op(buffer[offset:]), reference[:length]), (length, offset)
    for dtype in (np.float32,):  # Acrobot's first observation and the float32 paths
        small = values.astype(dtype)
        ref32 = np.array([op(np.array([v], dtype))[0] for v in small])
        for length in (3, 8, 17, 300):
            assert np.array_equal(op(small[:length]), ref32[:length])


def _policy_params(name, policy, rng):
    """Random MLP weights; for Acrobot and mountain_car_reach, weights that mostly pump energy
    (torque or force along a velocity) so that episodes end at the goal at varied times."""
    theta = policy.init(rng)
    if name.startswith("acrobot"):
        theta *= 0.1
        hidden, obs_dim = policy.hidden[0], policy.obs_dim
        theta[5] += 5.0  # first hidden unit ~ tanh(5 * dtheta2)
        second = hidden * obs_dim + hidden  # start of the output layer's weights
        theta[second + 2 * hidden] += 3.0  # logit of +torque follows that unit
        theta[second] -= 3.0  # logit of -torque opposes it
    if name == "mountain_car_reach":  # push along the velocity, so that goals are reached
        theta *= 0.1
        theta[1] += 5.0  # first hidden unit ~ tanh(5 * scaled velocity)
        theta[policy.hidden[0] * policy.obs_dim + policy.hidden[0]] += 3.0  # force follows it
    return theta


@pytest.mark.parametrize("name", sorted(BATCHED))
def test_registered_spaces_run_on_batched_slots_in_the_worker(name):
    """The worker picks the batched physics; its returns agree with one gymnasium env per
    slot, and equal themselves bit for bit whatever the worker's number of slots."""
    space = tasks.get(name)
    if name == "cartpole":
        # Not on by default yet: tests/test_pool.py inspects GymSlots' envs for cartpole.
        space = dataclasses.replace(space, make_slots=CartPoleSlots)
    assert space.make_slots is BATCHED[name]
    env = space.make_env()
    policy = MLPPolicy.for_spaces(env.observation_space, env.action_space, hidden=(8,))
    rng = np.random.default_rng(5)
    thetas = {f"k{i}": _policy_params(name, policy, rng) for i in range(3)}
    task_list = _mixed_tasks(space, 4, seed=9)
    jobs = [EpisodeJob(Stored(f"k{i % 3}"), task_list[i % 4], 20 + i) for i in range(10)]
    short = dataclasses.replace(space, max_episode_steps=250)
    reference = Worker(short, policy, num_envs=4)
    assert isinstance(reference.slots, BATCHED[name])
    expected = reference.run(jobs, thetas)
    for num_envs in (1, 3, 10):
        got = Worker(short, policy, num_envs=num_envs).run(jobs, thetas)
        np.testing.assert_array_equal(got.returns, expected.returns)
        np.testing.assert_array_equal(got.lengths, expected.lengths)
    gym = Worker(dataclasses.replace(short, make_slots=None), policy, num_envs=4).run(jobs, thetas)
    np.testing.assert_allclose(gym.returns, expected.returns, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(gym.lengths, expected.lengths)
    assert len(np.unique(expected.returns)) > 2  # real, varied episodes


def test_batched_and_config_spaces_are_identical_on_ray_and_local(ray_session):
    """Ray ships the spaces to its workers: batched physics and a gymnasium-id space built
    from config give the local backend's returns, bit for bit, with 2 workers."""
    import yaml

    from coevo.config import parse_config
    from coevo.run_setup import prepare

    example = yaml.safe_load(
        (Path(__file__).resolve().parents[2] / "conf/task/custom_example.yaml").read_text()
    )
    custom, _ = prepare(parse_config({"task": example}))
    for space in (tasks.get("pendulum"), custom):
        space = dataclasses.replace(space, max_episode_steps=60)
        env = space.make_env()
        policy = MLPPolicy.for_spaces(env.observation_space, env.action_space, hidden=(8,))
        rng = np.random.default_rng(2)
        pairs = [(policy.init(rng), task) for task in _mixed_tasks(space, 4, seed=1)]
        with EvaluationPool(space, policy, "local", 1, envs_per_worker=3) as pool:
            expected = pool.evaluate(pairs, episodes=2, seed=8)
        with EvaluationPool(space, policy, "ray", 2, envs_per_worker=4) as pool:
            got = pool.evaluate(pairs, episodes=2, seed=8)
        np.testing.assert_array_equal(got, expected)
        assert len(np.unique(expected)) == expected.size


def test_acrobot_reach_ends_at_its_goal_height_as_gymnasium_would():
    """A low goal ends episodes sooner than gymnasium's 1.0, a high one later, on both the
    batched physics and the gymnasium env; at 1.0 they end where gymnasium's Acrobot does."""
    space = tasks.get("acrobot_reach")
    lengths = {}
    for goal in (0.0, 1.0, 1.8):
        task = space.task(goal_height=goal)
        env = space.make_env()
        env.set_task(task.as_dict())
        obs, _ = env.reset(seed=3)
        slots = AcrobotReachSlots(1)
        got = slots.reset_slot(0, task, 3)
        steps = 0
        while steps < 500:
            steps += 1
            action = 2 if obs[5] > 0 else 0  # pump: torque along the second joint's velocity
            obs, _, terminated, _, _ = env.step(action)
            got, _, done, _ = slots.step_slots(np.array([0]), np.array([action]))
            np.testing.assert_allclose(got[0], obs, rtol=1e-6, atol=1e-7)
            assert bool(done[0]) == terminated
            if terminated:
                break
        lengths[goal] = steps
    assert lengths[0.0] < lengths[1.0] < lengths[1.8] < 500
    gym_env = tasks.get("acrobot").make_env()
    obs, _ = gym_env.reset(seed=3)
    gym_steps = 0
    while gym_steps < 500:
        gym_steps += 1
        obs, _, terminated, _, _ = gym_env.step(2 if obs[5] > 0 else 0)
        if terminated:
            break
    assert gym_steps == lengths[1.0]


class _ColumnRewardSlots(PendulumSlots):
    """A user's batched slots that return rewards and done flags as columns ([n, 1])."""

    def step_slots(self, slots, actions):
        obs, rewards, done, errors = super().step_slots(slots, actions)
        return obs, rewards[:, None], done[:, None], errors


class _ListRewardSlots(PendulumSlots):
    """A user's batched slots that return rewards and done flags as Python lists."""

    def step_slots(self, slots, actions):
        obs, rewards, done, errors = super().step_slots(slots, actions)
        return obs, rewards.tolist(), done.tolist(), errors


class _ExtraRewardSlots(PendulumSlots):
    """A user's batched slots whose rewards hold one value too many."""

    def step_slots(self, slots, actions):
        obs, rewards, done, errors = super().step_slots(slots, actions)
        return obs, np.append(rewards, 0.0), done, errors


def _pendulum_pool(make_slots):
    space = dataclasses.replace(tasks.get("pendulum"), make_slots=make_slots)
    env = space.make_env()
    policy = MLPPolicy.for_spaces(env.observation_space, env.action_space, hidden=(8,))
    pairs = [(policy.init(np.random.default_rng(i)), space.initial_task()) for i in range(3)]
    return EvaluationPool(space, policy, "local", envs_per_worker=2), pairs


def test_a_users_batched_slots_may_return_rewards_and_done_as_columns():
    pool, pairs = _pendulum_pool(PendulumSlots)
    with pool:
        expected = pool.evaluate(pairs, episodes=2, seed=4)
    for slots in (_ColumnRewardSlots, _ListRewardSlots):
        pool, pairs = _pendulum_pool(slots)
        with pool:
            np.testing.assert_array_equal(pool.evaluate(pairs, episodes=2, seed=4), expected)


def test_a_users_batched_slots_may_return_columns_to_ppo_too():
    """PPO's trajectory streams read the same slots: the same streams either way."""
    pytest.importorskip("torch")
    from coevo.optimizers.ppo import PPO
    from coevo.optimizers.ppo_config import PPOConfig
    from coevo.policies import make_policy

    streams = {}
    for slots in (PendulumSlots, _ColumnRewardSlots, _ListRewardSlots):
        space = dataclasses.replace(tasks.get("pendulum"), make_slots=slots)
        env = space.make_env()
        policy = make_policy("actor_critic", env.observation_space, env.action_space, {})
        ppo = PPO(PPOConfig(n_steps=64), policy.num_params, policy=policy)
        theta = policy.init(np.random.default_rng(0))
        state = ppo.init_state(theta, np.random.default_rng(0))
        with EvaluationPool(space, policy, "local", envs_per_worker=2) as pool:
            asked = ppo.ask(
                theta, state, [space.initial_task()] * 2, np.random.default_rng(1), pool.register
            )
            streams[slots.__name__] = pool.dispatch(asked.jobs)
    for name in ("_ColumnRewardSlots", "_ListRewardSlots"):
        for got, expected in zip(streams[name], streams["PendulumSlots"], strict=True):
            assert got.error == expected.error == ""
            np.testing.assert_array_equal(got.rewards, expected.rewards)
            np.testing.assert_array_equal(got.terminated, expected.terminated)


def test_a_users_batched_slots_with_rewards_of_another_size_are_named():
    pool, pairs = _pendulum_pool(_ExtraRewardSlots)
    with pool, pytest.raises(ValueError) as raised:
        pool.evaluate(pairs, episodes=2, seed=4)
    assert "_ExtraRewardSlots.step_slots returned rewards of shape (3,) for 2 slots" in str(
        raised.value
    )
