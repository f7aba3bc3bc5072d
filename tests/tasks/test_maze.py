"""The maze domain: levels (generator, mutator, BFS, JSON, content id), the single env against
MiniGrid's own, the batched slots against the single env, held-out mazes, pictures."""

import dataclasses
import os
import pickle
import signal
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from coevo.errors import ConfigError
from coevo.tasks.maze import (
    Maze,
    MazeEnv,
    MazeSlots,
    encode,
    held_out_mazes,
    is_solvable,
    mutate,
    sample,
    shortest_path,
)
from coevo.tasks.maze.held_out import (
    four_rooms,
    labyrinth,
    long_corridor,
    perfect_maze,
    random_solvable,
)
from coevo.tasks.maze.level import encoding_size
from coevo.tasks.maze.render import render_episode_gif, render_maze, render_maze_png

CORRIDOR = """
>.#G
..#.
....
"""


def _mazes(count, seed=0):
    rng = np.random.default_rng(seed)
    return [sample(rng) for _ in range(count)]


def test_sample_is_the_papers_generator_and_deterministic():
    first, again = _mazes(40, seed=3), _mazes(40, seed=3)
    assert first == again
    assert [m.id for m in first] == [m.id for m in again]
    for level in first:
        assert (level.height, level.width) == (13, 13)
        assert 0 <= level.num_walls <= 60
        assert not level.walls[level.start[1], level.start[0]]
        assert not level.walls[level.goal[1], level.goal[0]]
        assert level.start != level.goal
    assert len({m.num_walls for m in first}) > 10  # the wall count itself is drawn
    assert _mazes(5, seed=4) != first[:5]


def test_shortest_path_by_breadth_first_search():
    level = Maze.from_text(CORRIDOR)
    assert (level.start, level.start_dir, level.goal) == ((0, 0), 0, (3, 0))
    assert shortest_path(level) == 7  # down 2, right 3, up 2 around the wall
    blocked = Maze.from_text(">.#G\n..#.\n..#.")
    assert shortest_path(blocked) is None and not is_solvable(blocked)
    assert shortest_path(Maze.from_text(">G")) == 1


def test_mutation_edits_walls_and_goal_but_never_blocks_start_or_goal():
    rng = np.random.default_rng(0)
    parents = _mazes(30, seed=1)
    moved_goal = changed_walls = 0
    for parent in parents:
        level = parent
        for _ in range(20):
            child = mutate(level, rng)
            assert child != level
            assert child.start == level.start and child.start_dir == level.start_dir
            assert not child.walls[child.start[1], child.start[0]]
            assert not child.walls[child.goal[1], child.goal[0]]
            assert int(np.sum(child.walls != level.walls)) <= 5  # at most num_edits flips
            moved_goal += child.goal != level.goal
            changed_walls += bool(np.any(child.walls != level.walls))
            level = child
    assert moved_goal > 100 and changed_walls > 300  # both kinds of edit happen


def test_mutation_is_deterministic_by_rng():
    parent = _mazes(1)[0]
    a = [mutate(parent, np.random.default_rng(7)) for _ in range(2)]
    assert a[0] == a[1]


def test_json_round_trip_pickle_and_validation():
    for level in _mazes(10) + list(held_out_mazes(num_random=2).values()):
        assert Maze.from_json(level.to_json()) == level
        assert Maze.from_json(level.to_json()).id == level.id
        copy = pickle.loads(pickle.dumps(level))
        assert copy == level and hash(copy) == hash(level)
        assert np.array_equal(copy.walls, level.walls)
        assert Maze.from_text(str(level)) == level
    with pytest.raises(ConfigError, match="is a wall"):
        Maze(("#.",), (0, 0), 0, (1, 0))
    with pytest.raises(ConfigError, match="not be the start"):
        Maze(("..",), (0, 0), 0, (0, 0))
    with pytest.raises(ConfigError, match="outside"):
        Maze(("..",), (0, 0), 0, (2, 0))
    level = _mazes(1)[0]
    with pytest.raises(ValueError):
        level.walls[0, 0] = True  # read-only: a level never changes


def test_content_id_is_the_same_in_another_process():
    levels = _mazes(3, seed=11)
    code = (
        "import numpy as np; from coevo.tasks.maze import sample; "
        "rng = np.random.default_rng(11); print(' '.join(sample(rng).id for _ in range(3)))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "123"}  # another string-hash salt than ours
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [m.id for m in levels]
    assert len({m.id for m in levels}) == 3


def test_encoding_has_a_fixed_length_in_unit_range():
    vectors = [encode(m) for m in _mazes(5)]
    assert {len(v) for v in vectors} == {encoding_size()}
    assert all(v.min() >= 0 and v.max() <= 1 for v in vectors)
    level = _mazes(1)[0]
    assert np.array_equal(encode(level)[: 13 * 13], level.walls.ravel())
    assert len({tuple(encode(m)) for m in _mazes(5)}) == 5


def test_env_moves_turns_and_pays_minigrid_reward():
    env = MazeEnv(Maze.from_text(CORRIDOR))
    obs, _ = env.reset(seed=0)
    assert obs[-4:].tolist() == [1, 0, 0, 0]  # facing east
    for action in (2, 2):  # the second forward bumps into the wall at (2, 0)
        obs, reward, terminated, truncated, _ = env.step(action)
    assert env.position == (1, 0) and reward == 0 and not terminated
    assert obs[2 * (3 * 5 + 2)] == 1  # the wall just ahead: view row 3 (one ahead), middle
    # Turn right (south), down 2, left (east), 2 east, left (north), up 2 onto the goal.
    for action in [1, 2, 2, 0, 2, 2, 0, 2, 2]:
        obs, reward, terminated, truncated, info = env.step(action)
    assert terminated and not truncated and info["success"] and env.position == (3, 0)
    assert env.steps == 11 and reward == 1 - 0.9 * (11 / 250)
    assert obs[-4:].tolist() == [0, 0, 0, 1]  # facing north


def test_env_truncates_at_max_steps():
    env = MazeEnv(Maze.from_text(CORRIDOR), max_steps=5)
    env.reset()
    for _ in range(5):
        _, reward, terminated, truncated, _ = env.step(0)
    assert truncated and not terminated and reward == 0


def test_env_matches_minigrid_step_for_step():
    """The same mazes and actions in the `minigrid` package's own env: same views,
    directions, rewards and episode ends."""
    pytest.importorskip("minigrid")
    from coevo.tasks.maze.minigrid_twin import coevo_observation, minigrid_maze_env

    rng = np.random.default_rng(5)
    levels = _mazes(8, seed=5) + [labyrinth(), four_rooms()]
    ends = 0
    for level in levels:
        ours, theirs = MazeEnv(level), minigrid_maze_env(level)
        obs, _ = ours.reset(seed=0)
        reference, _ = theirs.reset(seed=0)
        assert np.array_equal(obs, coevo_observation(reference))
        for _ in range(250):
            action = int(rng.choice(3, p=[0.2, 0.2, 0.6]))
            obs, reward, terminated, truncated, _ = ours.step(action)
            reference, ref_reward, ref_terminated, ref_truncated, _ = theirs.step(action)
            assert np.array_equal(obs, coevo_observation(reference))
            assert (reward, terminated, truncated) == (ref_reward, ref_terminated, ref_truncated)
            if terminated or truncated:
                ends += terminated
                break
    assert ends >= 1  # some episode reached its goal: the reward was compared


def _run_slots(slots, levels, actions, order):
    """Episodes of `levels` in the given slots, stepping all live ones each step."""
    trace = {i: [] for i in range(len(levels))}
    for i, slot in enumerate(order):
        trace[i].append(slots.reset_slot(slot, levels[i], seed=i).copy())
    live = list(range(len(levels)))
    for t in range(actions.shape[1]):
        if not live:
            break
        rows = np.array([order[i] for i in live])
        sort = np.argsort(rows)
        obs, rewards, done, errors = slots.step_slots(rows[sort], actions[np.array(live)[sort], t])
        assert errors == {}
        for k, position in enumerate(sort):
            i = live[position]
            trace[i].append((obs[k].copy(), rewards[k], bool(done[k])))
        live = [i for i in live if not trace[i][-1][2]]
    return trace


def test_slots_match_the_single_env_step_for_step():
    levels = _mazes(12, seed=8) + list(held_out_mazes(num_random=0).values())
    rng = np.random.default_rng(9)
    actions = rng.choice(3, size=(len(levels), 260), p=[0.25, 0.25, 0.5])
    trace = _run_slots(MazeSlots(len(levels)), levels, actions, list(range(len(levels))))
    finished = 0
    for i, level in enumerate(levels):
        env = MazeEnv(level)
        obs, _ = env.reset(seed=i)
        assert np.array_equal(obs, trace[i][0])
        for t, (got, reward, done) in enumerate(trace[i][1:]):
            obs, expected_reward, terminated, truncated, _ = env.step(actions[i, t])
            assert np.array_equal(obs, got) and reward == expected_reward
            assert done == (terminated or truncated)
            finished += terminated
    assert finished >= 1


def test_slot_results_do_not_depend_on_the_batch():
    levels = _mazes(10, seed=12)
    actions = np.random.default_rng(13).integers(0, 3, size=(10, 80))
    alone = [
        _run_slots(MazeSlots(1), [level], actions[i : i + 1], [0])[0]
        for i, level in enumerate(levels)
    ]
    batch = _run_slots(MazeSlots(16), levels, actions, [15 - i for i in range(10)])
    for i in range(10):
        assert np.array_equal(alone[i][0], batch[i][0])
        for a, b in zip(alone[i][1:], batch[i][1:], strict=True):
            assert np.array_equal(a[0], b[0]) and a[1:] == b[1:]


def test_slots_take_a_larger_maze_later_and_save_load_slots():
    slots = MazeSlots(2)
    small = Maze.from_text(CORRIDOR)
    slots.reset_slot(0, small, 0)
    slots.step_slots(np.array([0]), np.array([1]))
    big = labyrinth()
    slots.reset_slot(1, big, 0)  # the maps grow; slot 0 goes on where it was
    assert slots.cell_of(0) == (0, 0) and int(slots.direction[0]) == 1
    env = MazeEnv(small)
    env.reset()
    env.step(1)
    saved = slots.save_slot(0)
    other = MazeSlots(3)
    other.load_slot(2, saved)
    for action in (2, 2, 0, 2):
        expected = env.step(action)
        obs, rewards, done, _ = other.step_slots(np.array([2]), np.array([action]))
        assert np.array_equal(obs[0], expected[0]) and rewards[0] == expected[1]


def test_held_out_mazes_are_solvable_seeded_and_named():
    mazes = held_out_mazes(seed=0, num_random=5)
    assert {"labyrinth", "four_rooms", "long_corridor", "perfect_maze_0", "random_4"} <= set(mazes)
    assert all(is_solvable(m) for m in mazes.values())
    assert held_out_mazes(seed=0, num_random=5) == mazes
    assert perfect_maze(1) != perfect_maze(2)
    assert shortest_path(long_corridor()) > 80  # one long corridor through the whole maze
    assert shortest_path(labyrinth()) > 40
    # A perfect maze has exactly one path between cells: free cells - 1 open adjacencies.
    walls = perfect_maze(3).walls
    free = ~walls
    adjacent = np.sum(free[:, 1:] & free[:, :-1]) + np.sum(free[1:, :] & free[:-1, :])
    assert adjacent == free.sum() - 1
    assert [m.id for m in random_solvable(3, seed=4)] == [m.id for m in random_solvable(3, seed=4)]


def test_pictures(tmp_path):
    level = four_rooms()
    image = render_maze(level, agent=(1, 1, 0), cell=8)
    assert image.size == ((13 + 2) * 8, (13 + 2) * 8)
    goal_pixel = image.getpixel(((level.goal[0] + 1) * 8 + 4, (level.goal[1] + 1) * 8 + 4))
    wall_pixel = image.getpixel(((6 + 1) * 8 + 4, (0 + 1) * 8 + 4))
    assert goal_pixel[1] > goal_pixel[0] and wall_pixel == (90, 90, 90)
    png = render_maze_png(level.to_dict(), tmp_path / "maze.png")
    assert png.read_bytes()[:4] == b"\x89PNG"
    gif = render_episode_gif(level, [(1, 1, 0), (2, 1, 0), (2, 1, 1)], tmp_path / "run.gif")
    assert gif.read_bytes()[:3] == b"GIF"


# -- task=maze: the level kind in the TaskSpace seat --------------------------------------

MAZE = "maze"  # registered by name, as conf/task/maze.yaml names it


def _straight_mazes(count):
    """Mazes whose goal lies straight ahead of the start: a policy that walks forward
    reaches it, so returns vary between policies."""
    rows = tuple("." * 13 for _ in range(13))
    return [Maze(rows, (0, y), 0, (3 + y % 9, y)) for y in range(count)]


def _maze_returns(space, workers, envs, pairs):
    from coevo.pool import EvaluationPool

    with EvaluationPool(space, _maze_policy(space), "local", workers, envs) as pool:
        return pool.evaluate(pairs, episodes=2, seed=3)


def _maze_policy(space):
    from coevo.policies.registry import make_policy

    env = space.make_env()
    return make_policy("mlp", env.observation_space, env.action_space, {"hidden": [8]})


def test_maze_space_runs_through_the_pool_batched_or_not_on_any_worker_count():
    from coevo import tasks

    space = tasks.get(MAZE)
    assert space.sample(np.random.default_rng(0)) == sample(np.random.default_rng(0))
    policy = _maze_policy(space)
    rng = np.random.default_rng(1)
    levels = _straight_mazes(6) + _mazes(4, seed=2)
    pairs = [(policy.init(rng), level) for level in levels for _ in range(3)]
    reference = _maze_returns(space, 1, 8, pairs)
    assert reference.max() > 0 and len(np.unique(reference)) > 2  # some goals reached
    unbatched = dataclasses.replace(space, batched=False)
    assert unbatched.make_slots is None and space.same_tasks_as(unbatched)
    for case, workers, envs in [(space, 2, 3), (unbatched, 1, 8), (unbatched, 2, 5)]:
        got = _maze_returns(case, workers, envs, pairs)
        np.testing.assert_array_equal(got, reference)


def test_maze_test_set_is_the_held_out_mazes_and_success_is_reaching_the_goal():
    from coevo import tasks
    from coevo.tasks.test_sets import make_test_set

    space = tasks.get(MAZE)
    test_set = make_test_set(space, size=10, seed=0)
    assert set(test_set.tasks) == set(held_out_mazes(seed=0, num_random=4).values())
    assert list(test_set.distances) == sorted(test_set.distances)
    assert space.solved(1 - 0.9 * (250 / 250)) and not space.solved(0.0)
    assert test_set.threshold == space.solved_score


def test_maze_space_edits_one_cell_per_mutation_and_refuses_numbers():
    from coevo import tasks

    space = tasks.get(MAZE)
    level = space.initial_task()
    assert level.num_walls == 0 and is_solvable(level)
    child = space.mutate(level, np.random.default_rng(0))
    changed = int(np.sum(child.walls != level.walls)) + (child.goal != level.goal)
    assert changed == 1
    with pytest.raises(ConfigError, match="no numeric parameters"):
        tasks.get(MAZE, {"walls": {"low": 0}})
    with pytest.raises(ConfigError, match="9 x 9 maze"):
        space.check(perfect_maze(0, size=9))


def _maze_run_args(curriculum, generations, *extra):
    return [
        "task=maze",
        "pool=local",
        f"curriculum={curriculum}",
        f"curriculum.generations={generations}",
        "curriculum.tasks_per_step=2",
        "optimizer.population=16",
        "seed=5",
        *extra,
    ]


def test_accel_on_mazes_resumes_after_sigkill_with_identical_tables(tmp_path):
    from cli_support import cli_in_process, run_and_kill_after_checkpoint, run_tables

    args = _maze_run_args(
        "accel", 8, "curriculum.buffer_size=8", "test_set.every=4", "test_set.size=8"
    )
    clean = tmp_path / "clean"  # in process; the killed run is a coevo-run process
    done = cli_in_process("coevo-run", *args, f"hydra.run.dir={clean}")
    assert done.returncode == 0, done.stderr[-3000:]
    killed = tmp_path / "killed"
    process = run_and_kill_after_checkpoint(args, killed, generation=3)
    assert process.returncode == -signal.SIGKILL
    resumed = cli_in_process("coevo-run", f"resume={killed}")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    expected, got = run_tables(clean), run_tables(killed)
    for table in expected:
        pd.testing.assert_frame_equal(got[table], expected[table], obj=table)
    decisions = expected["eligibility.csv"]
    levels = [Maze.from_json(text) for text in decisions["task"]]  # the decisions' mazes
    assert {m.id for m in levels} == set(decisions["task_id"])
    assert any(m.num_walls > 0 for m in levels)  # ACCEL's edits grew walls in empty rooms
    summary = expected["summary.csv"]
    assert summary["test_mastered"].notna().tolist() == [False] * 3 + [True] + [False] * 3 + [True]
    tested = pd.read_csv(clean / "test_set.csv")
    assert len(tested) == 8 and all(
        Maze.from_json(t).id == i for t, i in zip(tested["task"], tested["task_id"], strict=True)
    )
    pictures = {p.name for p in (clean / "plots").glob("task_*.png")}
    assert pictures and pictures <= {f"task_{m.id}.png" for m in levels}


def test_alp_gmm_is_refused_on_mazes_by_name(tmp_path):
    from cli_support import cli_in_process

    run = tmp_path / "run"
    done = cli_in_process("coevo-run", *_maze_run_args("alp_gmm", 2), f"hydra.run.dir={run}")
    assert done.returncode == 2
    assert "curriculum.name" in done.stderr and "Maze levels" in done.stderr
    assert not run.exists()


def test_coevo_eval_on_a_poet_maze_run_films_the_maze_and_takes_a_level_as_json(tmp_path):
    """coevo-eval on a maze run: a GIF of the maze (one frame per move, from the start), a
    level given as test_set.csv's JSON; the report pictures POET's root level."""
    from cli_support import cli_in_process
    from PIL import Image

    run = tmp_path / "run"
    args = ["task=maze", "pool=local", "curriculum=poet", "curriculum.generations=2"]
    done = cli_in_process(
        "coevo-run", *args, "optimizer.population=8", "seed=5", f"hydra.run.dir={run}"
    )
    assert done.returncode == 0, done.stderr
    root = pd.read_csv(run / "population.csv").query("pair_id == 0")["task_id"].item()
    assert (run / "plots" / f"task_{root}.png").is_file()
    assert 'id="task-0"' in (run / "report.html").read_text()

    level = Maze.from_json(pd.read_csv(run / "test_set.csv")["task"].iloc[-1])
    gif = tmp_path / "maze.gif"
    shown = cli_in_process(
        "coevo-eval", run, f"task={level.to_json()}", "episodes=1", f"video={gif}"
    )
    assert shown.returncode == 0, shown.stderr
    assert f"Maze({level.id}" in shown.stdout
    with Image.open(gif) as film:
        first = np.asarray(film.convert("RGB"))
        assert film.n_frames > 1 and film.info["duration"] >= 100  # moves, not 25 fps
    start = render_maze(level, (*level.start, level.start_dir))
    np.testing.assert_array_equal(first, np.asarray(start))

    refused = cli_in_process("coevo-eval", run, "task=walls=3", "episodes=1")
    assert refused.returncode == 2 and "Maze levels" in refused.stderr
