"""The level-kind protocol (coevo.tasks.level_kind): numeric task spaces and mazes are both
kinds, with the same hooks; a curriculum needing a hook a kind lacks is refused by name."""

import hashlib
from pathlib import Path

import numpy as np
import pytest
import yaml

from coevo import tasks
from coevo.config import parse_config
from coevo.curricula.alp_gmm import ALPGMM
from coevo.errors import ConfigError
from coevo.run_setup import prepare
from coevo.tasks.level_kind import Level, LevelKind, is_numeric, provides, require
from coevo.tasks.maze import Maze
from coevo.tasks.maze.space import MazeSpace
from coevo.tasks.task import Task

CONF = Path(__file__).resolve().parents[2] / "conf" / "task"
# The numeric spaces registered before the protocol existed, whose seeded draws it keeps.
NUMERIC_BEFORE = (
    "acrobot",
    "acrobot_reach",
    "bipedal_terrain",
    "bipedal_terrain_stairs",
    "cartpole",
    "cartpole_pomdp",
    "lunar_lander",
    "mountain_car_continuous",
    "mountain_car_reach",
    "pendulum",
)


@pytest.mark.parametrize("name", tasks.names())
def test_every_registered_space_is_a_level_kind_with_working_hooks(name):
    kind = tasks.get(name)
    assert isinstance(kind, LevelKind)
    rng = np.random.default_rng(0)
    level = kind.sample(rng)
    assert isinstance(level, kind.level_type) and isinstance(level, Level)
    kind.check(level)
    child = kind.mutate(level, rng)
    kind.check(child)
    assert child != level and kind.distance(level, child) > 0
    assert kind.distance(level, level) == 0 and kind.distance(level, child) == kind.distance(
        child, level
    )
    again = kind.level_from_json(level.to_json())
    assert again == level and again.id == level.id
    assert kind.sample(np.random.default_rng(0)) == level  # seeded
    if provides(kind, "encode"):
        assert kind.encode(level).shape == kind.encode(child).shape


def test_numeric_draws_are_those_from_before_the_protocol():
    """`TaskSpace.sample` / `decode` took over coevo.curricula.task_sampling's draws: the
    same seeds give the same tasks (ids digested; computed on main before the move), so
    seeded runs, their tables and checkpoints stay as recorded."""
    ids = []
    for name in NUMERIC_BEFORE:
        space = tasks.get(name)
        rng = np.random.default_rng(7)
        ids += [space.sample(rng).id for _ in range(3)]
        point = np.random.default_rng(3).uniform(-0.2, 1.2, len(space.params))
        ids.append(space.decode(point).id)
    assert hashlib.blake2b(" ".join(ids).encode(), digest_size=8).hexdigest() == (
        "7a1662074cd2cb10"
    )


def test_kinds_say_which_optional_hooks_they_provide():
    cartpole, terrain, maze = tasks.get("cartpole"), tasks.get("bipedal_terrain"), tasks.get("maze")
    assert is_numeric(cartpole) and is_numeric(terrain) and not is_numeric(maze)
    assert provides(cartpole, "encode") and provides(cartpole, "decode")
    assert provides(maze, "encode") and not provides(maze, "decode")
    assert provides(terrain, "render_png") and provides(maze, "render_png")
    assert not provides(cartpole, "render_png")
    with pytest.raises(ValueError, match="unknown hook"):
        provides(cartpole, "fly")


def test_a_curriculum_needing_a_missing_hook_is_refused_by_name():
    maze = tasks.get("maze")
    with pytest.raises(ConfigError) as info:
        ALPGMM.check_space(None, maze)
    message = str(info.value)
    assert message.startswith("curriculum.name: alp_gmm")
    assert "Maze levels" in message and "decode" in message
    ALPGMM.check_space(None, tasks.get("cartpole"))  # numeric: accepted
    require(maze, ("encode",), "mine", "needs vectors")  # present: nothing raised


def test_task_maze_is_registered_by_name():
    raw = yaml.safe_load((CONF / "maze.yaml").read_text())
    assert raw["name"] == "maze" and "maze" in tasks.names()
    space, policy = prepare(parse_config({"task": raw}))
    assert isinstance(space, MazeSpace) and space.level_type is Maze
    assert space.max_episode_steps == raw["max_episode_steps"]
    assert isinstance(space.initial_task(), Maze) and not isinstance(space.initial_task(), Task)
    assert policy.obs_dim == 54
