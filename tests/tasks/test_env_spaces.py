"""Every registered task space: its config file, bounds, errors, and that tasks reach the env."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from coevo import tasks
from coevo.config import parse_config
from coevo.errors import ConfigError
from coevo.run_setup import prepare
from coevo.tasks import TaskSettableEnv
from coevo.tasks.level_kind import is_numeric

CONF = Path(__file__).resolve().parents[2] / "conf" / "task"
# Spaces of named numbers: their env holds a dict task (mazes: tests/tasks/test_maze.py).
NAMES = [name for name in tasks.names() if is_numeric(tasks.get(name))]


def test_all_spaces_of_the_issue_are_registered():
    assert {
        "cartpole",
        "pendulum",
        "mountain_car_continuous",
        "acrobot",
        "lunar_lander",
        "bipedal_terrain",
        "bipedal_terrain_stairs",
    } <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_config_file_builds_the_space_and_the_env_takes_its_tasks(name):
    raw = yaml.safe_load((CONF / f"{name}.yaml").read_text())
    assert raw["name"] == name
    space, policy = prepare(parse_config({"task": raw}))
    assert space.name == name and space.max_episode_steps == raw["max_episode_steps"]
    env = space.make_env()
    assert isinstance(env, TaskSettableEnv)
    assert env.get_task() == space.initial_task().as_dict()  # a fresh env holds the init
    assert policy.obs_dim == int(np.prod(env.observation_space.shape))
    rng = np.random.default_rng(0)
    task = space.initial_task()
    for _ in range(6):
        task = space.mutate(task, rng)
    space.check(task)
    env.set_task(task.as_dict())
    obs, _ = env.reset(seed=0)
    assert env.get_task() == task.as_dict()
    assert np.all(np.isfinite(obs)) and np.shape(obs) == env.observation_space.shape
    obs, reward, *_ = env.step(env.action_space.sample())
    assert np.isfinite(reward)
    env.close()


@pytest.mark.parametrize("name", NAMES)
def test_task_outside_bounds_and_unknown_parameter_are_clear_errors(name):
    space = tasks.get(name)
    first = space.params[0]
    with pytest.raises(ConfigError) as info:
        space.task(**{first.name: first.high + 1})
    assert str(info.value).startswith(f"task.{first.name}: ")
    assert f"outside bounds [{first.low:g}, {first.high:g}] of '{name}'" in str(info.value)
    with pytest.raises(ConfigError) as info:
        prepare(parse_config({"task": {"name": name, "params": {"nope": {"low": 0}}}}))
    assert str(info.value).startswith(
        f"task.params.nope: unknown parameter of task space '{name}'; known: {first.name}"
    )


@pytest.mark.parametrize(
    ("name", "changes", "attribute", "default"),
    [
        ("mountain_car_continuous", {"power": 0.003}, "power", 0.0015),
        ("acrobot", {"link_mass_2": 1.8}, "LINK_MASS_2", 1.0),
        ("lunar_lander", {"gravity": -3.0}, "gravity", -10.0),
    ],
)
def test_task_applies_at_the_next_reset_not_mid_episode(name, changes, attribute, default):
    space = tasks.get(name)
    env = space.make_env()
    env.reset(seed=0)
    env.set_task(space.task(**changes).as_dict())
    assert getattr(env, attribute) == default
    env.reset(seed=0)
    assert getattr(env, attribute) == next(iter(changes.values()))


def _lander_rollout(task, steps=60):
    space = tasks.get("lunar_lander")
    env = space.make_env()
    env.set_task(space.task(**task).as_dict())
    obs, _ = env.reset(seed=2)
    for _ in range(steps):
        obs, *_ = env.step(np.zeros(2, np.float32))
    return env, obs


def test_lunar_lander_gravity_and_wind_change_the_flight():
    calm, calm_obs = _lander_rollout({})
    assert calm.world.gravity[1] == pytest.approx(-10.0) and not calm.enable_wind
    low, low_obs = _lander_rollout({"gravity": -2.0})
    assert low.world.gravity[1] == pytest.approx(-2.0)
    assert low_obs[3] > calm_obs[3]  # falls slower under weaker gravity
    windy, windy_obs = _lander_rollout({"wind_power": 20.0, "turbulence_power": 2.0})
    assert windy.enable_wind and windy.wind_power == 20.0
    assert abs(windy_obs[2] - calm_obs[2]) > 0.1  # pushed sideways
    assert abs(windy_obs[4] - calm_obs[4]) > 0.5  # and turned
    again, again_obs = _lander_rollout({"wind_power": 20.0, "turbulence_power": 2.0})
    np.testing.assert_array_equal(again_obs, windy_obs)  # same task and seed: same flight


def test_acrobot_link_lengths_move_the_centres_of_mass():
    space = tasks.get("acrobot")
    env = space.make_env()
    env.set_task(space.task(link_length_1=1.6, link_length_2=0.6, torque=1.5).as_dict())
    env.reset(seed=0)
    assert (env.LINK_COM_POS_1, env.LINK_COM_POS_2) == (0.8, 0.3)
    assert env.AVAIL_TORQUE == [-1.5, 0.0, 1.5]


def test_missing_box2d_leaves_the_other_spaces_usable():
    """Box2D is an optional extra: without it the registry still serves classic control and
    says why the Box2D spaces are missing."""
    script = (
        "import sys; sys.modules['Box2D'] = None\n"  # makes `import Box2D` fail
        "from coevo import tasks\n"
        "from coevo.errors import ConfigError\n"
        "assert 'acrobot' in tasks.names() and 'lunar_lander' not in tasks.names()\n"
        "try:\n"
        "    tasks.get('bipedal_terrain')\n"
        "except ConfigError as error:\n"
        "    print(error)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "task.name: unknown task space 'bipedal_terrain'" in result.stdout
    assert "coevo.tasks.bipedal_terrain not loaded" in result.stdout
