"""`coevo-eval FILE task=SPACE[,...]` on a policy made outside coevo: an SB3 zip scores what
SB3's `evaluate_policy` scores, a TorchScript module plays, and a file that is neither (a
state_dict, any other file) or a task that does not fit is refused by name."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest
import torch
from cli_support import cli_in_process
from phrases import assert_says


def _returns(stdout: str) -> list[float]:
    return [float(x) for x in re.findall(r"^episode \d+: return (\S+)$", stdout, re.M)]


def test_an_sb3_zip_scores_what_evaluate_policy_scores(tmp_path):
    sb3 = pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import DummyVecEnv

    venv = DummyVecEnv([lambda: gym.make("CartPole-v1")])
    model = sb3.PPO("MlpPolicy", venv, n_steps=256, batch_size=64, n_epochs=2, seed=0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a small net: threads only contend on a shared machine
    try:
        model.learn(512)  # brief: the point is score equality, not quality
    finally:
        torch.set_num_threads(threads)
    model.save(tmp_path / "ppo.zip")
    expected = []
    for seed in range(3):  # episode k resets with seed k, as coevo-eval's seed=0
        venv.seed(seed)
        episode = evaluate_policy(model, venv, n_eval_episodes=1, return_episode_rewards=True)[0]
        expected.append(np.ravel(episode)[0])
    done = cli_in_process("coevo-eval", tmp_path / "ppo.zip", "task=cartpole", "episodes=3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"SB3 zip {tmp_path / 'ppo.zip'} on Task(cartpole: ")
    np.testing.assert_allclose(_returns(done.stdout), expected, rtol=1e-5)
    assert len(set(expected)) > 1  # distinct episodes
    # Parameters after the space's name; outside its bounds: played as given, with a warning.
    heavy = cli_in_process(
        "coevo-eval", tmp_path / "ppo.zip", "task=cartpole,gravity=40", "episodes=1"
    )
    assert heavy.returncode == 0, heavy.stderr
    assert "gravity=40" in heavy.stdout.splitlines()[0]
    assert_says(heavy.stderr, "task.gravity 40 is outside the space's bounds")
    # A task space whose env the policy does not fit: refused by name before any episode.
    misfit = cli_in_process("coevo-eval", tmp_path / "ppo.zip", "task=pendulum")
    assert misfit.returncode == 2
    assert_says(misfit.stderr, "policy: the policy takes observations of size 4", "gives 3")


def test_a_torchscript_module_plays_and_other_files_are_refused_by_name(tmp_path):
    torch.manual_seed(0)
    torch.jit.script(torch.nn.Linear(4, 2)).save(str(tmp_path / "linear.pt"))
    torch.save(torch.nn.Linear(4, 2).state_dict(), tmp_path / "weights.pt")
    (tmp_path / "notes.txt").write_text("not a policy")
    played = cli_in_process("coevo-eval", tmp_path / "linear.pt", "task=cartpole", "episodes=2")
    assert played.returncode == 0, played.stderr
    assert played.stdout.startswith("TorchScript module ")
    assert len(_returns(played.stdout)) == 2
    cases = [
        (["weights.pt", "task=cartpole"], ["holds a torch state_dict", "module: "]),
        (["notes.txt"], ["is not a coevo checkpoint", "an SB3 zip (.zip)", "task=SPACE"]),
        (["linear.pt"], ["task: required with a policy file", "task=pendulum"]),
        (["linear.pt", "task=no_such_space"], ["task: unknown task space 'no_such_space'"]),
        (["linear.pt", "task=cartpole,3"], ["give name=value", "gravity"]),
        (["linear.pt", "task=cartpole", "pair=1"], ["pair: ", "holds one policy"]),
    ]
    for args, phrases in cases:
        done = cli_in_process("coevo-eval", tmp_path / args[0], *args[1:])
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert done.stderr.startswith("coevo-eval: error: "), done.stderr
        assert_says(done.stderr, *phrases)
        assert "Traceback" not in done.stderr
