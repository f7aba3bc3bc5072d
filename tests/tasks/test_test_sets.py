"""Held-out test sets: fixed and seeded, easy to hard, scored through the pool."""

from __future__ import annotations

import numpy as np
import pytest

from coevo import tasks
from coevo.errors import ConfigError
from coevo.pool import EvaluationPool
from coevo.tasks.task import Param, TaskSpace
from coevo.tasks.test_sets import (
    TestSetConfig,
    make_test_set,
    mastery_threshold,
    score_test_set,
)


@pytest.mark.parametrize("name", ["cartpole", "pendulum", "mountain_car_continuous", "acrobot"])
def test_a_test_set_is_fixed_distinct_in_bounds_and_sorted_easy_to_hard(name):
    space = tasks.get(name)
    first = make_test_set(space, size=100, seed=3)
    again = make_test_set(space, size=100, seed=3)
    other = make_test_set(space, size=100, seed=4)
    assert first == again
    assert first.tasks != other.tasks
    assert len(first) == 100 and len(set(first.tasks)) == 100
    for task in first.tasks:
        space.check(task)  # every parameter within its bounds
        for p in space.params:
            if p.round_to:  # rounded like a mutation: no 11.100000000000001 in a table
                assert task[p.name] == pytest.approx(
                    round(task[p.name] / p.round_to) * p.round_to, abs=1e-12
                )
    start = space.initial_task()
    distances = [space.distance(start, task) for task in first.tasks]
    assert distances == sorted(distances)
    assert distances[-1] > 3 * distances[0]  # a real spread from near the start to far away
    assert first.threshold == space.solved_score


def test_the_mastery_threshold_is_the_space_solved_score_unless_overridden(cartpole):
    assert mastery_threshold(cartpole) == 475.0
    assert make_test_set(cartpole, size=5, threshold=100.0).threshold == 100.0
    bare = TaskSpace("bare", (Param("x", 0.0, 1.0, 0.5, 0.1),), lambda: None, 10)
    with pytest.raises(ConfigError, match="test_set.threshold.*declares no solved_score"):
        make_test_set(bare, size=5)
    assert len(make_test_set(bare, size=5, threshold=1.0)) == 5


def test_a_space_with_few_distinct_tasks_is_tested_on_all_of_them():
    tiny = TaskSpace("tiny", (Param("x", 0.0, 1.0, 0.0, 0.1, round_to=0.5),), lambda: None, 10)
    assert [t["x"] for t in make_test_set(tiny, size=10, threshold=0.0).tasks] == [0.0, 0.5, 1.0]
    with pytest.raises(ConfigError, match="test_set.size"):
        make_test_set(tiny, size=0, threshold=0.0)


def test_each_task_is_scored_by_the_best_policy_and_test_steps_are_counted_apart(
    cartpole, cartpole_policy, cartpole_solver
):
    test_set = make_test_set(cartpole, size=20, seed=0)
    novice = np.zeros_like(cartpole_solver)  # pushes one way: falls within ~10 steps
    with EvaluationPool(cartpole, cartpole_policy, "local", 1, envs_per_worker=8) as pool:
        alone = score_test_set(pool, [cartpole_solver], test_set, episodes=2, seed=5)
        weak = score_test_set(pool, [novice], test_set, episodes=2, seed=5)
        both = score_test_set(pool, [novice, cartpole_solver], test_set, episodes=2, seed=5)
        direct = pool.evaluate([(cartpole_solver, t) for t in test_set.tasks], 2, 5).mean(axis=1)
    np.testing.assert_array_equal(alone.returns, direct)
    np.testing.assert_array_equal(both.returns, np.maximum(alone.returns, weak.returns))
    assert set(both.best_policy) <= {0, 1}
    assert (both.best_policy == 1).sum() > 0
    np.testing.assert_array_equal(both.mastered.any(axis=0), both.returns >= 475.0)
    # The solver masters some tasks (those near the default pole) but not all; the novice none.
    assert 0 < alone.share_mastered < 1 and weak.share_mastered == 0.0
    assert both.share_mastered == alone.share_mastered
    assert both.summary()["test_mastered"] == alone.share_mastered
    assert both.summary()["test_mean_return"] == pytest.approx(np.mean(both.returns))
    assert both.episodes == 2 * 20 * 2
    # Env steps are those of the test episodes alone: CartPole pays 1 per step, so the
    # steps of one policy's episodes are its mean returns times the episodes per task.
    assert weak.env_steps == weak.returns.sum() * 2
    assert alone.env_steps == alone.returns.sum() * 2
    assert both.env_steps == alone.env_steps + weak.env_steps


def test_seeds_side_by_side_are_averaged_not_best_of(cartpole, cartpole_policy, cartpole_solver):
    test_set = make_test_set(cartpole, size=20, seed=0)
    novice = np.zeros_like(cartpole_solver)
    with EvaluationPool(cartpole, cartpole_policy, "local", 1, envs_per_worker=8) as pool:
        alone = score_test_set(pool, [cartpole_solver], test_set, seed=5)
        seeds = score_test_set(pool, [novice, cartpole_solver], test_set, seed=5, best_of=False)
    assert seeds.share_mastered == pytest.approx(alone.share_mastered / 2)


def test_the_test_cadence():
    assert [g for g in range(1, 11) if TestSetConfig(every=3).due(g)] == [3, 6, 9]
    assert not any(TestSetConfig(every=0).due(g) for g in range(1, 11))


def test_failed_test_episodes_are_never_mastered(cartpole, cartpole_policy, cartpole_solver):
    test_set = make_test_set(cartpole, size=4, seed=0)
    broken = np.full_like(cartpole_solver, np.nan)  # NaN actions: every score is NaN
    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        score = score_test_set(pool, [broken], test_set)
    assert score.share_mastered == 0.0
    assert not score.mastered.any()


def test_the_even_and_odd_episodes_are_kept_apart_for_an_independent_rescoring(
    cartpole, cartpole_policy, cartpole_solver
):
    """test_scores.csv's return_even / return_odd: each row's mean over the even-numbered
    episodes and over the odd-numbered ones; a population's pick made on the even ones."""
    test_set = make_test_set(cartpole, size=12, seed=0)
    novice = np.zeros_like(cartpole_solver)
    with EvaluationPool(cartpole, cartpole_policy, "local", 1, envs_per_worker=8) as pool:
        both = score_test_set(pool, [novice, cartpole_solver], test_set, episodes=3, seed=5)
        seeds = score_test_set(pool, [novice, cartpole_solver], test_set, 3, 5, best_of=False)
        single = score_test_set(pool, [cartpole_solver], test_set, episodes=1, seed=5)
        pairs = [(theta, t) for theta in (novice, cartpole_solver) for t in test_set.tasks]
        episodes = pool.evaluate(pairs, 3, 5).reshape(2, 12, 3)  # reset seeds 5, 6, 7
    np.testing.assert_array_equal(both.even, episodes[:, :, [0, 2]].mean(axis=2))
    np.testing.assert_array_equal(both.odd, episodes[:, :, 1])
    assert not np.array_equal(both.even, both.odd)  # the solver's episodes differ by seed
    rows = both.rows(["novice", "solver"])
    picked = both.even.argmax(axis=0)  # the novice never beats the solver here
    assert [r["return_even"] for r in rows] == list(both.even[picked, range(12)])
    assert [r["return_odd"] for r in rows] == list(both.odd[picked, range(12)])
    per_policy = seeds.rows(["novice", "solver"])  # a row per policy and task, its own halves
    assert [r["return_odd"] for r in per_policy] == list(seeds.odd.ravel())
    # One episode per task: no odd-numbered episode to rescore on.
    (row, *_) = single.rows(["solver"])
    assert row["return_even"] == row["return"] and np.isnan(row["return_odd"])
