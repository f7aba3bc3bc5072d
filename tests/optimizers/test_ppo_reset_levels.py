"""PPO streams take the curriculum's next level at every reset (mid-rollout too), while an
unfinished episode continues on its own level into the next rollout: what the worker runs,
how a curriculum attributes a stream's steps per level, and DR on mazes training on many
levels, identically on 1 and 2 workers."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from coevo import tasks
from coevo.curricula.dr import DomainRandomization, DRConfig
from coevo.curricula.level_sampling import _signals, split_by_level
from coevo.curricula.level_scores import stream_advantages
from coevo.curricula.plr import PLRConfig, PrioritizedLevelReplay
from coevo.optimizers.ppo import PPO
from coevo.optimizers.ppo_config import PPOConfig
from coevo.optimizers.ppo_streams import with_stream_ends
from coevo.policies.registry import make_policy
from coevo.pool import EvaluationPool, Stored, Worker
from coevo.pool.trajectories import TrajectoryJob, final_level, stream_generators, streams_of

pytest.importorskip("torch")  # PPO's learner

EPISODE = 5  # maze episodes of 5 steps: several per rollout


@pytest.fixture(scope="module")
def space():
    return dataclasses.replace(tasks.get("maze"), max_episode_steps=EPISODE)


@pytest.fixture(scope="module")
def policy(space):
    env = space.make_env()
    return make_policy("actor_critic", env.observation_space, env.action_space, {"hidden": [8]})


def _mazes(space, count: int, seed: int = 5) -> list[Any]:
    rng = np.random.default_rng(seed)
    return [space.sample(rng) for _ in range(count)]


def _replayed_obs(space, policy, task, seed: int, actions: np.ndarray) -> np.ndarray:
    """The observations of an episode of `task` from reset seed `seed` under `actions`."""
    slots = Worker(space, policy, num_envs=1).slots
    seen = [slots.reset_slot(0, task, seed)]
    for action in actions[:-1]:
        seen.append(slots.step_slots(np.array([0]), np.array([action]))[0][0])
    return np.stack(seen)


def test_a_stream_takes_its_next_level_at_a_mid_rollout_reset(space, policy):
    a, b = _mazes(space, 2)
    theta = policy.init(np.random.default_rng(0))
    job = TrajectoryJob(Stored("theta"), a, 7, 0, 3 * EPISODE + 2, next_tasks=(b, a))
    worker = Worker(space, policy, num_envs=2)
    chunk = worker.collect_trajectories([job], {"theta": theta})
    (stream,) = streams_of(chunk)
    assert not chunk.errors
    # Episodes end at steps 4, 9 and 14 (truncated, or earlier where the goal was reached:
    # the levels follow the resets, whatever their steps).
    ends = np.flatnonzero(stream.terminated | stream.truncated)
    expected = np.zeros(len(stream.rewards), np.int16)
    for n, end in enumerate(ends.tolist()):
        expected[end + 1 :] = (n % 2) + 1  # b, a, b, ...: cycling through next_tasks
    np.testing.assert_array_equal(stream.level_index, expected)
    assert len(ends) >= 3
    # The second episode ran maze b: reset from the stream's second reset seed, with the
    # actions the stream took, b gives exactly the observations the stream saw.
    seeds = stream_generators(7, 0)[0].integers(0, 2**31 - 1, size=len(stream.rewards) + 1)
    window = slice(int(ends[0]) + 1, int(ends[1]) + 1)
    on_b = _replayed_obs(space, policy, b, int(seeds[1]), stream.actions[window])
    np.testing.assert_array_equal(stream.obs[window], on_b)
    on_a = _replayed_obs(space, policy, a, int(seeds[1]), stream.actions[window])
    assert not np.array_equal(stream.obs[window], on_a)
    # The unfinished episode is on b (level 1): the worker keeps its live env under b.
    assert stream.continuation is not None and final_level(job, stream) == b
    assert list(worker.streams.entries) == [(b, stream.continuation.key)]


def test_the_next_rollout_continues_the_episode_on_its_final_level_bit_exactly(space, policy):
    mazes = _mazes(space, 3)
    optimizer = PPO(PPOConfig(n_envs=3, n_steps=2 * EPISODE + 2), policy.num_params, policy=policy)
    theta = policy.init(np.random.default_rng(1))
    state = optimizer.init_state(theta, np.random.default_rng(2))
    rng = np.random.default_rng(3)
    kept = Worker(space, policy, num_envs=3)  # holds the live envs of the first rollout
    asked = optimizer.ask(theta, state, mazes, rng, lambda _: "theta")
    # Stream s starts on mazes[s] and its resets take the mazes after it, cycling.
    for s, job in enumerate(asked.jobs):
        assert job.task == mazes[s] and job.next_tasks == (*mazes[s + 1 :], *mazes[: s + 1])
    first = streams_of(kept.collect_trajectories(asked.jobs, {"theta": theta}))
    state = with_stream_ends(state, asked.jobs, first)
    moved = 0
    for job, stream, end in zip(asked.jobs, first, state.streams, strict=True):
        final = final_level(job, stream)
        assert end.task == final and end.continuation == stream.continuation
        moved += final != job.task
    assert moved == 3  # every stream ended its first episode: each is on another maze now
    again = optimizer.ask(theta, state, mazes, rng, lambda _: "theta")
    for job, end in zip(again.jobs, state.streams, strict=True):
        if end.continuation is not None:
            assert job.task == end.task and job.continuation == end.continuation
    cached = kept.collect_trajectories(again.jobs, {"theta": theta})
    assert cached.stats["stream_cache_hits"] == sum(j.continuation is not None for j in again.jobs)
    assert cached.stats["stream_cache_hits"] > 0
    replayed = Worker(space, policy, num_envs=2).collect_trajectories(again.jobs, {"theta": theta})
    assert replayed.stats["stream_cache_misses"] == cached.stats["stream_cache_hits"]
    for name in ("obs", "actions", "rewards", "terminated", "truncated", "level_index"):
        assert getattr(cached, name).tobytes() == getattr(replayed, name).tobytes(), name
    # The continued episode is the one the first rollout cut: its steps so far and the new
    # ones replay, on its level from its reset seed, into the observations the stream saw.
    for job, stream in zip(again.jobs, streams_of(cached), strict=True):
        if job.continuation is None:
            continue
        ends = np.flatnonzero(stream.terminated | stream.truncated)
        stop = int(ends[0]) + 1 if len(ends) else len(stream.rewards)
        actions = np.concatenate([job.continuation.actions, stream.actions[:stop]])
        seen = _replayed_obs(space, policy, job.task, job.continuation.reset_seed, actions)
        np.testing.assert_array_equal(stream.obs[:stop], seen[job.continuation.length :])


@pytest.fixture(scope="module")
def cartpole_run():
    """A PPO rollout on three CartPole levels with short episodes (several per stream)."""
    space = dataclasses.replace(tasks.get("cartpole"), max_episode_steps=12)
    env = space.make_env()
    policy = make_policy("actor_critic", env.observation_space, env.action_space, {"hidden": [8]})
    levels = [space.task(pole_length=v) for v in (0.3, 0.5, 0.9)]
    optimizer = PPO(
        PPOConfig(n_envs=4, n_steps=40, batch_size=40, n_epochs=1), policy.num_params, policy=policy
    )
    theta = policy.init(np.random.default_rng(0))
    state = optimizer.init_state(theta, np.random.default_rng(1))
    with EvaluationPool(space, policy, "local", 1, envs_per_worker=4) as pool:
        asked = optimizer.ask(theta, state, levels, np.random.default_rng(2), pool.register)
        streams = pool.dispatch(asked.jobs)
        plr = PrioritizedLevelReplay(
            PLRConfig(generations=1, buffer_size=6, tasks_per_step=3, partial_episodes="commit"),
            space=space,
            pool=pool,
            optimizer=optimizer,
            seed=3,
        )
        yield levels, asked.jobs, streams, plr


def test_a_split_stream_keeps_every_step_and_its_advantages(cartpole_run):
    levels, jobs, streams, plr = cartpole_run
    split_jobs, split_streams = split_by_level(jobs, streams)
    assert len(split_jobs) > len(jobs)  # the streams changed levels
    for job, stream in zip(jobs, streams, strict=True):
        parts = [
            (j, s) for j, s in zip(split_jobs, split_streams, strict=True) if j.stream == job.stream
        ]
        assert [j.task for j, _ in parts] == [job.levels()[i] for i in _runs(stream.level_index)]
        # Every step is in one segment; episodes and returns add up to the stream's.
        assert sum(len(s.rewards) for _, s in parts) == len(stream.rewards)
        assert sum(s.episodes_done for _, s in parts) == stream.episodes_done
        assert sum(s.episode_return_sum for _, s in parts) == pytest.approx(
            stream.episode_return_sum
        )
        assert parts[0][0].continuation == job.continuation
        assert parts[-1][1].continuation == stream.continuation
        # A segment ends at an episode's end or at the rollout's end (bootstrapping from
        # next_values exactly as the whole stream does): its advantages are the stream's.
        whole = _advantages(plr, stream)
        np.testing.assert_array_equal(
            np.concatenate([_advantages(plr, s) for _, s in parts]), whole
        )


def test_plr_scores_each_level_on_its_own_steps(cartpole_run):
    levels, jobs, streams, plr = cartpole_run
    split_jobs, split_streams = split_by_level(jobs, streams)
    signals = _signals(levels, split_jobs, split_streams, trained=True)
    assert [s.task for s in signals] == levels
    for signal in signals:
        score, _ = plr.level_score(plr.students[0], signal, None)
        # By hand, on the whole streams: the last episode (finished or cut) that ran on this
        # level, in stream order, scored on its steps with the whole stream's advantages.
        last = None
        for job, stream in zip(jobs, streams, strict=True):
            on_level = np.array([job.levels()[i] == signal.task for i in stream.level_index])
            if on_level.any():
                last = (stream, _last_episode(stream, on_level))
        assert last is not None
        stream, steps = last
        expected = float(np.clip(_advantages(plr, stream)[steps], 0.0, None).mean())
        assert score == pytest.approx(expected, rel=1e-12)
        # The episodes that ended on the level are its own.
        assert len(signal.episode_returns) == sum(
            int(
                (
                    (s.terminated | s.truncated)
                    & np.array([j.levels()[i] == signal.task for i in s.level_index])
                ).sum()
            )
            for j, s in zip(jobs, streams, strict=True)
        )


def _runs(index: np.ndarray) -> list[int]:
    return [int(index[0]), *(int(b) for a, b in zip(index[:-1], index[1:], strict=True) if a != b)]


def _advantages(plr, stream) -> np.ndarray:
    return stream_advantages(
        stream.rewards,
        stream.values,
        stream.next_values,
        stream.terminated,
        stream.truncated,
        plr.gamma,
        plr.gae_lambda,
    )


def _last_episode(stream, on_level: np.ndarray) -> np.ndarray:
    """The steps of the last episode on the level (episodes never straddle a level change)."""
    ends = stream.terminated | stream.truncated
    last_step = int(np.flatnonzero(on_level)[-1])
    start = last_step
    while start > 0 and not ends[start - 1]:
        start -= 1
    return np.arange(start, last_step + 1)


def _dr_on_mazes(workers: int, generations: int):
    space = dataclasses.replace(tasks.get("maze"), max_episode_steps=8)
    env = space.make_env()
    policy = make_policy(
        "conv_actor_critic",
        env.observation_space,
        env.action_space,
        {"hidden": [8], "kwargs": {"filters": 2}},
    )
    optimizer = PPO(
        PPOConfig(n_envs=4, n_steps=27, batch_size=54, n_epochs=1), policy.num_params, policy=policy
    )
    with EvaluationPool(space, policy, "local", workers, envs_per_worker=2) as pool:
        dr = DomainRandomization(
            DRConfig(generations=generations, tasks_per_step=4),
            space=space,
            pool=pool,
            optimizer=optimizer,
            seed=4,
        )
        results = dr.run()
        return dr, results


def test_dr_with_ppo_on_mazes_trains_on_every_drawn_maze_the_same_on_1_and_2_workers():
    dr, results = _dr_on_mazes(2, 4)
    rows = [d.as_row() for r in results for d in r.decisions]
    # 4 streams x 27 steps of episodes of at most 8 steps start at least 16 episodes: every
    # drawn maze is played.
    assert not [r for r in rows if r["outcome"] == "not_played"]
    trained = [
        {
            r["task_id"]
            for g in results[: n + 1]
            for d in g.decisions
            if (r := d.as_row())["outcome"] == "trained"
        }
        for n in range(len(results))
    ]
    counts = [len(t) for t in trained]
    assert counts == sorted(counts) and counts[-1] >= 4 * len(results), counts
    alone, again = _dr_on_mazes(1, 4)
    assert alone.students[0].theta.tobytes() == dr.students[0].theta.tobytes()
    assert repr([d.as_row() for r in again for d in r.decisions]) == repr(rows)
