"""PPO trajectory streams name their levels by content id on the way to the workers, as
episode jobs do: the arrays are those of a worker given the levels by value, bit for bit,
update after update (sticky streams and their continuations included); a second update
on the same levels puts and loads nothing; a restarted worker fetches them again."""

import dataclasses
import os
import signal
from typing import Any

import numpy as np
import pytest
import ray.cloudpickle.cloudpickle as cloudpickle

from coevo import tasks
from coevo.optimizers.ppo import PPO
from coevo.optimizers.ppo_config import PPOConfig
from coevo.optimizers.ppo_streams import StreamingPPOState, with_stream_ends
from coevo.policies.registry import make_policy
from coevo.pool import EvaluationPool, Worker
from coevo.pool.levels import LevelKey
from coevo.pool.trajectories import ARRAY_NAMES, streams_of
from coevo.tasks.maze import Maze

pytest.importorskip("torch")  # PPO's learner (the conv test's updates)
# Its Ray tests share one Ray (the session's) on one xdist worker.
pytestmark = pytest.mark.xdist_group("trajectory_levels")

LEVELS = 4
STREAMS = 8  # two per maze: each worker's first chunk names every maze


@pytest.fixture(scope="module")
def space():
    # Episodes of 20 steps, rollouts of 16: streams go on across updates and end in them.
    return dataclasses.replace(tasks.get("maze"), max_episode_steps=20)


def _mazes(space) -> list[Any]:
    """Open mazes with the goal a few cells ahead (some episodes end early) and random ones."""
    rows = tuple("." * 13 for _ in range(13))
    straight = [Maze(rows, (0, y), 0, (2 + y, y)) for y in range(LEVELS // 2)]
    rng = np.random.default_rng(5)
    return straight + [space.sample(rng) for _ in range(LEVELS - len(straight))]


def _policy(space, name, options):
    env = space.make_env()
    return make_policy(name, env.observation_space, env.action_space, options)


def _by_value(worker, jobs, theta):
    """The streams of `jobs` on a `Worker` given their levels (and weights) by value."""
    assert not any(isinstance(job.task, LevelKey) for job in jobs)
    chunk = worker.collect_trajectories(jobs, {jobs[0].params.key: theta})
    assert chunk.stats["levels_loaded"] == 0  # nothing named by id: nothing to take
    return streams_of(chunk)


def _assert_same(streams, reference):
    assert len(streams) == len(reference)
    for index, (a, b) in enumerate(zip(streams, reference, strict=True)):
        for name in ARRAY_NAMES:
            assert np.asarray(getattr(a, name)).tobytes() == np.asarray(getattr(b, name)).tobytes()
        assert a.error == b.error == "", index
        assert a.continuation == b.continuation, index  # same seed, actions and return


def _updates(pool, space, policy, mazes, count, check):
    """`count` PPO rollouts on `mazes` (the weights kept; the streams go on), each checked
    against a by-value worker by `check(update, streams, reference)`."""
    optimizer = PPO(PPOConfig(n_envs=STREAMS, n_steps=16), policy.num_params, policy=policy)
    theta = policy.init(np.random.default_rng(1))
    state = optimizer.init_state(theta, np.random.default_rng(2))
    alone = Worker(space, policy, num_envs=3)
    rng = np.random.default_rng(3)
    for update in range(count):
        asked = optimizer.ask(theta, state, mazes, rng, pool.register)
        streams = pool.dispatch(asked.jobs)
        check(update, streams, _by_value(alone, asked.jobs, theta))
        state = with_stream_ends(state, asked.jobs, streams)
    return state


def test_local_streams_by_id_equal_a_worker_given_the_levels_and_load_them_once(space):
    mazes = _mazes(space)
    policy = _policy(space, "actor_critic", {"hidden": [8]})
    with EvaluationPool(space, policy, "local", 2, envs_per_worker=4) as pool:

        def check(update, streams, reference):
            _assert_same(streams, reference)
            assert pool.stats["levels_loaded"] == 2 * LEVELS  # each worker took each once
            assert pool.stats["level_bytes_shipped"] == 0  # in-process: nothing pickled

        state = _updates(pool, space, policy, mazes, 3, check)
        stats = pool.stats_snapshot()
    # The streams went on across updates (some from the workers' live envs), and ended.
    assert isinstance(state, StreamingPPOState)
    assert any(end.continuation is not None for end in state.streams)
    assert stats["stream_cache_hits"] > 0 and stats["episodes"] > 0


def test_on_ray_levels_are_put_once_a_second_update_loads_nothing_and_a_restart_refetches(
    ray_session, space
):
    mazes = _mazes(space)
    block = len(cloudpickle.dumps(tuple(mazes)))  # the first update names them in order
    policy = _policy(space, "actor_critic", {"hidden": [8]})
    with EvaluationPool(space, policy, "ray", 2, envs_per_worker=4) as pool:
        seen = []

        def check(update, streams, reference):
            _assert_same(streams, reference)
            seen.append(dict(pool.stats))
            if update == 2:  # between the third and fourth update: worker 0's process dies
                pid = pool.worker_info()[0]["pid"]
                os.kill(pid, signal.SIGKILL)

        _updates(pool, space, policy, mazes, 4, check)
    first, second, third, restarted = seen
    assert first["level_bytes_shipped"] == block
    assert first["levels_loaded"] == 2 * LEVELS
    assert first["level_bytes_loaded"] == 2 * block
    for later in (second, third):  # the same levels: no new block, nothing loaded
        for key in ("level_bytes_shipped", "levels_loaded", "level_bytes_loaded"):
            assert later[key] == first[key], key
    assert third["stream_cache_hits"] > second["stream_cache_hits"]  # sticky streams held
    # The new process started empty and fetched its streams' levels again, from the block
    # put before; the arrays were still the by-value worker's (the continuations replayed).
    assert restarted["worker_restarts"] == 1
    assert restarted["levels_loaded"] > third["levels_loaded"]
    assert restarted["level_bytes_loaded"] == third["level_bytes_loaded"] + block
    assert restarted["level_bytes_shipped"] == block
    assert restarted["replay_steps"] > third["replay_steps"]


def test_ppo_trains_a_conv_actor_critic_on_mazes_with_levels_by_id(space):
    mazes = _mazes(space)
    options = {"hidden": [8], "kwargs": {"filters": 2}}
    policy = _policy(space, "conv_actor_critic", options)
    optimizer = PPO(
        PPOConfig(n_envs=STREAMS, n_steps=16, batch_size=64, n_epochs=1),
        policy.num_params,
        policy=policy,
    )
    theta = policy.init(np.random.default_rng(1))
    state = optimizer.init_state(theta, np.random.default_rng(2))
    alone = Worker(space, policy, num_envs=5)
    rng = np.random.default_rng(3)
    with EvaluationPool(space, policy, "local", 2, envs_per_worker=4) as pool:
        for _ in range(2):
            asked = optimizer.ask(theta, state, mazes, rng, pool.register)
            streams = pool.dispatch(asked.jobs)
            _assert_same(streams, _by_value(alone, asked.jobs, theta))
            told = optimizer.tell(theta, state, asked, streams)
            assert told.record.applied, told.record.reason
            assert not np.array_equal(told.theta, theta)  # an update was made
            theta, state = told.theta, told.state
        assert pool.stats["levels_loaded"] == 2 * LEVELS
        assert pool.stats["failed_episodes"] == 0
