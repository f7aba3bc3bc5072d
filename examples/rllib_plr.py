"""RLlib's PPO (new API stack) on CartPole tasks (pole length, masses, force, gravity) drawn
by coevo's PLR⊥ curriculum, through `coevo.integrations.rllib` (needs `coevo[rllib]`, whose
ray[rllib] pins its own gymnasium: `make test` keeps it in .venv-rllib).

    .venv-rllib/bin/python examples/rllib_plr.py            # 20 iterations, 2 env runners
    .venv-rllib/bin/python examples/rllib_plr.py --small    # 2 tiny iterations (the tests)

The sampler runs in a Ray actor; each env draws its next episode's task from it and reports
the episode's return and length. `--state DIR` saves RLlib's checkpoint and the sampler's
state (`coevo_curriculum.pkl`) in DIR; `load_state(algo, DIR)` continues from it.
"""

from __future__ import annotations

import argparse
import logging
from collections import Counter
from typing import Any

import ray
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

from coevo.integrations.rllib import CurriculumEnv, curriculum_callback, curriculum_of, save_state


def build(small: bool, seed: int) -> Any:
    """PPO on the cartpole task space, its tasks from PLR⊥."""
    config = (
        PPOConfig()
        .environment(CurriculumEnv, env_config={"space": "cartpole"})
        .callbacks(
            curriculum_callback("plr", "cartpole", seed=seed, buffer_size=16 if small else 64)
        )
        .env_runners(num_env_runners=0 if small else 2, num_envs_per_env_runner=2)
        .training(
            train_batch_size_per_learner=256 if small else 4000,
            minibatch_size=128,
            num_epochs=1 if small else 10,
        )
        .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[16] if small else [64, 64]))
        .debugging(seed=seed)
    )
    return config.build_algo()


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--small", action="store_true", help="2 tiny iterations (tests)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--state", help="save RLlib's checkpoint and the sampler's state here")
    args = parser.parse_args(argv)
    ray.init(
        num_cpus=2 if args.small else None, include_dashboard=False, logging_level=logging.ERROR
    )
    algo = build(args.small, args.seed)
    for i in range(2 if args.small else args.iterations):
        result = algo.train()
        mean = result["env_runners"].get("episode_return_mean", float("nan"))
        print(f"iteration {i + 1}: mean return {mean:.1f}, {result['coevo']['episodes']} episodes")
    rows = [row.as_row() for row in curriculum_of(algo).decisions()]
    if args.state:
        algo.save_to_path(args.state)
        save_state(algo, args.state)
    algo.stop()
    ray.shutdown()
    counts = Counter((row["rule"], row["outcome"]) for row in rows)
    print(f"{len(rows)} episodes reported to PLR⊥; decisions: {dict(counts)}")
    return rows


if __name__ == "__main__":
    main()
