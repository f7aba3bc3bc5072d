"""CPPN terrains (task=bipedal_cppn): the genome level (JSON, content id, validation), E-POET's
drawing of the ground and mutation rules on neat-python's operators, seeded; the walker on
the genome's ground; POET's novelty by the ground; E-POET on CPPN terrains end to end
(kill -9 and resume, worker counts)."""

import math
import pickle
import random
import signal
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from gymnasium.envs.box2d.bipedal_walker import TERRAIN_HEIGHT, TERRAIN_STARTPAD
from phrases import assert_says

from coevo import tasks
from coevo.curricula.poet.novelty import Characterization, novelty_scores
from coevo.errors import ConfigError
from coevo.tasks.cppn import (
    Connection,
    CppnTerrain,
    Node,
    course_points,
    flat_terrain,
    mutate,
    relative_heights,
    render_cppn_png,
    sample,
)
from coevo.tasks.cppn.operators import PEAK_HIGH, PEAK_LOW, connected
from coevo.tasks.cppn.profile import NETWORK_INPUTS, peak

CPPN = "bipedal_cppn"


def _lineage(seed, length=25):
    rng, level, out = np.random.default_rng(seed), flat_terrain(), []
    for _ in range(length):
        level = mutate(level, rng)
        out.append(level)
    return out


def test_mutation_and_sample_are_seeded_and_leave_the_random_module_alone():
    before = random.getstate()
    first, again = _lineage(4), _lineage(4)
    assert first == again and [t.id for t in first] == [t.id for t in again]
    assert _lineage(5, 3) != first[:3]
    drawn = [sample(np.random.default_rng(s), 8) for s in (0, 0, 1)]
    assert drawn[0] == drawn[1] and drawn[0] != drawn[2]
    assert random.getstate() == before  # neat-python drew from its own seeded generator


def test_children_follow_epoets_rules():
    parent = flat_terrain()
    for child in _lineage(7, 40):
        assert connected(child) and child.output.activation == "identity"
        assert not np.array_equal(relative_heights(child), relative_heights(parent))
        assert PEAK_LOW - 1e-9 <= peak(child) <= PEAK_HIGH + 1e-9  # E-POET's rescaled peak
        for node in parent.nodes:  # activations never mutate (E-POET's settings)
            same = [n for n in child.nodes if n.key == node.key]
            assert not same or same[0].activation == node.activation
        parent = child
    assert parent.hidden > 0  # NEAT added nodes along the way


def test_the_ground_is_drawn_as_epoet_draws_it():
    assert not relative_heights(flat_terrain()).any()
    weight, bias = 0.3, 0.7
    line = CppnTerrain(
        (Node(0, bias, 1.0, "identity"),), (Connection(-1, 0, weight),)
    )  # height = weight * x' + bias, measured from the first point after the pad
    heights = relative_heights(line)
    assert not heights[: TERRAIN_STARTPAD + 1].any()
    drawn = heights[TERRAIN_STARTPAD + 1 :]
    np.testing.assert_allclose(drawn, weight * (NETWORK_INPUTS + math.pi * 0.79), atol=1e-12)
    assert NETWORK_INPUTS[-1] < math.pi and NETWORK_INPUTS[0] == pytest.approx(-0.79 * math.pi)
    wave = CppnTerrain(
        (Node(0, 0.0, 2.0, "identity"), Node(1, 0.0, 1.0, "sin")),
        (Connection(-1, 1, 1.0), Connection(1, 0, 1.0), Connection(-1, 0, 5.0, enabled=False)),
    )  # E-POET's neat-python 0.92 sin: sin(5z); the disabled connection carries nothing
    expected = 2.0 * np.sin(5.0 * NETWORK_INPUTS)
    np.testing.assert_allclose(
        relative_heights(wave)[TERRAIN_STARTPAD + 1 :], expected - expected[0]
    )
    points = course_points(wave)
    assert points.shape == (200, 2) and points[0, 1] == TERRAIN_HEIGHT


def test_json_round_trip_pickle_content_id_and_validation():
    level = _lineage(2, 12)[-1]
    again = CppnTerrain.from_json(level.to_json())
    assert again == level and again.id == level.id and hash(again) == hash(level)
    assert pickle.loads(pickle.dumps(level)) == level
    assert flat_terrain().id == "f22167ce0813"  # the JSON form is part of the tables
    code = (
        "import sys; from coevo.tasks.cppn import CppnTerrain as C; "
        "print(C.from_json(sys.argv[1]).id)"
    )
    other = subprocess.run(
        [sys.executable, "-c", code, level.to_json()], capture_output=True, text=True
    )
    assert other.stdout.strip() == level.id, other.stderr
    reordered = CppnTerrain(tuple(reversed(level.nodes)), tuple(reversed(level.connections)))
    assert reordered == level
    with pytest.raises(ConfigError) as info:
        CppnTerrain((Node(0, 0.0, 1.0, "relu"),), ())
    assert_says(str(info.value), "cppn.nodes.activation", "relu", "identity, sin")
    with pytest.raises(ConfigError) as info:
        CppnTerrain(
            (Node(0, 0.0, 1.0, "identity"), Node(1, 0.0, 1.0, "sin")),
            (Connection(1, 0, 1.0), Connection(0, 1, 1.0)),
        )
    assert_says(str(info.value), "cppn.connections", "feed-forward")
    with pytest.raises(ConfigError, match="cppn.kind"):
        CppnTerrain.from_dict({"kind": "maze", "nodes": [], "connections": []})


def test_the_space_is_a_level_kind_without_numbers_and_draws_pictures(tmp_path):
    space = tasks.get(CPPN)
    assert space.initial_task() == flat_terrain() and space.level_type is CppnTerrain
    child = space.mutate(space.initial_task(), np.random.default_rng(0))
    assert space.distance(space.initial_task(), child) > 0
    assert space.encode(child).shape == (200,) and 0 < space.encode(child).min()
    with pytest.raises(ConfigError, match="no numeric parameters"):
        tasks.get(CPPN, {"roughness": {"low": 0}})
    with pytest.raises(ConfigError, match="CppnTerrain levels"):
        space.check(tasks.get("bipedal_terrain").initial_task())
    from coevo.tasks.test_sets import make_test_set

    tested = make_test_set(space, size=4, seed=0)
    assert len(set(tested.tasks)) == 4 and list(tested.distances) == sorted(tested.distances)
    png = render_cppn_png(child.to_dict(), tmp_path / "terrain.png")
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_poets_params_novelty_on_cppn_terrains_is_the_distance_of_their_grounds():
    """What POET (`novelty=params`) runs on CPPN terrains beyond E-POET's loop, tested end
    to end below: a child's novelty is the k-NN distance of its encoded ground to the
    population's, so a copy of a level in the population is not novel."""
    space = tasks.get(CPPN)
    lineage = _lineage(3, length=6)
    population, children = lineage[:3], [lineage[1], *lineage[3:]]
    novelty = novelty_scores(Characterization.PARAMS, space, children, population, k=1)
    nearest = [min(space.distance(c, p) for p in population) for c in children]
    np.testing.assert_allclose(novelty, nearest)
    assert novelty[0] == 0 and novelty[1:].min() > 0


def _episode(env, level, seed, actions):
    env.set_task(level)
    env.reset(seed=seed)
    total = 0.0
    for action in actions:
        _, reward, terminated, _, _ = env.step(action)
        total += reward
        if terminated:
            break
    return total


def test_the_walker_plays_the_genome_ground_and_episodes_do_not_depend_on_history():
    space = tasks.get(CPPN)
    levels = [space.initial_task(), *_lineage(3, 6)[-2:]]
    env = space.make_env()
    env.set_task(levels[-1].to_json())
    assert env.get_task() == levels[-1]
    env.reset(seed=1)
    np.testing.assert_array_equal(np.c_[env.terrain_x, env.terrain_y], course_points(levels[-1]))
    actions = np.random.default_rng(0).uniform(-1, 1, (60, 4))
    cases = [(level, seed) for level in levels for seed in (1, 2)]
    forward = [_episode(env, level, seed, actions) for level, seed in cases]
    other = space.make_env()  # the same episodes in the other order, on another env
    backward = [_episode(other, level, seed, actions) for level, seed in reversed(cases)]
    assert forward == backward[::-1]
    assert forward[0] != forward[1]  # the seed moves the walker's first push


# -- Enhanced POET on CPPN terrains, end to end --------------------------------------------

TINY = [
    "experiment=enhanced_poet_cppn",
    "pool=local",
    "task.max_episode_steps=30",
    "optimizer.population=4",
    "pool.envs_per_worker=8",
    "curriculum.generations=4",  # 3 in the killed run, then 4 (a reproduction) resumed
    "curriculum.reproduce_every=2",
    "curriculum.transfer_every=3",
    "curriculum.max_children=4",
    "curriculum.repro_threshold=-1000",
    "curriculum.mc_lower=-1000",
    "curriculum.mc_upper=1000",
    "curriculum.solved_threshold=-5",
    "test_set.every=3",
    "test_set.size=3",
    "report_every_s=1000",
    "seed=5",
]


def test_epoet_on_cppn_terrains_resumes_after_sigkill_and_ignores_worker_counts(tmp_path):
    from cli_support import cli_in_process, run_and_kill_after_checkpoint, run_tables

    clean = tmp_path / "clean"
    done = cli_in_process("coevo-run", *TINY, "pool.num_workers=1", f"hydra.run.dir={clean}")
    assert done.returncode == 0, done.stderr[-3000:]
    killed = tmp_path / "killed"
    process = run_and_kill_after_checkpoint([*TINY, "pool.num_workers=2"], killed, generation=3)
    assert process.returncode == -signal.SIGKILL
    resumed = cli_in_process("coevo-run", f"resume={killed}")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    expected, got = run_tables(clean), run_tables(killed)
    for table in expected:  # 1 worker straight through = 2 workers killed and resumed
        pd.testing.assert_frame_equal(got[table], expected[table], obj=table)
    decisions = expected["eligibility.csv"]
    levels = {CppnTerrain.from_json(t) for t in decisions["task"].dropna()}
    assert {t.id for t in levels} == set(decisions["task_id"])
    population = expected["population.csv"]
    assert population["admitted_by_mc"].sum() >= 2 and len(levels) > 2
    assert expected["summary.csv"]["annecs"].iloc[-1] > 0
    pictures = {p.name for p in (clean / "plots").glob("task_*.png")}
    assert pictures == {f"task_{i}.png" for i in population["task_id"]}
    page = (clean / "report.html").read_text()
    assert 'id="fig-lineage"' in page and "drawn beside it" in page


def test_missing_neat_python_names_the_extra_and_leaves_the_other_spaces_usable():
    script = (
        "import sys; sys.modules['neat'] = None\n"  # makes `import neat` fail
        "from coevo import tasks\n"
        "from coevo.errors import ConfigError\n"
        "assert 'bipedal_terrain' in tasks.names() and 'bipedal_cppn' not in tasks.names()\n"
        "try:\n"
        "    tasks.get('bipedal_cppn')\n"
        "except ConfigError as error:\n"
        "    print(error)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert_says(result.stdout, "unknown task space 'bipedal_cppn'", "pip install 'coevo[cppn]'")
