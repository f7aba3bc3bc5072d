"""POET without transfer (`admission_transfer: false`, `transfer_every: 0`): an admitted child
keeps its parent's policy even when another pair's scores higher on it, and no policy ever
leaves its lineage (the mechanism control of experiments/stepping_stones)."""

import dataclasses

import numpy as np

from coevo import ESConfig, EvolutionStrategy, Poet, PoetConfig
from coevo.pool import EvaluationPool

NO_TRANSFER = PoetConfig(
    generations=4,
    optimizer_steps=0,
    eval_episodes=2,
    repro_threshold=0,
    reproduce_every=1,
    max_children=2,
    max_admitted=1,
    mc_lower=0,
    mc_upper=500,
    max_active=10,
    transfer_every=0,
    admission_transfer=False,
    solved_threshold=475,
)


def _poet(space, pool, config, initial_tasks):
    es = EvolutionStrategy(ESConfig(population=8), pool.policy.num_params)
    return Poet(config, space=space, pool=pool, optimizer=es, seed=0, initial_tasks=initial_tasks)


def test_an_admitted_child_keeps_its_parents_policy(cartpole, cartpole_policy, cartpole_solver):
    # As in test_poet's admission test: pair 1 solves the tasks near pair 0's, and with
    # admission_transfer on the child of pair 0 would start with pair 1's policy.
    config = dataclasses.replace(NO_TRANSFER, generations=1, max_children=1)
    initial = [cartpole.initial_task(), cartpole.task(gravity=15.0)]
    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        co = _poet(cartpole, pool, config, initial)
        co.population.active[0].theta = np.zeros_like(cartpole_solver)
        co.population.active[1].theta = cartpole_solver.copy()
        co.rng = np.random.default_rng(2)  # first mutation trial picks parent 0
        result = co.step()
    admitted = [d for d in result.decisions if d.outcome == "admitted"]
    assert len(admitted) == 1 and admitted[0].parent_id == 0
    assert "starts with parent's policy" in admitted[0].reason
    assert "admission_transfer off" in admitted[0].reason
    np.testing.assert_array_equal(co.population.get(admitted[0].pair_id).theta, 0.0)


def test_without_transfer_every_pair_keeps_its_lineages_policy(
    cartpole, cartpole_policy, cartpole_solver
):
    # Frozen policies (no optimizer steps): each pair's policy must be its root's. The solver
    # (pair 1, default task) scores 500 on its own children, above mc_upper: the children
    # come from the weak lineage, and with admission_transfer on would start with the solver.
    config = dataclasses.replace(NO_TRANSFER, mc_upper=400)
    initial = [cartpole.task(gravity=15.0), cartpole.initial_task()]
    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        co = _poet(cartpole, pool, config, initial)
        co.population.active[0].theta = np.zeros_like(cartpole_solver)
        co.population.active[1].theta = cartpole_solver.copy()
        results = [co.step() for _ in range(config.generations)]
    assert all(r.summary["transfers"] == 0 for r in results)
    pairs = {p.pair_id: p for p in co.population.all_pairs()}
    roots = {}
    for pair in pairs.values():
        root = pair
        while root.parent_id is not None:
            root = pairs[root.parent_id]
        roots[pair.pair_id] = root.pair_id
        np.testing.assert_array_equal(pair.theta, root.theta)
    assert sorted(roots.values()).count(0) > 1  # the weak lineage had children
