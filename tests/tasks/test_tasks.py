import json

import numpy as np
import pytest

from coevo import tasks
from coevo.errors import ConfigError
from coevo.tasks import Param, Task, TaskSettableEnv, TaskSpace


def test_task_is_immutable_hashable_and_order_independent():
    a = Task("cartpole", (("gravity", 9.8), ("force_mag", 10.0)))
    b = Task("cartpole", (("force_mag", 10.0), ("gravity", 9.8)))
    assert a == b and hash(a) == hash(b) and a.id == b.id
    assert len({a, b}) == 1
    with pytest.raises(AttributeError):
        a.space = "other"  # type: ignore[misc]


def test_task_json_round_trip(cartpole, rng):
    task = cartpole.mutate(cartpole.initial_task(), rng)
    text = task.to_json()
    assert json.loads(text)["space"] == "cartpole"
    again = Task.from_json(text)
    assert again == task and again.id == task.id and again["gravity"] == task["gravity"]


def test_different_tasks_have_different_ids(cartpole):
    assert cartpole.task(gravity=9.8).id != cartpole.task(gravity=12.0).id


def test_mutation_stays_within_bounds_and_rounds(cartpole, rng):
    task = cartpole.initial_task()
    for _ in range(500):
        task = cartpole.mutate(task, rng)
        for p in cartpole.params:
            assert p.low <= task[p.name] <= p.high
            steps = task[p.name] / p.round_to
            assert abs(steps - round(steps)) < 1e-6
    # A long random walk reaches both bounds of some parameter: clipping, not rejection.
    assert any(task[p.name] in (p.low, p.high) for p in cartpole.params)


def test_mutation_moves_each_parameter_at_most_its_step(cartpole, rng):
    parent = cartpole.initial_task()
    for _ in range(200):
        child = cartpole.mutate(parent, rng)
        for p in cartpole.params:
            assert abs(child[p.name] - parent[p.name]) <= p.step + p.round_to / 2 + 1e-9


def test_a_mutation_moves_an_int_parameter_whenever_it_can(rng):
    # step 1 on an int rounds half of the ±1 draws to no move, and a bound clips the moves
    # past it: such a child is its parent (POET drops it, ACCEL re-scores the same level).
    level = Param("level", low=1, high=10, init=2, step=1, type="int")
    space = TaskSpace("corridor", (level,), dict, 10)
    children = [space.mutate(space.task(level=2), rng)["level"] for _ in range(2000)]
    assert set(children) == {1, 3}
    assert 800 < children.count(1) < 1200  # each way half the time
    assert {space.mutate(space.task(level=10), rng)["level"] for _ in range(200)} == {9}
    # A space with no other task gives the parent back after its tries, not a hang.
    still = TaskSpace(
        "still", (Param("level", low=1, high=10, init=2, step=0, type="int"),), dict, 10
    )
    assert still.mutate(still.task(level=2), rng) == still.task(level=2)
    # One draw where no child can differ (low == high), not a try after try.
    fixed = TaskSpace("fixed", (Param("g", low=3.0, high=3.0, init=3.0, step=1.0),), dict, 10)
    twin = np.random.default_rng(7)
    drawn = np.random.default_rng(7)
    assert fixed.mutate(fixed.initial_task(), drawn) == fixed.initial_task()
    twin.uniform(-1.0, 1.0)
    assert drawn.bit_generator.state == twin.bit_generator.state


def test_encode_and_distance(cartpole):
    a = cartpole.task(gravity=2.0)
    b = cartpole.task(gravity=30.0)
    assert cartpole.distance(a, a) == 0.0
    assert cartpole.distance(a, b) == pytest.approx(1.0)  # full span of one parameter
    assert cartpole.distance(a, b) == cartpole.distance(b, a)


def test_task_outside_bounds_is_refused(cartpole):
    with pytest.raises(ConfigError, match=r"task.gravity: 99 outside bounds \[2, 30\]"):
        cartpole.task(gravity=99)


@pytest.mark.parametrize("key", ["low", "high", "init", "step"])
def test_a_parameter_that_is_not_finite_is_refused_by_name(cartpole, key):
    """`task.params.gravity.high=inf` passed, then every draw between the bounds failed
    inside numpy (OverflowError) after the run had started."""
    value = float("-inf") if key == "low" else float("inf")
    with pytest.raises(ConfigError, match=rf"^task.params.gravity.{key}: must be a finite number"):
        cartpole.with_overrides({"gravity": {key: value}})


def test_unknown_parameter_names_the_known_ones(cartpole):
    with pytest.raises(ConfigError) as info:
        cartpole.task(gravty=9.8)
    assert "task.params.gravty" in str(info.value)
    assert "known: pole_length, pole_mass, cart_mass, force_mag, gravity" in str(info.value)


def test_bounds_lower_above_upper_are_refused():
    with pytest.raises(ConfigError, match="task.params.g: lower bound 5 > upper bound 1"):
        TaskSpace("s", (Param("g", low=5, high=1, init=2, step=1),), dict, 10)


def test_overrides_replace_bounds_and_are_validated(cartpole):
    narrow = tasks.get("cartpole", {"gravity": {"low": 5, "high": 15}})
    assert narrow.param("gravity").low == 5 and narrow.param("gravity").high == 15
    assert cartpole.param("gravity").low == 2  # the registered space is unchanged
    with pytest.raises(ConfigError, match="task.params.gravity: lower bound 20 > upper bound 15"):
        tasks.get("cartpole", {"gravity": {"low": 20, "high": 15}})
    with pytest.raises(ConfigError, match="task.params.gravity.lo: unknown field"):
        tasks.get("cartpole", {"gravity": {"lo": 1}})


def test_unknown_task_space_lists_registered_names():
    with pytest.raises(
        ConfigError, match=r"task.name: unknown task space 'nope'; known: .*cartpole"
    ):
        tasks.get("nope")


def test_cartpole_env_is_task_settable_and_task_applies_at_next_reset(cartpole):
    env = cartpole.make_env()
    assert isinstance(env, TaskSettableEnv)
    env.reset(seed=0)
    env.set_task({**cartpole.initial_task().as_dict(), "gravity": 20.0})
    assert env.gravity == pytest.approx(9.8)  # not mid-episode
    assert env.get_task()["gravity"] == 20.0
    env.reset(seed=0)
    assert env.gravity == 20.0


def test_cartpole_physics_follow_the_task(cartpole):
    """Same seed and actions, different gravity: the pole falls faster."""

    def steps_until_fall(task):
        env = cartpole.make_env()
        env.set_task(task.as_dict())
        env.reset(seed=3)
        for step in range(1, 500):
            _, _, terminated, _, _ = env.step(0)
            if terminated:
                return step
        return 500

    light = steps_until_fall(cartpole.task(gravity=2.0))
    heavy = steps_until_fall(cartpole.task(gravity=30.0))
    assert heavy < light
    # Reusing one env across tasks equals a fresh env per task.
    env = cartpole.make_env()
    for task in (cartpole.task(gravity=30.0), cartpole.task(pole_length=1.5)):
        env.set_task(task.as_dict())
        obs_reused, _ = env.reset(seed=5)
        fresh = cartpole.make_env()
        fresh.set_task(task.as_dict())
        obs_fresh, _ = fresh.reset(seed=5)
        for _ in range(8):
            obs_reused, *_ = env.step(1)
            obs_fresh, *_ = fresh.step(1)
        np.testing.assert_array_equal(obs_reused, obs_fresh)


def test_rounded_values_carry_no_float_noise():
    """111 * 0.1 is 11.100000000000001 in floats; a task keeps round_to's decimals."""
    space = tasks.get("cartpole")
    rng = np.random.default_rng(0)
    task = space.initial_task()
    for _ in range(300):
        task = space.mutate(task, rng)
        for name in space.names:
            param = space.param(name)
            if param.round_to:
                value = task[name]
                assert repr(value) == repr(round(value, 6)), (name, value)
    assert space.param("gravity").clip(111 * 0.1) == 11.1
