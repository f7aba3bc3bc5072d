"""Generic task spaces from config: any gymnasium id, any task-settable class."""

import pickle
import subprocess
import sys
import threading
from pathlib import Path

import cloudpickle
import gymnasium as gym
import numpy as np
import pytest
import yaml
from phrases import assert_says

from coevo.config import parse_config
from coevo.errors import ConfigError
from coevo.pool import EvaluationPool
from coevo.run_setup import prepare
from coevo.tasks.generic import GymTaskEnv
from coevo.tasks.protocol import PendingTaskMixin

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "conf" / "task" / "custom_example.yaml"
PENDULUM_G = {"low": 2.0, "high": 20.0, "init": 10.0, "step": 1.0}


class RllibStyleEnv(gym.Env):
    """An env as RLlib users write them: one config dict argument, get_task / set_task."""

    def __init__(self, config):
        self.inner = gym.make("CartPole-v1", max_episode_steps=-1).unwrapped
        self.observation_space = self.inner.observation_space
        self.action_space = self.inner.action_space
        self.push = float(config["push"])
        self.set_task({"gravity": 9.8})

    def get_task(self):
        return {"gravity": self.inner.gravity}

    def set_task(self, task):
        self.inner.gravity = task["gravity"]
        self.inner.force_mag = self.push

    def reset(self, *, seed=None, options=None):
        return self.inner.reset(seed=seed)

    def step(self, action):
        return self.inner.step(action)


class NotTaskSettable(gym.Env):
    pass


def _space(task):
    return prepare(parse_config({"task": task, "pool": {"backend": "local"}}))


def _rollout(env, task, seed, actions):
    env.set_task(task)
    obs, _ = env.reset(seed=seed)
    trajectory = [obs]
    for action in actions:
        obs, *_ = env.step(action)
        trajectory.append(obs)
    return np.stack(trajectory)


def test_custom_example_maps_kwargs_and_attributes_onto_gymnasium():
    space, policy = _space(yaml.safe_load(EXAMPLE.read_text()))
    assert space.name == "pendulum_custom" and space.max_episode_steps == 200
    assert space.solved_score == -200.0  # POET's CartPole-scale thresholds get a warning
    assert space.names == ("gravity", "mass", "max_torque")
    assert policy.act_dim == 1 and not policy.discrete
    env = space.make_env()
    assert isinstance(env, GymTaskEnv)
    actions = [np.array([1.7], np.float32)] * 30
    task = {"gravity": 4.0, "mass": 1.6, "max_torque": 0.8}
    got = _rollout(env, task, 3, actions)
    reference = gym.make("Pendulum-v1", g=4.0).unwrapped
    reference.m, reference.max_torque = 1.6, 0.8
    reference.reset(seed=3)
    expected = [reference._get_obs()] + [reference.step(a)[0] for a in actions]
    np.testing.assert_array_equal(got, np.stack(expected))
    # A keyword change rebuilds the env at the next reset; an attribute change does not.
    inner = env.env
    env.set_task({**task, "mass": 2.0})
    assert env.env.unwrapped.m == 1.6  # not mid-episode
    env.reset(seed=0)
    assert env.env is inner and env.env.unwrapped.m == 2.0
    env.set_task({**task, "gravity": 12.0})
    env.reset(seed=0)
    assert env.env is not inner and env.env.unwrapped.g == 12.0
    assert env.get_task() == {**task, "gravity": 12.0}
    # Rendering set after construction (as coevo-eval does) reaches the inner env.
    env.render_mode = "rgb_array"
    env.set_task({**task, "gravity": 14.0})
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape[2] == 3 and len(np.unique(frame.reshape(-1, 3), axis=0)) > 2


def test_steps_skip_gym_makes_checking_wrappers_once_their_checks_ran():
    """From an episode after gym.make's checks (OrderEnforcing, PassiveEnvChecker) ran, a
    gymnasium-id env's steps go to the env itself: the same observations and rewards, without
    the layers' per-step cost. The first episode still runs the checks."""
    space, _ = _space(
        {"name": "cp", "env_id": "CartPole-v1", "params": {"g": {**PENDULUM_G, "attr": "gravity"}}}
    )
    env = space.make_env()
    reference = gym.make("CartPole-v1", max_episode_steps=-1)  # every call through the chain
    with pytest.raises(gym.error.ResetNeeded):
        env.step(0)  # before any reset: the order check still applies
    for episode in range(3):
        task = {"g": 6.0 + episode}
        env.set_task(task)
        reference.unwrapped.gravity = task["g"]
        np.testing.assert_array_equal(env.reset(seed=episode)[0], reference.reset(seed=episode)[0])
        if episode == 0:  # the checker checks this episode's first steps
            assert isinstance(env.step.__self__, gym.wrappers.PassiveEnvChecker)
        else:
            assert env.step.__self__ is env.env.unwrapped
        for t in range(20):
            got, want = env.step(np.int64(t % 2)), reference.step(np.int64(t % 2))
            np.testing.assert_array_equal(got[0], want[0])
            assert got[1:4] == want[1:4]


def test_commented_entry_point_example_is_valid():
    """The entry_point block of custom_example.yaml runs as written once uncommented."""
    text = EXAMPLE.read_text().split("# --- entry_point example ---\n")[1]
    block = "\n".join(line[2:] for line in text.splitlines() if line.startswith("# "))
    space, _ = _space(yaml.safe_load(block))
    assert space.name == "pendulum_class" and space.names == ("gravity", "mass", "length")
    env = space.make_env()
    env.set_task(space.task(gravity=15.0).as_dict())
    env.reset(seed=0)
    assert env.g == 15.0


def test_generic_spaces_pickle_and_build_after_unpickling():
    space, _ = _space(yaml.safe_load(EXAMPLE.read_text()))
    for dumps, loads in ((pickle.dumps, pickle.loads), (cloudpickle.dumps, cloudpickle.loads)):
        again = loads(dumps(space))
        assert again.names == space.names
        obs, _ = again.make_env().reset(seed=1)
        assert obs.shape == (3,)


def test_rllib_style_class_runs_unchanged_in_the_pool():
    space, policy = _space(
        {
            "name": "rllib_cartpole",
            "entry_point": f"{__name__}:RllibStyleEnv",
            "env_config": {"push": 14.0},
            "params": {"gravity": {"low": 5.0, "high": 15.0, "init": 9.8, "step": 1.0}},
            "max_episode_steps": 200,
        }
    )
    theta = policy.init(np.random.default_rng(0))
    heavy = space.task(gravity=15.0)
    with EvaluationPool(space, policy, "local", 1, envs_per_worker=2) as pool:
        returns = pool.evaluate([(theta, heavy)], episodes=2, seed=4)[0]
    env = RllibStyleEnv({"push": 14.0})
    env.set_task({"gravity": 15.0})
    for episode, got in enumerate(returns):
        obs, _ = env.reset(seed=4 + episode)  # evaluate's seeds: seed, seed + 1, ...
        total, done = 0.0, False
        while not done and total < 200:
            action = int(policy.act(theta[None], np.asarray(obs, np.float32)[None])[0])
            obs, reward, done, _, _ = env.step(action)
            total += reward
        assert got == total


class WholeTaskEnv(gym.Env):
    """An RLlib-style env whose set_task replaces its whole task, and whose step reads a
    key (`push`) that a curriculum over gravity alone does not declare."""

    def __init__(self, config):
        self.inner = gym.make("CartPole-v1", max_episode_steps=-1).unwrapped
        self.observation_space = self.inner.observation_space
        self.action_space = self.inner.action_space
        self.task = {"gravity": 9.8, "push": 14.0}

    def get_task(self):
        return dict(self.task)

    def set_task(self, task):
        self.task = task  # the whole task, as RLlib envs commonly do

    def reset(self, *, seed=None, options=None):
        self.inner.gravity = self.task["gravity"]
        return self.inner.reset(seed=seed)

    def step(self, action):
        self.inner.force_mag = self.task["push"]  # KeyError if set_task got gravity alone
        return self.inner.step(action)


class MergingTaskEnv(WholeTaskEnv):
    """The other RLlib pattern: set_task merges into the env's task, which also holds an
    object that does not pickle and a counter of the env's own."""

    def __init__(self, config):
        super().__init__(config)
        self.task.update(lock=threading.Lock(), episodes_seen=0)

    def set_task(self, task):
        self.task.update(task)

    def reset(self, *, seed=None, options=None):
        self.task["episodes_seen"] += 1
        return super().reset(seed=seed, options=options)


def test_a_merging_env_is_given_its_declared_keys_only():
    space, _ = _space(
        {
            "name": "merging",
            "entry_point": f"{__name__}:MergingTaskEnv",
            "env_config": {},
            "params": {"gravity": {"low": 5.0, "high": 15.0, "init": 9.8, "step": 1.0}},
            "max_episode_steps": 100,
        }
    )
    assert space.fixed_task == ()  # nothing it would lose: its own entries stay its own
    assert space.env_task(space.task(gravity=12.0)) == {"gravity": 12.0}
    pickle.dumps(space)  # ships to Ray's workers (the lock is not in it)


class ArrayTaskEnv(WholeTaskEnv):
    """A whole-task env whose task also holds numpy values (a push vector, a flag)."""

    def __init__(self, config):
        super().__init__(config)
        self.task = {"gravity": 9.8, "push": np.array([14.0]), "flag": np.bool_(True)}

    def step(self, action):
        self.inner.force_mag = float(self.task["push"][0]) if self.task["flag"] else 1.0
        return self.inner.step(action)


class LockedWholeTaskEnv(WholeTaskEnv):
    def __init__(self, config):
        super().__init__(config)
        self.task["lock"] = threading.Lock()


def test_a_whole_task_env_keeps_numpy_entries_and_refuses_one_that_cannot_travel():
    gravity = {"gravity": {"low": 5.0, "high": 15.0, "init": 9.8, "step": 1.0}}
    space, policy = _space(
        {
            "name": "arrays",
            "entry_point": f"{__name__}:ArrayTaskEnv",
            "env_config": {},
            "params": gravity,
            "max_episode_steps": 50,
        }
    )
    theta = policy.init(np.random.default_rng(0))
    with EvaluationPool(space, policy, "local", 1, envs_per_worker=2) as pool:
        _, errors = pool.evaluate_detailed([(theta, space.task(gravity=12.0))], 1, seed=1)
    assert errors == {}
    with pytest.raises(ConfigError) as refused:
        _space(
            {
                "name": "locked",
                "entry_point": f"{__name__}:LockedWholeTaskEnv",
                "env_config": {},
                "params": gravity,
                "max_episode_steps": 50,
            }
        )
    assert refused.value.field == "task.params"
    assert_says(
        str(refused.value),
        f"{__name__}:LockedWholeTaskEnv.set_task replaces its whole task",
        "'lock' of its get_task()",
    )


def test_a_whole_task_env_keeps_the_keys_its_curriculum_does_not_vary():
    space, policy = _space(
        {
            "name": "whole_task",
            "entry_point": f"{__name__}:WholeTaskEnv",
            "env_config": {},
            "params": {"gravity": {"low": 5.0, "high": 15.0, "init": 9.8, "step": 1.0}},
            "max_episode_steps": 100,
        }
    )
    assert space.env_task(space.task(gravity=12.0)) == {"push": 14.0, "gravity": 12.0}
    pickle.dumps(space)
    theta = policy.init(np.random.default_rng(0))
    with EvaluationPool(space, policy, "local", 1, envs_per_worker=2) as pool:
        returns, errors = pool.evaluate_detailed([(theta, space.task(gravity=12.0))], 2, seed=1)
    assert errors == {} and np.isfinite(returns).all()


@pytest.mark.parametrize(
    ("task", "message"),
    [
        (
            {"name": "g", "env_id": "Pendulun-v1", "params": {"g": {**PENDULUM_G, "kwarg": "g"}}},
            "task.env_id: 'Pendulun-v1' is not a registered gymnasium id",
        ),
        (
            {"name": "g", "env_id": "Pendulum-v1", "params": {"g": {**PENDULUM_G, "kwarg": "gg"}}},
            "task.params.g.kwarg: 'gg' is not a constructor keyword of Pendulum-v1; "
            "allowed: g, render_mode",
        ),
        (
            {"name": "g", "env_id": "Pendulum-v1", "params": {"g": {**PENDULUM_G, "attr": "gg"}}},
            "task.params.g.attr: PendulumEnv (Pendulum-v1) has no attribute 'gg'",
        ),
        (
            {"name": "g", "env_id": "Pendulum-v1", "params": {"g": {**PENDULUM_G, "attr": "spec"}}},
            "task.params.g.attr: 'spec' of Pendulum-v1 is EnvSpec, not a number",
        ),
        (
            {"name": "g", "env_id": "Pendulum-v1", "params": {"g": PENDULUM_G}},
            "task.params.g: needs exactly one of 'kwarg' (a constructor keyword) or 'attr'",
        ),
        (
            {"name": "g", "env_id": "Pendulum-v1", "params": {"g": {"low": 1, "attr": "g"}}},
            "task.params.g.high: required (low, high, init, step are)",
        ),
        (
            {"name": "g", "env_id": "Pendulum-v1", "params": {"g": {**PENDULUM_G, "lo": 1}}},
            "task.params.g.lo: unknown field; allowed: low, high, init, step, round_to, type, "
            "kwarg",
        ),
        (
            {
                "name": "g",
                "env_id": "Pendulum-v1",
                "params": {"g": {**PENDULUM_G, "init": 30.0, "kwarg": "g"}},
            },
            "task.params.g: init 30 outside bounds [2, 20] in 'g'",
        ),
        (
            {"name": "g", "env_id": "Pendulum-v1", "params": {}},
            "task.params: task space 'g' needs at least one parameter",
        ),
        (
            {"name": "pendulum", "env_id": "Pendulum-v1", "params": {"g": {**PENDULUM_G}}},
            "task.name: 'pendulum' is a registered task space",
        ),
        (
            {"name": "c", "entry_point": "no_such_package.envs:Env", "params": {"g": PENDULUM_G}},
            "task.entry_point: cannot import module 'no_such_package.envs' of "
            "'no_such_package.envs:Env': No module named 'no_such_package' (is the directory "
            "holding 'no_such_package' on PYTHONPATH, or the package installed?)",
        ),
        (  # the package is there, its module is not: no PYTHONPATH hint
            {"name": "c", "entry_point": "coevo.tasks.nope:Env", "params": {"g": PENDULUM_G}},
            "task.entry_point: cannot import module 'coevo.tasks.nope' of "
            "'coevo.tasks.nope:Env': No module named 'coevo.tasks.nope'",
        ),
        (
            {"name": "c", "entry_point": "coevo.tasks.pendulum:Nope", "params": {"g": PENDULUM_G}},
            "task.entry_point: module 'coevo.tasks.pendulum' has no attribute 'Nope'",
        ),
        (
            {"name": "c", "entry_point": "justaname", "params": {"g": PENDULUM_G}},
            "task.entry_point: 'justaname' is not an import path",
        ),
        (  # a module named without the class in it
            {"name": "c", "entry_point": "coevo.tasks.pendulum", "params": {"g": PENDULUM_G}},
            "task.entry_point: 'coevo.tasks.pendulum' is a module; name what in it to use: "
            "'coevo.tasks.pendulum:ClassName'",
        ),
        (
            {
                "name": "c",
                "entry_point": f"{__name__}:NotTaskSettable",
                "params": {"g": PENDULUM_G},
            },
            f"task.entry_point: {__name__}:NotTaskSettable has no get_task / set_task",
        ),
        (
            {
                "name": "c",
                "entry_point": "coevo.tasks.pendulum:TaskPendulum",
                "params": {"g": PENDULUM_G},
                "max_episode_steps": 100,
            },
            "task.params.g: unknown parameter of task space 'c'; "
            "coevo.tasks.pendulum:TaskPendulum.get_task() has: gravity, mass, length",
        ),
        (
            {
                "name": "c",
                "entry_point": "coevo.tasks.pendulum:TaskPendulum",
                "params": {"gravity": PENDULUM_G},
            },
            "task.max_episode_steps: required for entry_point coevo.tasks.pendulum:TaskPendulum",
        ),
        (
            {
                "name": "c",
                "entry_point": "coevo.tasks.pendulum:TaskPendulum",
                "params": {"gravity": {**PENDULUM_G, "attr": "g"}},
            },
            "task.params.gravity.attr: unknown field; allowed: low, high, init, step, round_to",
        ),
        (
            {"name": "c", "env_id": "Pendulum-v1", "entry_point": "a:B", "params": {}},
            "task.entry_point: give task.env_id or task.entry_point, not both",
        ),
        ({"name": "cartpole", "env_kwargs": {"x": 1}}, "task.env_kwargs: only for task.env_id"),
    ],
)
def test_bad_generic_config_names_the_field_and_what_is_allowed(task, message):
    with pytest.raises(ConfigError) as info:
        _space(task)
    assert str(info.value).startswith(message), str(info.value)


def test_cli_refuses_a_bad_gymnasium_id_before_starting_anything(tmp_path):
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "coevo-run"),
            "task=custom_example",
            "task.env_id=NoSuchEnv-v0",
            f"hydra.run.dir={tmp_path / 'run'}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert result.returncode == 2
    assert "task.env_id: 'NoSuchEnv-v0' is not a registered gymnasium id" in result.stderr
    assert not (tmp_path / "run" / "summary.csv").exists()


def test_an_env_with_dict_observations_is_flattened_as_gymnasium_does(rng):
    """A Dict observation reaches the policy as `gymnasium.spaces.flatten` lays it out (the
    Discrete goal one-hot); the pool's returns equal a plain gymnasium loop's with
    FlattenObservation, episode by episode."""
    from coevo.policies import make_policy
    from coevo.tasks.generic import class_task_space

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    goal = {"goal": {"low": 0, "high": 3, "init": 2, "step": 1, "type": "int"}}
    space = class_task_space("goals", "dict_obs_env:GoalDictEnv", goal, max_episode_steps=20)
    env = space.make_env()
    policy = make_policy("mlp", env.observation_space, env.action_space, {"hidden": [8]})
    assert policy.obs_dim == 1 + 4
    thetas = [policy.init(rng) for _ in range(3)]
    task = space.task(goal=3)
    with EvaluationPool(space, policy, "local", 1, envs_per_worker=4) as pool:
        got = pool.evaluate([(theta, task) for theta in thetas], episodes=2, seed=5)
    from dict_obs_env import GoalDictEnv

    for row, theta in enumerate(thetas):
        for episode in range(2):
            plain = GoalDictEnv()
            plain.set_task({"goal": 3})
            flat = gym.wrappers.FlattenObservation(gym.wrappers.TimeLimit(plain, 20))
            obs, _ = flat.reset(seed=5 + episode)
            total, done = 0.0, False
            state = policy.initial_state(1)
            while not done:
                out = policy.step(theta[None], obs[None].astype(np.float32), state, None)
                obs, reward, terminated, truncated, _ = flat.step(out.actions[0])
                total += reward
                done = terminated or truncated
            assert got[row, episode] == pytest.approx(total)


def test_an_observation_space_that_cannot_be_flattened_is_refused_by_name():
    from coevo.policies import make_policy

    sequence = gym.spaces.Sequence(gym.spaces.Discrete(2))
    with pytest.raises(ConfigError, match=r"policy: observation space Sequence\(.*cannot be flat"):
        make_policy("mlp", sequence, gym.spaces.Discrete(2), {})


class OldGymEnv(gym.Env):
    """The old gym API: reset gives the observation alone, step four values."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,))
    action_space = gym.spaces.Discrete(2)

    def __init__(self, new_reset: bool = False):
        self.level, self.new_reset = 1.0, new_reset

    def get_task(self):
        return {"level": self.level}

    def set_task(self, task):
        self.level = task["level"]

    def reset(self, *, seed=None, options=None):
        obs = np.zeros(2, np.float32)
        return (obs, {}) if self.new_reset else obs

    def step(self, action):
        return np.zeros(2, np.float32), 1.0, False, {}


class ListReturningEnv(OldGymEnv):
    """Valid enough: the workers unpack lists as they unpack tuples."""

    def reset(self, *, seed=None, options=None):
        return [np.zeros(2, np.float32), {}]

    def step(self, action):
        return [np.zeros(2, np.float32), 1.0, False, False, {}]


def test_an_env_returning_lists_is_taken():
    from coevo.tasks.generic import class_task_space

    level = {"level": {"low": 1, "high": 5, "init": 1, "step": 1}}
    space = class_task_space("lists", f"{__name__}:ListReturningEnv", level, max_episode_steps=10)
    assert space.name == "lists"


class HalfOldGymEnv(OldGymEnv):
    def __init__(self):
        super().__init__(new_reset=True)


@pytest.mark.parametrize(
    ("entry_point", "message"),
    [
        ("OldGymEnv", "OldGymEnv.reset() returned ndarray, not gymnasium's (observation, info)"),
        ("HalfOldGymEnv", "HalfOldGymEnv.step() returned 4 values, not gymnasium's 5"),
    ],
)
def test_an_env_on_the_old_gym_api_is_refused_before_any_worker_starts(entry_point, message):
    from coevo.tasks.generic import class_task_space

    level = {"level": {"low": 1, "high": 5, "init": 1, "step": 1}}
    with pytest.raises(ConfigError) as info:
        class_task_space("old", f"{__name__}:{entry_point}", level, max_episode_steps=10)
    assert str(info.value).startswith(f"task.entry_point: {__name__}:{message}"), info.value
    assert "old gym API" in str(info.value)


class WrongSizeEnv(ListReturningEnv):
    """Declares 2 observation values, returns 3 from step (a reset of 2 is fine)."""

    def step(self, action):
        return np.zeros(3, np.float32), 1.0, False, False, {}


class WrongSizeResetEnv(ListReturningEnv):
    def reset(self, *, seed=None, options=None):
        return np.zeros((2, 2), np.float32), {}


@pytest.mark.parametrize(
    ("entry_point", "call", "shape"),
    [("WrongSizeEnv", "step", "(3,)"), ("WrongSizeResetEnv", "reset", "(2, 2)")],
)
def test_an_env_whose_observations_do_not_fit_its_space_is_refused_by_name(
    entry_point, call, shape
):
    """Every episode failed with numpy's 'could not broadcast input array from shape'."""
    from coevo.tasks.generic import class_task_space

    level = {"level": {"low": 1, "high": 5, "init": 1, "step": 1}}
    with pytest.raises(ConfigError) as info:
        class_task_space("sizes", f"{__name__}:{entry_point}", level, max_episode_steps=10)
    assert str(info.value).startswith(
        f"task.entry_point: {__name__}:{entry_point}.{call}() returned an observation of shape "
        f"{shape}; its observation_space Box("
    ), info.value
    assert str(info.value).endswith("has 2 values")


class MixinLevels(PendingTaskMixin, gym.Env):
    """A user's env on coevo's own mixin: an int level it builds a range from, a float noise."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self):
        self._task = {"level": 2, "noise": 0.0}
        self.applied: list[dict] = []

    def _apply_task(self, task):
        self.applied.append(dict(task))
        self.cells = list(range(task["level"]))  # a float level raises TypeError here

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed, options=options)
        self.position = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.position += 1 if action == 1 else -1
        done = self.position >= len(self.cells)
        return np.array([self.position / 10], np.float32), float(done), done, False, {}


def test_the_pending_task_mixin_keeps_an_int_parameter_an_int(rng):
    """`type: int` stays an int in an env built on coevo's PendingTaskMixin (set_task made
    every value a float, so class_task_space refused this env, blaming task_format)."""
    from coevo.policies import make_policy
    from coevo.tasks.generic import class_task_space

    params = {
        "level": {"low": 1, "high": 5, "init": 2, "step": 1, "type": "int"},
        "noise": {"low": 0.0, "high": 1.0, "init": 0.0, "step": 0.1},
    }
    space = class_task_space("mix", MixinLevels, params, max_episode_steps=20)
    env = space.make_env()
    env.set_task(space.env_task(space.task(level=3, noise=0.5)))  # what a worker gives it
    env.reset(seed=0)
    env.set_task({"level": np.int64(4), "noise": np.float32(0.25)})  # numpy values too
    env.reset(seed=0)
    assert [{k: type(v) for k, v in task.items()} for task in env.applied] == [
        {"level": int, "noise": float}
    ] * 2
    assert env.get_task() == {"level": 4, "noise": 0.25} and env.cells == [0, 1, 2, 3]
    policy = make_policy("mlp", env.observation_space, env.action_space, {"hidden": [4]})
    with EvaluationPool(space, policy, "local", 1) as pool:
        returns, errors = pool.evaluate_detailed(
            [(policy.init(rng), space.task(level=4, noise=0.5))], episodes=2, seed=0
        )
    assert errors == {} and np.isfinite(returns).all()


class BrokenCourseEnv(WholeTaskEnv):
    """Its set_task fails on every task: the env's own failure, not a task of the wrong
    form."""

    def set_task(self, task):
        raise ValueError("the course generator is broken")


def test_an_env_that_fails_its_initial_task_is_not_told_about_task_formats():
    with pytest.raises(ConfigError) as refused:
        _space(
            {
                "name": "broken",
                "entry_point": f"{__name__}:BrokenCourseEnv",
                "env_config": {},
                "params": {"gravity": {"low": 5.0, "high": 15.0, "init": 9.8, "step": 1.0}},
                "max_episode_steps": 100,
            }
        )
    assert refused.value.field == "task"
    assert_says(
        str(refused.value),
        f"{__name__}:BrokenCourseEnv",
        "set_task({'push': 14.0, 'gravity': 9.8}) then reset()",
        "ValueError('the course generator is broken')",
        "task.task_format: dict",
        "task_format: scalar",
    )
