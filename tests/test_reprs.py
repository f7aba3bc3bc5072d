"""Objects that print their contents: a POET population, a pool (not `<object at 0x...>`)."""

from __future__ import annotations

import numpy as np

from coevo import make_policy
from coevo.curricula.poet.population import Population
from coevo.pool import EvaluationPool


def test_a_population_prints_its_active_pairs_with_tasks_and_scores(cartpole):
    population = Population()
    theta = np.full(50, 0.123456, dtype=np.float32)
    first = population.add(cartpole.initial_task, theta, None, None, 0)
    child = population.add(cartpole.task(gravity=12.0), theta, None, first.pair_id, 3)
    gone = population.add(cartpole.task(pole_length=1.5), theta, None, first.pair_id, 4)
    first.scores += [150.0, 212.5]
    first.steps, first.solved_at = 24, 7
    child.scores.append(88.25)
    population.move_to_archive(gone, 9)

    lines = repr(population).splitlines()
    assert lines[0] == "Population: 2 active, 1 archived, ANNECS 0"
    assert lines[1] == (
        f"  Pair 0: {cartpole.initial_task!r}, score 212.5 (best 212.5), born 0, 24 steps, "
        "solved at 7"
    )
    assert lines[2].startswith(f"  Pair 1: {cartpole.task(gravity=12.0)!r}, score 88.2")
    assert "born 3 of pair 0" in lines[2]
    assert len(lines) == 3  # the archived pair is counted, not listed
    assert str(population) == repr(population)  # what print() shows
    assert "0.123" not in repr(population) and " at 0x" not in repr(population)
    assert repr(gone).endswith("archived at 9") and "score nan" in repr(gone)


def test_a_pool_shows_its_backend_workers_space_and_policy(cartpole, cartpole_policy):
    with EvaluationPool(cartpole, cartpole_policy, "local", 2, envs_per_worker=4) as pool:
        assert repr(pool) == (
            "EvaluationPool(backend=local, workers=2, envs_per_worker=4, space=cartpole, "
            f"policy=MLPPolicy, num_params={cartpole_policy.num_params})"
        )
    assert repr(pool).endswith(", closed)")
    env = cartpole.make_env()
    gru = make_policy("gru", env.observation_space, env.action_space, {"hidden": (8,)})
    with EvaluationPool(cartpole, gru, "local", 1) as pool:
        assert "policy=TorchPolicy(GRUNet)" in repr(pool)
        assert f"num_params={gru.num_params}" in repr(pool)
