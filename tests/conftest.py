"""Shared fixtures: one embedded Ray instance for the whole session (starting Ray is slow)."""

from __future__ import annotations

import numpy as np
import pytest

from coevo import tasks
from coevo.policy import PolicySpec


@pytest.fixture(scope="session")
def ray_session():
    import ray

    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def cartpole():
    return tasks.get("cartpole")


@pytest.fixture(scope="session")
def cartpole_policy(cartpole):
    env = cartpole.make_env()
    return PolicySpec.for_spaces(env.observation_space, env.action_space, hidden=(16,))


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
