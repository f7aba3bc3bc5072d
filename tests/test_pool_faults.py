"""A worker process killed in the middle of a call is restarted and its chunks re-run."""

import dataclasses
import os
import signal
import threading
import time

import numpy as np

from coevo import tasks
from coevo.policy import PolicySpec
from coevo.pool import EvaluationPool


def test_a_killed_worker_is_restarted_and_the_results_equal_an_undisturbed_run(ray_session):
    # One gymnasium env per slot and fixed 200-step episodes: a call of known, long enough
    # length (~1 s or more here) whatever batched physics the task space may have.
    space = dataclasses.replace(tasks.get("pendulum"), make_slots=None)
    env = space.make_env()
    policy = PolicySpec.for_spaces(env.observation_space, env.action_space, hidden=(8,))
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
