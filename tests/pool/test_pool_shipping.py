"""What travels and what is counted: weights once per version, seeds for ES, chunking, stats."""

import math

import numpy as np
import pytest

from coevo.curricula.training import optimize
from coevo.optimizers.es import ESConfig, EvolutionStrategy
from coevo.pool import EvaluationPool
from coevo.pool.stats import busy_key


@pytest.fixture(scope="module")
def pairs(cartpole, cartpole_policy):
    rng = np.random.default_rng(11)
    return [
        (cartpole_policy.init(rng), cartpole.mutate(cartpole.initial_task(), rng))
        for _ in range(40)
    ]


def test_each_version_is_shipped_once_and_loaded_at_most_once_per_worker(
    ray_session, cartpole, cartpole_policy, pairs
):
    vector_bytes = 4 * cartpole_policy.num_params
    with EvaluationPool(cartpole, cartpole_policy, "ray", 2, envs_per_worker=4) as pool:
        first = pool.evaluate(pairs, episodes=3, seed=0)
        assert pool.stats["bytes_shipped"] == 40 * vector_bytes
        misses = pool.stats["cache_misses"]
        assert 40 <= misses <= 2 * 40  # each worker loads a version at most once
        assert pool.stats["cache_hits"] + misses == 40 * 3
        loaded = pool.stats["bytes_loaded"]
        assert 0 < loaded <= 2 * pool.stats["bytes_shipped"]

        second = pool.evaluate(pairs, episodes=3, seed=0)
        np.testing.assert_array_equal(second, first)
        assert pool.stats["bytes_shipped"] == 40 * vector_bytes  # nothing put again
        # Chunks may land on the other worker this time; still at most one load per
        # (version, worker) over both calls, and one fetch of the block per worker.
        assert pool.stats["cache_misses"] <= 2 * 40
        assert pool.stats["bytes_loaded"] <= 2 * pool.stats["bytes_shipped"]


def test_a_worker_that_has_a_version_never_loads_it_again(cartpole, cartpole_policy, pairs):
    with EvaluationPool(cartpole, cartpole_policy, "local", 1, envs_per_worker=4) as pool:
        pool.evaluate(pairs, episodes=2, seed=0)
        assert pool.stats["cache_misses"] == 40
        pool.evaluate(pairs[::-1], episodes=3, seed=5)
        assert pool.stats["cache_misses"] == 40
        assert pool.stats["cache_hits"] == 40 * 2 - 40 + 40 * 3
        assert pool.stats["bytes_loaded"] == pool.stats["bytes_shipped"]


def test_an_es_step_ships_the_centres_only(cartpole, cartpole_policy, pairs):
    thetas = [theta for theta, _ in pairs[:3]]
    task_list = [task for _, task in pairs[:3]]
    with EvaluationPool(cartpole, cartpole_policy, "local", 2, envs_per_worker=4) as pool:
        es = EvolutionStrategy(ESConfig(population=16, episodes=2), pool.policy.num_params)
        rng = np.random.default_rng(0)
        states = [es.init_state(theta, rng) for theta in thetas]
        optimize(
            pool,
            es,
            [(t, s, [task]) for t, s, task in zip(thetas, states, task_list, strict=True)],
            rng,
        )
        # 3 centres travel; the 3 x 32 perturbed vectors are rebuilt by the workers.
        assert pool.stats["bytes_shipped"] == 3 * 4 * cartpole_policy.num_params
        assert pool.stats["episodes"] == 3 * 16 * 2 * 2
        assert pool.stats["cache_misses"] <= 3 * 2


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("envs", [1, 4, 16])
def test_chunks_feed_every_worker_and_fill_whole_batches(cartpole, cartpole_policy, workers, envs):
    pool = EvaluationPool(cartpole, cartpole_policy, "local", workers, envs_per_worker=envs)
    for n in [1, 2, 5, 16, 64, 100, 1280, 5000]:
        sizes = pool.chunk_sizes(n)
        assert sum(sizes) == n and min(sizes) > 0
        assert len(sizes) >= min(n, workers)  # no worker left out while there are jobs
        if n <= workers * envs:
            assert len(sizes) == min(n, workers)  # one chunk per worker, evenly split
            assert max(sizes) - min(sizes) <= 1
        else:
            # Whole batches, large first (amortized calls), one batch last (even finish).
            assert all(size % envs == 0 for size in sizes[:-1])
            assert sizes == sorted(sizes, reverse=True)
            assert sizes[0] >= math.ceil(n / (2 * workers))
            assert sizes[-1] <= envs
            assert len(sizes) <= 2 * workers * (1 + math.log(n)) + 4  # not one per batch
    pool.close()


@pytest.mark.parametrize("backend", ["local", "ray"])
def test_stats_snapshot_shows_each_workers_busy_time(
    ray_session, cartpole, cartpole_policy, pairs, backend
):
    with EvaluationPool(cartpole, cartpole_policy, backend, 2, envs_per_worker=4) as pool:
        pool.evaluate(pairs, episodes=2, seed=1)
        snapshot = pool.stats_snapshot()
    per_worker = [snapshot[busy_key(i)] for i in range(2)]
    assert [busy_key(i) for i in range(2)] == ["busy_s_worker_0", "busy_s_worker_1"]
    assert all(busy > 0 for busy in per_worker)  # both workers got chunks
    assert sum(per_worker) == pytest.approx(snapshot["busy_s"])
    assert snapshot["episodes"] == 80
    assert snapshot["env_steps"] > 80
    assert snapshot["steps_per_s"] > 0
    assert snapshot["worker_restarts"] == 0


def test_worker_info_names_the_slots_implementation(cartpole, cartpole_policy):
    with EvaluationPool(cartpole, cartpole_policy, "local", 2, envs_per_worker=3) as pool:
        info = pool.worker_info()
    assert len(info) == 2
    expected = (
        "coevo.pool.slots.GymSlots"
        if cartpole.make_slots is None
        else f"{cartpole.make_slots.__module__}.{cartpole.make_slots.__qualname__}"
    )
    assert all(i["slots"] == expected and i["num_envs"] == 3 for i in info)


def test_cross_evaluation_on_ray_equals_local(ray_session, cartpole, cartpole_policy, pairs):
    policies = [theta for theta, _ in pairs[:4]]
    task_list = [task for _, task in pairs[4:7]]
    results = {}
    for backend, workers in [("local", 1), ("ray", 2)]:
        with EvaluationPool(cartpole, cartpole_policy, backend, workers, 3) as pool:
            results[backend] = pool.cross_evaluate(policies, task_list, episodes=3, seed=2)
    assert results["ray"].shape == (4, 3)
    np.testing.assert_array_equal(results["ray"], results["local"])


def test_a_call_may_use_more_versions_than_the_store_keeps(cartpole, cartpole_policy, pairs):
    with EvaluationPool(cartpole, cartpole_policy, "local", 2, 4, store_size=5) as small:
        got = small.evaluate(pairs[:12], episodes=2, seed=3)
        assert len(small.store) == 5  # trimmed after the call, never during it
        again = small.evaluate(pairs[:12], episodes=2, seed=3)
    with EvaluationPool(cartpole, cartpole_policy, "local", 1, 4) as large:
        expected = large.evaluate(pairs[:12], episodes=2, seed=3)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(again, expected)
