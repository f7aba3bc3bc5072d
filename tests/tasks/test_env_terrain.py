"""POET terrain for the bipedal walker: generation, intervals, the physics world, the PNG."""

import Box2D
import numpy as np
import pytest
from phrases import assert_says

from coevo import tasks
from coevo.errors import ConfigError
from coevo.tasks.terrain import (
    COURSE_END,
    FINISH_X,
    GROUND_HIGH,
    GROUND_LOW,
    PIT_DEPTH,
    STAIR_WIDTH,
    STUMP_WIDTH,
    TERRAIN_HEIGHT,
    TERRAIN_STEP,
    generate_terrain,
    render_terrain_png,
)


@pytest.fixture(scope="module")
def space():
    return tasks.get("bipedal_terrain")


@pytest.fixture(scope="module")
def stairs_space():
    return tasks.get("bipedal_terrain_stairs")


def test_initial_task_is_flat_ground(space):
    terrain = generate_terrain(space.initial_task(), seed=5)
    assert terrain.obstacles == ()
    np.testing.assert_array_equal(terrain.points[:, 1], TERRAIN_HEIGHT)
    assert terrain.points[0, 0] == 0 and terrain.points[-1, 0] == pytest.approx(COURSE_END)


def test_terrain_is_a_function_of_task_and_seed(space):
    task = space.task(roughness=4.0, pit_gap_low=1.0, pit_gap_high=3.0, stump_height_high=2.0)
    same = generate_terrain(task, 3), generate_terrain(task.as_dict(), 3)
    np.testing.assert_array_equal(same[0].points, same[1].points)
    assert same[0].obstacles == same[1].obstacles
    other_seed = generate_terrain(task, 4)
    other_task = generate_terrain(space.task(roughness=4.0, pit_gap_high=3.0), 3)
    for different in (other_seed, other_task):
        assert different.points.shape != same[0].points.shape or not np.array_equal(
            different.points, same[0].points
        )


def test_obstacles_follow_the_task_intervals(space):
    task = space.task(
        pit_gap_low=1.5, pit_gap_high=2.5, stump_height_low=0.8, stump_height_high=1.2
    )
    kinds = set()
    for seed in range(8):
        terrain = generate_terrain(task, seed)
        xs, ys = terrain.points[:, 0], terrain.points[:, 1]
        assert np.all(np.diff(xs) >= 0)
        assert ys.min() >= GROUND_LOW - PIT_DEPTH - 1e-9
        for obstacle in terrain.obstacles:
            kinds.add(obstacle.kind)
            assert obstacle.x + obstacle.width <= FINISH_X
            if obstacle.kind == "pit":
                assert 1.5 <= obstacle.size <= 2.5
                assert obstacle.width == pytest.approx(obstacle.size * TERRAIN_STEP)
            else:
                assert obstacle.kind == "stump" and 0.8 <= obstacle.size <= 1.2
                assert obstacle.width == STUMP_WIDTH
                # The stump's top is in the ground line, size steps above its foot.
                at = np.flatnonzero(np.isclose(xs, obstacle.x))
                assert ys[at].max() - ys[at].min() == pytest.approx(obstacle.size * TERRAIN_STEP)
        assert len(terrain.obstacles) >= 8
    assert kinds == {"pit", "stump"}
    only_stumps = generate_terrain(space.task(stump_height_low=1.0, stump_height_high=1.0), 0)
    assert {o.kind for o in only_stumps.obstacles} == {"stump"}


def test_roughness_makes_the_grass_rougher(space):
    def slope_changes(roughness):
        points = generate_terrain(space.task(roughness=roughness), 1).points
        assert GROUND_LOW - 1e-9 <= points[:, 1].min() and points[:, 1].max() <= GROUND_HIGH
        return np.abs(np.diff(points[:, 1], n=2)).mean()

    gentle, rough, wild = slope_changes(0.5), slope_changes(3.0), slope_changes(10.0)
    assert 0 < gentle < rough < wild


def test_stairs_appear_only_in_the_stairs_space(stairs_space):
    task = stairs_space.task(stair_height_low=0.5, stair_height_high=1.0, stair_steps=3)
    terrain = generate_terrain(task, 2)
    stairs = [o for o in terrain.obstacles if o.kind == "stairs"]
    assert stairs and {o.kind for o in terrain.obstacles} == {"stairs"}
    for stair in stairs:
        assert 0.5 <= abs(stair.size) <= 1.0 and stair.width == pytest.approx(3 * STAIR_WIDTH)
    assert generate_terrain(stairs_space.initial_task(), 2).obstacles == ()


def test_mutation_keeps_intervals_ordered_and_moves_bounds_by_their_step(space):
    rng = np.random.default_rng(0)
    task = space.initial_task()
    for _ in range(400):
        child = space.mutate(task, rng)
        space.check(child)
        for low, high, step in (
            ("pit_gap_low", "pit_gap_high", 0.4),
            ("stump_height_low", "stump_height_high", 0.2),
        ):
            assert child[low] <= child[high]
            for name in (low, high):
                assert abs(child[name] - task[name]) <= step + 0.05 + 1e-9
                assert abs(child[name] * 10 - round(child[name] * 10)) < 1e-6
        assert abs(child["roughness"] - task["roughness"]) <= 0.6 + 0.05 + 1e-9
        task = child
    assert task["pit_gap_high"] > 1.0  # the walk goes somewhere


def test_crossed_intervals_are_clear_errors(space):
    with pytest.raises(ConfigError) as info:
        space.task(pit_gap_low=3.0, pit_gap_high=1.0)
    assert info.value.field == "task.pit_gap_low"
    assert_says(str(info.value), "3 > pit_gap_high 1", "'bipedal_terrain'", "lower end")
    with pytest.raises(ConfigError, match=r"task.params.stump_height_low: init 2 > init of"):
        tasks.get("bipedal_terrain", {"stump_height_low": {"init": 2.0}})
    with pytest.raises(ConfigError, match=r"task.params.pit_gap_low: bounds \[0, 9\] must not"):
        tasks.get("bipedal_terrain", {"pit_gap_low": {"high": 9.0}})
    with pytest.raises(ConfigError, match=r"task.roughness: 11 outside bounds \[0, 10\]"):
        space.task(roughness=11.0)


def _ground_height(world, x):
    """Cast a ray straight down at x in the Box2D world; the first ground hit's height."""

    class Down(Box2D.b2.rayCastCallback):
        y = None

        def ReportFixture(self, fixture, point, normal, fraction):
            if fixture.filterData.categoryBits & 1 == 0:
                return -1
            self.y = point[1]
            return fraction

    ray = Down()
    world.RayCast(ray, (x, 20.0), (x, -5.0))
    return ray.y


def test_walker_world_holds_the_course_and_episodes_are_deterministic(space):
    task = space.task(roughness=5.0, pit_gap_low=1.0, pit_gap_high=2.0, stump_height_high=1.5)
    env = space.make_env()
    env.set_task(task.as_dict())
    env.reset(seed=7)
    expected = generate_terrain(task, 7)
    np.testing.assert_array_equal(env.course.points, expected.points)
    xs, ys = expected.points[:, 0], expected.points[:, 1]
    probes = np.linspace(1.0, COURSE_END - 1.0, 40)
    for x in probes:
        if np.any(np.abs(xs - x) < 1e-3):
            continue  # a vertical edge is right there
        assert _ground_height(env.world, x) == pytest.approx(np.interp(x, xs, ys), abs=1e-5)

    def rollout(seed):
        env.set_task(task.as_dict())
        obs, _ = env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        trajectory = [obs]
        for _ in range(40):
            obs, reward, terminated, _, _ = env.step(rng.uniform(-1, 1, 4).astype(np.float32))
            trajectory.append(np.append(obs, reward))
        return trajectory

    first, again = rollout(7), rollout(7)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[-1], rollout(8)[-1])
    env.close()


def test_terrain_png(tmp_path, stairs_space):
    from matplotlib.image import imread

    task = stairs_space.task(
        roughness=2.0, pit_gap_high=2.0, stump_height_high=1.0, stair_height_high=1.0
    )
    path = render_terrain_png(task, tmp_path / "figs" / "course.png", seed=1)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = imread(path)
    assert image.shape[0] > 200 and image.shape[1] > 1000
    assert len(np.unique(image.reshape(-1, image.shape[-1]), axis=0)) > 10  # not blank


def test_report_draws_bipedal_tasks_with_the_terrain_png(tmp_path, space):
    """The report's task-picture hook (space.metadata['render_png']) is the terrain PNG."""
    render = space.metadata["render_png"]
    path = render(space.task(stump_height_high=2.0).as_dict(), tmp_path / "task_x.png")
    assert path.exists() and path.read_bytes()[:4] == b"\x89PNG"


def _gymnasium_stepped(env):
    """The same env running gymnasium's own step and cloud code (the walker before ours)."""
    from gymnasium.envs.box2d.bipedal_walker import BipedalWalker

    env.step = BipedalWalker.step.__get__(env)
    env._generate_clouds = BipedalWalker._generate_clouds.__get__(env)
    return env


@pytest.mark.parametrize("render_mode", [None, "rgb_array"])
def test_walker_steps_are_gymnasiums_bit_for_bit(space, render_mode):
    """Our step and unrendered reset give gymnasium's observations and rewards exactly."""
    ours = space.make_env()
    theirs = _gymnasium_stepped(space.make_env())
    theirs.render_mode = ours.render_mode = render_mode
    rng = np.random.default_rng(3)
    task = space.task(roughness=4.0, pit_gap_high=2.0, stump_height_low=0.5, stump_height_high=1.0)
    for seed in range(4):
        for env in (ours, theirs):
            env.set_task(task.as_dict())
        first = [env.reset(seed=seed)[0] for env in (ours, theirs)]
        np.testing.assert_array_equal(*first)
        assert ours.np_random.bit_generator.state == theirs.np_random.bit_generator.state
        for t in range(150):
            # Out-of-range, zero and float64 commands too: the clip and sign paths.
            action = rng.uniform(-1.5, 1.5, 4).astype(np.float32)
            if t % 7 == 0:
                action[t % 4] = 0.0
            if t % 11 == 0:
                action = action.astype(np.float64)
            a, b = ours.step(action.copy()), theirs.step(action.copy())
            np.testing.assert_array_equal(a[0], b[0])
            assert a[1:4] == b[1:4] and type(a[1]) is type(b[1])
            if a[2]:
                break
    if render_mode:
        frame = ours.render()
        assert frame.shape == (400, 600, 3) and len(ours.cloud_poly) == 10
        points = ours.course.points
        edges = sum(not np.array_equal(p, q) for p, q in zip(points[:-1], points[1:], strict=True))
        assert len(ours.terrain_poly) == edges
    ours.close()
    theirs.close()


def test_walker_course_follows_the_task_through_its_cache(space):
    env = space.make_env()
    rough, flat = space.task(roughness=6.0), space.initial_task()
    courses = []
    for task in (rough, flat, rough):
        env.set_task(task.as_dict())
        env.reset(seed=5)
        courses.append(env.course.points.copy())
    np.testing.assert_array_equal(courses[0], generate_terrain(rough, 5).points)
    np.testing.assert_array_equal(courses[1], generate_terrain(flat, 5).points)
    np.testing.assert_array_equal(courses[0], courses[2])
    env.close()
