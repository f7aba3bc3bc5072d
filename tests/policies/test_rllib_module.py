"""RLlib RLModule checkpoints (new API stack) as coevo policies: a PPO trained one iteration
on CartPole-v1 scores in coevo, through a pairs file and `coevo-eval DIR`, what RLlib's own
`forward_inference` (explore=False) scores on the same seeded episodes; a Box module too;
unsupported modules and action modes are refused by name.

Runs where RLlib is installed: `make test` runs it in .venv-rllib (ray[rllib] pins its own
gymnasium); the main venv has no RLlib and skips it."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from cli_support import cli, cli_in_process
from phrases import assert_says

pytest.importorskip(
    "ray.rllib.algorithms.ppo",
    reason="RLlib is not installed here (make test runs this file in .venv-rllib)",
)

import ray.cloudpickle  # noqa: E402
from ray.rllib.algorithms.ppo import PPOConfig  # noqa: E402
from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import (  # noqa: E402
    DefaultPPOTorchRLModule,
)
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig  # noqa: E402
from ray.rllib.core.rl_module.rl_module import RLModule, RLModuleSpec  # noqa: E402
from ray.rllib.utils.spaces.space_utils import unsquash_action  # noqa: E402

from coevo import tasks  # noqa: E402
from coevo.errors import ConfigError  # noqa: E402
from coevo.policies.loaders import load_rllib_policy  # noqa: E402
from coevo.pool import EvaluationPool  # noqa: E402

SEEDS = range(3)  # coevo's episode k resets with seed k (seed=0)
MODULE = "learner_group/learner/rl_module/default_policy"


@pytest.fixture(scope="module")
def checkpoint(ray_session, tmp_path_factory):
    """An algorithm checkpoint: PPO, one iteration on CartPole-v1 (enough to act both ways)."""
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0, num_envs_per_env_runner=1)
        .training(train_batch_size_per_learner=512, minibatch_size=128, num_epochs=5, lr=0.01)
        .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[16]))
        .debugging(seed=0)
    )
    algo = config.build_algo()
    algo.train()
    path = tmp_path_factory.mktemp("rllib") / "ppo_cartpole"
    algo.save_to_path(path)
    algo.stop()
    return path


def rllib_returns(module: RLModule, env_id: str, seeds) -> tuple[list[float], set]:
    """RLlib's own evaluation of `module` on seeded episodes, as its env runner acts with
    explore=False: forward_inference, the inference distribution made deterministic, then
    the module-to-env connector's unsquash. Returns the returns and the actions taken."""
    env, returns, actions = gym.make(env_id), [], set()
    dist_class = module.get_inference_action_dist_cls()
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        total, done = 0.0, False
        while not done:
            out = module.forward_inference({"obs": torch.from_numpy(obs[None])})
            action = dist_class.from_logits(out["action_dist_inputs"]).to_deterministic().sample()
            action = action[0].numpy()
            if isinstance(env.action_space, gym.spaces.Box):
                action = unsquash_action(action, env.action_space)
            else:
                actions.add(int(action))
            obs, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    env.close()
    return returns, actions


def test_a_pairs_file_and_coevo_eval_score_what_rllib_scores(checkpoint, tmp_path):
    expected, actions = rllib_returns(
        RLModule.from_checkpoint(checkpoint / MODULE), "CartPole-v1", SEEDS
    )
    assert actions == {0, 1} and len(set(expected)) > 1  # a policy that acts, distinct episodes
    pairs = tmp_path / "pairs.yaml"
    pairs.write_text(
        yaml.safe_dump(
            {
                "pairs": [  # the directory alone, and the module's own folder by rllib:
                    {"name": "algorithm", "policy": str(checkpoint)},
                    {"name": "module", "policy": {"rllib": str(checkpoint / MODULE)}},
                ]
            }
        )
    )
    run = tmp_path / "run"
    # A process of its own: absl (imported with RLlib) closes its handler's stream, pytest's
    # capture here, when Hydra's logging setup in an in-process coevo-run closes all handlers.
    done = cli(
        "coevo-run",
        "mode=eligible_parents",
        "pool=local",
        "pool.num_workers=1",
        f"eligible.episodes={len(SEEDS)}",
        f"eligible.pairs_file={pairs}",
        f"hydra.run.dir={run}",
    )
    assert done.returncode == 0, done.stderr
    returns = pd.read_csv(run / "returns.csv")
    assert list(returns["policy"]) == [f"rllib:{checkpoint}", f"rllib:{checkpoint / MODULE}"]
    episodes = [f"episode_{k}" for k in SEEDS]
    for row in range(2):
        np.testing.assert_array_equal(returns.loc[row, episodes], expected)
    shown = cli_in_process("coevo-eval", checkpoint, "task=cartpole", f"episodes={len(SEEDS)}")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"RLlib checkpoint {checkpoint} on Task(cartpole: ")
    got = [float(x) for x in re.findall(r"^episode \d+: return (\S+)$", shown.stdout, re.M)]
    assert got == expected


def test_workers_get_a_plain_torch_module(checkpoint):
    loaded = load_rllib_policy(checkpoint)
    assert all(type(m).__module__.startswith("torch.nn") for m in loaded.policy.module.modules())
    assert b"ray.rllib" not in ray.cloudpickle.dumps(loaded.policy)  # unpickles without RLlib


def _module(tmp_path, space_name: str, **model: object) -> tuple:
    """A DefaultPPOTorchRLModule for the spaces of coevo's `space_name`, saved (untrained:
    its random weights act)."""
    env = tasks.get(space_name).make_env()
    spec = RLModuleSpec(
        module_class=DefaultPPOTorchRLModule,
        observation_space=env.observation_space,
        action_space=env.action_space,
        model_config=DefaultModelConfig(fcnet_hiddens=[8], **model),
    )
    env.close()
    torch.manual_seed(0)
    module = spec.build()
    path = tmp_path / space_name
    module.save_to_path(path)
    return module, path


def test_a_box_module_acts_as_rllib_unsquashes_its_mean(tmp_path):
    module, path = _module(tmp_path, "pendulum")
    expected, _ = rllib_returns(module, "Pendulum-v1", SEEDS)
    loaded = load_rllib_policy(path)
    assert loaded.policy.action.size == 1  # the mean only: the head's log_std is dropped
    space = tasks.get("pendulum")
    with EvaluationPool(space, loaded.policy, "local", 1, 4) as pool:
        got = pool.evaluate([(loaded.theta, space.initial_task())], len(SEEDS), seed=0)[0]
    np.testing.assert_allclose(got, expected, rtol=1e-4)
    assert len(set(np.round(expected, 3))) > 1


def test_unsupported_modules_and_action_modes_are_refused_by_name(tmp_path):
    _, lstm = _module(tmp_path, "cartpole", use_lstm=True, lstm_cell_size=8)
    with pytest.raises(ConfigError) as error:
        load_rllib_policy(lstm, "pairs[0].policy.rllib")
    assert_says(str(error.value), "pairs[0].policy.rllib", "TorchLSTMEncoder", "TorchMLPEncoder")
    _, box = _module(tmp_path, "pendulum")
    with pytest.raises(ConfigError) as error:
        load_rllib_policy(box, "policy", {"action": "gaussian"})
    assert_says(str(error.value), "policy.action", "allowed: deterministic")
