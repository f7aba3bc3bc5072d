"""Run POET from Python: co-evolve CartPole tasks and their policies, then look at the result.

python examples/poet.py                 # 20 generations, about 10 s
python examples/poet.py --small         # 2 generations, for the tests
"""

import argparse

from coevo import EvaluationPool, MLPPolicy, tasks
from coevo.curricula import Poet
from coevo.optimizers import ES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--small", action="store_true", help="a tiny run, for the tests")
    args = parser.parse_args()
    generations = 2 if args.small else 20

    space = tasks.get("cartpole")  # pole length, masses, force and gravity
    env = space.make_env()
    policy = MLPPolicy.for_spaces(env.observation_space, env.action_space, hidden=(16,))

    # backend="ray" spreads the episodes over Ray workers; the results are the same.
    with EvaluationPool(space, policy, backend="local") as pool:
        # Settings are keywords of PoetConfig and ESConfig, checked as coevo-run checks them.
        poet = Poet(pool, optimizer=ES(population=16), generations=generations, max_active=4)
        for _ in range(generations):
            result = poet.step()
            print(poet.progress_line(result, generations))

    # Every pair, active and archived, with its task and scores.
    frame = poet.population_frame()
    print(frame.to_string(max_cols=8))
    print("ANNECS:", result.summary["annecs"])


if __name__ == "__main__":
    main()
