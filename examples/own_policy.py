"""Bring your own policy: train a torch module with ES under a curriculum, and score an SB3 zip.

python examples/own_policy.py           # 10 generations; SB3 trains 4096 steps
python examples/own_policy.py --small   # 2 generations, 256 SB3 steps, for the tests
"""

import argparse
import tempfile
from pathlib import Path

import torch

from coevo import EvaluationPool, tasks
from coevo.curricula import DR
from coevo.optimizers import ES
from coevo.policies.loaders import from_module, load_sb3_policy


def train_torch_module(space, generations: int) -> torch.nn.Module:
    env = space.make_env()
    actor = torch.nn.Sequential(torch.nn.Linear(4, 32), torch.nn.Tanh(), torch.nn.Linear(32, 2))
    # One flat parameter vector (loaded.theta) and a policy that acts for many vectors at once.
    loaded = from_module(actor, env.observation_space, env.action_space)
    with EvaluationPool(space, loaded.policy, backend="local") as pool:
        dr = DR(
            pool,
            optimizer=ES(population=16),
            generations=generations,
            initial_theta=loaded.theta,  # start from the module's own weights
        )
        for _ in range(generations):
            print(f"torch, generation {dr.generation + 1}:", dr.step().summary["best_score"])
        theta = dr.policies_for_testing().policies["policy_0"]
    loaded.policy.load_into_module(theta, actor)  # the trained weights, back in your module
    return actor


def score_sb3_zip(space, steps: int) -> None:
    import gymnasium as gym
    from stable_baselines3 import PPO

    path = Path(tempfile.mkdtemp()) / "ppo_cartpole.zip"
    PPO("MlpPolicy", gym.make("CartPole-v1"), n_steps=256, seed=0, device="cpu").learn(steps).save(
        path
    )
    sb3 = load_sb3_policy(path)  # acts as SB3's predict(deterministic=True)
    with EvaluationPool(space, sb3.policy, backend="local") as pool:
        returns = pool.evaluate([(sb3.theta, space.initial_task())], episodes=3, seed=0)[0]
    print("SB3 zip, 3 episodes:", returns.tolist())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--small", action="store_true", help="a tiny run, for the tests")
    small = parser.parse_args().small
    space = tasks.get("cartpole")
    actor = train_torch_module(space, 2 if small else 10)
    print("action for an upright pole:", actor(torch.zeros(4)).argmax().item())
    try:
        score_sb3_zip(space, 256 if small else 4096)
    except ImportError:
        print("SB3 not installed: pip install 'coevo[sb3]'")


if __name__ == "__main__":
    main()
