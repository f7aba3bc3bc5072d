"""Levels travel to the workers by content id: put once, loaded once per worker, fetched
again by a restarted worker, and the returns those of levels sent by value."""

import dataclasses
import os
import pickle
import signal
import threading
import time

import numpy as np
import pytest
import ray.cloudpickle.cloudpickle as cloudpickle
from phrases import assert_says

from coevo import tasks
from coevo.policies.registry import make_policy
from coevo.pool import EpisodeJob, EvaluationPool, Stored, Worker
from coevo.pool.levels import LevelKey, LevelStore
from coevo.tasks.maze import Maze


@pytest.fixture(scope="module")
def maze_space():
    return tasks.get("maze")


@pytest.fixture(scope="module")
def maze_policy(maze_space):
    env = maze_space.make_env()
    return make_policy("mlp", env.observation_space, env.action_space, {"hidden": [8]})


def _mazes(space, count, seed=0):
    """Mazes whose goal lies ahead of the start (some episodes reach it: returns vary)
    and random ones."""
    rows = tuple("." * 13 for _ in range(13))
    straight = [Maze(rows, (0, y), 0, (3 + y % 9, y)) for y in range(count // 2)]
    rng = np.random.default_rng(seed)
    return straight + [space.sample(rng) for _ in range(count - len(straight))]


def _one_maze_jobs(pool, theta, maze, count, seed):
    key = pool.register(theta)
    return [EpisodeJob(Stored(key), maze, seed + k) for k in range(count)]


@pytest.fixture(scope="module")
def theta(maze_policy):
    return maze_policy.init(np.random.default_rng(1))  # walks to the first straight goal


def test_a_job_on_its_way_names_its_level_by_id_and_a_new_level_is_put_once(maze_space):
    maze = maze_space.sample(np.random.default_rng(2))
    assert "#" in maze.to_json()
    jobs = [EpisodeJob(Stored("k"), maze, seed) for seed in range(40)]
    puts = []

    def put(block):
        puts.append(block)
        return block, 0

    store = LevelStore(put)
    sent, sources = store.send([jobs[:25], jobs[25:]])
    assert puts == [(maze,)]  # one block, the level once
    assert [len(chunk) for chunk in sent] == [25, 15]
    assert all(isinstance(job.task, LevelKey) for chunk in sent for job in chunk)
    assert {job.task.id for chunk in sent for job in chunk} == {maze.id}
    assert [job.seed for chunk in sent for job in chunk] == list(range(40))
    assert sources == [{maze.id: sources[0][maze.id]}] * 2
    row = max(maze.rows, key=lambda text: text.count("#")).encode()  # walls stay home:
    assert row in pickle.dumps(jobs) and row not in pickle.dumps(sent)
    assert repr(sent[0][0].task) == repr(maze)  # a timeout message still names the task
    assert repr(pickle.loads(pickle.dumps(sent[0][0].task))) == f"LevelKey('{maze.id}')"
    store.send([jobs])
    assert len(puts) == 1  # kept: nothing put again


def test_two_different_levels_with_one_id_are_refused(maze_space):
    @dataclasses.dataclass(frozen=True)
    class Named:
        name: str
        id = "same"

        def to_json(self):
            return self.name

    store = LevelStore(lambda block: (block, 0))
    jobs = [EpisodeJob(Stored("k"), Named(name), 0) for name in ("a", "a", "b")]
    store.send([jobs[:2]])  # equal levels, distinct objects: one level
    with pytest.raises(ValueError) as error:
        store.send([jobs])
    assert_says(str(error.value), "share the content id 'same'", "hash of all of its content")


def test_jobs_on_one_maze_load_it_once_per_worker_and_a_second_call_nothing(
    maze_space, maze_policy, theta
):
    maze = _mazes(maze_space, 2)[0]
    with EvaluationPool(maze_space, maze_policy, "local", 2, envs_per_worker=4) as pool:
        jobs = _one_maze_jobs(pool, theta, maze, 64, seed=0)
        first = pool.run(jobs)
        assert len(pool.chunk_sizes(64)) >= 2  # both workers ran some
        assert pool.stats["levels_loaded"] == 2  # once per worker, not 64 times
        pool.run(_one_maze_jobs(pool, theta, maze, 64, seed=100))
        assert pool.stats["levels_loaded"] == 2  # kept by both workers
        assert pool.stats["level_bytes_shipped"] == 0  # in-process: nothing pickled
    # The same jobs on a worker given the level itself: the same returns, bit for bit.
    alone = Worker(maze_space, maze_policy, 4).run(jobs, {jobs[0].params.key: theta})
    np.testing.assert_array_equal(alone.returns, first.returns)
    assert first.returns.min() > 0.9  # the goal reached: real episodes


def test_on_ray_a_level_is_put_once_fetched_once_per_worker_and_never_again(
    ray_session, maze_space, maze_policy, theta
):
    maze = _mazes(maze_space, 2)[0]
    block_bytes = len(cloudpickle.dumps((maze,)))
    with EvaluationPool(maze_space, maze_policy, "local", 1, envs_per_worker=4) as pool:
        reference = pool.run(_one_maze_jobs(pool, theta, maze, 64, seed=0)).returns
    with EvaluationPool(maze_space, maze_policy, "ray", 2, envs_per_worker=4) as pool:
        first = pool.run(_one_maze_jobs(pool, theta, maze, 64, seed=0))
        np.testing.assert_array_equal(first.returns, reference)
        assert pool.stats["level_bytes_shipped"] == block_bytes
        assert pool.stats["levels_loaded"] == 2
        assert pool.stats["level_bytes_loaded"] == 2 * block_bytes
        pool.run(_one_maze_jobs(pool, theta, maze, 64, seed=100))
        assert pool.stats["level_bytes_shipped"] == block_bytes
        assert pool.stats["levels_loaded"] == 2
        assert pool.stats["level_bytes_loaded"] == 2 * block_bytes


def test_a_killed_worker_fetches_its_levels_again_and_results_equal_an_undisturbed_run(
    ray_session, maze_space, maze_policy
):
    # One env per slot: a call long enough (~1 s) to be killed in the middle of.
    space = dataclasses.replace(maze_space, batched=False)
    rng = np.random.default_rng(3)
    levels = _mazes(space, 12, seed=4)
    with EvaluationPool(space, maze_policy, "ray", num_workers=2, envs_per_worker=4) as pool:
        keys = [pool.register(maze_policy.init(rng)) for _ in levels]
        # Seed by seed: each worker's first chunk (48 or 36 jobs) names all 12 levels.
        jobs = [
            EpisodeJob(Stored(key), level, seed)
            for seed in range(16)
            for key, level in zip(keys, levels, strict=True)
        ]
        started = time.perf_counter()
        undisturbed = pool.run(jobs).returns
        undisturbed_s = time.perf_counter() - started
        assert len(np.unique(undisturbed)) > 2
        assert pool.stats["levels_loaded"] == 2 * 12  # both workers hold every level
        shipped = pool.stats["level_bytes_shipped"]
        pid = pool.worker_info()[0]["pid"]

        def kill_worker_0() -> None:
            time.sleep(min(0.3, undisturbed_s / 4))
            os.kill(pid, signal.SIGKILL)

        killer = threading.Thread(target=kill_worker_0)
        killer.start()
        disturbed = pool.run(jobs).returns
        killer.join()
        assert pool.stats["worker_restarts"] == 1
        np.testing.assert_array_equal(disturbed, undisturbed)
        # Undisturbed, this call would load nothing: the new process started empty and
        # fetched its chunks' levels again, from what the driver had put before.
        assert pool.stats["levels_loaded"] > 2 * 12
        assert pool.stats["level_bytes_shipped"] == shipped
