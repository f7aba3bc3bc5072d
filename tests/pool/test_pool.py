import dataclasses
import sys

import numpy as np
import pandas as pd
import pytest
from phrases import assert_says

from coevo import tasks
from coevo.errors import ConfigError
from coevo.pool import (
    EpisodeJob,
    EvaluationError,
    EvaluationPool,
    Perturbed,
    Stored,
    Worker,
    perturbation_noise,
)
from coevo.tasks import Param, TaskSpace


@pytest.fixture(scope="module")
def workload(cartpole, cartpole_policy):
    rng = np.random.default_rng(7)
    thetas = [cartpole_policy.init(rng) for _ in range(6)]
    task_list = [cartpole.mutate(cartpole.initial_task(), rng) for _ in range(6)]
    return list(zip(thetas, task_list, strict=True))


def _returns(space, policy, backend, workers, pairs, envs_per_worker=4):
    with EvaluationPool(space, policy, backend, workers, envs_per_worker) as pool:
        return pool.evaluate(pairs, episodes=3, seed=11)


def test_returns_are_identical_across_backends_and_worker_counts(
    ray_session, cartpole, cartpole_policy, workload
):
    reference = _returns(cartpole, cartpole_policy, "local", 1, workload)
    assert reference.shape == (6, 3)
    assert reference.min() >= 1 and reference.max() <= 500
    assert len(np.unique(reference)) > 3  # real, varied episodes
    for backend, workers, envs in [("local", 2, 4), ("local", 1, 1), ("ray", 1, 4), ("ray", 2, 3)]:
        got = _returns(cartpole, cartpole_policy, backend, workers, workload, envs)
        np.testing.assert_array_equal(got, reference, err_msg=f"{backend} x{workers}")


def test_episode_return_equals_a_plain_gymnasium_rollout(cartpole, cartpole_policy, workload):
    theta, task = workload[0]
    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        got = pool.evaluate([(theta, task)], episodes=1, seed=5)[0, 0]
    env = cartpole.make_env()
    env.set_task(task.as_dict())
    obs, _ = env.reset(seed=5)
    total = 0.0
    for _ in range(cartpole.max_episode_steps):
        action = cartpole_policy.act(theta[None], np.asarray(obs, np.float32)[None])[0]
        obs, reward, terminated, truncated, _ = env.step(int(action))
        total += reward
        if terminated or truncated:
            break
    assert got == total


def test_worker_keeps_its_envs_and_swaps_tasks_in_place(cartpole, cartpole_policy, workload):
    # The one-gymnasium-env-per-slot path (cartpole itself defaults to batched physics).
    gym_cartpole = dataclasses.replace(cartpole, make_slots=None)
    worker = Worker(gym_cartpole, cartpole_policy, num_envs=2)
    envs_before = [id(env) for env in worker.slots.envs]
    sources = {}
    jobs = []
    for theta, task in workload:
        key = f"k{len(sources)}"
        sources[key] = theta
        jobs.append(EpisodeJob(Stored(key), task, 0))
    worker.run(jobs, sources)
    assert [id(env) for env in worker.slots.envs] == envs_before
    tasks_seen = {tuple(sorted(env.get_task().items())) for env in worker.slots.envs}
    assert tasks_seen <= {tuple(sorted(t.as_dict().items())) for _, t in workload}


def test_weights_are_loaded_once_per_worker_and_version(cartpole, cartpole_policy, workload):
    theta, task = workload[0]
    with EvaluationPool(cartpole, cartpole_policy, "local", 1, envs_per_worker=2) as pool:
        pool.evaluate([(theta, task)] * 4, episodes=5, seed=0)
        assert pool.stats["cache_misses"] == 1
        assert pool.stats["cache_hits"] == 19
        assert pool.stats["bytes_shipped"] == theta.nbytes
        pool.evaluate([(theta, task)], episodes=2, seed=0)
        assert pool.stats["cache_misses"] == 1  # same version: no new load
        assert pool.stats["bytes_shipped"] == theta.nbytes
        assert pool.stats["episodes"] == 22
        assert pool.stats["env_steps"] > 22


def test_perturbed_jobs_equal_explicit_vectors(cartpole, cartpole_policy, workload):
    theta, task = workload[1]
    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        key = pool.register(theta)
        jobs = [EpisodeJob(Perturbed(key, 99, 0.5, sign), task, 3) for sign in (1, -1)]
        by_seed = pool.run(jobs).returns
        explicit = [
            theta + np.float32(s * 0.5) * perturbation_noise(99, theta.size) for s in (1, -1)
        ]
        direct = pool.evaluate([(v, task) for v in explicit], episodes=1, seed=3)[:, 0]
    np.testing.assert_array_equal(by_seed, direct)


def test_cross_evaluation_matrix_and_frame(cartpole, cartpole_policy, workload):
    thetas = [p for p, _ in workload[:3]]
    task_list = [t for _, t in workload[:2]]
    with EvaluationPool(cartpole, cartpole_policy, "local", 2) as pool:
        matrix = pool.cross_evaluate(thetas, task_list, episodes=2, seed=4)
        frame = pool.cross_evaluate_frame(
            {"a": thetas[0], "b": thetas[1], "c": thetas[2]},
            {"t0": task_list[0], "t1": task_list[1]},
            episodes=2,
            seed=4,
        )
        single = pool.evaluate([(thetas[2], task_list[1])], episodes=2, seed=4).mean()
        # Lists, as cross_evaluate takes them: named by position.
        by_position = pool.cross_evaluate_frame(thetas, task_list, episodes=2, seed=4)
    assert list(by_position.index) == [0, 1, 2] and list(by_position.columns) == [0, 1]
    np.testing.assert_array_equal(by_position.to_numpy(), matrix)
    assert matrix.shape == (3, 2)
    assert matrix[2, 1] == single
    assert isinstance(frame, pd.DataFrame) and list(frame.columns) == ["t0", "t1"]
    np.testing.assert_array_equal(frame.to_numpy(), matrix)


class _Explodes:
    """A task-settable env that raises when its task has boom > 0.5."""

    def __init__(self):
        import gymnasium as gym

        self.observation_space = gym.spaces.Box(-1, 1, (2,))
        self.action_space = gym.spaces.Discrete(2)
        self.task = {"boom": 0.0}

    def get_task(self):
        return self.task

    def set_task(self, task):
        self.task = task

    def reset(self, seed=None, options=None):
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        if self.task["boom"] > 0.5 and self.t == 3:
            raise RuntimeError("physics blew up")
        return np.zeros(2, np.float32), 1.0, self.t >= 10, False, {}


def test_an_env_error_fails_only_that_episode(rng):
    from coevo.policies import MLPPolicy

    space = TaskSpace("explodes", (Param("boom", 0, 1, 0, 0.1),), _Explodes, 50)
    env = _Explodes()
    policy = MLPPolicy.for_spaces(env.observation_space, env.action_space, (4,))
    theta = policy.init(rng)
    with EvaluationPool(space, policy, "local", 1, envs_per_worker=2) as pool:
        key = pool.register(theta)
        jobs = [EpisodeJob(Stored(key), space.task(boom=b), 0) for b in (0.0, 1.0, 0.0)]
        result = pool.run(jobs)
    assert result.returns[0] == 10 and result.returns[2] == 10
    assert np.isnan(result.returns[1])
    assert list(result.errors) == [1] and "physics blew up" in result.errors[1]


class _BadCourse(_Explodes):
    """Its set_task fails two calls deep in the env's own code, on tasks with boom > 0.5."""

    def set_task(self, task):
        self.task = self._course(task)

    def _course(self, task):
        return self._layout(task)

    def _layout(self, task):  # deeper than coevo's own frames around it
        return self._terrain(task)

    def _terrain(self, task):
        return self._checked(task)

    def _checked(self, task):
        if task["boom"] > 0.5:
            raise ValueError("no course for this boom")
        return task


def test_an_env_error_at_its_task_shows_the_envs_own_lines(rng):
    # The traceback's innermost frames: the env's lines, not only the pool's calls.
    from coevo.policies import MLPPolicy

    space = TaskSpace("bad_course", (Param("boom", 0, 1, 0, 0.1),), _BadCourse, 50)
    env = _BadCourse()
    policy = MLPPolicy.for_spaces(env.observation_space, env.action_space, (4,))
    with EvaluationPool(space, policy, "local", 1, envs_per_worker=2) as pool:
        key = pool.register(policy.init(rng))
        result = pool.run([EpisodeJob(Stored(key), space.task(boom=1.0), 0)])
    text = result.errors[0]
    for frame in ("set_task", "_course", "_layout", "_terrain", "_checked"):
        assert f"in {frame}\n" in text, (frame, text)
    assert "coevo/pool/" not in text  # the pool's calls around them: left out
    assert text.rstrip().endswith("ValueError: no course for this boom")


@pytest.mark.parametrize(
    ("kwargs", "phrases"),
    [
        ({"backend": "spark"}, ("pool.backend: ", "'spark'", "allowed: local, ray")),
        ({"num_workers": 0}, ("pool.num_workers: ", "positive integer", "got 0")),
        ({"envs_per_worker": -2}, ("pool.envs_per_worker: ", "positive integer", "got -2")),
        ({"num_workers": True}, ("pool.num_workers: ", "positive integer", "got True")),
    ],
)
def test_bad_pool_arguments_name_the_field(cartpole, cartpole_policy, kwargs, phrases):
    with pytest.raises(ConfigError) as info:
        EvaluationPool(cartpole, cartpole_policy, **{"backend": "local", **kwargs})
    assert_says(str(info.value), *phrases)


def test_unregistered_weights_are_refused(cartpole, cartpole_policy):
    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        with pytest.raises(KeyError, match="not registered"):
            pool.run([EpisodeJob(Stored("missing"), cartpole.initial_task(), 0)])
        with pytest.raises(ValueError, match=r"shape \(3,\), policy needs \(114,\)"):
            pool.register(np.zeros(3))


@pytest.mark.parametrize("call", ["run", "dispatch"])
def test_hand_built_jobs_are_checked_before_they_run(cartpole, cartpole_policy, call):
    from coevo.pool.trajectories import TrajectoryJob

    theta = cartpole_policy.init(np.random.default_rng(0))
    task = cartpole.initial_task()
    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        key = pool.register(theta)
        run = getattr(pool, call)
        with pytest.raises(TypeError, match=r"jobs\[1\]\.task: the task must be a coevo Task"):
            run([EpisodeJob(Stored(key), task, 0), EpisodeJob(Stored(key), {"length": 0.5}, 0)])
        with pytest.raises(ValueError, match=r"jobs\[0\]\.seed must be an integer >= 0, got -1"):
            run([EpisodeJob(Stored(key), task, -1)])
        with pytest.raises(TypeError, match=r"Stored\(pool\.register\(theta\)\)"):
            run([EpisodeJob(theta, task, 0)])
        # Nothing ran: the pool counted no jobs.
        assert pool.stats["jobs"] == 0
    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        with pytest.raises(TypeError, match=r"jobs\[0\]: expected an EpisodeJob"):
            pool.run([(Stored(pool.register(theta)), task, 0)])
        # Among jobs of other kinds, a job is named by its place in the caller's list.
        stream = TrajectoryJob(Stored(pool.register(theta)), task, 0, 0, 8)
        with pytest.raises(ValueError, match=r"jobs\[1\]\.seed must be an integer >= 0"):
            pool.dispatch([stream, EpisodeJob(Stored(pool.register(theta)), task, -2)])


def test_a_policy_built_for_other_spaces_is_refused_by_name():
    """A CartPole policy on Pendulum's pool failed every episode with numpy's broadcast
    error; the pool refuses it when built, saying both sides' spaces."""
    from coevo import make_policy, tasks

    cartpole = tasks.get("cartpole").make_env()
    policy = make_policy("mlp", cartpole.observation_space, cartpole.action_space, {})
    with pytest.raises(ConfigError) as refused:
        EvaluationPool(tasks.get("pendulum"), policy, backend="local")
    assert refused.value.field == "policy"
    assert_says(
        str(refused.value),
        "observations of 4 values and 2 discrete actions",
        "'pendulum' has observations of 3 values and a 1-dimensional Box action",
    )
    with EvaluationPool(tasks.get("cartpole"), policy, backend="local") as pool:
        theta = policy.init(np.random.default_rng(0))
        for episodes in (0, -1, 1.5, True):
            with pytest.raises(ValueError, match="episodes must be a positive integer, got"):
                pool.evaluate([(theta, tasks.get("cartpole").initial_task())], episodes)


def test_non_finite_parameters_fail_their_evaluations_and_never_score(
    cartpole, cartpole_policy, workload
):
    """A NaN vector scored ~10 on CartPole (argmax over NaN logits picks action 0); now
    each of its episodes fails with the count of non-finite values, the others run as
    before, and a cached version fails again on the next call."""
    theta, task = workload[0]
    nan, inf = np.full_like(theta, np.nan), theta.copy()
    inf[[3, 7]] = [np.inf, -np.inf]
    size = cartpole_policy.num_params
    pairs = [(nan, task), (theta, task), (inf, task)]
    with EvaluationPool(cartpole, cartpole_policy, "local", 1, envs_per_worker=4) as pool:
        alone = pool.evaluate([(theta, task)], episodes=2, seed=3)
        for _ in range(2):  # loaded, then from the workers' cache
            returns, errors = pool.evaluate_detailed(pairs, episodes=2, seed=3)
            assert np.isnan(returns[[0, 2]]).all()
            np.testing.assert_array_equal(returns[1], alone[0])
            assert errors == {
                0: f"ValueError: policy parameters contain {size} non-finite values "
                f"(nan/inf) of {size}",
                2: f"ValueError: policy parameters contain 2 non-finite values (nan/inf) of {size}",
            }
        with pytest.raises(EvaluationError, match=r"1 of 1 evaluations failed.*non-finite"):
            pool.evaluate([(nan, task)], episodes=2)
        with pytest.raises(EvaluationError, match=r"2 of 4 evaluations failed.*non-finite"):
            pool.cross_evaluate([theta, inf], [task, workload[1][1]], episodes=1)
        # ES perturbations: of a NaN theta, and of a finite one overflowing to infinity.
        nan_key, key = pool.register(nan), pool.register(theta)
        jobs = [
            EpisodeJob(Perturbed(nan_key, 5, 0.1, 1), task, 0),
            EpisodeJob(Perturbed(key, 5, 3e38, 1), task, 0),  # |noise| > 1.2: inf
            EpisodeJob(Perturbed(key, 5, 0.1, 1), task, 0),
        ]
        with np.errstate(over="ignore"):
            result = pool.run(jobs)
    assert np.isnan(result.returns[:2]).all() and np.isfinite(result.returns[2])
    assert sorted(result.errors) == [0, 1]
    assert all("non-finite values (nan/inf)" in text for text in result.errors.values())


class _ShapedReward(_Explodes):
    """Rewards 1.0 for 10 steps in the shape its task's `kind` says: 0 a float, 1 a
    1-element array (as hand-written envs often return), 2 [[1.0]], 3 a numpy float32, 4 an
    int; then three values, a string, a string that reads as a number, and a numpy array of
    that string."""

    def step(self, action):
        self.t += 1
        kind = round(self.task["kind"])
        kinds = [1.0, np.array([1.0]), np.array([[1.0]]), np.float32(1), 1, np.ones(3), "one"]
        reward = [*kinds, "1.0", np.array(["1.0"])][kind]
        return np.zeros(2, np.float32), reward, self.t >= 10, False, {}


@pytest.mark.parametrize("backend", ["local", "ray"])
def test_a_reward_array_of_one_value_counts_as_that_number(backend, request, rng):
    """`reward = np.array([k])` crashed the whole call (numpy's broadcast error in the
    rollout's `+=`) on both backends; now it is the number, and a reward of another shape
    fails just its episode, saying so."""
    from coevo.policies import MLPPolicy

    if backend == "ray":
        from ray import cloudpickle

        request.getfixturevalue("ray_session")
        # Workers cannot import this test module: ship the env by value.
        cloudpickle.register_pickle_by_value(sys.modules[__name__])
    space = TaskSpace("shaped", (Param("kind", 0, 8, 0, 1),), _ShapedReward, 50)
    env = _ShapedReward()
    policy = MLPPolicy.for_spaces(env.observation_space, env.action_space, (4,))
    theta = policy.init(rng)
    with EvaluationPool(space, policy, backend, 1, envs_per_worker=3) as pool:
        # One kind per call (every slot's reward alike), then all kinds in one call.
        alone = [pool.evaluate_detailed([(theta, space.task(kind=k))], 3) for k in range(9)]
        returns, errors = pool.evaluate_detailed(
            [(theta, space.task(kind=k)) for k in range(9)], episodes=3
        )
    for kind in range(5):
        assert alone[kind][0].tolist() == [[10.0, 10.0, 10.0]] and alone[kind][1] == {}
    assert returns[:5].tolist() == [[10.0] * 3] * 5
    assert np.isnan(returns[5:]).all()
    shape_error = "ValueError: step() returned a reward of shape (3,); expected a number"
    type_error = "TypeError: step() returned a reward of type str ('{}'); expected a number"
    # A string is not a reward, even one numpy would read as a number.
    array_error = (
        "TypeError: step() returned a reward of type ndarray (array(['1.0'], dtype='<U3')); "
        "expected a number"
    )
    expected = {
        5: shape_error,
        6: type_error.format("one"),
        7: type_error.format("1.0"),
        8: array_error,
    }
    assert {kind: alone[kind][1][0] for kind in range(5, 9)} == expected
    assert errors == expected


@pytest.mark.parametrize("backend", ["local", "ray"])
def test_a_closed_pool_says_so(backend, request, cartpole, cartpole_policy, workload):
    """After its `with` block a pool answered IndexError from its backend (evaluate,
    cross_evaluate, a curriculum's step); now every call names the cause. A pool used
    without `with` serves until closed, and closing twice is harmless."""
    from coevo import DomainRandomization, DRConfig, ESConfig, EvolutionStrategy

    if backend == "ray":
        request.getfixturevalue("ray_session")
    theta, task = workload[0]
    pool = EvaluationPool(cartpole, cartpole_policy, backend, 1, envs_per_worker=2)
    assert pool.evaluate([(theta, task)], 1).shape == (1, 1)
    with pool:
        pool.evaluate([(theta, task)], 1)
    pool.close()
    assert pool.closed
    es = EvolutionStrategy(ESConfig(population=4), cartpole_policy.num_params)
    dr = DomainRandomization(DRConfig(), space=cartpole, pool=pool, optimizer=es, seed=0)
    calls = {
        "evaluate": lambda: pool.evaluate([(theta, task)], 1),
        "evaluate_detailed": lambda: pool.evaluate_detailed([], 1),
        "cross_evaluate": lambda: pool.cross_evaluate([theta], [task]),
        "register": lambda: pool.register(theta),
        "run": lambda: pool.run([]),
        "dispatch": lambda: pool.dispatch([EpisodeJob(Stored("k"), task, 0)]),
        "worker_info": pool.worker_info,
        "with": lambda: pool.__enter__(),
        "curriculum step": dr.step,
    }
    for name, call in calls.items():
        with pytest.raises(RuntimeError) as refused:
            call()
        message = str(refused.value)
        assert "EvaluationPool is closed" in message and "create a new one" in message, name


def test_a_pool_refuses_arguments_that_are_not_a_space_and_a_policy(cartpole, cartpole_policy):
    """`EvaluationPool(policy, space)` failed with "'MLPPolicy' object has no attribute
    'make_env'"; now a TypeError names what each position takes."""
    from coevo.policies.loaders import LoadedPolicy

    takes = (
        "EvaluationPool(space, policy, ...) takes a task space first (a TaskSpace, e.g. "
        "coevo.tasks.get('cartpole')) and a policy second (a Policy, e.g. from "
        "coevo.make_policy(...)); got "
    )
    loaded = LoadedPolicy(cartpole_policy, np.zeros(cartpole_policy.num_params), "test")
    for arguments, got in [
        ((cartpole_policy, cartpole), "MLPPolicy and TaskSpace (swapped)"),
        (("cartpole", cartpole_policy), "str and MLPPolicy"),
        (
            (cartpole, loaded),
            "TaskSpace and LoadedPolicy; pass the loaded LoadedPolicy's .policy (its .theta "
            "is a vector)",
        ),
    ]:
        with pytest.raises(TypeError) as refused:
            EvaluationPool(*arguments, backend="local")
        assert_says(str(refused.value), takes, got)  # what each position takes, what came


def test_wrong_evaluation_inputs_are_refused_up_front(cartpole, cartpole_policy, workload):
    """A dict task failed each episode with "'dict' object has no attribute 'as_dict'", a
    negative seed each episode with gymnasium's seed error; now the call is refused before
    any episode runs, naming the argument and what it takes."""
    theta, task = workload[0]
    size = cartpole_policy.num_params
    build = (
        "build tasks with the pool's space: pool.space.task({}) (parameters left out keep "
        "their initial value) or pool.space.initial_task()"
    )
    refusals = [
        (
            lambda pool: pool.evaluate([(theta, task), (theta, {"gravity": 12.0})], 2),
            TypeError,
            "pairs[1]: the task must be a coevo Task, got dict {'gravity': 12.0}; "
            + build.format("gravity=12.0"),
        ),
        (
            lambda pool: pool.cross_evaluate([theta], [task, "cartpole"]),
            TypeError,
            "tasks[1]: the task must be a coevo Task, got str 'cartpole'; "
            + build.format("name=value, ..."),
        ),
        (
            lambda pool: pool.evaluate([(theta, task)], 2, seed=-5),
            ValueError,
            "seed must be an integer >= 0, got -5",
        ),
        (
            lambda pool: pool.cross_evaluate([theta], [task], seed=0.5),
            ValueError,
            "seed must be an integer >= 0, got 0.5",
        ),
        (
            lambda pool: pool.evaluate([(theta, task), (theta[:10], task)], 2),
            ValueError,
            f"pairs[1]: the parameter vector has shape (10,); the policy has {size} parameters",
        ),
        (
            lambda pool: pool.cross_evaluate([theta, theta[None]], [task]),
            ValueError,
            f"policies[1]: the parameter vector has shape (1, {size}); the policy has {size} "
            "parameters",
        ),
        (
            lambda pool: pool.evaluate([(task, theta)], 2),
            TypeError,
            "pairs[0]: a (task, parameters) pair; evaluate takes (parameters, task), e.g. "
            "[(theta, space.initial_task())]",
        ),
        (
            lambda pool: pool.evaluate([(theta, tasks.get("pendulum").initial_task())], 2),
            ValueError,
            "pairs[0]: a task of space 'pendulum'; this pool runs 'cartpole' (build tasks "
            "with pool.space)",
        ),
        (
            lambda pool: pool.evaluate((theta, task), 2),  # one pair, not a list of pairs
            TypeError,
            f"pairs[0]: expected a (parameters, task) pair, got ndarray of shape ({size},); "
            "evaluate takes a list of pairs, e.g. [(theta, space.initial_task())]",
        ),
    ]
    with EvaluationPool(cartpole, cartpole_policy, "local", 1, envs_per_worker=2) as pool:
        for call, error, message in refusals:
            with pytest.raises(error) as refused:
                call(pool)
            assert_says(str(refused.value), *_key_phrases(message))
        assert pool.stats["jobs"] == 0  # every call refused before an episode ran
        # What stays allowed: lists and numpy integers.
        got = pool.evaluate([(theta.tolist(), task)], 1, seed=np.int64(3))
        assert got.tolist() == pool.evaluate([(theta, task)], 1, seed=3).tolist()


def _key_phrases(message: str) -> tuple[str, ...]:
    """A refusal's key phrases: where (up to its first colon) and each clause after the
    first "; " (what is allowed, the way out), not the wording between."""
    where, _, rest = message.partition(": ")
    return (f"{where}: " if rest else where, *message.split("; ")[1:])
