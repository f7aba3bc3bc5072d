"""Make the example policies of the eligible-parents preset: ES on CartPole, saved as .npy.

    .venv/bin/python experiments/eligible_parents/make_policies.py

Writes policies/{random,novice,balancer}.npy: an untrained MLP, one after 12 ES steps, and
one after 25 (which balances the default pole). Deterministic for the seed below.
"""

from pathlib import Path

import numpy as np

from coevo import ESConfig, EvaluationPool, EvolutionStrategy, MLPPolicy, tasks

HERE = Path(__file__).resolve().parent


def main() -> None:
    space = tasks.get("cartpole")
    env = space.make_env()
    policy = MLPPolicy.for_spaces(env.observation_space, env.action_space, hidden=(16,))
    rng = np.random.default_rng(1)
    theta = policy.init(rng)
    (HERE / "policies").mkdir(exist_ok=True)
    np.save(HERE / "policies" / "random.npy", theta)
    with EvaluationPool(space, policy, "local", 1) as pool:
        # The settings the recorded policies were made with (before ES's defaults became
        # those of conf/optimizer/es.yaml).
        config = ESConfig(population=16, lr=0.1, lr_decay=0.9999, lr_min=0.001, l2=0.01)
        es = EvolutionStrategy(config, pool.policy.num_params)
        state = es.init_state(theta, rng)
        for step in range(1, 26):
            told = es.step(pool, theta, state, [space.initial_task()], rng)
            theta, state = told.theta, told.state
            if step == 12:
                np.save(HERE / "policies" / "novice.npy", theta)
        np.save(HERE / "policies" / "balancer.npy", theta)
        for name in ("random", "novice", "balancer"):
            vector = np.load(HERE / "policies" / f"{name}.npy")
            score = pool.evaluate([(vector, space.initial_task())], 5, 0).mean()
            print(f"{name}: mean return {score:.1f} on the default task")


if __name__ == "__main__":
    main()
