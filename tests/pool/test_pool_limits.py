"""pool.episode_timeout_s and pool.worker_memory_mb: a stuck env call or a leaky env does not
stop the run (Ray backend; the local backend refuses both, saying why)."""

from __future__ import annotations

import sys
import time

import gymnasium as gym
import numpy as np
import pytest
from phrases import assert_says

from coevo.errors import ConfigError
from coevo.policies import MLPPolicy
from coevo.pool import EvaluationPool
from coevo.pool.limits import WorkerLimits
from coevo.tasks import Param, TaskSpace

_LEAKED: list[np.ndarray] = []


class Sticky(gym.Env):
    """`hang` >= 0.5: the fourth step sleeps forever. `leak_mb`: memory kept at each reset."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self) -> None:
        self.task = {"hang": 0.0, "leak_mb": 0.0}

    def get_task(self) -> dict[str, float]:
        return dict(self.task)

    def set_task(self, task: dict[str, float]) -> None:
        self.task = dict(task)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        if self.task["leak_mb"] > 0:  # touched pages: resident, not just reserved
            _LEAKED.append(np.ones(int(self.task["leak_mb"] * 2**20 / 8)))
        return self.np_random.uniform(-1, 1, 2).astype(np.float32), {}

    def step(self, action):
        self.t += 1
        if self.task["hang"] >= 0.5 and self.t == 4:
            while True:
                time.sleep(3600)
        obs = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        return obs, float(action) + float(obs[0]), self.t >= 20, False, {}


SPACE = TaskSpace(
    "sticky",
    (Param("hang", 0, 1, 0, 1.0), Param("leak_mb", 0, 100, 0, 1.0)),
    Sticky,
    max_episode_steps=50,
)
POLICY = MLPPolicy.for_spaces(Sticky.observation_space, Sticky.action_space, (4,))


@pytest.fixture
def by_value(ray_session):
    # Workers cannot import this test module: ship Sticky by value.
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def _pairs(rng, hangs, leak_mb=0.0):
    return [(POLICY.init(rng), SPACE.task(hang=h, leak_mb=leak_mb)) for h in hangs]


def test_a_stuck_env_call_fails_its_episode_and_the_call_goes_on(by_value, rng):
    hangs = [0, 0, 1, 0, 0, 0, 1, 0, 0, 0]
    pairs = _pairs(rng, hangs)
    # Two episodes a pair: two stuck episodes of each stuck pair, each cut on its own (each
    # stuck episode costs a timeout and a new worker: no more of them than that shows).
    with EvaluationPool(SPACE, POLICY, "local", 1) as pool:  # the same pairs, never stuck
        expected = pool.evaluate([(theta, SPACE.task(hang=0)) for theta, _ in pairs], 2, seed=5)
    # A limit far above the microseconds of a healthy env call, short enough that each
    # stuck episode costs little more than its worker's restart.
    with EvaluationPool(SPACE, POLICY, "ray", 2, 2, episode_timeout_s=0.75) as pool:
        returns, errors = pool.evaluate_detailed(pairs, episodes=2, seed=5)
        restarts = pool.stats["worker_restarts"]
        again = pool.evaluate(pairs[:2], episodes=2, seed=5)  # the pool still works
    stuck = [i for i, h in enumerate(hangs) if h]
    assert sorted(errors) == stuck
    for i in stuck:
        assert np.isnan(returns[i]).all()
        assert errors[i].startswith("timed out after 0.75 s on task Task(sticky: hang=1")
    fine = [i for i, h in enumerate(hangs) if not h]
    np.testing.assert_array_equal(returns[fine], expected[fine])
    np.testing.assert_array_equal(again, expected[:2])
    assert restarts >= 1  # each stuck episode's worker was killed and replaced


def test_a_worker_over_its_memory_limit_is_recycled_with_results_unchanged(by_value, rng):
    # 16 leaky episodes of 40 MB: about 320 MB a worker, past the limit at least once each.
    pairs = _pairs(rng, [0] * 8, leak_mb=40.0)
    with EvaluationPool(SPACE, POLICY, "local", 1) as pool:
        expected = pool.evaluate([(theta, SPACE.task(hang=0)) for theta, _ in pairs], 2, seed=1)
    with EvaluationPool(SPACE, POLICY, "ray", 2, 2) as pool:
        baseline_mb = max(info["rss_mb"] for info in pool.worker_info())
    limit = baseline_mb + 150  # passed after four leaky episodes on a worker
    with EvaluationPool(SPACE, POLICY, "ray", 2, 2, worker_memory_mb=limit) as pool:
        pids = {info["pid"] for info in pool.worker_info()}
        returns = pool.evaluate(pairs, episodes=2, seed=1)
        restarts = pool.stats["worker_restarts"]
        infos = [info for info in pool.worker_info() if info["pid"] is not None]
        after = {info["pid"] for info in infos}  # a replacement may still be starting
        assert all(info["rss_mb"] < limit for info in infos)
    np.testing.assert_array_equal(returns, expected)
    assert restarts >= 1 and after != pids  # fresh processes took over


def test_limits_are_checked_by_name_and_refused_by_the_local_backend():
    with pytest.raises(ConfigError, match=r"pool.episode_timeout_s: must be a number > 0, got 0"):
        WorkerLimits(episode_timeout_s=0)
    with pytest.raises(
        ConfigError, match=r"pool.worker_memory_mb: must be a number > 0, got .lots"
    ):
        WorkerLimits(worker_memory_mb="lots")
    with pytest.raises(ConfigError, match=r"pool.episode_timeout_s: only the ray backend"):
        EvaluationPool(SPACE, POLICY, "local", 1, episode_timeout_s=5.0)
    with pytest.raises(ConfigError, match=r"pool.worker_memory_mb: only the ray backend"):
        EvaluationPool(SPACE, POLICY, "local", 1, worker_memory_mb=500)


def test_config_names_the_limit_fields():
    from coevo.config import parse_config

    config = parse_config({"pool": {"episode_timeout_s": 30, "worker_memory_mb": 2000}})
    assert (config.pool.episode_timeout_s, config.pool.worker_memory_mb) == (30.0, 2000.0)
    with pytest.raises(ConfigError, match=r"pool.episode_timeout_s: must be a number > 0"):
        parse_config({"pool": {"episode_timeout_s": 0}})
    local = {"backend": "local", "worker_memory_mb": 500}
    with pytest.raises(ConfigError, match=r"pool.worker_memory_mb: only the ray backend"):
        parse_config({"pool": local})


def test_a_stuck_env_call_in_a_trajectory_chunk_reruns_it_then_fails_the_call(by_value):
    """A trajectory chunk has no single episode to fail: a stuck env call sends the whole
    chunk to a new worker, and after CHUNK_RETRIES re-runs the call fails, saying why."""
    from coevo.policies.actor_critic import ActorCriticSpec
    from coevo.pool import Stored
    from coevo.pool.ray_backend import CHUNK_RETRIES
    from coevo.pool.trajectories import TrajectoryJob

    spec = ActorCriticSpec.for_spaces(Sticky.observation_space, Sticky.action_space, hidden=(4,))
    with EvaluationPool(SPACE, spec, "ray", 1, 1, episode_timeout_s=0.5) as pool:
        key = pool.register(spec.init(np.random.default_rng(0)))
        job = TrajectoryJob(Stored(key), SPACE.task(hang=1), 3, 0, 10)
        with pytest.raises(RuntimeError) as raised:
            pool.dispatch([job])
    assert_says(
        str(raised.value),
        f"stopped its worker {CHUNK_RETRIES + 1} times",
        "ran past pool.episode_timeout_s in a collect_trajectories chunk",
    )
