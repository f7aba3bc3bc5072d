"""PPO as an optimizer on the pool: trajectories through both backends, learning, failures
with reasons, exact resumption, a worker killed mid-rollout."""

from __future__ import annotations

import dataclasses
import os
import pickle
import signal
import threading
import time

import gymnasium as gym
import numpy as np
import pytest
from phrases import assert_says

from coevo import tasks
from coevo.optimizers.ppo import PPO
from coevo.optimizers.ppo_config import PPOConfig
from coevo.optimizers.ppo_streams import with_stream_ends
from coevo.policies import make_policy
from coevo.pool import EvaluationPool
from coevo.pool.trajectories import ARRAY_NAMES
from coevo.tasks.task import Param, TaskSpace

pytest.importorskip("torch")


def _policy(space, hidden=(16, 16), **kwargs):
    env = space.make_env()
    return make_policy(
        "actor_critic",
        env.observation_space,
        env.action_space,
        {"hidden": hidden, "kwargs": kwargs},
    )


def _steps(pool, optimizer, thetas, states, task_lists, rngs):
    """One optimize step for every pair, all rollouts in one pool call (as the loop does)."""
    asked = [
        optimizer.ask(theta, state, tasks_, rng, pool.register)
        for theta, state, tasks_, rng in zip(thetas, states, task_lists, rngs, strict=True)
    ]
    results = pool.dispatch([job for a in asked for job in a.jobs])
    answered, offset = [], 0
    for theta, state, a in zip(thetas, states, asked, strict=True):
        answered.append((theta, state, a, results[offset : offset + len(a.jobs)]))
        offset += len(a.jobs)
    return optimizer.tell_many(answered)


def _rollout_arrays(pool, optimizer, theta, state, task, seed):
    asked = optimizer.ask(theta, state, [task], np.random.default_rng(seed), pool.register)
    streams = pool.dispatch(asked.jobs)
    return [
        {name: np.array(getattr(s, name)) for name in ARRAY_NAMES if hasattr(s, name)}
        for s in streams
    ]


@pytest.mark.parametrize("workers", [1, 2])
def test_trajectories_are_identical_on_both_backends(ray_session, workers):
    space = tasks.get("pendulum")
    policy = _policy(space)
    config = PPOConfig(n_envs=5, n_steps=64)
    optimizer = PPO(config, policy.num_params, policy=policy)
    theta = policy.init(np.random.default_rng(0))
    state = optimizer.init_state(theta, np.random.default_rng(1))
    task = space.task(gravity=12.0)
    with EvaluationPool(space, policy, "local", 1, envs_per_worker=3) as pool:
        reference = _rollout_arrays(pool, optimizer, theta, state, task, seed=2)
    with EvaluationPool(space, policy, "ray", workers, envs_per_worker=2) as pool:
        other = _rollout_arrays(pool, optimizer, theta, state, task, seed=2)
        stats = pool.stats_snapshot()
    for a, b in zip(reference, other, strict=True):
        for name in a:
            assert a[name].tobytes() == b[name].tobytes(), name
    # The trajectories' size is in the pool's statistics: 5 streams x 64 steps of obs (3
    # floats), action, log-prob, reward, two flags, value, bootstrap value.
    per_step = 4 * 3 + 4 + 4 + 4 + 1 + 1 + 4 + 4
    assert stats["trajectory_bytes"] >= 5 * 64 * per_step
    assert stats["env_steps"] >= 5 * 64


def _train(pool, optimizer, thetas, states, task, steps):
    rngs = [np.random.default_rng(20 + i) for i in range(len(thetas))]
    records = []
    for _ in range(steps):
        told = _steps(pool, optimizer, thetas, states, [[task]] * len(thetas), rngs)
        thetas, states = [t.theta for t in told], [t.state for t in told]
        records.append([t.record.mean_return for t in told])
    return thetas, states, records


def test_continuing_streams_train_identically_on_both_backends(ray_session):
    space = tasks.get("cartpole")
    policy = _policy(space)
    config = PPOConfig(n_envs=4, n_steps=16, batch_size=32, n_epochs=1)
    optimizer = PPO(config, policy.num_params, policy=policy)
    thetas = [policy.init(np.random.default_rng(i)) for i in range(2)]
    states = [optimizer.init_state(t, np.random.default_rng(9 + i)) for i, t in enumerate(thetas)]
    task = space.initial_task()
    runs = {}
    # One worker with 3 slots keeps 6 live envs for 8 streams: some replay; two sticky Ray
    # workers with 4 slots each keep every stream's env.
    for backend, workers, slots in (("local", 1, 3), ("ray", 2, 4)):
        with EvaluationPool(space, policy, backend, workers, envs_per_worker=slots) as pool:
            runs[backend] = (*_train(pool, optimizer, thetas, states, task, 4), pool.stats)
    (theta_a, state_a, rec_a, stats_a), (theta_b, state_b, rec_b, stats_b) = runs.values()
    for a, b in zip(theta_a, theta_b, strict=True):
        assert a.tobytes() == b.tobytes()
    np.testing.assert_array_equal(rec_a, rec_b)
    ends = [[e.continuation and e.continuation.key for e in s.streams] for s in state_a]
    assert ends == [[e.continuation and e.continuation.key for e in s.streams] for s in state_b]
    # Streams went on across rollouts (CartPole's early episodes last ~20 steps: some
    # streams were mid-episode at every rollout's end).
    assert stats_a["stream_cache_hits"] > 0 and stats_a["stream_cache_misses"] > 0
    assert stats_a["replay_steps"] > 0
    assert stats_b["stream_cache_hits"] > 0 and stats_b["stream_cache_misses"] == 0


def test_ppo_learns_cartpole_on_the_pool():
    space = tasks.get("cartpole")
    policy = _policy(space, hidden=(32, 32))
    config = PPOConfig(
        n_envs=2, n_steps=256, batch_size=128, n_epochs=10, gamma=0.98, gae_lambda=0.8,
        learning_rate=1e-3,
    )  # fmt: skip
    optimizer = PPO(config, policy.num_params, policy=policy)
    rngs = [np.random.default_rng(seed) for seed in (0, 1)]
    thetas = [policy.init(rng) for rng in rngs]
    states = [optimizer.init_state(theta, rng) for theta, rng in zip(thetas, rngs, strict=True)]
    task = space.initial_task()
    training = []
    with EvaluationPool(space, policy, "local", 1, envs_per_worker=16) as pool:
        for _ in range(25):
            told = _steps(pool, optimizer, thetas, states, [[task], [task]], rngs)
            # Every update applied; a rollout whose streams all balanced for its n_steps has a
            # reason (no episode ended: no training return) but is trained on all the same.
            assert all(
                t.record.applied
                and (not t.record.reason or t.record.reason.startswith("no episode ended within"))
                for t in told
            )
            thetas = [t.theta for t in told]
            states = [t.state for t in told]
            training.append([t.record.mean_return for t in told])
        after = pool.evaluate([(theta, task) for theta in thetas], episodes=4, seed=7)
    assert states[0].updates == 25
    assert told[0].record.extra["value_loss"] > 0
    # Two pairs trained at once, in one pool call per step, both learn: the stochastic
    # policy's episodes grow from ~20 steps, the deterministic one balances for long. (A
    # rollout in which no episode ended has no mean return: its episodes last >= n_steps.)
    training = np.nan_to_num(np.array(training), nan=config.n_steps)
    assert (training[:2].mean(axis=0) < 60).all() and (training[-2:].mean(axis=0) > 100).all()
    assert (after.mean(axis=1) > 150).all(), (training, after)


@pytest.mark.parametrize("sde", [{}, {"use_sde": True, "sde_sample_freq": 4}])
def test_resume_from_a_pickled_state_gives_the_same_steps(sde):
    space = tasks.get("pendulum")
    policy = _policy(space, **sde)
    optimizer = PPO(PPOConfig(n_envs=2, n_steps=64, batch_size=32, n_epochs=2), policy.num_params,
                    policy=policy)  # fmt: skip
    theta = policy.init(np.random.default_rng(3))
    state = optimizer.init_state(theta, np.random.default_rng(4))
    task = space.initial_task()
    with EvaluationPool(space, policy, "local", 1, envs_per_worker=4) as pool:
        rng = np.random.default_rng(5)
        (told,) = _steps(pool, optimizer, [theta], [state], [[task]], [rng])
        # Pendulum's episodes last 200 steps: the checkpoint is mid-episode, each stream 64
        # steps into it.
        assert [end.continuation.length for end in told.state.streams] == [64, 64]
        saved = pickle.dumps((told.theta, told.state, rng))
        (a,) = _steps(pool, optimizer, [told.theta], [told.state], [[task]], [rng])
        before = pool.stats_snapshot()
        theta2, state2, rng2 = pickle.loads(saved)
        (b,) = _steps(pool, optimizer, [theta2], [state2], [[task]], [rng2])
        replayed = pool.stats_snapshot()
    assert a.theta.tobytes() == b.theta.tobytes()
    assert a.state.adam_v.tobytes() == b.state.adam_v.tobytes()
    keys = [[end.continuation.key for end in told.state.streams] for told in (a, b)]
    assert keys[0] == keys[1] and [e.continuation.length for e in a.state.streams] == [128, 128]
    # `a` took the live envs from the worker's cache; the resumed `b` rebuilt them by replay.
    assert replayed["stream_cache_misses"] - before["stream_cache_misses"] == 2
    assert replayed["replay_steps"] - before["replay_steps"] == 128


def test_the_learner_as_a_ray_task_gives_the_drivers_bits(ray_session):
    """learner: ray runs the batched update as a Ray task when a CPU is free (the pool's one
    worker leaves one of the session's two); the pairs' weights and states are the bits the
    driver's learner gives."""
    from coevo.optimizers.ppo_remote import ray_has_room

    space = tasks.get("pendulum")
    policy = _policy(space)
    settings = dict(n_envs=2, n_steps=48, batch_size=32, n_epochs=2, target_kl=0.02)
    task = space.initial_task()
    finals = {}
    with EvaluationPool(space, policy, "ray", 1, envs_per_worker=4) as pool:
        assert ray_has_room()
        for place in ("driver", "ray"):
            optimizer = PPO(PPOConfig(learner=place, **settings), policy.num_params, policy=policy)
            rngs = [np.random.default_rng(seed) for seed in (0, 1, 2)]
            thetas = [policy.init(rng) for rng in rngs]
            states = [optimizer.init_state(t, rng) for t, rng in zip(thetas, rngs, strict=True)]
            for _ in range(2):
                told = _steps(pool, optimizer, thetas, states, [[task]] * 3, rngs)
                assert all(t.record.applied for t in told)  # no update refused
                thetas, states = [t.theta for t in told], [t.state for t in told]
            assert optimizer.learner_runs == {"driver": 0, "ray": 0, place: 2}
            finals[place] = (thetas, states)
    for theta, state, theta_ray, state_ray in zip(*finals["driver"], *finals["ray"], strict=True):
        assert theta.tobytes() == theta_ray.tobytes()
        for name, value in vars(state).items():
            other = getattr(state_ray, name)
            if isinstance(value, np.ndarray):
                assert value.tobytes() == other.tobytes(), name
            else:
                assert value == other, name


class NaNAtStep2(gym.Env):
    """Rewards NaN at step 2 when its task's mode is 1; raises at step 3 when it is 2."""

    observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self):
        self.task = self._next = {"mode": 0.0}
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
        mode = round(self.task["mode"])
        if mode == 2 and self.t == 3:
            raise FloatingPointError("wheel fell off")
        reward = float("nan") if mode == 1 and self.t == 2 else 1.0
        return np.zeros(2, np.float32), reward, self.t >= 10, False, {}


def test_a_broken_rollout_leaves_the_pair_as_it_was_with_a_reason():
    space = TaskSpace("broken", (Param("mode", 0, 2, 0, 0.0),), NaNAtStep2, 50)
    policy = _policy(space)
    optimizer = PPO(PPOConfig(n_envs=2, n_steps=20, batch_size=20), policy.num_params,
                    policy=policy)  # fmt: skip
    theta = policy.init(np.random.default_rng(8))
    state = optimizer.init_state(theta, np.random.default_rng(9))
    modes = [[space.task(mode=m)] for m in (0, 1, 2)]
    with EvaluationPool(space, policy, "local", 1, envs_per_worker=4) as pool:
        rngs = [np.random.default_rng(10 + i) for i in range(3)]
        fine, nan, raised = _steps(pool, optimizer, [theta] * 3, [state] * 3, modes, rngs)
    assert fine.record.reason == "" and fine.theta.tobytes() != theta.tobytes()
    assert nan.record.reason.startswith("update refused: non-finite advantages")
    assert raised.record.reason.startswith("update skipped: 2 of 2 streams failed")
    assert "wheel fell off" in raised.record.reason and raised.record.failed == 2
    for told in (nan, raised):
        assert told.theta.tobytes() == theta.tobytes() and told.state is state


def test_a_killed_worker_mid_rollout_gives_identical_results(ray_session):
    # One gymnasium env per slot (slower than batched physics): a call long enough to kill.
    space = dataclasses.replace(tasks.get("pendulum"), make_slots=None)
    policy = _policy(space)
    optimizer = PPO(PPOConfig(n_envs=8, n_steps=600), policy.num_params, policy=policy)
    rng = np.random.default_rng(6)
    thetas = [policy.init(rng) for _ in range(4)]
    state = optimizer.init_state(thetas[0], rng)
    task = space.initial_task()
    with EvaluationPool(space, policy, "ray", num_workers=2, envs_per_worker=4) as pool:
        # The streams start mid-episode, 50 steps in (a shorter rollout before).
        short = PPO(PPOConfig(n_envs=8, n_steps=50), policy.num_params, policy=policy)
        asked = short.ask(thetas[0], state, [task], np.random.default_rng(7), pool.register)
        state = with_stream_ends(state, asked.jobs, pool.dispatch(asked.jobs))
        assert all(end.continuation.length == 50 for end in state.streams)

        def rollouts():
            out = []
            for index, theta in enumerate(thetas):
                out += _rollout_arrays(pool, optimizer, theta, state, task, seed=index)
            return out

        started = time.perf_counter()
        undisturbed = rollouts()
        undisturbed_s = time.perf_counter() - started
        pid_before = [info["pid"] for info in pool.worker_info()]
        killed_at: list[float] = []

        def kill_worker_0() -> None:
            time.sleep(min(0.3, undisturbed_s / 8))
            os.kill(pid_before[0], signal.SIGKILL)
            killed_at.append(time.perf_counter())

        killer = threading.Thread(target=kill_worker_0)
        killer.start()
        disturbed = rollouts()
        returned_at = time.perf_counter()
        killer.join()
        assert killed_at and killed_at[0] < returned_at
        assert pool.stats["worker_restarts"] >= 1
        # Undisturbed, the first rollout found the live envs in the workers' caches; the
        # others, and the disturbed run (a new worker), replayed the 50 steps.
        assert pool.stats["stream_cache_hits"] > 0 and pool.stats["replay_steps"] > 0
    for a, b in zip(undisturbed, disturbed, strict=True):
        for name in a:
            assert a[name].tobytes() == b[name].tobytes(), name


def test_a_curriculum_gives_ppo_the_pools_policy():
    """PPO(config, n) without `policy=`: the curriculum tells it the pool's policy (it
    raised 'PPO needs its policy' at the first step); a policy without a value head is
    refused when the curriculum is built."""
    from coevo.curricula.dr import DomainRandomization, DRConfig
    from coevo.errors import ConfigError

    space = tasks.get("cartpole")
    policy = _policy(space)
    config = PPOConfig(n_envs=2, n_steps=64, batch_size=64, n_epochs=1)
    with EvaluationPool(space, policy, backend="local", num_workers=1) as pool:
        ppo = PPO(config, policy.num_params)
        dr = DomainRandomization(DRConfig(tasks_per_step=1), space=space, pool=pool, optimizer=ppo)
        result = dr.step()
        assert result.summary["optimizer_steps"] == 1
    env = space.make_env()
    mlp = make_policy("mlp", env.observation_space, env.action_space, {})
    with EvaluationPool(space, mlp, backend="local", num_workers=1) as pool:
        with pytest.raises(
            ConfigError,
            match=r"^policy.name: optimizer ppo needs the actor-critic policy .* "
            r"policy=actor_critic .*make_policy\('actor_critic', .* got MLPPolicy$",
        ):
            DomainRandomization(
                DRConfig(), space=space, pool=pool, optimizer=PPO(config, mlp.num_params)
            )


LEARNER_RAY_WITHOUT_RAY = """
import json, logging, sys
sys.path[:0] = sys.argv[1:3]  # this folder (test_ppo) and tests/ (phrases)
import numpy as np
from test_ppo import _policy, _steps
from coevo import tasks
from coevo.optimizers.ppo import PPO
from coevo.optimizers.ppo_config import PPOConfig
from coevo.pool import EvaluationPool

warned = []
handler = logging.Handler()
handler.emit = lambda record: warned.append(record.getMessage())
logging.getLogger("coevo.optimizers").addHandler(handler)
space = tasks.get("pendulum")
policy = _policy(space)
settings = dict(n_envs=2, n_steps=16, batch_size=16, n_epochs=1)
optimizer = PPO(PPOConfig(learner="ray", **settings), policy.num_params, policy=policy)
rngs = [np.random.default_rng(0)]
thetas = [policy.init(rngs[0])]
states = [optimizer.init_state(thetas[0], rngs[0])]
with EvaluationPool(space, policy, "local", 1, envs_per_worker=2) as pool:
    for _ in range(2):
        told = _steps(pool, optimizer, thetas, states, [[space.initial_task()]], rngs)
        thetas, states = [t.theta for t in told], [t.state for t in told]
print(optimizer.learner_runs["driver"])
print(json.dumps([w for w in warned if "learner=ray" in w]))
"""


def test_learner_ray_that_runs_in_the_driver_says_why():
    # A local pool and no Ray in the process (a fresh one: this session's tests keep a Ray
    # running): no Ray to send the update to. The run goes on in the driver, and says so
    # once (it used to say nothing, whatever the reason).
    import json
    import subprocess
    import sys
    from pathlib import Path

    done = subprocess.run(
        [sys.executable, "-c", LEARNER_RAY_WITHOUT_RAY, *map(str, Path(__file__).parents[:2])],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    runs, warned = done.stdout.strip().splitlines()[-2:]
    assert runs == "2"
    warned = json.loads(warned)
    assert len(warned) == 1 and "runs in the driver for the whole run: " in warned[0]


@pytest.mark.parametrize(
    "overrides, warned",
    [
        ({"curriculum": {"name": "dr"}, "optimizer": {"n_steps": 32}}, True),
        ({"curriculum": {"name": "plr"}, "optimizer": {"n_steps": 32}}, True),
        ({"curriculum": {"name": "dr"}, "optimizer": {"n_steps": 500}}, False),
        # POET's pairs keep their task across updates: their streams continue.
        ({"curriculum": {"name": "poet"}, "optimizer": {"n_steps": 32}}, False),
    ],
)
def test_streams_shorter_than_an_episode_under_a_curriculum_are_warned_of(overrides, warned):
    """DR/PLR draw new tasks at each update, which cuts every stream's episode at n_steps:
    said before the run starts, with the n_steps that would not."""
    from coevo import curricula
    from coevo.config import parse_config
    from coevo.optimizers.es import EvolutionStrategy
    from coevo.run_setup import episode_cut_warnings

    raw = {"task": {"name": "cartpole"}, "policy": {"name": "actor_critic"}, **overrides}
    raw["optimizer"] = {"name": "ppo", "batch_size": 64, **overrides["optimizer"]}
    config = parse_config(raw)
    space = tasks.space_from_config(config.task)
    curriculum = curricula.get(config.curriculum.name)
    lines = episode_cut_warnings(config, space, curriculum, PPO)
    # An optimizer of another kind whose config has an n_steps of its own: no streams to cut.
    assert episode_cut_warnings(config, space, curriculum, EvolutionStrategy) == []
    if not warned:
        assert lines == []
        return
    (line,) = lines
    assert line.startswith("warning: optimizer.n_steps=32 ")
    assert_says(
        line,
        "task space 'cartpole' (up to 500 steps)",
        f"curriculum={config.curriculum.name}",
        "set optimizer.n_steps to at least 500",
    )


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        # SB3's defaults, 8 x 256 = 2048 steps: 64 divides them.
        ({"batch_size": 64}, None),
        (
            {"batch_size": 300},
            (
                "does not divide a rollout of 8 streams",
                "= 2048 steps",
                "truncated minibatch of 248",
            ),
        ),
        (
            {"batch_size": 5000},
            ("is larger than a rollout of 8 streams", "one minibatch of 2048"),
        ),
    ],
)
def test_a_batch_size_that_does_not_divide_the_rollout_is_warned_of(overrides, expected):
    from coevo import curricula
    from coevo.config import parse_config
    from coevo.optimizers.es import EvolutionStrategy
    from coevo.run_setup import minibatch_warnings

    config = parse_config({"optimizer": {"name": "ppo", **overrides}})
    poet = curricula.get("poet")
    warned = minibatch_warnings(config, poet, PPO)
    if expected is None:
        assert warned == []
    else:
        (warning,) = warned
        assert warning.startswith(f"warning: optimizer.batch_size={overrides['batch_size']} ")
        assert_says(warning, *expected)
    assert minibatch_warnings(config, poet, EvolutionStrategy) == []
    # A single-policy curriculum's rollout has a stream per task at least: 16 x 256 = 4096.
    dr = parse_config(
        {
            "optimizer": {"name": "ppo", "batch_size": 64 * 48},
            "curriculum": {"name": "dr", "tasks_per_step": 16},
        }
    )
    (line,) = minibatch_warnings(dr, curricula.get("dr"), PPO)
    assert "a rollout of 16 streams x optimizer.n_steps=256 = 4096 steps" in line
    # A curriculum of another kind may ask for any number of tasks: its rollout is unknown.
    from coevo.curricula.base import Curriculum

    assert minibatch_warnings(config, type("Plain", (Curriculum,), {}), PPO) == []


@pytest.mark.parametrize("batch_size", [64, 300, 5000])
def test_the_minibatch_warning_says_what_sb3s_ppo_says_for_the_same_rollout(batch_size):
    # Side by side with SB3 on 8 envs x 256 steps: both warn, or neither, with the same
    # full and truncated minibatches.
    import re
    import warnings

    from stable_baselines3 import PPO as SB3PPO
    from stable_baselines3.common.env_util import make_vec_env

    from coevo import curricula
    from coevo.config import parse_config
    from coevo.run_setup import minibatch_warnings

    env = make_vec_env("CartPole-v1", n_envs=8, seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        SB3PPO("MlpPolicy", env, n_steps=256, batch_size=batch_size, device="cpu")
    sb3 = [str(w.message) for w in caught if "mini-batch" in str(w.message)]
    config = parse_config({"optimizer": {"name": "ppo", "batch_size": batch_size}})
    ours = minibatch_warnings(config, curricula.get("poet"), PPO)  # 8 streams x 256
    print(f"batch_size {batch_size}: SB3 {sb3}, coevo {ours}")
    assert bool(sb3) == bool(ours)
    if sb3:
        full, truncated = map(int, re.search(r"every (\d+) .* size (\d+)", sb3[0]).groups())
        if full:
            assert f"truncated minibatch of {truncated} after {full} full ones" in ours[0]
        else:  # SB3: no full minibatch, one of the whole rollout
            assert f"each epoch is one minibatch of {truncated}" in ours[0]
