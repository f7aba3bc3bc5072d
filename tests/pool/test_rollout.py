"""A worker's rows shared by overlapping calls (coevo/pool/rollout.py): the second call's
episodes fill the rows the first call's last episodes leave free, and each call still gets
exactly its own results."""

import dataclasses
import threading
import time

import numpy as np
import pytest

from coevo.pool import EpisodeJob, EvaluationPool, Stored, Worker
from coevo.tasks import Task


def _chunks(space, policy, solver):
    """Chunk A: a wave of long (solver) episodes, short random ones, then two long ones
    that leave rows free while they run; chunk B: short random episodes, which can start
    in those rows (B's call arrives during A's first wave)."""
    rng = np.random.default_rng(3)
    sources = {"solver": solver, **{f"r{i}": policy.init(rng) for i in range(6)}}
    task = space.initial_task()
    first = [EpisodeJob(Stored("solver"), task, 20 + seed) for seed in range(4)]
    first += [EpisodeJob(Stored(f"r{i}"), task, seed) for i in range(3) for seed in range(2)]
    first += [EpisodeJob(Stored("solver"), task, seed) for seed in range(2)]
    second = [EpisodeJob(Stored(f"r{i}"), task, 10 + seed) for i in range(6) for seed in (0, 1)]
    return sources, first, second


class _HoldFirstStep:
    """The worker's policy, whose first step waits until a second chunk is queued: so the
    second call arrives while the first one runs, whatever the threads' timing."""

    def __init__(self, worker, queued=2):
        self.worker, self.policy, self.queued = worker, worker.rollouts.policy, queued
        self.noise_dim, self.state_size = self.policy.noise_dim, self.policy.state_size
        self.held = False

    def step(self, *args):
        if not self.held:
            self.held = True
            deadline = time.monotonic() + 30
            while len(self.worker.rollouts.queue) < self.queued and time.monotonic() < deadline:
                time.sleep(0.001)
            assert len(self.worker.rollouts.queue) == self.queued, "the next call never came"
        return self.policy.step(*args)


def _overlapping(worker, sources, first, second):
    """Run `first` and, while it runs, `second` on two threads (as a Ray actor with two
    calls in flight does); both results."""
    results = {}
    worker.rollouts.policy = _HoldFirstStep(worker)

    def call(name, jobs):
        results[name] = worker.run(jobs, sources, token=name)

    one = threading.Thread(target=call, args=("first", first))
    one.start()
    deadline = time.monotonic() + 30
    while not worker._driving and time.monotonic() < deadline:
        time.sleep(0.0005)
    two = threading.Thread(target=call, args=("second", second))
    two.start()
    one.join()
    two.join()
    return results["first"], results["second"]


@pytest.mark.parametrize("slots", ["gym", "batched"])
def test_overlapping_calls_return_what_separate_calls_return(
    cartpole, cartpole_policy, cartpole_solver, slots
):
    space = cartpole if slots == "batched" else dataclasses.replace(cartpole, make_slots=None)
    sources, first, second = _chunks(space, cartpole_policy, cartpole_solver)
    alone = Worker(space, cartpole_policy, num_envs=4)
    expected = [alone.run(first, sources), alone.run(second, sources)]

    worker = Worker(space, cartpole_policy, num_envs=4)
    got = _overlapping(worker, sources, first, second)

    for want, have in zip(expected, got, strict=True):
        np.testing.assert_array_equal(have.returns, want.returns)
        np.testing.assert_array_equal(have.lengths, want.lengths)
        assert have.errors == want.errors == {}
    assert expected[0].lengths.max() >= 400  # the solver's long episodes are in chunk A
    # B's episodes started while A's long ones ran, and the rows are free again after.
    assert got[1].stats["overlap_starts"] > 0
    assert expected[1].stats["overlap_starts"] == 0
    assert worker.rollouts.idle and worker.rollouts.chunks_in_rows == 0
    steps = sum(result.stats["env_steps"] for result in got)
    assert steps == sum(result.lengths.sum() for result in expected)


def test_a_failing_reset_in_an_overlapping_call_fails_that_episode_only(
    cartpole, cartpole_policy, cartpole_solver
):
    space = dataclasses.replace(cartpole, make_slots=None)
    sources, first, second = _chunks(space, cartpole_policy, cartpole_solver)
    # A task the env cannot take (no parameters at all): set_task raises at the reset.
    broken = dataclasses.replace(second[0], task=Task(space.name, ()))
    worker = Worker(space, cartpole_policy, num_envs=4)
    _, got = _overlapping(worker, sources, first, [broken, *second[1:]])
    assert np.isnan(got.returns[0]) and list(got.errors) == [0]
    alone = Worker(space, cartpole_policy, num_envs=4).run(second[1:], sources)
    np.testing.assert_array_equal(got.returns[1:], alone.returns)


def test_ray_workers_overlap_calls_with_the_same_results(
    ray_session, cartpole, cartpole_policy, cartpole_solver
):
    space = dataclasses.replace(cartpole, make_slots=None)
    rng = np.random.default_rng(5)
    pairs = [(cartpole_policy.init(rng), space.initial_task()) for _ in range(10)]
    # The first chunk (24 episodes, pairs 0-5) ends with a solver's four 500-step
    # episodes, started as rows free up and so ending one by one: rows the second call's
    # episodes can take (that call is on the actor by then: both are sent at once).
    pairs.insert(5, (cartpole_solver, space.initial_task()))
    pairs.append((cartpole_solver, space.initial_task()))
    with EvaluationPool(space, cartpole_policy, "local", 1, 4) as pool:
        expected = pool.evaluate(pairs, episodes=4, seed=2)
    with EvaluationPool(space, cartpole_policy, "ray", 1, 4) as pool:
        pool.wait_ready()
        before = pool.stats_snapshot()["overlap_starts"]
        got = pool.evaluate(pairs, episodes=4, seed=2)
        overlapped = pool.stats_snapshot()["overlap_starts"] - before
    np.testing.assert_array_equal(got, expected)
    assert overlapped > 0


def test_a_chunk_is_not_done_while_its_last_episode_is_being_reset(cartpole, cartpole_policy):
    """A caller waiting on another thread reads `chunk.done`; during the reset of the
    chunk's last job (its job taken, not yet running) the chunk must not look done, or
    that caller would return a return and length of 0 for the episode, with no error."""
    from coevo.pool.rollout import Chunk

    space = dataclasses.replace(cartpole, make_slots=None)
    rng = np.random.default_rng(4)
    sources = {f"r{i}": cartpole_policy.init(rng) for i in range(3)}
    task = space.initial_task()
    jobs = [EpisodeJob(Stored(f"r{i}"), task, i) for i in range(3)]
    worker = Worker(space, cartpole_policy, num_envs=1)  # one row: each job waits its turn
    chunk = Chunk(jobs, sources)
    seen = []
    reset_slot = worker.slots.reset_slot

    def watching_reset(slot, task, seed):
        seen.append((chunk.next_job, chunk.done))  # what a waiting caller would see now
        return reset_slot(slot, task, seed)

    worker.slots.reset_slot = watching_reset
    worker.rollouts.add(chunk)
    finished = []
    worker.rollouts.drive(chunk, finished.append)
    assert seen == [(1, False), (2, False), (3, False)]
    assert finished == [chunk] and chunk.done
    alone = Worker(space, cartpole_policy, num_envs=1).run(jobs, sources)
    np.testing.assert_array_equal(chunk.returns, alone.returns)
    assert (chunk.lengths > 0).all()
