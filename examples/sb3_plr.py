"""Stable-Baselines3's PPO on 4 subprocess envs, its tasks from coevo's PLR⊥ curriculum
over CartPole's task space (pole length, masses, force, gravity).

    python examples/sb3_plr.py               # 100k steps
    python examples/sb3_plr.py --small       # a few seconds (what the tests run)

The sampler lives in a manager process (`coevo.wrappers.serve`); each subprocess env asks
it for its next task at reset and reports each finished episode. With a fixed seed and
4 envs the curriculum's decisions are the same run after run. `--state FILE` saves the
sampler's state at the end (`sampler.load_state_dict` continues from it).
"""

from __future__ import annotations

import argparse
import pickle
from collections import Counter
from functools import partial
from typing import Any

from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import SubprocVecEnv

from coevo.curricula.sampler import sampler
from coevo.wrappers import CurriculumWrapper, serve

NUM_ENVS = 4


def make_env(proxy: Any, index: int) -> Any:
    """Env `index`: a CartPole of the task space, its tasks from the shared sampler (SB3
    resets a finished env in the same step: autoreset same_step)."""
    return CurriculumWrapper.for_space(proxy, env_index=index, autoreset="same_step")


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="a few seconds' run (tests)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timesteps", type=int, default=100_000)
    parser.add_argument("--state", help="save the sampler's state_dict here (pickle)")
    args = parser.parse_args(argv)
    timesteps, n_steps, epochs = (512, 64, 2) if args.small else (args.timesteps, 256, 10)
    plr = sampler("plr", "cartpole", seed=args.seed, buffer_size=16 if args.small else 64)
    with serve(plr, NUM_ENVS) as shared:
        envs = SubprocVecEnv([partial(make_env, shared.proxy, i) for i in range(NUM_ENVS)])
        envs.seed(args.seed)
        model = PPO(
            "MlpPolicy", envs, n_steps=n_steps, n_epochs=epochs, seed=args.seed, device="cpu"
        )
        model.learn(total_timesteps=timesteps)
        envs.close()
        shared.proxy.flush()  # the last vector step's episodes
        rows = [row.as_row() for row in shared.proxy.decisions()]
        if args.state:
            with open(args.state, "wb") as file:
                pickle.dump(shared.proxy.state_dict(), file)
    counts = Counter((row["rule"], row["outcome"]) for row in rows)
    print(f"{len(rows)} episodes reported to PLR⊥; decisions: {dict(counts)}")
    return rows


if __name__ == "__main__":
    main()
