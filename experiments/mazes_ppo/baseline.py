"""What untrained policies solve of the maze runs' test set: the reference for "does PPO learn".

    .venv/bin/python experiments/mazes_ppo/baseline.py [--episodes 20] [--inits 10]

The test set is the runs' own (`task=maze`, `test_set.size=100`, `test_set.seed=0`: the 6
designed mazes, then 94 seeded random solvable ones). Prints, as "% of the 100 mazes solved":

- a uniformly random policy (left / right / forward, 1/3 each): the mean over `--episodes`
  seeded episodes per maze of reaching the goal within 250 steps, and its range;
- untrained actor-critics as the runs test them (deterministic: argmax), conv and MLP, each
  drawn from `--inits` seeds of their init.
"""

from __future__ import annotations

import argparse

import numpy as np

from coevo import tasks
from coevo.policies import make_policy

TEST_SIZE, TEST_SEED = 100, 0


def random_policy_solved(levels: list, episodes: int) -> np.ndarray:
    """[episodes]: the share of `levels` a uniformly random policy solves, per episode seed."""
    space = tasks.get("maze")
    env = space.make_env()
    solved = np.zeros((episodes, len(levels)))
    for episode in range(episodes):
        rng = np.random.default_rng(1000 + episode)
        for index, level in enumerate(levels):
            env.set_task(level)
            env.reset(seed=0)
            done = False
            while not done:
                _, _, terminated, truncated, _ = env.step(int(rng.integers(0, 3)))
                solved[episode, index] = terminated
                done = terminated or truncated
    return solved.mean(axis=1)


def untrained_solved(name: str, levels: list, inits: int) -> np.ndarray:
    """[inits]: the share of `levels` the untrained `name` policy solves (argmax actions)."""
    space = tasks.get("maze")
    env = space.make_env()
    spec = make_policy(name, env.observation_space, env.action_space, {})
    shares = []
    for seed in range(inits):
        theta = spec.init(np.random.default_rng(seed))
        solved = 0
        for level in levels:
            env.set_task(level)
            obs, _ = env.reset(seed=0)
            done = False
            while not done:
                action = int(spec.act(theta[None], obs[None])[0])
                obs, _, terminated, truncated, _ = env.step(action)
                solved += terminated
                done = terminated or truncated
        shares.append(solved / len(levels))
    return np.array(shares)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--inits", type=int, default=10)
    args = parser.parse_args()
    levels = tasks.get("maze").test_tasks(TEST_SIZE, TEST_SEED)
    shares = random_policy_solved(levels, args.episodes)
    print(
        f"random policy: {100 * shares.mean():.1f}% solved (episode seeds: "
        f"{100 * shares.min():.0f}% to {100 * shares.max():.0f}%)"
    )
    for name in ("conv_actor_critic", "actor_critic"):
        shares = untrained_solved(name, levels, args.inits)
        print(
            f"untrained {name}: {100 * shares.mean():.1f}% solved (inits: "
            f"{100 * shares.min():.0f}% to {100 * shares.max():.0f}%)"
        )


if __name__ == "__main__":
    main()
