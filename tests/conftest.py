"""Shared fixtures: one embedded Ray instance for the whole session (starting Ray is slow).

Under pytest-xdist (`make test`: -n 2 --dist loadgroup) each worker process is a session of
its own, with its own Ray; a module whose tests share one expensive module-scoped fixture (a
run that several tests read) says `pytestmark = pytest.mark.xdist_group(...)`, which keeps it
on one worker, so that fixture is made once."""

from __future__ import annotations

import os

import numpy as np
import pytest

from coevo import tasks
from coevo.policies import MLPPolicy


@pytest.fixture(scope="session")
def ray_session():
    import ray

    if not ray.is_initialized():
        # A Ray of this process's own ("local": never a `ray start` cluster on this machine,
        # such as tests/pool/test_cluster.py's), with its CPUs stated: each xdist worker
        # starts one.
        ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="WARNING")
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session", autouse=True)
def sb3_logs_in_the_sessions_tmp(tmp_path_factory):
    """Stable-Baselines3's default logger makes a directory per model that learns, in /tmp
    unless SB3_LOGDIR names one: the tests' models, and those of the examples and
    benchmarks they start, log under this session's temporary directory instead."""
    os.environ.setdefault("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3")))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest work first: the slow tests, then the modules kept on one worker. Under
    xdist the other worker meanwhile takes the short tests, and no long one is left to end
    the run alone."""

    def rank(item: pytest.Item) -> int:
        if item.get_closest_marker("slow"):
            return 0
        return 1 if item.get_closest_marker("xdist_group") else 2

    items.sort(key=rank)  # stable: the order within each rank is kept


@pytest.fixture(scope="session")
def cartpole():
    return tasks.get("cartpole")


@pytest.fixture(scope="session")
def cartpole_policy(cartpole):
    env = cartpole.make_env()
    return MLPPolicy.for_spaces(env.observation_space, env.action_space, hidden=(16,))


@pytest.fixture(scope="session")
def cartpole_solver(cartpole, cartpole_policy):
    """A policy trained by ES (25 steps) that balances the default CartPole."""
    from coevo import ESConfig, EvolutionStrategy
    from coevo.pool import EvaluationPool

    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        es = EvolutionStrategy(
            ESConfig(population=16, lr=0.1, lr_decay=0.9999, lr_min=0.001, l2=0.01),
            pool.policy.num_params,
        )
        rng = np.random.default_rng(1)
        theta = cartpole_policy.init(rng)
        state = es.init_state(theta, rng)
        for _ in range(25):
            step = es.step(pool, theta, state, [cartpole.initial_task()], rng)
            theta, state = step.theta, step.state
        assert pool.evaluate([(theta, cartpole.initial_task())], 5, 0).mean() > 400
    return theta


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
