"""POET / Enhanced POET rules on constructed populations and hand-computed examples."""

import dataclasses

import numpy as np
from phrases import assert_says

from coevo import ESConfig, EvolutionStrategy, Poet, PoetConfig
from coevo.curricula.poet.novelty import (
    Characterization,
    ScoreCache,
    knn_novelty,
    novelty_scores,
    pata_ec,
)
from coevo.curricula.poet.population import Population
from coevo.curricula.poet.rules import transfer
from coevo.pool import EvaluationPool

BASE = PoetConfig(
    generations=3,
    optimizer_steps=0,
    eval_episodes=2,
    repro_threshold=100,
    reproduce_every=1,
    max_children=4,
    max_admitted=1,
    mc_lower=20,
    mc_upper=475,
    max_active=10,
    transfer_every=0,
    solved_threshold=475,
)


def _coevolution(space, pool, config, initial_tasks=None):
    es = EvolutionStrategy(
        ESConfig(population=8, lr=0.1, lr_decay=0.9999, lr_min=0.001, l2=0.01),
        pool.policy.num_params,
    )
    return Poet(config, space=space, pool=pool, optimizer=es, seed=0, initial_tasks=initial_tasks)


# -- PATA-EC and novelty, by hand ----------------------------------------------------------


def test_pata_ec_clips_then_ranks_with_ties_averaged():
    # One task (row), four policies: scores clipped to [25, 300] become 25, 25, 300, 100.
    scores = np.array([[-50.0, 10.0, 900.0, 100.0]])
    # Ranks of 25, 25, 300, 100: tie at the bottom shares (0+1)/2 = 0.5; then 2 (100), 3 (300).
    # Centred: r / 3 - 0.5 -> [-1/3, -1/3, 0.5, 1/6].
    np.testing.assert_allclose(pata_ec(scores, 25, 300), [[-1 / 3, -1 / 3, 0.5, 1 / 6]])


def test_pata_ec_of_tasks_that_rank_policies_alike_is_equal():
    scores = np.array([[1.0, 5.0, 3.0], [10.0, 50.0, 30.0], [3.0, 1.0, 5.0]])
    vectors = pata_ec(scores, -np.inf, np.inf)
    np.testing.assert_allclose(vectors[0], vectors[1])  # same order of policies: distance 0
    assert np.linalg.norm(vectors[0] - vectors[2]) > 0


def test_knn_novelty_hand_computed_with_k_larger_than_reference():
    reference = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    np.testing.assert_allclose(knn_novelty(np.array([[0.0, 0.0]]), reference, k=2), [0.5])
    np.testing.assert_allclose(knn_novelty(np.array([[0.0, 0.0]]), reference, k=9), [1.0])


def test_params_novelty_uses_scaled_parameters(cartpole):
    base = cartpole.initial_task()
    far = cartpole.task(gravity=30.0)
    near = cartpole.task(gravity=9.8 + 2.8)  # a tenth of gravity's span away
    novelty = novelty_scores(Characterization.PARAMS, cartpole, [near, far], [base], k=5)
    np.testing.assert_allclose(novelty, [0.1, (30 - 9.8) / 28])


def test_pata_ec_novelty_evaluates_frozen_policies_once(cartpole, cartpole_policy, cartpole_solver):
    tasks_ = [cartpole.task(gravity=g) for g in (9.8, 20.0, 29.0)]
    policies = [cartpole_solver, np.zeros_like(cartpole_solver)]
    cache = ScoreCache()
    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        kwargs = dict(
            pool=pool, policies=policies, cache=cache, episodes=2, seed=3, bounds=(20.0, 475.0)
        )
        first = novelty_scores(
            Characterization.PATA_EC, cartpole, tasks_[:1], tasks_[1:], 5, **kwargs
        )
        episodes = pool.stats["episodes"]
        second = novelty_scores(
            Characterization.PATA_EC, cartpole, tasks_[:1], tasks_[1:], 5, **kwargs
        )
        assert pool.stats["episodes"] == episodes  # all from the cache
        matrix = pool.cross_evaluate(policies, tasks_, episodes=2, seed=3)
    np.testing.assert_array_equal(first, second)
    vectors = pata_ec(matrix.T, 20.0, 475.0)
    expected = np.linalg.norm(vectors[1:] - vectors[0], axis=1).mean()
    np.testing.assert_allclose(first, [expected])
    assert cache.hits == 6


# -- ANNECS on a constructed history --------------------------------------------------------


def test_annecs_counts_admitted_children_later_solved(cartpole, cartpole_policy, cartpole_solver):
    initial = [cartpole.initial_task()]
    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        co = _coevolution(cartpole, pool, BASE, initial)
        root = co.population.active[0]
        root.theta = cartpole_solver.copy()
        # A constructed history: children admitted through the MC at generation 1.
        solved_child = co.population.add(
            cartpole.task(gravity=11.0),
            cartpole_solver,
            co.optimizer.init_state(cartpole_solver, co.rng),
            0,
            1,
        )
        unsolved_child = co.population.add(
            cartpole.task(gravity=12.0),
            np.zeros_like(cartpole_solver),
            co.optimizer.init_state(cartpole_solver, co.rng),
            0,
            1,
        )
        for child in (solved_child, unsolved_child):
            child.admitted_by_mc = True
        co.generation = 1
        config = dataclasses.replace(BASE, max_children=0)
        co.config = config
        result = co.step()
    # The root solves its task but was never admitted by the MC: it does not count.
    assert root.solved_at == 2 and solved_child.solved_at == 2
    assert unsolved_child.solved_at is None
    assert co.population.annecs() == 1
    assert result.summary["annecs"] == 1 and result.summary["newly_solved"] == 1
    assert result.summary["admitted_total"] == 2


def test_a_child_is_not_solved_in_the_generation_it_is_born(cartpole):
    population = Population()
    pair = population.add(cartpole.initial_task(), np.zeros(3, np.float32), None, 0, 5)
    pair.admitted_by_mc = True
    assert population.annecs() == 0
    pair.solved_at = 6
    assert population.annecs() == 1


# -- transfer ---------------------------------------------------------------------------------


def test_transfer_rule_compares_with_the_best_recent_score():
    ok, reason = transfer(300.0, "policy of pair 2 (proposal)", 250.0, 5)
    assert ok and reason.startswith("transferred: policy of pair 2 (proposal)")
    assert_says(reason, "300.0 > best of last 5 scores 250.0")
    ok, reason = transfer(300.0, "policy of pair 2 (direct)", 300.0, 5)
    assert not ok and reason.startswith("kept: best transfer")
    assert not transfer(float("nan"), "x", -np.inf, 5)[0]


def test_a_task_without_scores_compares_transfers_with_its_own_policy_in_the_same_evaluation():
    # A child admitted this generation: its own policy, evaluated beside the others, is the
    # bar; a tie or a worse policy is no transfer (they were counted as transfers before).
    label = "policy of pair 1 (direct)"
    ok, reason = transfer(80.0, label, -np.inf, 5, own_score=74.3)
    assert ok and reason.startswith(f"transferred: {label}")
    assert_says(reason, "80.0 > its own policy's 74.3", "no score of its own yet")
    ok, reason = transfer(71.3, label, -np.inf, 5, own_score=74.3)
    assert not ok and reason.startswith(f"kept: best transfer ({label})")
    assert_says(reason, "71.3 ≤ its own policy's 74.3", "no score of its own yet")
    assert not transfer(71.3, label, -np.inf, 5, own_score=71.3)[0]
    ok, reason = transfer(70.0, label, -np.inf, 5)
    assert ok and reason.startswith(f"transferred: {label} scores 70.0")
    assert_says(reason, "no score of its own", "its own policy's evaluation failed")


def test_children_admitted_in_a_transfer_generation_take_only_better_policies(
    cartpole, cartpole_policy
):
    # Reproduction and transfer in every generation: each admitted child is in the transfer
    # evaluation of its own generation. It takes another pair's policy only when that one
    # scores higher there than the policy it was admitted with.
    config = dataclasses.replace(
        BASE,
        generations=8,
        optimizer_steps=2,
        reproduce_every=1,
        transfer_every=1,
        max_children=4,
        max_admitted=2,
        transfer_proposal=False,
    )
    checked = 0
    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        co = _coevolution(cartpole, pool, config)
        for _ in range(8):
            result = co.step()
            cross = {
                (row["policy_pair_id"], row["task_pair_id"]): row["score"]
                for row in result.tables["cross_scores"]
            }
            born = {p.pair_id for p in co.population.active if p.born == result.generation}
            for row in result.decisions:
                if row.kind == "transfer" and row.pair_id in born:
                    own = cross[(row.pair_id, row.pair_id)]
                    assert "no score of its own yet" in row.reason
                    assert row.threshold == own  # the bar it was judged against
                    assert (row.outcome == "transferred") == (row.score > own), row.reason
                    checked += 1
    assert checked > 0, checked


def test_transfer_must_beat_the_best_of_the_last_five_scores(
    cartpole, cartpole_policy, cartpole_solver
):
    config = dataclasses.replace(BASE, max_children=0, transfer_every=1, transfer_proposal=True)
    initial = [cartpole.initial_task(), cartpole.task(gravity=10.5)]
    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        co = _coevolution(cartpole, pool, config, initial)
        co.population.active[0].theta = cartpole_solver.copy()
        weak = co.population.active[1]
        weak.theta = np.zeros_like(cartpole_solver)
        weak.scores = [500.0, 10.0, 10.0, 10.0]  # solved once, four generations ago
        result = co.step()  # its evaluation makes five scores: 500 is still in the window
        second = co.step()  # a sixth score: 500 has left the window of five
    first_decision = {d.pair_id: d for d in result.decisions if d.kind == "transfer"}[1]
    assert first_decision.outcome == "kept"
    assert "≤ best of last 5 scores 500.0" in first_decision.reason
    later = {d.pair_id: d for d in second.decisions if d.kind == "transfer"}[1]
    assert later.outcome == "transferred" and later.parent_id == 0
    assert "(direct)" in later.reason or "(proposal)" in later.reason


def test_an_admitted_child_starts_with_the_best_active_policy(
    cartpole, cartpole_policy, cartpole_solver
):
    # The parent (pair 0) is eligible but mediocre; pair 1 solves nearby tasks.
    config = dataclasses.replace(BASE, repro_threshold=0, mc_lower=0, mc_upper=500, max_children=1)
    initial = [cartpole.initial_task(), cartpole.task(gravity=15.0)]
    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        co = _coevolution(cartpole, pool, config, initial)
        co.population.active[0].theta = np.zeros_like(cartpole_solver)
        co.population.active[1].theta = cartpole_solver.copy()
        co.population.active[1].scores = []
        co.rng = np.random.default_rng(2)  # first mutation trial picks parent 0
        result = co.step()
    admitted = [d for d in result.decisions if d.outcome == "admitted"]
    assert len(admitted) == 1 and admitted[0].parent_id == 0
    assert "starts with policy of pair 1" in admitted[0].reason
    child = co.population.get(admitted[0].pair_id)
    np.testing.assert_array_equal(child.theta, cartpole_solver)
    assert child.admitted_by_mc and child.parent_id == 0


def test_enhanced_poet_loop_runs_with_pata_ec_novelty(cartpole, cartpole_policy, cartpole_solver):
    config = dataclasses.replace(
        BASE,
        novelty="pata_ec",
        repro_threshold=0,
        mc_lower=0,
        mc_upper=500,
        max_children=4,
        max_admitted=2,
    )
    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        co = _coevolution(cartpole, pool, config)
        co.population.active[0].theta = cartpole_solver.copy()
        result = co.step()
        hits_after_first = co.scores.hits
        co.step()
    ranked = [d for d in result.decisions if d.rule == "novelty"]
    assert len(ranked) >= 2
    assert all(np.isfinite(d.novelty) and d.novelty >= 0 for d in ranked)
    assert sum(d.outcome == "admitted" for d in ranked) == 2
    # Novelty ranks are in decreasing order of PATA-EC novelty.
    admitted = [d.novelty for d in ranked if d.outcome == "admitted"]
    others = [d.novelty for d in ranked if d.outcome != "admitted"]
    assert not others or min(admitted) >= max(others)
    assert co.scores.hits >= hits_after_first
