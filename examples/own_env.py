"""Bring your own environment: a task-settable gymnasium env, trained on with a curriculum.

Any env with get_task() / set_task(task) runs as is (RLlib's TaskSettableEnv protocol).

    python examples/own_env.py              # 15 generations of domain randomisation
    python examples/own_env.py --small      # 2 generations, for the tests
"""

import argparse

import gymnasium as gym
import numpy as np

from coevo import EvaluationPool, make_policy
from coevo.curricula import DR
from coevo.optimizers import ES
from coevo.tasks.generic import class_task_space


class Corridor(gym.Env):
    """Walk right to the goal; the level is the corridor's length. Reward 1 at the goal."""

    def __init__(self, config):
        self.level = config.get("start_level", 1)
        self.observation_space = gym.spaces.Box(0.0, 20.0, (1,))
        self.action_space = gym.spaces.Discrete(2)

    def get_task(self):
        return self.level

    def set_task(self, task):
        self.level = task  # takes effect at the next reset

    def reset(self, *, seed=None, options=None):
        self.position, self.goal = 0, 2 * self.level
        return np.array([0.0], np.float32), {}

    def step(self, action):
        self.position = max(0, self.position + (1 if action == 1 else -1))
        done = self.position >= self.goal
        return np.array([self.position], np.float32), float(done), done, False, {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--small", action="store_true", help="a tiny run, for the tests")
    generations = 2 if parser.parse_args().small else 15

    # The task space: one int parameter, passed to set_task as a bare value.
    levels = class_task_space(
        "corridor",
        Corridor,
        {"level": {"low": 1, "high": 8, "init": 1, "step": 1, "type": "int"}},
        env_config={"start_level": 1},
        max_episode_steps=40,
        task_format="scalar",
    )
    env = levels.make_env()
    policy = make_policy("mlp", env.observation_space, env.action_space, {"hidden": [8]})

    # A local pool: Ray's workers would need this module on their PYTHONPATH.
    with EvaluationPool(levels, policy, backend="local") as pool:
        dr = DR(pool, optimizer=ES(population=8), generations=generations, seed=0)
        for _ in range(generations):
            summary = dr.step().summary
            print(f"generation {dr.generation}: mean return {summary['best_score']:.2f}")

        theta = dr.policies_for_testing().policies["policy_0"]
        pairs = [(theta, levels.task(level=level)) for level in range(1, 9)]
        returns = pool.evaluate(pairs, episodes=1, seed=0)[:, 0]
        print("return per level 1-8:", returns.tolist())


if __name__ == "__main__":
    main()
