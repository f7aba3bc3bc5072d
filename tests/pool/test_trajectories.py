"""Trajectory jobs on a worker: what the arrays hold, determinism whatever the slots and
order, failures confined to their stream."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest

from coevo import tasks
from coevo.policies import make_policy
from coevo.pool import Stored, Worker
from coevo.pool.trajectories import ARRAY_NAMES, TrajectoryJob, streams_of
from coevo.tasks.task import Param, TaskSpace

ARRAYS = [name for name in ARRAY_NAMES if name not in ("episode_return_sum", "episodes_done")]


def _policy(space, **kwargs):
    env = space.make_env()
    return make_policy(
        "actor_critic",
        env.observation_space,
        env.action_space,
        {"hidden": (16, 16), "kwargs": kwargs},
    )


def _jobs(space, horizon, count=6, seed=11):
    tasks_ = [space.initial_task(), space.task(**{space.params[0].name: space.params[0].high})]
    return [
        TrajectoryJob(Stored("theta"), tasks_[i % 2], seed + i // 3, i % 3, horizon)
        for i in range(count)
    ]


GSDE = {"use_sde": True, "sde_sample_freq": 4}


@pytest.mark.parametrize("name, options", [("cartpole", {}), ("pendulum", {}), ("pendulum", GSDE)])
def test_streams_are_identical_whatever_the_slots_and_order(name, options):
    space = dataclasses.replace(tasks.get(name), max_episode_steps=40)
    policy = _policy(space, normalize_obs=True, **options)
    theta = policy.init(np.random.default_rng(0))
    jobs = _jobs(space, horizon=90)
    first = Worker(space, policy, num_envs=6).collect_trajectories(jobs, {"theta": theta})
    order = [4, 1, 5, 0, 3, 2]
    second = Worker(space, policy, num_envs=4).collect_trajectories(
        [jobs[i] for i in order], {"theta": theta}
    )
    for position, index in enumerate(order):
        for array in ARRAYS:
            a, b = getattr(first, array)[index], getattr(second, array)[position]
            assert a.tobytes() == b.tobytes(), (array, index)
    assert not first.errors
    # Different streams of one rollout see different episodes.
    assert first.obs[0].tobytes() != first.obs[1].tobytes()


@pytest.mark.parametrize("freq", [4, -1])
def test_gsde_streams_use_the_streams_exploration_matrices_on_their_cadence(freq):
    """Each step's action is the policy's gSDE sample with the stream's own exploration
    matrix: drawn from the stream's generator, a new one every `freq` steps (-1: one for
    the whole rollout)."""
    from coevo.pool.trajectories import stream_generators

    space = tasks.get("pendulum")
    policy = _policy(space, use_sde=True, sde_sample_freq=freq)
    theta = policy.init(np.random.default_rng(0))
    jobs = _jobs(space, horizon=10, count=2)
    chunk = Worker(space, policy, num_envs=2).collect_trajectories(jobs, {"theta": theta})
    for row, job in enumerate(jobs):
        matrices = policy.draw_noise(stream_generators(job.seed, job.stream)[1], 10)
        assert len(matrices) == (3 if freq == 4 else 1)
        unit = np.stack([matrices[t // freq if freq > 0 else 0] for t in range(10)])
        actions, _, log_probs, _ = policy.sample(np.tile(theta, (10, 1)), chunk.obs[row], unit)
        np.testing.assert_array_equal(chunk.actions[row], actions)
        np.testing.assert_array_equal(chunk.log_probs[row], log_probs)
    # Another matrix gives other actions: the cadence is what the test pins down.
    shifted = np.stack([matrices[min(t // 2, len(matrices) - 1)] for t in range(10)])
    if freq == 4:
        assert not np.array_equal(
            policy.sample(np.tile(theta, (10, 1)), chunk.obs[1], shifted)[0], chunk.actions[1]
        )


def test_truncation_termination_and_bootstrap_values():
    space = dataclasses.replace(tasks.get("pendulum"), max_episode_steps=30)
    policy = _policy(space)
    theta = policy.init(np.random.default_rng(1))
    jobs = _jobs(space, horizon=100, count=2)
    chunk = Worker(space, policy, num_envs=2).collect_trajectories(jobs, {"theta": theta})
    # Pendulum never terminates; its time limit truncates at steps 30, 60, 90.
    assert not chunk.terminated.any()
    for row in range(2):
        assert np.flatnonzero(chunk.truncated[row]).tolist() == [29, 59, 89]
        # Bootstrap values where the episode was cut and at the stream's end, nowhere else.
        assert set(np.flatnonzero(chunk.next_values[row])) == {29, 59, 89, 99}
        assert chunk.episodes_done[row] == 3
        total = chunk.rewards[row, :90].astype(np.float64).sum()
        assert chunk.episode_return_sum[row] == pytest.approx(total, rel=1e-5)
    # The bootstrap value is the value of the observation after the cut, which the stream
    # never acts on (a new episode starts); the last one is of `last_obs`.
    values = policy.values(theta[None], chunk.last_obs[:1])
    assert chunk.next_values[0, 99] == values[0]
    # Recorded values and log-probs are those of the acting policy.
    obs = chunk.obs[0]
    np.testing.assert_array_equal(policy.values(np.tile(theta, (100, 1)), obs), chunk.values[0])


def test_cartpole_terminates_and_streams_go_on():
    space = tasks.get("cartpole")
    policy = _policy(space)
    theta = policy.init(np.random.default_rng(2))
    chunk = Worker(space, policy, num_envs=3).collect_trajectories(
        _jobs(space, horizon=200, count=3), {"theta": theta}
    )
    assert chunk.terminated.sum() >= 3 and not chunk.truncated.any()
    assert (chunk.rewards == 1.0).all()
    ends = chunk.terminated[0] | chunk.truncated[0]
    # No bootstrap at terminations.
    assert (chunk.next_values[0][ends] == 0).all()
    assert chunk.episodes_done[0] == int(chunk.terminated[0].sum())
    streams = streams_of(chunk)
    assert streams[1].rewards.base is not None  # views into the chunk, not copies
    assert chunk.stats["env_steps"] == 600
    assert chunk.stats["trajectory_bytes"] == chunk.nbytes > 0


class Fragile(gym.Env):
    """Raises at step 4 when its task says so."""

    observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self):
        self.task = {"mode": 0.0}
        self._next = dict(self.task)
        self.t = 0

    def get_task(self):
        return dict(self._next)

    def set_task(self, task):
        self._next = dict(task)

    def reset(self, *, seed=None, options=None):
        self.task, self.t = dict(self._next), 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        if self.task["mode"] == 1 and self.t == 4:
            raise FloatingPointError("wheel fell off")
        return np.zeros(2, np.float32), 1.0, self.t >= 10, False, {}


def test_a_failing_env_fails_its_stream_only():
    space = TaskSpace("fragile", (Param("mode", 0, 1, 0, 0.0),), Fragile, 50)
    policy = _policy(space)
    theta = policy.init(np.random.default_rng(3))
    jobs = [
        TrajectoryJob(Stored("theta"), space.task(mode=mode), 5, stream, 25)
        for stream, mode in enumerate([0, 1, 0])
    ]
    chunk = Worker(space, policy, num_envs=3).collect_trajectories(jobs, {"theta": theta})
    assert list(chunk.errors) == [1]
    assert "wheel fell off" in chunk.errors[1]
    assert not chunk.rewards[1].any()  # a failed stream's arrays are zeros
    assert chunk.episodes_done.tolist() == [2, 0, 2]


class SecondResetFails(Fragile):
    """Mode 2: its second episode's reset raises, in the env's own code."""

    def reset(self, *, seed=None, options=None):
        self.resets = getattr(self, "resets", 0) + 1
        if self._next["mode"] == 2 and self.resets == 2:
            self._lay_out_course()
        return super().reset(seed=seed, options=options)

    def _lay_out_course(self):
        raise RuntimeError("no course for this seed")


def test_a_reset_failing_mid_rollout_fails_its_stream_with_the_envs_lines():
    space = TaskSpace("second_reset", (Param("mode", 0, 2, 0, 0.0),), SecondResetFails, 50)
    policy = _policy(space)
    theta = policy.init(np.random.default_rng(3))
    jobs = [
        TrajectoryJob(Stored("theta"), space.task(mode=mode), 5, stream, 25)
        for stream, mode in enumerate([0, 2])
    ]
    chunk = Worker(space, policy, num_envs=2).collect_trajectories(jobs, {"theta": theta})
    assert list(chunk.errors) == [1]
    text = chunk.errors[1]
    assert "in _lay_out_course\n" in text, text  # the env's own line, not only the type
    assert text.rstrip().endswith("RuntimeError: no course for this seed")


@pytest.mark.parametrize(
    "name,batched", [("cartpole", True), ("pendulum", True), ("pendulum", False)]
)
def test_continued_streams_pick_up_where_they_stopped_cached_or_replayed(name, batched):
    space = dataclasses.replace(tasks.get(name), max_episode_steps=40)
    if not batched:  # one gymnasium env per slot: the cache holds the env objects
        space = dataclasses.replace(space, make_slots=None)
    policy = _policy(space)
    theta = policy.init(np.random.default_rng(4))
    sources = {"theta": theta}
    task = space.task(**{space.params[0].name: space.params[0].high})
    first_jobs = [TrajectoryJob(Stored("theta"), task, 21, s, 25) for s in range(4)]
    home = Worker(space, policy, num_envs=4)
    first = home.collect_trajectories(first_jobs, sources)
    ahead = first.continuations
    assert any(c is not None for c in ahead)
    jobs = [TrajectoryJob(Stored("theta"), task, 22, s, 25, ahead[s]) for s in range(4)]
    cached = home.collect_trajectories(jobs, sources)
    replayed = Worker(space, policy, num_envs=3).collect_trajectories(jobs, sources)
    # The same arrays whether the live env came from the cache or was rebuilt by replay.
    for array in (*ARRAYS, "episode_return_sum", "episodes_done"):
        assert getattr(cached, array).tobytes() == getattr(replayed, array).tobytes(), array
    continuing = [s for s in range(4) if ahead[s] is not None]
    lengths = sum(ahead[s].length for s in continuing)
    assert cached.stats["stream_cache_hits"] == len(continuing)
    assert cached.stats["stream_cache_misses"] == cached.stats["replay_steps"] == 0
    assert replayed.stats["stream_cache_misses"] == len(continuing)
    assert replayed.stats["replay_steps"] == lengths
    for s in continuing:
        # The stream goes on from the state where it stopped, episode counters included.
        assert cached.obs[s, 0].tobytes() == first.last_obs[s].tobytes()
        if name == "pendulum":  # time limit 40: the continued episode is cut at step 40
            cut = 40 - ahead[s].length - 1
            assert np.flatnonzero(cached.truncated[s])[0] == cut
            assert cached.episode_return_sum[s] == pytest.approx(
                ahead[s].episode_return + cached.rewards[s, : cut + 1].astype(float).sum()
            )
        after = cached.continuations[s]
        if after is not None and not (cached.terminated[s] | cached.truncated[s]).any():
            assert after.reset_seed == ahead[s].reset_seed and after.length == ahead[s].length + 25
    for s in set(range(4)) - set(continuing):  # its episode ended at the last step: a reset
        assert cached.obs[s, 0].tobytes() != first.last_obs[s].tobytes()
    # A fresh rollout without continuations starts from resets, as before.
    fresh = [dataclasses.replace(job, continuation=None) for job in jobs]
    reset = Worker(space, policy, num_envs=4).collect_trajectories(fresh, sources)
    assert reset.obs[continuing[0], 0].tobytes() != cached.obs[continuing[0], 0].tobytes()


def test_sticky_chunks_keep_streams_on_their_worker_and_balance_the_rest():
    from coevo.pool.scheduling import chunk_sizes, sticky_chunks

    # No preferences: the usual contiguous chunks.
    plain = sticky_chunks([None] * 10, 2, 3)
    assert [len(indices) for indices, _ in plain] == chunk_sizes(10, 2, 3)
    assert [i for indices, _ in plain for i in indices] == list(range(10))
    assert {worker for _, worker in plain} == {None}
    prefer = [1, 1, 1, None, 0, None, None, 7, 1]  # 7: a worker the pool does not have
    chunks = sticky_chunks(prefer, 2, 2)
    assert sorted(i for indices, _ in chunks for i in indices) == list(range(9))
    on = {
        w: sorted(i for indices, worker in chunks if worker == w for i in indices) for w in (0, 1)
    }
    assert {0, 1, 2, 8} <= set(on[1]) and 4 in on[0]
    assert sorted(map(len, on.values())) == [4, 5]  # the free jobs went to worker 0 first
    assert all(len(indices) <= 2 for indices, _ in chunks)


def test_evaluation_episodes_between_rollouts_leave_the_saved_streams_alone():
    from coevo.pool import EpisodeJob

    space = dataclasses.replace(tasks.get("pendulum"), make_slots=None)  # env objects saved
    policy = _policy(space)
    theta = policy.init(np.random.default_rng(5))
    sources = {"theta": theta}
    task = space.initial_task()
    worker = Worker(space, policy, num_envs=2)
    first = worker.collect_trajectories(
        [TrajectoryJob(Stored("theta"), task, 31, s, 30) for s in range(2)], sources
    )
    # Episodes on other tasks reuse the slots (and the envs put there in the saved ones' place).
    episodes = [EpisodeJob(Stored("theta"), space.task(gravity=14.0), seed) for seed in range(3)]
    assert not worker.run(episodes, sources).errors
    jobs = [
        TrajectoryJob(Stored("theta"), task, 32, s, 30, first.continuations[s]) for s in range(2)
    ]
    again = worker.collect_trajectories(jobs, sources)
    replayed = Worker(space, policy, num_envs=2).collect_trajectories(jobs, sources)
    assert again.stats["stream_cache_hits"] == 2 and replayed.stats["replay_steps"] == 60
    for array in ARRAYS:
        assert getattr(again, array).tobytes() == getattr(replayed, array).tobytes(), array


def test_a_stream_of_non_finite_parameters_fails_with_the_count():
    # Before, a NaN actor-critic collected CartPole episodes (argmax-free sampling over NaN
    # logits still picks actions) and handed NaN log-probs to the learner.
    space = tasks.get("cartpole")
    policy = _policy(space)
    theta = policy.init(np.random.default_rng(3))
    nan = np.full_like(theta, np.nan)
    jobs = [
        TrajectoryJob(Stored(key), space.initial_task(), 5, s, 25)
        for s, key in enumerate(["nan", "ok"])
    ]
    chunk = Worker(space, policy, num_envs=2).collect_trajectories(jobs, {"nan": nan, "ok": theta})
    size = policy.num_params
    assert chunk.errors == {
        0: f"ValueError: policy parameters contain {size} non-finite values (nan/inf) of {size}"
    }
    assert not chunk.rewards[0].any() and chunk.rewards[1].all()
