"""An env that cuts its own episodes short (gymnasium's `truncated`): PPO's streams bootstrap
there, as at the task's time limit; an env's end (`terminated`) has no bootstrap."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest

from coevo import tasks
from coevo.policies import make_policy
from coevo.pool import Stored, Worker
from coevo.pool.trajectories import TrajectoryJob
from coevo.tasks.task import Param, TaskSpace

CUT, END, BOTH = 0, 1, 2  # the task's mode: what the env says at its step 7


class SelfLimited(gym.Env):
    """Says, at step 7: truncated (mode CUT), terminated (END), or both (BOTH)."""

    observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self):
        self.mode, self._next, self.t = CUT, CUT, 0

    def get_task(self):
        return {"mode": float(self._next)}

    def set_task(self, task):
        self._next = int(task["mode"])

    def reset(self, *, seed=None, options=None):
        self.mode, self.t = self._next, 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        last = self.t >= 7
        return self._obs(), 1.0, last and self.mode != CUT, last and self.mode != END, {}

    def _obs(self):
        return np.array([self.t / 10, 0.5], np.float32)


def _streams(space, levels, horizon=20, num_envs=3):
    env = space.make_env()
    policy = make_policy("actor_critic", env.observation_space, env.action_space, {})
    theta = policy.init(np.random.default_rng(0))
    jobs = [
        TrajectoryJob(Stored("theta"), level, 5, stream, horizon)
        for stream, level in enumerate(levels)
    ]
    chunk = Worker(space, policy, num_envs=num_envs).collect_trajectories(jobs, {"theta": theta})
    assert not chunk.errors
    return chunk, policy, theta


def test_an_envs_own_truncation_is_bootstrapped_and_its_end_is_not():
    space = TaskSpace("self_limited", (Param("mode", 0, 2, 0, 0.0),), SelfLimited, 50)
    chunk, policy, theta = _streams(space, [space.task(mode=m) for m in (CUT, END, BOTH)])
    ends = [6, 13]  # steps 7 and 14 of the stream; the task's limit (50) is never reached
    assert np.flatnonzero(chunk.truncated[0]).tolist() == ends
    assert not chunk.terminated[0].any()
    for row in (END, BOTH):  # terminated wins over truncated, as gymnasium reads both
        assert np.flatnonzero(chunk.terminated[row]).tolist() == ends
        assert not chunk.truncated[row].any()
        assert (chunk.next_values[row][ends] == 0).all()
    # The cut's bootstrap: the value of the observation the env returned at the cut.
    final = np.array([[0.7, 0.5]], np.float32)
    expected = policy.values(theta[None], final)[0]
    assert expected != 0
    assert chunk.next_values[0][ends].tolist() == [expected, expected]
    assert chunk.episodes_done.tolist() == [2, 2, 2]


def test_a_maze_time_out_ends_its_episode_in_the_batched_and_the_single_env_slots():
    """dcd trains on a maze's time-out as an end (no bootstrap); the single-env path
    (`batched=False`, MazeEnv in GymSlots) must read it as `MazeSlots` does."""
    space = dataclasses.replace(tasks.get("maze"), max_episode_steps=9)
    levels = [space.initial_task()] * 2  # the goal is 24 moves away: both time out
    chunks = [
        _streams(case, levels, horizon=12, num_envs=2)[0]
        for case in (space, dataclasses.replace(space, batched=False))
    ]
    for name in ("terminated", "truncated", "next_values", "rewards"):
        np.testing.assert_array_equal(getattr(chunks[0], name), getattr(chunks[1], name))
    assert chunks[1].terminated[:, 8].all() and not chunks[1].truncated.any()


class _WrongShape:
    """Batched slots whose `truncated` does not fit the step."""

    def __init__(self, num_slots):
        self.num_slots = num_slots
        self.truncated = np.zeros(num_slots + 1, dtype=bool)

    def reset_slot(self, slot, task, seed):
        return np.zeros(2, np.float32)

    def step_slots(self, slots, actions):
        n = len(slots)
        return np.zeros((n, 2), np.float32), np.ones(n), np.zeros(n, bool), {}


def test_slots_whose_truncated_flags_do_not_fit_the_step_are_named():
    space = TaskSpace("wrong", (Param("mode", 0, 2, 0, 0.0),), SelfLimited, 50)
    space = dataclasses.replace(space, make_slots=_WrongShape)
    with pytest.raises(ValueError, match=r"_WrongShape\.truncated has shape \(3,\)"):
        _streams(space, [space.task(mode=m) for m in (CUT, END)], horizon=5, num_envs=2)
