"""Mazes and CPPN terrains as a new user meets them (issue 30, tried from the docs): a maze
space of another name and size, coevo-eval's named mazes, the report's words and numbers on
level kinds, and the resume command of a user's task module."""

import importlib
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from phrases import assert_says

from coevo import tasks
from coevo.errors import ConfigError
from coevo.report import plots
from coevo.report.data import RunData
from coevo.tasks.cppn import Connection, CppnTerrain, Node
from coevo.tasks.maze import Maze, held_out_mazes, is_solvable
from coevo.tasks.maze.space import MazeSpace


def _small_maze_space() -> MazeSpace:
    return MazeSpace(name="small_maze", height=9, width=9, max_walls=20)


def test_a_maze_space_of_its_own_name_and_size_plays_its_mazes_in_the_pool():
    from coevo.policies.registry import make_policy
    from coevo.pool import EvaluationPool

    space = _small_maze_space()
    env = space.make_env()
    policy = make_policy("mlp", env.observation_space, env.action_space, {"hidden": [4]})
    mazes = [space.initial_task(), space.sample(np.random.default_rng(1))]
    theta = policy.init(np.random.default_rng(0))
    # The pool refused them: a Maze names its kind ("maze"), not the space ("small_maze").
    with EvaluationPool(space, policy, "local", 1, 4) as pool:
        pairs: list[tuple[np.ndarray, Any]] = [(theta, m) for m in mazes]
        returns = pool.evaluate(pairs, episodes=1, seed=0)
    assert returns.shape == (2, 1) and np.isfinite(returns).all()


def test_a_maze_space_of_another_size_is_tested_on_random_solvable_mazes_of_its_size():
    space = _small_maze_space()
    first, again = space.test_tasks(6, seed=3), space.test_tasks(6, seed=3)
    assert first == again and len(set(first)) == 6  # seeded, distinct
    assert all((m.height, m.width) == (9, 9) and is_solvable(m) for m in first)
    assert all(m.num_walls <= 20 for m in first)
    assert space.named_levels() == {}  # the designs are 13 x 13
    # The papers' 13 x 13 space keeps its designed mazes first.
    maze = tasks.get("maze")
    assert isinstance(maze, MazeSpace)
    assert maze.test_tasks(7, seed=0)[:3] == list(held_out_mazes(0, num_random=0).values())[:3]


def test_coevo_eval_plays_the_designed_mazes_by_name_and_lists_them_when_misspelt():
    from coevo.replay import _level_from_text

    space = tasks.get("maze")
    assert isinstance(space, MazeSpace)
    assert _level_from_text(space, "labyrinth") == held_out_mazes(num_random=0)["labyrinth"]
    assert _level_from_text(space, " four_rooms ") == space.named_levels()["four_rooms"]
    with pytest.raises(ConfigError) as refused:
        _level_from_text(space, "labyrint")
    assert_says(str(refused.value), "task", "labyrinth, four_rooms", "perfect_maze_2", "JSON")


def _run_data(space) -> RunData:
    empty = pd.DataFrame()
    return RunData(Path("."), empty, empty, empty, empty, empty, empty, "", None, space)


def test_the_reports_mastery_caption_says_where_a_level_kinds_test_set_comes_from():
    assert_says(_run_data(tasks.get("maze")).test_origin, "held-out set of task space 'maze'")
    assert "uniformly" not in _run_data(tasks.get("maze")).test_origin
    assert_says(_run_data(tasks.get("cartpole")).test_origin, "drawn uniformly within")


def test_score_heatmap_cells_keep_two_decimals_for_small_returns():
    assert plots.value_digits(np.array([[0.906, 0.0], [0.1, np.nan]])) == 2  # mazes: 0 to 1
    assert plots.value_digits(np.array([[212.4, -103.8]])) == 0


def test_level_pictures_and_replays_count_walls_and_nodes_in_good_english():
    one_wall = Maze.from_text(">#.\n...\n..G")
    assert repr(one_wall).endswith("1 wall)")
    node = CppnTerrain(
        (Node(0, 0.0, 1.0, "identity"), Node(1, 0.0, 1.0, "sin")),
        (Connection(-1, 1, 1.0), Connection(1, 0, 1.0)),
    )
    assert node.size_text == "1 hidden node, 2 connections"


def test_the_resume_command_names_a_task_modules_entry_inside_another_entry(tmp_path, monkeypatch):
    from coevo.resume_rules import resume_command

    outer = tmp_path / "checkout"
    inner = outer / "my_tasks"  # PYTHONPATH=checkout:checkout/my_tasks
    inner.mkdir(parents=True)
    (inner / "nested_entry_probe_tasks.py").write_text("VALUE = 1\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(outer), str(inner)]))
    monkeypatch.syspath_prepend(str(inner))
    monkeypatch.delitem(sys.modules, "nested_entry_probe_tasks", raising=False)
    importlib.import_module("nested_entry_probe_tasks")
    run = tmp_path / "run"
    try:  # it named the checkout, which holds the file but not the module
        assert resume_command(run) == f"PYTHONPATH={inner} coevo-run resume={run}"
    finally:
        del sys.modules["nested_entry_probe_tasks"]


def test_poet_thresholds_on_a_mazes_scale_are_not_warned_of_and_cartpoles_are():
    from coevo.config import parse_config
    from coevo.run_setup import scale_warnings

    def warned(**curriculum: float) -> str:
        config = parse_config({"task": {"name": "maze"}, "curriculum": curriculum})
        return " ".join(scale_warnings(config, tasks.get("maze")))

    # The docs' thresholds: above the solved score (0.1, a maze's least success), not above
    # its highest return (~1); the run warned of them all the same.
    assert warned(repro_threshold=0.5, mc_lower=0.1, mc_upper=0.9) == ""
    assert_says(
        warned(),  # POET's CartPole-scale defaults
        "curriculum.repro_threshold 200",
        "mc_lower 50",
        "highest return of task space 'maze' (0.996)",
        "on its scale",
    )


def test_poet_starts_its_pairs_on_the_mazes_it_is_given_and_names_the_kind_it_wants():
    from coevo import ESConfig, EvolutionStrategy, Poet, PoetConfig
    from coevo.policies.registry import make_policy
    from coevo.pool import EvaluationPool

    space = _small_maze_space()
    env = space.make_env()
    policy = make_policy("mlp", env.observation_space, env.action_space, {"hidden": [4]})
    mazes = [space.initial_task(), space.sample(np.random.default_rng(1))]
    config = PoetConfig(generations=1, optimizer_steps=0, max_children=0, transfer_every=0)
    with EvaluationPool(space, policy, "local", 1, 4) as pool:

        def poet(initial):
            es = EvolutionStrategy(ESConfig(population=4), policy.num_params)
            return Poet(config, space=space, pool=pool, optimizer=es, initial_tasks=initial)

        co = poet(mazes)
        assert [pair.task for pair in co.population.active] == mazes
        co.step()
        with pytest.raises(TypeError) as refused:
            poet([mazes[0], tasks.get("cartpole").initial_task()])
        assert_says(str(refused.value), "initial_tasks[1]", "Maze level", "small_maze", "got")
        with pytest.raises(TypeError) as one:
            poet(mazes[0])
        assert_says(str(one.value), "list of Mazes", "initial_tasks=[task]")
