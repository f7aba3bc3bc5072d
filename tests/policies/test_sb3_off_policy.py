"""SB3's off-policy actors as coevo policies: SAC and TD3 (`MlpPolicy`, Box actions) score
what SB3's `evaluate_policy` scores; SAC's `action: gaussian` samples as SB3's
`predict(deterministic=False)` does; what coevo cannot map is refused by name."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from phrases import assert_says

from coevo import tasks
from coevo.errors import ConfigError
from coevo.policies.base import gaussian_from_uniforms
from coevo.policies.loaders import load_sb3_policy
from coevo.pool import EvaluationPool

sb3 = pytest.importorskip("stable_baselines3")
from stable_baselines3.common.evaluation import evaluate_policy  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402

pytestmark = pytest.mark.xdist_group("test_sb3_off_policy")
SEEDS = range(4)


def _small(algo, **kwargs):
    """A small model of `algo` on Pendulum (its own kwargs dicts: SB3 writes into them)."""
    return algo(
        "MlpPolicy",
        "Pendulum-v1",
        policy_kwargs={"net_arch": [32, 32], **kwargs},
        learning_starts=100,
        batch_size=32,
        seed=0,
        device="cpu",
    )


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """SAC and TD3 trained 300 steps (the point is score equality, not quality), saved."""
    path = tmp_path_factory.mktemp("sb3_off_policy")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small nets: threads only contend on a shared machine
    try:
        made = {}
        for algo in (sb3.SAC, sb3.TD3):
            model = _small(algo)
            model.learn(300)
            model.save(path / f"{algo.__name__}.zip")
            made[algo.__name__] = model
    finally:
        torch.set_num_threads(threads)
    return {"path": path, **made}


@pytest.mark.parametrize("algo", ["SAC", "TD3"])
def test_off_policy_actor_scores_what_evaluate_policy_scores(models, algo):
    model = models[algo]
    venv = DummyVecEnv([lambda: gym.make("Pendulum-v1")])
    expected = []
    for seed in SEEDS:  # one seeded episode per call: the reset seeds coevo uses
        venv.seed(seed)
        episode = evaluate_policy(model, venv, n_eval_episodes=1, return_episode_rewards=True)[0]
        expected.append(np.ravel(episode)[0])
    loaded = load_sb3_policy(models["path"] / f"{algo}.zip", "sb3")
    assert loaded.policy.action.bounds == "tanh" and not loaded.policy.action.stochastic
    space = tasks.get("pendulum")
    with EvaluationPool(space, loaded.policy, "local", 1, 8) as pool:
        got = pool.evaluate([(loaded.theta, space.initial_task())], len(SEEDS), seed=0)[0]
    np.testing.assert_allclose(got, expected, rtol=1e-4)
    assert len(set(np.round(expected, 3))) > 1  # distinct episodes, not one number repeated


def test_sac_gaussian_samples_as_sb3_predict_samples(models):
    model = models["SAC"]
    loaded = load_sb3_policy(models["path"] / "SAC.zip", "sb3", options={"action": "gaussian"})
    policy = loaded.policy
    assert policy.action.mode == "gaussian" and policy.noise_dim == 2
    rng = np.random.default_rng(0)
    obs = rng.uniform(-1, 1, (256, 3)).astype(np.float32)
    noise = rng.uniform(1e-6, 1.0, (256, 2))
    got = policy.act(np.stack([loaded.theta] * len(obs)), obs, noise)
    # The same draw through SB3's own actor: tanh(mean + exp(clamped log_std) * z), rescaled.
    with torch.no_grad():
        mean, log_std, _ = model.actor.get_action_dist_params(torch.from_numpy(obs))
    z = gaussian_from_uniforms(noise, 1)
    squashed = np.tanh(mean.numpy() + np.exp(log_std.numpy()) * z)
    np.testing.assert_allclose(got, model.policy.unscale_action(squashed), rtol=1e-5, atol=1e-5)
    # Sampled many times at one observation: SB3's predict(deterministic=False) and coevo
    # draw from one distribution (compared by quantiles; both generators seeded).
    one = np.repeat(obs[:1], 4000, axis=0)
    torch.manual_seed(0)
    theirs = model.predict(one, deterministic=False)[0][:, 0]
    ours = policy.act(np.stack([loaded.theta] * len(one)), one, rng.uniform(1e-9, 1, (4000, 2)))
    quantiles = [0.1, 0.25, 0.5, 0.75, 0.9]
    np.testing.assert_allclose(
        np.quantile(ours[:, 0], quantiles), np.quantile(theirs, quantiles), atol=0.06
    )
    assert np.std(theirs) > 0.1  # a spread worth comparing, not a near-constant action


def test_sac_gaussian_episodes_are_reproducible_and_differ_from_the_mean(models):
    space = tasks.get("pendulum")
    task = space.initial_task()
    returns = {}
    for mode in ("deterministic", "gaussian"):
        loaded = load_sb3_policy(models["path"] / "SAC.zip", "sb3", options={"action": mode})
        with EvaluationPool(space, loaded.policy, "local", 1, 4) as pool:
            returns[mode] = pool.evaluate([(loaded.theta, task)] * 2, 2, seed=0)
    again = returns["gaussian"]
    np.testing.assert_array_equal(again[0], again[1])  # noise keyed by (seed, step) alone
    assert not np.allclose(again[0], returns["deterministic"][0])


def test_refused_off_policy_zips_say_why(models, tmp_path):
    with pytest.raises(ConfigError) as info:
        load_sb3_policy(models["path"] / "TD3.zip", "sb3", options={"action": "gaussian"})
    assert_says(str(info.value), "sb3.action: ", "TD3Policy acts deterministically", "allowed:")
    gsde = sb3.SAC("MlpPolicy", "Pendulum-v1", use_sde=True, device="cpu")
    gsde.save(tmp_path / "gsde.zip")
    with pytest.raises(ConfigError) as info:
        load_sb3_policy(tmp_path / "gsde.zip", "sb3")
    assert_says(str(info.value), "sb3: ", "SACPolicy with gSDE (use_sde=True) is not supported")
    # A policy class coevo does not map (here SB3's critic, written into a zip's data).
    from stable_baselines3.common.policies import ContinuousCritic
    from stable_baselines3.common.save_util import load_from_zip_file, save_to_zip_file

    data, params, _ = load_from_zip_file(models["path"] / "TD3.zip", device="cpu")
    data = {**(data or {}), "policy_class": ContinuousCritic}
    save_to_zip_file(tmp_path / "critic.zip", data, params)
    with pytest.raises(ConfigError) as info:
        load_sb3_policy(tmp_path / "critic.zip", "sb3")
    assert_says(
        str(info.value),
        "unsupported SB3 policy class ContinuousCritic",
        "SACPolicy (SAC MlpPolicy), TD3Policy (TD3/DDPG MlpPolicy)",
    )


def test_actors_differing_only_in_activation_are_judged_apart(tmp_path):
    """Two zips of one shape, tanh and relu: each pair scores with its own function (they
    shared one pool, and so one activation, when only shapes told policies apart)."""
    from coevo.eligible import GivenPair, judge_groups

    space = tasks.get("pendulum")
    task = space.initial_task()
    pairs, alone = [], []
    for activation in (torch.nn.Tanh, torch.nn.ReLU):
        kwargs = {"net_arch": [8], "activation_fn": activation}
        sb3.TD3("MlpPolicy", "Pendulum-v1", policy_kwargs=kwargs, seed=0, device="cpu").save(
            tmp_path / f"{activation.__name__}.zip"
        )
        loaded = load_sb3_policy(tmp_path / f"{activation.__name__}.zip", "sb3")
        pairs.append(GivenPair(activation.__name__, task, loaded.theta, "zip", loaded.policy))
        with EvaluationPool(space, loaded.policy, "local", 1, 2) as pool:
            alone.append(pool.evaluate([(loaded.theta, task)], 1, seed=0)[0])
    _, returns, _ = judge_groups(
        lambda policy: EvaluationPool(space, policy, "local", 1, 2), pairs[0].policy, pairs, 1, 0.0
    )
    np.testing.assert_allclose(returns, np.stack(alone))
    assert not np.allclose(alone[0], alone[1])
