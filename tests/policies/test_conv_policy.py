"""The conv actor-critic (`policy=conv_actor_critic`): its input shape from the maze's
observation space, its layout, numpy against torch and by hand, rows independent of the
batch, weights through the pool's registered vectors, PPO updates on mazes."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest
from phrases import assert_says

from coevo import tasks
from coevo.config import parse_config
from coevo.errors import ConfigError
from coevo.optimizers.ppo import PPO
from coevo.optimizers.ppo_config import PPOConfig
from coevo.optimizers.ppo_learner import PPOState, Rollout, update, update_many
from coevo.policies import make_policy
from coevo.policies.conv_actor_critic import ConvActorCriticSpec
from coevo.pool import EvaluationPool
from coevo.pool.jobs import EpisodeJob, Stored
from coevo.tasks.maze import Maze, MazeEnv

torch = pytest.importorskip("torch")

T, E = 16, 3


def _maze_spec(**options) -> ConvActorCriticSpec:
    env = tasks.get("maze").make_env()
    spec = make_policy("conv_actor_critic", env.observation_space, env.action_space, options)
    assert isinstance(spec, ConvActorCriticSpec)
    return spec


def _maze_obs(count: int, seed: int) -> np.ndarray:
    """Observations of random mazes along random walks (real views, not noise)."""
    rng = np.random.default_rng(seed)
    space = tasks.get("maze")
    env = space.make_env()
    rows = []
    while len(rows) < count:
        env.set_task(space.sample(rng))
        obs, _ = env.reset()
        for _ in range(8):
            rows.append(obs)
            obs, *_ = env.step(int(rng.integers(0, 3)))
    return np.stack(rows[:count])


def test_the_input_shape_comes_from_the_maze_observation_space():
    spec = _maze_spec(hidden=[32])
    assert spec.grid == (5, 5, 2) and spec.obs_dim == 54 and spec.act_dim == 3
    # 16 filters of 3 x 3 x 2 on the 5 x 5 view: 3 x 3 positions; then the direction.
    assert spec.encoder_shapes() == (("conv.weight", (16, 18)), ("conv.bias", (16,)))
    assert spec.features_dim == 9 * 16 + 4
    shapes = {name: segment.shape for name, segment in spec.segments.items()}
    assert shapes["pi.0.weight"] == (32, 148) and shapes["vf.0.weight"] == (32, 148)
    assert list(spec.segments)[:2] == ["conv.weight", "conv.bias"]
    assert spec.num_params == 16 * 18 + 16 + 2 * (32 * 148 + 32) + 3 * 32 + 3 + 32 + 1
    # The space is a flat Box to everything else, and keeps its grid through pickling.
    space = tasks.get("maze").make_env().observation_space
    assert space == gym.spaces.Box(0.0, 1.0, (54,), dtype=np.float32)
    assert pickle.loads(pickle.dumps(space)).grid == (5, 5, 2)
    # Another view size: another grid, read from the env's space.
    env = MazeEnv(view_size=7)
    other = make_policy("conv_actor_critic", env.observation_space, env.action_space, {})
    assert other.grid == (7, 7, 2) and other.positions == 25


def test_the_convolution_is_the_one_written_by_hand():
    spec = _maze_spec(hidden=[8], kwargs={"filters": 2, "shared": True})
    theta = spec.init(np.random.default_rng(1))
    obs = _maze_obs(3, seed=2)
    features = spec.encode(np.tile(theta, (3, 1)), obs)
    weight = spec.view(theta, "conv.weight").reshape(2, 3, 3, 2)  # [filter, dy, dx, channel]
    bias = spec.view(theta, "conv.bias")
    for row in range(3):
        grid = obs[row, :50].reshape(5, 5, 2)
        expected = [
            max(0.0, float((grid[y : y + 3, x : x + 3] * weight[f]).sum() + bias[f]))
            for y in range(3)
            for x in range(3)
            for f in range(2)
        ]
        np.testing.assert_allclose(features[row, :18], expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(features[row, 18:], obs[row, 50:])  # the direction


def test_numpy_and_torch_agree_and_rows_do_not_depend_on_the_batch():
    spec = _maze_spec(hidden=[16, 16], kwargs={"normalize_obs": True})
    rng = np.random.default_rng(3)
    params = np.stack([spec.init(rng) for _ in range(6)])
    obs = _maze_obs(6, seed=4)
    noise = rng.random(6)
    together = spec.sample(params, obs, noise)
    for row in range(6):
        alone = spec.sample(params[row : row + 1], obs[row : row + 1], noise[row : row + 1])
        for whole, single in zip(together, alone, strict=True):
            assert whole[row].tobytes() == single[0].tobytes()
    actions, _, log_probs, values = together
    module = spec.to_torch(params[0])
    normalised = torch.from_numpy(spec.normalize(params[:1], obs))
    torch_log_probs, _, torch_values = module.evaluate(normalised, torch.from_numpy(actions))
    first = spec.sample(np.tile(params[0], (6, 1)), obs, noise)
    np.testing.assert_allclose(torch_log_probs.detach().numpy(), first[2], atol=1e-5)
    np.testing.assert_allclose(torch_values.detach().numpy(), first[3], atol=1e-5)
    np.testing.assert_array_equal(module.flat_into(params[0]), params[0])
    assert log_probs.shape == values.shape == (6,) and set(actions) <= {0, 1, 2}


def test_init_and_actions_are_deterministic():
    spec = _maze_spec()
    a, b = (spec.init(np.random.default_rng(5)) for _ in range(2))
    assert a.tobytes() == b.tobytes() and a.dtype == np.float32
    assert a.tobytes() != spec.init(np.random.default_rng(6)).tobytes()
    obs = _maze_obs(10, seed=7)
    first = spec.act(np.tile(a, (10, 1)), obs)
    assert first.tobytes() == spec.act(np.tile(b, (10, 1)), obs).tobytes()
    again = pickle.loads(pickle.dumps(spec))
    assert again == spec and again.act(np.tile(a, (10, 1)), obs).tobytes() == first.tobytes()


@pytest.mark.parametrize(
    "options, field, phrases",
    [
        ({"kwargs": {"kernel": 6}}, "policy.kwargs.kernel", ["larger than the 5 x 5 grid", "5"]),
        ({"kwargs": {"filters": 0}}, "policy.kwargs.filters", ["integer >= 1", "0"]),
        ({"kwargs": {"grid": [9, 9, 2]}}, "policy.kwargs.grid", ["162 entries", "only 54"]),
        ({"kwargs": {"grid": [5, 5]}}, "policy.kwargs.grid", ["[height, width, channels]"]),
        ({"kwargs": {"depth": 2}}, "policy.kwargs.depth", ["conv_actor_critic", "filters"]),
        ({"action": "argmax"}, "policy.action", ["leave it unset", "argmax"]),
    ],
)
def test_bad_settings_are_refused_by_field(options, field, phrases):
    with pytest.raises(ConfigError) as refusal:
        _maze_spec(**options)
    assert_says(str(refusal.value), field, *phrases)


def test_a_flat_box_needs_the_grid_said():
    flat = gym.spaces.Box(0.0, 1.0, (12,), dtype=np.float32)
    actions = gym.spaces.Discrete(2)
    with pytest.raises(ConfigError) as refusal:
        make_policy("conv_actor_critic", flat, actions, {})
    assert_says(str(refusal.value), "policy.kwargs.grid", "GridBox", "[height, width, channels]")
    spec = make_policy("conv_actor_critic", flat, actions, {"kwargs": {"grid": [3, 4, 1]}})
    assert spec.grid == (3, 4, 1) and spec.features_dim == 2 * 16  # 1 x 2 positions, no extra


def test_run_configs_pick_it_with_its_own_default_layers():
    config = parse_config({"optimizer": {"name": "ppo"}, "policy": {"name": "conv_actor_critic"}})
    assert config.policy.name == "conv_actor_critic" and config.policy.hidden == (64,)


def test_weights_travel_as_registered_vectors_through_the_pool():
    """The pool ships a registered vector to its workers; their episodes give the returns
    of the same weights played here on a single env."""
    space = tasks.get("maze")
    spec = _maze_spec(hidden=[16])
    rows = tuple("." * 13 for _ in range(13))
    levels = [Maze(rows, (0, y), 0, (4 + y, y)) for y in range(4)]
    thetas = [spec.init(np.random.default_rng(seed)) for seed in range(3)]
    with EvaluationPool(space, spec, "local", 2, envs_per_worker=3) as pool:
        keys = [pool.register(theta) for theta in thetas]
        jobs = [EpisodeJob(Stored(key), level, 0) for key in keys for level in levels]
        results = pool.dispatch(jobs)
    got = np.array([r.ret for r in results]).reshape(3, 4)
    expected = np.zeros((3, 4))
    for i, theta in enumerate(thetas):
        for j, level in enumerate(levels):
            env = MazeEnv(level)
            obs, _ = env.reset(seed=0)
            done = False
            while not done:
                action = int(spec.act(theta[None], obs[None])[0])
                obs, reward, terminated, truncated, _ = env.step(action)
                expected[i, j] += reward
                done = terminated or truncated
    np.testing.assert_array_equal(got, expected)
    assert got.max() > 0 and got.min() == 0  # some goals reached, some not


def _rollout(spec: ConvActorCriticSpec, theta: np.ndarray, seed: int) -> Rollout:
    rng = np.random.default_rng(seed)
    obs = _maze_obs(T * E, seed)
    actions, _, log_probs, values = spec.sample(np.tile(theta, (T * E, 1)), obs, rng.random(T * E))
    ended = rng.random((T, E)) < 0.1
    return Rollout(
        obs=obs.reshape(T, E, -1),
        actions=actions.reshape(T, E),
        log_probs=log_probs.reshape(T, E),
        rewards=np.where(ended, rng.random((T, E)), 0.0).astype(np.float32),
        terminated=ended,
        truncated=np.zeros((T, E), dtype=bool),
        values=values.reshape(T, E),
        next_values=np.zeros((T, E), dtype=np.float32),
    )


def test_ppo_updates_move_the_filters_and_a_pair_gets_its_bits_alone_or_batched():
    spec = _maze_spec(hidden=[16])
    config = PPOConfig(n_envs=E, n_steps=T, batch_size=16, n_epochs=2, learning_rate=1e-3)
    thetas = [spec.init(np.random.default_rng(pair)) for pair in range(3)]
    states = [PPOState.fresh(spec, seed=10 + pair) for pair in range(3)]
    rollouts = [_rollout(spec, theta, seed=20 + pair) for pair, theta in enumerate(thetas)]
    together = update_many(spec, config, thetas, states, rollouts)
    for pair in range(3):
        (alone,) = update_many(spec, config, [thetas[pair]], [states[pair]], [rollouts[pair]])
        assert not alone.error and alone.theta is not None and alone.info is not None
        assert alone.theta.tobytes() == together[pair].theta.tobytes()
        moved = alone.theta - thetas[pair]
        assert np.abs(spec.view(moved, "conv.weight")).max() > 0  # the filters learn
        assert np.isfinite(alone.info.value_loss) and alone.info.epochs == 2
    theta, state, _ = update(spec, config, thetas[0], states[0], rollouts[0])
    assert theta.tobytes() == together[0].theta.tobytes() and state.updates == 1


def test_ppo_trains_it_on_mazes_through_the_pool():
    space = tasks.get("maze")
    spec = _maze_spec(hidden=[16])
    config = PPOConfig(n_envs=2, n_steps=32, batch_size=32, n_epochs=2)
    optimizer = PPO(config, spec.num_params, policy=spec)
    theta = spec.init(np.random.default_rng(0))
    state = optimizer.init_state(theta, np.random.default_rng(1))
    rng = np.random.default_rng(2)
    levels = [space.sample(rng) for _ in range(2)]
    with EvaluationPool(space, spec, "local", 1, envs_per_worker=4) as pool:
        for _ in range(2):
            asked = optimizer.ask(theta, state, levels, rng, pool.register)
            (told,) = optimizer.tell_many([(theta, state, asked, pool.dispatch(asked.jobs))])
            assert told.record.applied, told.record.reason
            assert told.theta.tobytes() != theta.tobytes()
            theta, state = told.theta, told.state
    assert state.updates == 2
