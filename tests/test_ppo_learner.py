"""The PPO learner side by side with Stable-Baselines3: GAE, one update, the loss by hand,
the actor-critic in numpy vs torch, failure reasons and exact resumption."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest

from coevo.errors import ConfigError
from coevo.optimizers.ppo_learner import (
    PPOConfig,
    PPOState,
    PPOUpdateError,
    Rollout,
    check_config,
    compute_gae,
    ppo_loss,
    update,
)
from coevo.policies.actor_critic import ActorCriticSpec

sb3 = pytest.importorskip("stable_baselines3")
torch = pytest.importorskip("torch")

T, E = 24, 3


def _spec(env_id: str, **options) -> ActorCriticSpec:
    env = gym.make(env_id)
    return ActorCriticSpec.for_spaces(env.observation_space, env.action_space, **options)


def _rollout(spec: ActorCriticSpec, theta: np.ndarray, seed: int) -> Rollout:
    """A batch acted by the policy on random observations, with random episode ends."""
    rng = np.random.default_rng(seed)
    obs = rng.standard_normal((T, E, spec.obs_dim)).astype(np.float32)
    params = np.tile(theta, (T * E, 1))
    if spec.discrete:
        noise = rng.random(T * E)
    else:
        noise = rng.standard_normal((T * E, spec.act_dim)).astype(np.float32)
    actions, _, log_probs, values = spec.sample(params, obs.reshape(T * E, -1), noise)
    ended = rng.random((T, E))
    terminated = ended < 0.08
    truncated = (ended > 0.93) & ~terminated
    next_values = np.where(truncated, rng.standard_normal((T, E)), 0.0).astype(np.float32)
    next_values[-1] = np.where(terminated[-1] | truncated[-1], next_values[-1], 0.7)
    shape = (T, E) if spec.discrete else (T, E, spec.act_dim)
    return Rollout(
        obs=obs,
        actions=actions.reshape(shape),
        log_probs=log_probs.reshape(T, E),
        rewards=rng.standard_normal((T, E)).astype(np.float32),
        terminated=terminated,
        truncated=truncated,
        values=values.reshape(T, E),
        next_values=next_values,
    )


def _sb3_buffer(spec, rollout: Rollout, gamma: float, lam: float, env: gym.Env):
    """SB3's own RolloutBuffer filled as its `collect_rollouts` fills it: a truncated step's
    reward gets gamma x the terminal observation's value, episode starts mark the cuts."""
    from stable_baselines3.common.buffers import RolloutBuffer

    buffer = RolloutBuffer(
        T, env.observation_space, env.action_space, "cpu", gamma=gamma, gae_lambda=lam, n_envs=E
    )
    ended = rollout.terminated | rollout.truncated
    for t in range(T):
        reward = rollout.rewards[t] + np.where(
            rollout.truncated[t], gamma * rollout.next_values[t], 0.0
        )
        start = ended[t - 1] if t > 0 else np.zeros(E, dtype=bool)
        buffer.add(
            rollout.obs[t],
            rollout.actions[t],
            reward.astype(np.float32),
            start,
            torch.from_numpy(rollout.values[t]),
            torch.from_numpy(rollout.log_probs[t]),
        )
    buffer.compute_returns_and_advantage(torch.from_numpy(rollout.next_values[-1]), ended[-1])
    return buffer


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_gae_matches_sb3_rollout_buffer(env_id):
    spec = _spec(env_id)
    theta = spec.init(np.random.default_rng(0))
    rollout = _rollout(spec, theta, seed=1)
    assert rollout.terminated.any() and rollout.truncated.any()
    gamma, lam = 0.97, 0.9
    advantages, returns = compute_gae(
        rollout.rewards,
        rollout.values,
        rollout.next_values,
        rollout.terminated,
        rollout.truncated,
        gamma,
        lam,
    )
    buffer = _sb3_buffer(spec, rollout, gamma, lam, gym.make(env_id))
    np.testing.assert_allclose(advantages, buffer.advantages, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(returns, buffer.returns, rtol=1e-5, atol=1e-5)


def test_gae_bootstraps_truncation_but_not_termination():
    rewards = np.ones((2, 1), dtype=np.float32)
    values = np.zeros((2, 1), dtype=np.float32)
    next_values = np.array([[10.0], [0.0]], dtype=np.float32)
    ends = np.array([[True], [False]])
    no_end = np.zeros((2, 1), dtype=bool)
    truncated_adv, _ = compute_gae(rewards, values, next_values, no_end, ends, 0.5, 1.0)
    terminated_adv, _ = compute_gae(rewards, values, next_values, ends, no_end, 0.5, 1.0)
    assert truncated_adv[0, 0] == pytest.approx(1.0 + 0.5 * 10.0)
    assert terminated_adv[0, 0] == pytest.approx(1.0)
    # Neither leaks the next episode's advantage into the one that ended.
    assert truncated_adv[1, 0] == terminated_adv[1, 0] == pytest.approx(1.0)


def _sb3_model(env_id: str, config: PPOConfig):
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    return PPO(
        "MlpPolicy",
        make_vec_env(env_id, n_envs=E, seed=0),
        n_steps=T,
        batch_size=config.batch_size,
        n_epochs=config.n_epochs,
        gamma=config.gamma,
        gae_lambda=config.gae_lambda,
        clip_range=config.clip_range,
        clip_range_vf=config.clip_range_vf,
        ent_coef=config.ent_coef,
        vf_coef=config.vf_coef,
        max_grad_norm=config.max_grad_norm,
        learning_rate=config.learning_rate,
        device="cpu",
        seed=0,
    )


_SB3_NAMES = {
    "pi.0": "mlp_extractor.policy_net.0",
    "pi.1": "mlp_extractor.policy_net.2",
    "vf.0": "mlp_extractor.value_net.0",
    "vf.1": "mlp_extractor.value_net.2",
    "action": "action_net",
    "value": "value_net",
}


def _sb3_name(segment: str) -> str:
    if segment == "log_std":
        return "log_std"
    layer, kind = segment.rsplit(".", 1)
    return f"{_SB3_NAMES[layer]}.{kind}"


def _to_sb3(spec, theta, policy) -> None:
    params = dict(policy.named_parameters())
    with torch.no_grad():
        for name in spec.segments:
            part = spec.view(theta, name)
            params[_sb3_name(name)].copy_(torch.from_numpy(np.array(part)))


def _from_sb3(spec, policy) -> np.ndarray:
    params = dict(policy.named_parameters())
    theta = np.zeros(spec.num_params, dtype=np.float32)
    for name in spec.segments:
        spec.view(theta, name)[...] = params[_sb3_name(name)].detach().numpy()
    return theta


@pytest.mark.parametrize(
    "env_id, clip_vf, ent_coef", [("CartPole-v1", None, 0.01), ("Pendulum-v1", 0.2, 0.0)]
)
def test_update_matches_sb3_train(env_id, clip_vf, ent_coef):
    """Same weights, same batch, full-batch minibatches: SB3's `train()` and ours give the
    same parameters after three epochs of Adam."""
    config = PPOConfig(
        n_envs=E,
        n_steps=T,
        batch_size=T * E,
        n_epochs=3,
        gamma=0.95,
        gae_lambda=0.9,
        clip_range=0.2,
        clip_range_vf=clip_vf,
        ent_coef=ent_coef,
        learning_rate=3e-4,
    )
    spec = _spec(env_id)
    theta = spec.init(np.random.default_rng(3))
    rollout = _rollout(spec, theta, seed=4)
    model = _sb3_model(env_id, config)
    _to_sb3(spec, theta, model.policy)
    np.testing.assert_array_equal(_from_sb3(spec, model.policy), theta)
    model.rollout_buffer = _sb3_buffer(
        spec, rollout, config.gamma, config.gae_lambda, gym.make(env_id)
    )
    from stable_baselines3.common.logger import configure

    model.set_logger(configure(None, []))
    model.train()
    expected = _from_sb3(spec, model.policy)
    ours, state, info = update(spec, config, theta, PPOState.fresh(spec, 0), rollout)
    assert info.epochs == 3 and state.updates == 1
    moved = np.abs(expected - theta).max()
    assert moved > 1e-4  # the update did something
    np.testing.assert_allclose(ours, expected, atol=2e-6)


def test_loss_by_hand():
    """The loss on a fixed batch equals the PPO formulas written out in numpy."""
    spec = _spec("CartPole-v1", hidden=(8,))
    theta = spec.init(np.random.default_rng(5))
    rng = np.random.default_rng(6)
    n = 16
    obs = rng.standard_normal((n, spec.obs_dim)).astype(np.float32)
    actions = rng.integers(0, 2, n)
    old_log_probs = np.log(rng.uniform(0.3, 0.7, n)).astype(np.float32)
    old_values = rng.standard_normal(n).astype(np.float32)
    advantages = rng.standard_normal(n).astype(np.float32)
    returns = rng.standard_normal(n).astype(np.float32)
    config = PPOConfig(clip_range=0.1, clip_range_vf=0.3, ent_coef=0.05, vf_coef=0.7)
    batch = {
        "obs": torch.from_numpy(obs),
        "actions": torch.from_numpy(actions),
        "log_probs": torch.from_numpy(old_log_probs),
        "values": torch.from_numpy(old_values),
        "advantages": torch.from_numpy(advantages),
        "returns": torch.from_numpy(returns),
    }
    loss, parts = ppo_loss(spec.to_torch(theta), batch, config, clip_range=0.1)

    logits, values = spec.forward(np.tile(theta, (n, 1)), obs)
    logits = logits.astype(np.float64)
    log_all = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    log_probs = log_all[np.arange(n), actions]
    entropy = -(np.exp(log_all) * log_all).sum(axis=1)
    adv = (advantages - advantages.mean()) / (advantages.std(ddof=1) + 1e-8)
    ratio = np.exp(log_probs - old_log_probs)
    policy_loss = -np.minimum(adv * ratio, adv * np.clip(ratio, 0.9, 1.1)).mean()
    clipped_values = old_values + np.clip(values - old_values, -0.3, 0.3)
    value_loss = ((returns - clipped_values) ** 2).mean()
    expected = policy_loss - 0.05 * entropy.mean() + 0.7 * value_loss
    assert parts["policy_loss"] == pytest.approx(policy_loss, rel=1e-5)
    assert parts["value_loss"] == pytest.approx(value_loss, rel=1e-5)
    assert loss.item() == pytest.approx(expected, rel=1e-5)


def test_numpy_and_torch_actor_critic_agree():
    for env_id, options in [("CartPole-v1", {"shared": True}), ("Pendulum-v1", {})]:
        spec = _spec(env_id, normalize_obs=True, **options)
        theta = spec.init(np.random.default_rng(7))
        spec.view(theta, "obs_mean")[:] = 0.3
        spec.view(theta, "obs_var")[:] = 2.0
        rollout = _rollout(spec, theta, seed=8)
        obs = rollout.obs.reshape(T * E, -1)
        module = spec.to_torch(theta)
        actions = rollout.actions.reshape(T * E, -1) if not spec.discrete else None
        actions = actions if actions is not None else rollout.actions.reshape(-1)
        log_probs, _, values = module.evaluate(
            torch.from_numpy(spec.normalize(theta[None], obs)), torch.from_numpy(actions)
        )
        np.testing.assert_allclose(log_probs.detach().numpy(), rollout.log_probs.ravel(), atol=1e-5)
        np.testing.assert_allclose(values.detach().numpy(), rollout.values.ravel(), atol=1e-5)
        np.testing.assert_array_equal(module.flat_into(theta), theta)


def test_batched_sampling_rows_do_not_depend_on_the_batch():
    spec = _spec("Pendulum-v1")
    rng = np.random.default_rng(9)
    params = np.stack([spec.init(rng) for _ in range(5)])
    obs = rng.standard_normal((5, spec.obs_dim)).astype(np.float32)
    noise = rng.standard_normal((5, 1)).astype(np.float32)
    together = spec.sample(params, obs, noise)
    for row in range(5):
        alone = spec.sample(params[row : row + 1], obs[row : row + 1], noise[row : row + 1])
        for whole, single in zip(together, alone, strict=True):
            assert whole[row].tobytes() == single[0].tobytes()


def test_state_resumes_exactly_through_pickle():
    spec = _spec("Pendulum-v1", normalize_obs=True)
    config = PPOConfig(
        n_envs=E, n_steps=T, batch_size=16, n_epochs=2, schedule="linear", anneal_updates=10
    )
    theta = spec.init(np.random.default_rng(10))
    state = PPOState.fresh(spec, seed=11)
    theta, state, _ = update(spec, config, theta, state, _rollout(spec, theta, seed=12))
    restored = pickle.loads(pickle.dumps((theta, state)))
    second = _rollout(spec, theta, seed=13)
    a_theta, a_state, a_info = update(spec, config, theta, state, second)
    b_theta, b_state, b_info = update(spec, config, *restored, second)
    assert a_theta.tobytes() == b_theta.tobytes()
    assert a_state.adam_m.tobytes() == b_state.adam_m.tobytes()
    assert a_state.rng_state == b_state.rng_state and a_state.updates == 2
    assert a_info.learning_rate == pytest.approx(3e-4 * (1 - 2 / 10))
    # Observation statistics moved into the vector after each update.
    np.testing.assert_allclose(spec.view(a_theta, "obs_mean"), a_state.obs_mean, rtol=1e-6)


def test_failed_updates_give_reasons_and_leave_the_state_alone():
    spec = _spec("CartPole-v1")
    config = PPOConfig(n_envs=E, n_steps=T, batch_size=T * E, n_epochs=1)
    theta = spec.init(np.random.default_rng(14))
    state = PPOState.fresh(spec, seed=15)
    before = pickle.dumps(state)
    rollout = _rollout(spec, theta, seed=16)
    rollout.rewards[3, 1] = np.nan
    with pytest.raises(PPOUpdateError, match="non-finite advantages"):
        update(spec, config, theta, state, rollout)
    broken = theta.copy()
    spec.view(broken, "value.weight")[:] = np.float32(3e38)
    with pytest.raises(PPOUpdateError, match="non-finite"):
        update(spec, config, broken, state, _rollout(spec, theta, seed=16))
    tiny = PPOConfig(n_envs=E, n_steps=T, batch_size=T * E, n_epochs=1, max_update_norm=1e-6)
    with pytest.raises(PPOUpdateError, match="exploding update"):
        update(spec, tiny, theta, state, _rollout(spec, theta, seed=16))
    assert pickle.dumps(state) == before


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("batch_size", 1, "optimizer.batch_size: must be an integer >= 2"),
        ("gae_lambda", 1.5, "optimizer.gae_lambda: must be in [0, 1]"),
        ("schedule", "cosine", "optimizer.schedule: must be one of: constant, linear"),
        ("clip_range_vf", -1.0, "optimizer.clip_range_vf: must be null or a number > 0"),
    ],
)
def test_config_errors_name_the_field(field, value, message):
    from dataclasses import replace

    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        check_config(replace(PPOConfig(), **{field: value}))
    with pytest.raises(ConfigError, match="optimizer.anneal_updates"):
        check_config(PPOConfig(schedule="linear"))
