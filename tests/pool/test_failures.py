"""Broken environments fail their own evaluations, visibly, and never become scores."""

import gymnasium as gym
import numpy as np
import pytest
from phrases import assert_says

from coevo import ESConfig, EvolutionStrategy, Poet, PoetConfig
from coevo.optimizers.ars import ARSConfig, AugmentedRandomSearch
from coevo.policies import MLPPolicy
from coevo.pool import EvaluationPool
from coevo.tasks import Param, TaskSpace


class Fragile:
    """A task-settable env: `mode` 0 is fine, 1 raises mid-episode, 2 rewards NaN, 3 inf,
    4 returns an observation of the wrong shape."""

    def __init__(self):
        self.observation_space = gym.spaces.Box(-1, 1, (2,))
        self.action_space = gym.spaces.Discrete(2)
        self.task = {"mode": 0.0}

    def get_task(self):
        return dict(self.task)

    def set_task(self, task):
        self.task = dict(task)

    def reset(self, seed=None, options=None):
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        mode = int(self.task["mode"])
        if mode == 1 and self.t == 4:
            raise FloatingPointError("wheel fell off")
        reward = {2: float("nan"), 3: float("inf")}.get(mode, 1.0) if self.t == 2 else 1.0
        shape = 3 if mode == 4 and self.t == 5 else 2  # mode 4: a wrongly shaped observation
        return np.zeros(shape, np.float32), reward, self.t >= 10, False, {}


SPACE = TaskSpace("fragile", (Param("mode", 0, 4, 0, 0.0),), Fragile, 50)
POLICY = MLPPolicy.for_spaces(Fragile().observation_space, Fragile().action_space, (4,))


def test_nan_and_infinite_returns_are_failures_not_scores(rng):
    theta = POLICY.init(rng)
    with EvaluationPool(SPACE, POLICY, "local", 1, envs_per_worker=3) as pool:
        returns, errors = pool.evaluate_detailed(
            [(theta, SPACE.task(mode=m)) for m in (0, 2, 3, 1)], episodes=2
        )
    assert returns[0].tolist() == [10.0, 10.0]
    assert np.isnan(returns[1:]).all()
    assert (
        errors[1]
        == "non-finite return nan after 10 steps (a step's reward was NaN, infinite or None)"
    )
    assert errors[2].startswith("non-finite return inf after 10 steps")
    assert errors[3] == "FloatingPointError: wheel fell off"
    assert 0 not in errors


@pytest.mark.parametrize("backend", ["local", "ray"])
def test_a_pair_whose_env_raises_is_marked_failed_and_the_run_goes_on(backend, request, rng):
    if backend == "ray":
        import sys

        from ray import cloudpickle

        request.getfixturevalue("ray_session")
        # Workers cannot import this test module: ship Fragile by value.
        cloudpickle.register_pickle_by_value(sys.modules[__name__])
    config = PoetConfig(
        generations=2,
        optimizer_steps=1,
        eval_episodes=2,
        repro_threshold=5,
        reproduce_every=1,
        max_children=0,
        transfer_every=0,
    )
    with EvaluationPool(SPACE, POLICY, backend, 2, envs_per_worker=2) as pool:
        es = EvolutionStrategy(
            ESConfig(population=4, lr=0.01, lr_decay=0.9999, lr_min=0.001, l2=0.01),
            pool.policy.num_params,
        )
        co = Poet(
            config,
            space=SPACE,
            pool=pool,
            optimizer=es,
            initial_tasks=[SPACE.task(mode=0), SPACE.task(mode=1)],
        )
        results = co.run()
    assert [r.generation for r in results] == [1, 2]
    for result in results:
        rows = {d.pair_id: d for d in result.decisions if d.kind == "parent"}
        assert rows[0].outcome == "eligible" and rows[0].score == 10.0 and rows[0].error == ""
        assert rows[1].outcome == "ineligible" and np.isnan(rows[1].score)
        assert rows[1].reason == "evaluation failed (score nan); not eligible"
        assert rows[1].error == "FloatingPointError: wheel fell off"
    broken = co.population.get(1)
    assert all(np.isnan(s) for s in broken.scores)
    assert co.population.get(0).steps == 2  # the healthy pair kept optimizing


def _es_step(pool, modes, rng, optimizer=None):
    es = optimizer or EvolutionStrategy(ESConfig(population=4), POLICY.num_params)
    theta = POLICY.init(rng)
    state = es.init_state(theta, rng)
    tasks = [SPACE.task(mode=m) for m in modes]
    return theta, state, es.step(pool, theta, state, tasks, rng)


def test_an_es_step_with_some_failed_perturbations_is_applied_and_says_so(rng):
    # Perturbations cycle through the tasks: half of them play the raising mode.
    with EvaluationPool(SPACE, POLICY, "local", 1, envs_per_worker=4) as pool:
        theta, state, told = _es_step(pool, [0, 1], rng)
    assert told.record.failed == 4 and told.record.applied
    assert told.record.outcome == "step_applied"
    assert told.record.reason == "4 of 8 perturbations failed; they ranked lowest in the update"
    assert not np.array_equal(told.theta, theta) and told.state.t == state.t + 1
    assert told.record.mean_return == 10.0  # the healthy episodes' mean, never a NaN


def test_an_es_step_whose_every_perturbation_failed_keeps_weights_and_state(rng):
    with EvaluationPool(SPACE, POLICY, "local", 1, envs_per_worker=4) as pool:
        theta, state, told = _es_step(pool, [1], rng)
    assert not told.record.applied and told.record.outcome == "step_failed"
    assert told.record.reason == "update skipped: all 8 perturbations failed"
    assert np.array_equal(told.theta, theta)  # no L2 decay, no Adam step from nothing
    assert told.state is state


@pytest.mark.parametrize("modes", [[0, 1], [1]])
def test_an_ars_step_drops_failed_directions_and_keeps_weights_when_all_failed(modes, rng):
    ars = AugmentedRandomSearch(ARSConfig(directions=4, top=4), POLICY.num_params)
    with EvaluationPool(SPACE, POLICY, "local", 1, envs_per_worker=4) as pool:
        theta, state, told = _es_step(pool, modes, rng, ars)
    if modes == [1]:
        assert told.record.reason == "no update: all 4 directions failed"
        assert told.record.outcome == "step_failed"
        assert np.array_equal(told.theta, theta) and told.state is state
    else:  # directions cycle through the tasks: two of four play the raising mode
        assert told.record.reason == "2 of 4 directions failed and were dropped"
        assert told.record.outcome == "step_applied" and told.state.t == state.t + 1


def test_an_observation_of_the_wrong_shape_fails_its_episode_only(rng):
    theta = POLICY.init(rng)
    with EvaluationPool(SPACE, POLICY, "local", 1, envs_per_worker=3) as pool:
        returns, errors = pool.evaluate_detailed(
            [(theta, SPACE.task(mode=m)) for m in (0, 4, 0)], episodes=2
        )
    assert returns[0].tolist() == returns[2].tolist() == [10.0, 10.0]
    assert np.isnan(returns[1]).all() and list(errors) == [1]
    assert errors[1].startswith("ValueError: ")
    assert_says(errors[1], "step() returned an observation of shape (3,)", "has 2 values")
