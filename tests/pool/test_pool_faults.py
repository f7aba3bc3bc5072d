"""A worker process killed in the middle of a call is restarted and its chunks re-run."""

import dataclasses
import os
import signal
import threading
import time

import numpy as np
import pytest

from coevo import tasks
from coevo.policies import MLPPolicy
from coevo.pool import EvaluationPool


def test_a_killed_worker_is_restarted_and_the_results_equal_an_undisturbed_run(ray_session):
    # One gymnasium env per slot and fixed 200-step episodes: a call of known, long enough
    # length (~1 s or more here) whatever batched physics the task space may have.
    space = dataclasses.replace(tasks.get("pendulum"), make_slots=None)
    env = space.make_env()
    policy = MLPPolicy.for_spaces(env.observation_space, env.action_space, hidden=(8,))
    rng = np.random.default_rng(3)
    pairs = [(policy.init(rng), space.task(gravity=float(g))) for g in np.linspace(4.0, 16.0, 60)]
    with EvaluationPool(space, policy, "ray", num_workers=2, envs_per_worker=4) as pool:
        started = time.perf_counter()
        undisturbed = pool.evaluate(pairs, episodes=6, seed=21)
        undisturbed_s = time.perf_counter() - started
        pid_before = [info["pid"] for info in pool.worker_info()]
        assert pool.stats["worker_restarts"] == 0

        killed_at: list[float] = []

        def kill_worker_0() -> None:
            # Well inside the call: its undisturbed twin ran for `undisturbed_s`.
            time.sleep(min(0.3, undisturbed_s / 4))
            os.kill(pid_before[0], signal.SIGKILL)
            killed_at.append(time.perf_counter())

        killer = threading.Thread(target=kill_worker_0)
        killer.start()
        disturbed = pool.evaluate(pairs, episodes=6, seed=21)
        returned_at = time.perf_counter()
        killer.join()

        pid_after = [info["pid"] for info in pool.worker_info()]
        assert killed_at and killed_at[0] < returned_at  # the kill landed during the call
        assert pid_after[0] != pid_before[0]  # Ray started a new process for worker 0
        assert pid_after[1] == pid_before[1]
        assert pool.stats["worker_restarts"] == 1
        np.testing.assert_array_equal(disturbed, undisturbed)
        # The restarted worker keeps serving.
        again = pool.evaluate(pairs[:8], episodes=6, seed=21)
        np.testing.assert_array_equal(again, undisturbed[:8])


DRIVER_ONLY_ENV = """
import gymnasium as gym
import numpy as np
import pytest


class Levels(gym.Env):
    observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config=None):
        self.level = 1

    def get_task(self):
        return self.level

    def set_task(self, task):
        self.level = task

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(2, np.float32), 1.0, self.t >= 5 * self.level, False, {}
"""


def test_ray_workers_that_cannot_import_the_env_stop_the_pool_saying_why(
    ray_session, tmp_path, monkeypatch
):
    """An env module on this process's sys.path but not on PYTHONPATH: Ray restarted its
    workers for ever (each failed in its constructor), the error buried in Ray's logs,
    until the script died of a lost GCS connection a minute later. Now the pool refuses to
    start, naming the import error and the cause."""
    from coevo.pool import WorkerStartError
    from coevo.tasks.generic import class_task_space

    (tmp_path / "driver_only_levels.py").write_text(DRIVER_ONLY_ENV)
    monkeypatch.syspath_prepend(str(tmp_path))
    space = class_task_space(
        "driver_only",
        "driver_only_levels:Levels",
        {"level": {"low": 1, "high": 5, "init": 1, "step": 1, "type": "int"}},
        env_config={},
        max_episode_steps=30,
        task_format="scalar",
    )
    env = space.make_env()  # this process imports it
    policy = MLPPolicy.for_spaces(env.observation_space, env.action_space, hidden=(4,))
    with pytest.raises(WorkerStartError) as raised:
        EvaluationPool(space, policy, "ray", num_workers=1, envs_per_worker=2)
    message = str(raised.value)
    assert message.startswith("Ray's workers could not build the pool's env or policy")
    assert "No module named 'driver_only_levels'" in message
    assert "on this process's sys.path but not on PYTHONPATH" in message
    theta = policy.init(np.random.default_rng(0))
    with EvaluationPool(space, policy, "local") as pool:  # the same space runs here
        assert pool.evaluate([(theta, space.task(level=2))], 1).tolist() == [[10.0]]


def test_a_cluster_workers_import_failure_points_at_the_nodes_environment():
    from coevo.pool.ray_backend import _start_failure

    error = RuntimeError("Traceback ...\nModuleNotFoundError: No module named 'mypolicies'")
    message = _start_failure(error, "10.0.0.1:6379")
    assert "which this process could: ModuleNotFoundError: No module named 'mypolicies'." in message
    assert "the environment of `ray start` on each node, not this process's" in message
    assert "on this process's sys.path" not in message  # the embedded case's advice
    assert "on this process's sys.path" in _start_failure(error)


def test_a_cluster_that_answers_but_refuses_the_driver_names_token_authentication(monkeypatch):
    from coevo.pool.ray_backend import _connect_failure

    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    message = _connect_failure("10.0.0.1:6379", ConnectionError("Failed to connect"))
    assert message.startswith("cannot connect to the Ray cluster at 10.0.0.1:6379: Failed")
    assert "run with RAY_AUTH_MODE=token" in message
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    assert "RAY_AUTH_MODE" not in _connect_failure("10.0.0.1:6379", ConnectionError("x"))


def test_an_ipv6_address_in_brackets_is_reached():
    import socket

    from coevo.pool.ray_backend import check_reachable

    try:
        server = socket.create_server(("::1", 0), family=socket.AF_INET6)
    except OSError:
        pytest.skip("no IPv6 loopback here")
    with server:
        check_reachable(f"[::1]:{server.getsockname()[1]}")  # no ConfigError
