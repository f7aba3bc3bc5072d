import gymnasium as gym
import numpy as np
import pytest
import torch

from coevo.errors import ConfigError
from coevo.policies import MLPPolicy, make_policy


def test_parameter_count_and_dtype(cartpole_policy, rng):
    # 4 -> 16 -> 2: 4*16 + 16 + 16*2 + 2
    assert cartpole_policy.num_params == 114
    theta = cartpole_policy.init(rng)
    assert theta.dtype == np.float32 and theta.shape == (114,)


def test_forward_matches_the_torch_module(cartpole_policy, rng):
    thetas = np.stack([cartpole_policy.init(rng) + 0.1 for _ in range(5)])
    obs = rng.standard_normal((5, 4)).astype(np.float32)
    out = cartpole_policy.forward(thetas, obs)
    for i in range(5):
        module = cartpole_policy.to_torch(thetas[i])
        expected = module(torch.from_numpy(obs[i : i + 1])).detach().numpy()[0]
        np.testing.assert_allclose(out[i], expected, rtol=1e-5, atol=1e-6)


def test_each_row_is_bit_identical_whatever_the_batch(rng):
    spec = MLPPolicy(
        obs_dim=24,
        act_dim=4,
        discrete=False,
        hidden=(64, 64),
        act_low=(-1.0,) * 4,
        act_high=(1.0,) * 4,
    )
    thetas = np.stack([spec.init(rng) for _ in range(33)])
    obs = rng.standard_normal((33, 24)).astype(np.float32)
    full = spec.act(thetas, obs)
    for i in range(33):
        alone = spec.act(thetas[i : i + 1].copy(), obs[i : i + 1].copy())
        assert np.array_equal(alone[0], full[i])
    picked = np.array([31, 2, 17])
    assert np.array_equal(spec.act(thetas[picked], obs[picked]), full[picked])


def test_discrete_head_gives_valid_actions(cartpole_policy, rng):
    thetas = np.stack([cartpole_policy.init(rng) for _ in range(50)])
    actions = cartpole_policy.act(thetas, rng.standard_normal((50, 4)).astype(np.float32))
    assert actions.dtype.kind == "i" and set(actions.tolist()) <= {0, 1}
    assert len(set(actions.tolist())) == 2


def test_continuous_head_stays_in_action_bounds(rng):
    spec = MLPPolicy.for_spaces(
        gym.spaces.Box(-1, 1, (3,)),
        gym.spaces.Box(np.array([-2.0], np.float32), np.array([0.5], np.float32)),
    )
    assert not spec.discrete
    thetas = np.stack([spec.init(rng) * 20 for _ in range(200)])
    actions = spec.act(thetas, rng.standard_normal((200, 3)).astype(np.float32))
    assert actions.shape == (200, 1)
    assert actions.min() >= -2.0 and actions.max() <= 0.5
    assert actions.min() < -1.5 and actions.max() > 0.0  # the whole range is reachable


def test_bad_policy_options_name_the_field():
    space = gym.spaces.Box(-1, 1, (3,))
    with pytest.raises(ConfigError, match="policy.name: unknown policy 'cnn'; allowed: mlp"):
        make_policy("cnn", space, gym.spaces.Discrete(2), {})
    with pytest.raises(ConfigError, match="policy.activation: unknown activation 'gelu'"):
        make_policy("mlp", space, gym.spaces.Discrete(2), {"activation": "gelu"})
