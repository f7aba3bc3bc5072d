"""Property-based tests of the task-space invariants, over every registered numeric space and over
generated schemas: mutation stays in bounds (and keeps interval pairs low <= high), tasks
survive a JSON round trip with their id, distance is a symmetric, non-negative function that
is zero on equal tasks. None of this builds an environment.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coevo import tasks
from coevo.tasks import Param, TaskSpace
from coevo.tasks.level_kind import is_numeric
from coevo.tasks.task import Task

# The numeric level kinds: bounds, steps and intervals are theirs (mazes: tests/tasks/test_maze.py).
SPACES = [name for name in tasks.names() if is_numeric(tasks.get(name))]
PROPERTY = settings(
    max_examples=100,
    deadline=None,
    database=None,  # no example store (.hypothesis/) left in the checkout
    suppress_health_check=[HealthCheck.too_slow],
)
SEEDS = st.integers(0, 2**32 - 1)


def _in_bounds(space: TaskSpace, task: Task) -> bool:
    values = task.as_dict()
    return all(p.low <= values[p.name] <= p.high for p in space.params) and all(
        values[low] <= values[high] for low, high in space.ordered
    )


@st.composite
def task_of(draw, space: TaskSpace) -> Task:
    """Any valid task of `space`: each parameter within its bounds, interval pairs ordered."""
    values = {
        p.name: draw(st.floats(p.low, p.high, allow_nan=False, allow_infinity=False))
        for p in space.params
    }
    for low, high in space.ordered:
        # Swapping a crossed pair keeps each value within the other's bounds, which the
        # space guarantees for its interval pairs (low's bounds never exceed high's).
        if values[low] > values[high]:
            values[low], values[high] = values[high], values[low]
    return space.task(**values)


@pytest.mark.parametrize("name", SPACES)
@PROPERTY
@given(data=st.data(), seed=SEEDS, generations=st.integers(1, 8))
def test_mutation_stays_in_bounds_and_keeps_intervals_ordered(name, data, seed, generations):
    space = tasks.get(name)
    task = data.draw(task_of(space))
    rng = np.random.default_rng(seed)
    for _ in range(generations):  # a lineage: each child is the next parent
        child = space.mutate(task, rng)
        assert child.space == space.name and set(child) == set(space.names)
        assert _in_bounds(space, child), (task, child)
        space.check(child)  # the space's own validation agrees
        for p in space.params:  # each move is at most one step (plus rounding)
            slack = p.step + (p.round_to or 0.0) + 1e-9 * max(1.0, abs(p.high), abs(p.low))
            assert abs(child[p.name] - task[p.name]) <= slack, (p, task, child)
        task = child


@pytest.mark.parametrize("name", SPACES)
@PROPERTY
@given(data=st.data())
def test_tasks_survive_a_json_round_trip(name, data):
    space = tasks.get(name)
    task = data.draw(task_of(space))
    again = Task.from_json(task.to_json())
    assert again == task and hash(again) == hash(task) and again.id == task.id
    assert again.to_json() == task.to_json()
    space.check(again)


@pytest.mark.parametrize("name", SPACES)
@PROPERTY
@given(data=st.data())
def test_distance_is_symmetric_non_negative_and_zero_on_equal_tasks(name, data):
    space = tasks.get(name)
    a, b, c = (data.draw(task_of(space)) for _ in range(3))
    assert space.distance(a, b) == space.distance(b, a)
    assert space.distance(a, b) >= 0
    assert space.distance(a, a) == 0
    assert space.distance(a, Task.from_json(a.to_json())) == 0  # equal content, other object
    # A metric: the triangle inequality, up to rounding.
    assert space.distance(a, c) <= space.distance(a, b) + space.distance(b, c) + 1e-9
    encoded = space.encode(a)
    assert encoded.shape == (len(space.params),)
    assert ((encoded >= 0) & (encoded <= 1)).all()


# -- generated schemas: the mutation rule itself, beyond the built-in spaces' numbers --------
def floats(low: float, high: float) -> st.SearchStrategy[float]:
    """Floats in [low, high] with -0.0 read as 0.0: hypothesis refuses a range from 0.0 to
    -0.0, which `sorted` and `max` can produce from a drawn -0.0 (they compare equal)."""
    return st.floats(low, high, allow_nan=False, allow_infinity=False).map(lambda x: x + 0.0)


FINITE = floats(-1e6, 1e6)


@st.composite
def schemas(draw) -> TaskSpace:
    """A space of 1-3 free parameters plus, sometimes, one interval pair."""
    params = []
    for index in range(draw(st.integers(1, 3))):
        low, high = sorted((draw(FINITE), draw(FINITE)))
        init = draw(floats(low, high))
        step = draw(floats(0, max(high - low, 1.0)))
        round_to = draw(st.none() | st.sampled_from([0.01, 0.1, 0.5, 1.0]))
        params.append(Param(f"p{index}", low, high, init, step, round_to))
    ordered: tuple[tuple[str, str], ...] = ()
    if draw(st.booleans()):
        # The interval's low end ranges over [a, b], its high end over [a', b'] with a <= a'
        # and b <= b', as the space requires.
        a, b = sorted((draw(FINITE), draw(FINITE)))
        a2 = draw(floats(a, max(a, b)))
        b2 = draw(floats(max(a2, b), max(a2, b) + 1e6))
        lo_init = draw(floats(a, b))
        hi_init = draw(floats(max(a2, lo_init), b2))
        step = draw(floats(0, 1e6))
        params.append(Param("lo", a, b, lo_init, step))
        params.append(Param("hi", a2, b2, hi_init, step))
        ordered = (("lo", "hi"),)
    return TaskSpace("generated", tuple(params), lambda: None, 10, ordered=ordered)


@PROPERTY
@given(space=schemas(), seed=SEEDS, generations=st.integers(1, 8))
def test_mutation_stays_in_bounds_for_any_schema(space, seed, generations):
    task = space.initial_task()
    rng = np.random.default_rng(seed)
    for _ in range(generations):
        task = space.mutate(task, rng)
        assert _in_bounds(space, task), (space, task)
        assert all(math.isfinite(v) for v in task.as_dict().values())


@PROPERTY
@given(
    params=st.dictionaries(
        st.text(min_size=1, max_size=12), st.floats(allow_nan=False, allow_infinity=False)
    ),
    space=st.text(max_size=12),
)
def test_any_task_round_trips_through_json_with_its_id(params, space):
    task = Task(space, tuple(params.items()))
    again = Task.from_json(task.to_json())
    assert again == task and again.id == task.id
    # The parameters' order never matters.
    assert Task(space, tuple(reversed(list(params.items())))) == task
