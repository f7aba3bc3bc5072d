import numpy as np
import pytest

from coevo.optimizers.es import ESConfig, EvolutionStrategy, centred_ranks
from coevo.pool import EvaluationPool


def test_centred_ranks_span_and_ties():
    ranks = centred_ranks(np.array([3.0, 1.0, 2.0]))
    np.testing.assert_allclose(ranks, [0.5, -0.5, 0.0])
    # Ties share their average rank: values 1, 5, 5, 9 -> ranks 0, 1.5, 1.5, 3 of 0..3.
    ranks = centred_ranks(np.array([[5.0, 1.0], [9.0, 5.0]]))
    np.testing.assert_allclose(ranks, [[0.0, -0.5], [0.5, 0.0]])
    assert centred_ranks(np.array([-np.inf, 0.0]))[0] == -0.5


def _train(cartpole, cartpole_policy, steps, seed, backend="local", workers=1):
    with EvaluationPool(cartpole, cartpole_policy, backend, workers) as pool:
        es = EvolutionStrategy(
            ESConfig(population=16, lr=0.1, lr_decay=0.9999, lr_min=0.001, l2=0.01),
            pool.policy.num_params,
        )
        rng = np.random.default_rng(seed)
        theta = cartpole_policy.init(rng)
        state = es.init_state(theta, rng)
        task = cartpole.initial_task()
        before = pool.evaluate([(theta, task)], episodes=10, seed=10_000).mean()
        for _ in range(steps):
            step = es.step(pool, theta, state, [task], rng)
            theta, state = step.theta, step.state
        after = pool.evaluate([(theta, task)], episodes=10, seed=10_000).mean()
    return before, after, theta, state


def test_es_improves_a_cartpole_policy(cartpole, cartpole_policy):
    before, after, _, state = _train(cartpole, cartpole_policy, steps=25, seed=1)
    assert before < 50
    assert after > 400
    assert state.t == 25
    assert state.lr == pytest.approx(0.1 * 0.9999**25)
    assert state.sigma == pytest.approx(0.1 * 0.999**25)


def test_es_is_deterministic_across_backends(ray_session, cartpole, cartpole_policy):
    *_, theta_local, _ = _train(cartpole, cartpole_policy, steps=3, seed=5)
    *_, theta_ray, _ = _train(cartpole, cartpole_policy, steps=3, seed=5, backend="ray", workers=2)
    np.testing.assert_array_equal(theta_local, theta_ray)


def test_lr_and_sigma_decay_stop_at_their_floors(cartpole, cartpole_policy):
    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        config = ESConfig(
            population=2,
            lr=0.1,
            lr_decay=0.5,
            lr_min=0.03,
            sigma=0.1,
            sigma_decay=0.5,
            sigma_min=0.04,
        )
        es = EvolutionStrategy(config, pool.policy.num_params)
        rng = np.random.default_rng(0)
        theta = cartpole_policy.init(rng)
        state = es.init_state(theta, rng)
        for _ in range(4):
            step = es.step(pool, theta, state, [cartpole.initial_task()], rng)
            theta, state = step.theta, step.state
    assert state.lr == 0.03 and state.sigma == 0.04
