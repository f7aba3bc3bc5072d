"""The PPO learner side by side with Stable-Baselines3: GAE, one update, the loss by hand,
the actor-critic in numpy vs torch, failure reasons and exact resumption."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest

from coevo.errors import ConfigError
from coevo.optimizers.ppo_config import PPOConfig
from coevo.optimizers.ppo_learner import (
    PPOState,
    PPOUpdateError,
    Rollout,
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
    elif spec.use_sde:  # an exploration matrix per sample
        noise = rng.standard_normal((T * E, spec.hidden[-1], spec.act_dim)).astype(np.float32)
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


def _sb3_model(env_id: str, config: PPOConfig, **extra):
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
        **extra,
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


# gSDE as rl-baselines3-zoo's Pendulum-v1 entry (use_sde, sde_sample_freq 4), ent_coef on.
_GSDE = {"use_sde": True, "sde_sample_freq": 4}


@pytest.mark.parametrize(
    "env_id, clip_vf, ent_coef, sde, target_kl",
    [
        ("CartPole-v1", None, 0.01, {}, None),
        ("Pendulum-v1", 0.2, 0.0, {}, None),
        ("Pendulum-v1", None, 0.01, _GSDE, None),
        # target_kl stops the update early; the crossing minibatch counts in the figures.
        ("CartPole-v1", None, 0.01, {}, 1e-6),
    ],
)
def test_update_matches_sb3_train(env_id, clip_vf, ent_coef, sde, target_kl):
    """Same weights, same batch, full-batch minibatches: SB3's `train()` and ours give the
    same parameters after three epochs of Adam (with gSDE too: its log-probs, entropy and
    the gradient through log_std and the mean, not the features)."""
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
        target_kl=target_kl,
    )
    spec = _spec(env_id, **sde)
    theta = spec.init(np.random.default_rng(3))
    rollout = _rollout(spec, theta, seed=4)
    model = _sb3_model(env_id, config, target_kl=target_kl, **sde)
    _to_sb3(spec, theta, model.policy)
    np.testing.assert_array_equal(_from_sb3(spec, model.policy), theta)
    model.rollout_buffer = _sb3_buffer(
        spec, rollout, config.gamma, config.gae_lambda, gym.make(env_id)
    )
    from stable_baselines3.common.logger import Logger

    model.set_logger(Logger(folder=None, output_formats=[]))  # configure() makes /tmp/SB3-*
    model.train()
    expected = _from_sb3(spec, model.policy)
    ours, state, info = update(spec, config, theta, PPOState.fresh(spec, 0), rollout)
    assert (info.epochs == 3) is (target_kl is None) and state.updates == 1
    moved = np.abs(expected - theta).max()
    assert moved > 1e-4  # the update did something
    np.testing.assert_allclose(ours, expected, atol=2e-6)
    # The diagnostics are SB3's train/* figures (approx_kl: the last epoch's; entropy: its
    # entropy_loss with the sign turned; policy_loss: its policy_gradient_loss).
    logged = model.logger.name_to_value
    for ours_value, name, sign in [
        (info.policy_loss, "policy_gradient_loss", 1),
        (info.value_loss, "value_loss", 1),
        (info.entropy, "entropy_loss", -1),
        (info.approx_kl, "approx_kl", 1),
        (info.clip_fraction, "clip_fraction", 1),
        (info.explained_variance, "explained_variance", 1),
    ]:
        assert ours_value == pytest.approx(sign * logged[f"train/{name}"], rel=1e-4, abs=1e-6), name
    # std: SB3 logs it for a policy with a log_std (continuous actions), after the update.
    assert ("train/std" in logged) is (not spec.discrete)
    if spec.discrete:
        assert np.isnan(info.std)
    else:
        assert info.std == pytest.approx(logged["train/std"], rel=1e-5)


@pytest.mark.parametrize(
    "full_std, use_expln, log_std_init", [(True, False, 0.0), (False, True, -0.5)]
)
def test_gsde_matches_sb3_state_dependent_noise(full_std, use_expln, log_std_init):
    """gSDE with the same weights: the numpy rollout's actions (exploration matrices std *
    the stream's standard normals) and log-probs, and the learner's stacked log-probs,
    entropies and values, equal SB3's StateDependentNoiseDistribution's."""
    from coevo.optimizers.ppo_network import StackedActorCritic

    options = dict(full_std=full_std, use_expln=use_expln, log_std_init=log_std_init)
    spec = _spec("Pendulum-v1", use_sde=True, sde_sample_freq=4, **options)
    rng = np.random.default_rng(21)
    theta = spec.init(rng)
    # log_std on both sides of 0, so expln takes both branches.
    spec.view(theta, "log_std")[:] = rng.uniform(-1.5, 1.0, spec.log_std_shape)
    model = _sb3_model(
        "Pendulum-v1",
        PPOConfig(n_envs=E, n_steps=T, batch_size=T * E),
        **_GSDE,
        policy_kwargs=options,
    )
    policy = model.policy
    assert tuple(policy.log_std.shape) == spec.log_std_shape
    _to_sb3(spec, theta, policy)
    n = 7
    obs = rng.standard_normal((n, spec.obs_dim)).astype(np.float32)
    unit = rng.standard_normal((n, spec.hidden[-1], spec.act_dim)).astype(np.float32)
    actions, _, log_probs, values = spec.sample(np.tile(theta, (n, 1)), obs, unit)
    with torch.no_grad():
        obs_t = torch.from_numpy(obs)
        latent = policy.mlp_extractor.forward_actor(obs_t)
        dist = policy.action_dist
        std = dist.get_std(policy.log_std)
        dist.exploration_matrices = std * torch.from_numpy(unit)  # SB3's per-env matrices
        sb3_actions = policy.action_net(latent) + dist.get_noise(latent)
        sb3_values, sb3_log_probs, sb3_entropy = policy.evaluate_actions(
            obs_t, torch.from_numpy(actions)
        )
        net = StackedActorCritic(spec)
        ours = net.evaluate(
            torch.from_numpy(theta[net.start :][None]),
            torch.from_numpy(obs[None]),
            torch.from_numpy(actions[None]),
        )
    np.testing.assert_allclose(actions, sb3_actions.numpy(), atol=1e-5)
    np.testing.assert_allclose(log_probs, sb3_log_probs.numpy(), atol=1e-5)
    np.testing.assert_allclose(values, sb3_values.numpy()[:, 0], atol=1e-5)
    np.testing.assert_allclose(ours[0][0].numpy(), sb3_log_probs.numpy(), atol=1e-5)
    np.testing.assert_allclose(ours[1][0].numpy(), sb3_entropy.numpy(), atol=1e-5)
    np.testing.assert_allclose(ours[2][0].numpy(), sb3_values.numpy()[:, 0], atol=1e-5)
    # The std depends on the state: different observations, different log-densities of
    # the same deviation.
    assert np.ptp(ours[1][0].numpy()) > 1e-3


def test_gsde_settings_are_checked_by_name():
    with pytest.raises(ConfigError, match="policy.kwargs.use_sde"):
        _spec("CartPole-v1", use_sde=True)
    with pytest.raises(ConfigError, match="policy.kwargs.sde_sample_freq: must be -1"):
        _spec("Pendulum-v1", use_sde=True, sde_sample_freq=0)
    with pytest.raises(ConfigError, match="policy.kwargs.full_std: must be true or false"):
        _spec("Pendulum-v1", use_sde=True, full_std="yes")


def test_gsde_noise_is_resampled_every_sde_sample_freq_steps():
    spec = _spec("Pendulum-v1", use_sde=True, sde_sample_freq=4)
    noise = spec.draw_noise(np.random.default_rng(0), 10)
    assert noise.shape == (3, spec.hidden[-1], 1)
    assert [spec.noise_index(t) for t in range(10)] == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2]
    once = _spec("Pendulum-v1", use_sde=True)  # sde_sample_freq -1: at the rollout's start
    assert once.draw_noise(np.random.default_rng(0), 10).shape == (1, once.hidden[-1], 1)
    assert {once.noise_index(t) for t in range(10)} == {0}


def _loss_by_hand(spec, theta, batch, clip, clip_vf, ent_coef, vf_coef):
    """The PPO loss written out in numpy (float64) for one pair's minibatch."""
    obs, actions, old_log_probs, old_values, advantages, returns = batch
    n = len(actions)
    logits, values = spec.forward(np.tile(theta, (n, 1)), obs)
    logits = logits.astype(np.float64)
    log_all = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    log_probs = log_all[np.arange(n), actions]
    entropy = -(np.exp(log_all) * log_all).sum(axis=1)
    adv = (advantages - advantages.mean()) / (advantages.std(ddof=1) + 1e-8)
    ratio = np.exp(log_probs - old_log_probs)
    policy_loss = -np.minimum(adv * ratio, adv * np.clip(ratio, 1 - clip, 1 + clip)).mean()
    clipped_values = old_values + np.clip(values - old_values, -clip_vf, clip_vf)
    value_loss = ((returns - clipped_values) ** 2).mean()
    total = policy_loss - ent_coef * entropy.mean() + vf_coef * value_loss
    return total, policy_loss, value_loss


def test_loss_by_hand():
    """The loss on fixed minibatches of two pairs (different weights, data and clip ranges)
    equals the PPO formulas written out in numpy, pair by pair."""
    from coevo.optimizers.ppo_network import StackedActorCritic

    spec = _spec("CartPole-v1", hidden=(8,))
    rng = np.random.default_rng(6)
    n = 16
    thetas, batches = [], []
    for pair in range(2):
        thetas.append(spec.init(np.random.default_rng(5 + pair)))
        batches.append(
            (
                rng.standard_normal((n, spec.obs_dim)).astype(np.float32),
                rng.integers(0, 2, n),
                np.log(rng.uniform(0.3, 0.7, n)).astype(np.float32),
                rng.standard_normal(n).astype(np.float32),
                rng.standard_normal(n).astype(np.float32) * (1 + pair),
                rng.standard_normal(n).astype(np.float32),
            )
        )
    config = PPOConfig(clip_range=0.1, clip_range_vf=0.3, ent_coef=0.05, vf_coef=0.7)
    net = StackedActorCritic(spec)
    params = torch.from_numpy(np.stack(thetas))
    names = ("obs", "actions", "log_probs", "values", "advantages", "returns")
    batch = {
        name: torch.from_numpy(np.stack([b[column] for b in batches]))
        for column, name in enumerate(names)
    }
    clips = (0.1, 0.25)
    loss, parts = ppo_loss(net, params, batch, config, torch.tensor(clips)[:, None])
    assert loss.shape == (2,)
    for pair in range(2):
        total, policy_loss, value_loss = _loss_by_hand(
            spec, thetas[pair], batches[pair], clips[pair], 0.3, 0.05, 0.7
        )
        assert parts["policy_loss"][pair].item() == pytest.approx(policy_loss, rel=1e-5)
        assert parts["value_loss"][pair].item() == pytest.approx(value_loss, rel=1e-5)
        assert loss[pair].item() == pytest.approx(total, rel=1e-5)


def test_numpy_and_torch_actor_critic_agree():
    for env_id, options in [
        ("CartPole-v1", {"shared": True}),
        ("Pendulum-v1", {}),
        ("Pendulum-v1", {"shared": True, "use_sde": True, "use_expln": True}),
    ]:
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


@pytest.mark.parametrize("sde", [{}, _GSDE])
def test_batched_sampling_rows_do_not_depend_on_the_batch(sde):
    spec = _spec("Pendulum-v1", **sde)
    rng = np.random.default_rng(9)
    params = np.stack([spec.init(rng) for _ in range(5)])
    obs = rng.standard_normal((5, spec.obs_dim)).astype(np.float32)
    noise = np.stack([spec.draw_noise(rng, 1)[0] for _ in range(5)])
    together = spec.sample(params, obs, noise)
    for row in range(5):
        alone = spec.sample(params[row : row + 1], obs[row : row + 1], noise[row : row + 1])
        for whole, single in zip(together, alone, strict=True):
            assert whole[row].tobytes() == single[0].tobytes()


@pytest.mark.parametrize("sde", [{}, _GSDE])
def test_state_resumes_exactly_through_pickle(sde):
    spec = _spec("Pendulum-v1", normalize_obs=True, **sde)
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


def test_a_non_finite_gradient_is_refused_with_its_epoch():
    """A finite loss whose gradient overflows (huge value-head weights) stops the pair at
    that minibatch: the update is refused, naming the gradient and the epoch."""
    spec = _spec("CartPole-v1")
    config = PPOConfig(n_envs=E, n_steps=T, batch_size=T * E, n_epochs=2)
    theta = spec.init(np.random.default_rng(14))
    rollout = _rollout(spec, theta, seed=16)
    spec.view(theta, "value.weight")[:] = np.float32(1e10)
    with pytest.raises(PPOUpdateError, match="non-finite gradient norm in epoch 1"):
        update(spec, config, theta, PPOState.fresh(spec, seed=15), rollout)


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("batch_size", 1, "optimizer.batch_size: must be an integer >= 2"),
        ("gae_lambda", 1.5, "optimizer.gae_lambda: must be a number in [0, 1]"),
        ("schedule", "cosine", "optimizer.schedule: unknown value 'cosine'"),
        ("clip_range_vf", -1.0, "optimizer.clip_range_vf: must be a number > 0"),
    ],
)
def test_config_errors_name_the_field(field, value, message):
    """The learner's settings are the plug-in's one PPOConfig: its ranges refuse a value
    before any update runs, and a linear schedule needs updates to anneal over."""
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        PPOConfig(**{field: value})
    with pytest.raises(ConfigError, match="optimizer.anneal_updates: must be >= 1 with schedule"):
        PPOConfig(schedule="linear")


def _fewer_streams(rollout: Rollout, streams: int) -> Rollout:
    """The first `streams` streams of a rollout (a rollout of another size)."""
    return Rollout(
        **{
            name: None if value is None else value[:, :streams]
            for name, value in vars(rollout).items()
            if name != "last_obs"
        }
    )


@pytest.mark.parametrize("sde", [{}, _GSDE])
def test_a_pair_gets_the_same_bits_alone_or_in_a_batch(sde):
    """update_many stacks the pairs in one torch computation; each pair's weights, Adam
    moments, generator and diagnostics are bit-identical to its update alone, whatever
    its neighbours: pairs of different ages (learning rate, Adam step), target_kl stopping
    them after different epochs, a pair whose update fails, a rollout of another size."""
    from coevo.optimizers.ppo_learner import update_many

    spec = _spec("Pendulum-v1", normalize_obs=True, **sde)
    config = PPOConfig(
        n_envs=E,
        n_steps=T,
        batch_size=16,
        n_epochs=4,
        learning_rate=3e-3,
        schedule="linear",
        anneal_updates=10,
        target_kl=0.005,
    )
    thetas = [spec.init(np.random.default_rng(pair)) for pair in range(6)]
    states = [PPOState.fresh(spec, seed=100 + pair) for pair in range(6)]
    thetas[1], states[1], _ = update(
        spec, config, thetas[1], states[1], _rollout(spec, thetas[1], seed=50)
    )
    rollouts = [_rollout(spec, theta, seed=200 + pair) for pair, theta in enumerate(thetas)]
    spec.view(thetas[4], "value.weight")[:] = np.float32(3e38)
    rollouts[5] = _fewer_streams(rollouts[5], 2)
    together = update_many(spec, config, thetas, states, rollouts)
    assert "non-finite" in together[4].error and together[4].theta is None
    epochs = [done.info.epochs for done in together if done.info]
    assert len(set(epochs)) > 1  # target_kl stopped pairs at different epochs
    assert together[1].info.learning_rate != together[0].info.learning_rate
    for pair in range(6):
        (alone,) = update_many(spec, config, [thetas[pair]], [states[pair]], [rollouts[pair]])
        batched = together[pair]
        assert batched.error == alone.error
        if alone.error:
            continue
        assert batched.theta.tobytes() == alone.theta.tobytes()
        assert batched.state.adam_m.tobytes() == alone.state.adam_m.tobytes()
        assert batched.state.adam_v.tobytes() == alone.state.adam_v.tobytes()
        assert batched.state.adam_step == alone.state.adam_step
        assert batched.state.rng_state == alone.state.rng_state
        assert batched.info == alone.info
