import dataclasses

import numpy as np
import pandas as pd
import pytest

from coevo import ESConfig, EvolutionStrategy, Poet, PoetConfig, tasks
from coevo.errors import ConfigError
from coevo.pool import EvaluationPool
from coevo.pool.stats import is_runtime_column

SMALL = PoetConfig(
    generations=4,
    optimizer_steps=3,
    eval_episodes=2,
    repro_threshold=100,
    reproduce_every=1,
    max_children=4,
    max_admitted=1,
    mc_lower=20,
    mc_upper=475,
    max_active=3,
    transfer_every=2,
)


def _make(space, policy, pool, config, seed=0, initial_tasks=None):
    es = EvolutionStrategy(
        ESConfig(population=8, lr=0.1, lr_decay=0.9999, lr_min=0.001, l2=0.01),
        pool.policy.num_params,
    )
    return Poet(
        config, space=space, pool=pool, optimizer=es, seed=seed, initial_tasks=initial_tasks
    )


def _run(space, policy, backend, workers, config=SMALL, seed=3):
    with EvaluationPool(space, policy, backend, workers, envs_per_worker=4) as pool:
        co = _make(space, policy, pool, config, seed)
        results = co.run()
    summary = pd.DataFrame([r.summary for r in results])
    summary = summary.drop(columns=[c for c in summary if is_runtime_column(c)])
    decisions = pd.DataFrame([d.as_row() for r in results for d in r.decisions])
    thetas = [p.theta for p in co.population.all_pairs()]
    return summary, decisions, thetas


@pytest.fixture(scope="module")
def seed_3_run(cartpole, cartpole_policy):
    """The SMALL run of seed 3 on one local worker, made once for the two tests that read
    it (each keeps to one xdist worker with it: the group below)."""
    return _run(cartpole, cartpole_policy, "local", 1, seed=3)


@pytest.mark.xdist_group("test_coevolution_seed_3")
def test_same_seed_same_results_on_every_backend_and_worker_count(
    ray_session, cartpole, cartpole_policy, seed_3_run
):
    summary, decisions, thetas = seed_3_run
    assert summary["generation"].tolist() == [1, 2, 3, 4]
    # The run exercised every rule, so agreement below means something.
    assert {"eligible", "ineligible", "admitted", "not_admitted"} <= set(decisions["outcome"])
    assert "transfer" in set(decisions["kind"])
    for backend, workers in [("local", 2), ("ray", 1), ("ray", 2)]:
        s, d, t = _run(cartpole, cartpole_policy, backend, workers)
        pd.testing.assert_frame_equal(s, summary)
        pd.testing.assert_frame_equal(d, decisions)
        assert all(np.array_equal(a, b) for a, b in zip(t, thetas, strict=True))


@pytest.mark.xdist_group("test_coevolution_seed_3")
def test_another_seed_gives_another_run(cartpole, cartpole_policy, seed_3_run):
    _, a, _ = seed_3_run
    _, b, _ = _run(cartpole, cartpole_policy, "local", 1, seed=4)
    assert not a.equals(b)


def test_only_parents_at_threshold_reproduce(cartpole, cartpole_policy, cartpole_solver):
    config = dataclasses.replace(SMALL, optimizer_steps=0, transfer_every=0, max_active=10)
    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        co = _make(
            cartpole,
            cartpole_policy,
            pool,
            config,
            initial_tasks=[cartpole.initial_task(), cartpole.task(gravity=12.0)],
        )
        good, bad = co.population.active
        good.theta = cartpole_solver.copy()
        bad.theta = np.zeros_like(cartpole_solver)  # always pushes left: falls within ~10 steps
        result = co.step()
    parents = [d for d in result.decisions if d.kind == "parent"]
    assert [(d.pair_id, d.outcome) for d in parents] == [(0, "eligible"), (1, "ineligible")]
    assert parents[0].reason.startswith("score 500.0 ≥ repro_threshold 100")
    assert parents[1].reason.endswith("< repro_threshold 100") and parents[1].score < 100
    children = [d for d in result.decisions if d.kind == "child"]
    assert len(children) == 4
    assert {d.parent_id for d in children} == {0}
    admitted = [d for d in children if d.outcome == "admitted"]
    assert len(admitted) <= 1
    for child in admitted:
        pair = co.population.get(child.pair_id)
        assert pair.parent_id == 0 and pair.born == 1
        assert pair.task.id == child.task_id != good.task.id
        np.testing.assert_array_equal(
            pair.theta, cartpole_solver
        )  # starts from the parent's policy


def test_minimal_criterion_rejects_children_too_easy_for_the_parent(
    cartpole, cartpole_policy, cartpole_solver
):
    # Tiny mutations: the child is as easy as the parent's task, which the parent solves.
    space = tasks.get("cartpole", {p.name: {"step": 0.01} for p in cartpole.params})
    config = dataclasses.replace(SMALL, optimizer_steps=0, transfer_every=0, mc_upper=450)
    with EvaluationPool(space, cartpole_policy, "local", 1) as pool:
        co = _make(space, cartpole_policy, pool, config)
        co.population.active[0].theta = cartpole_solver.copy()
        result = co.step()
    children = [d for d in result.decisions if d.kind == "child"]
    rejected = [d for d in children if d.rule == "minimal_criterion"]
    assert rejected and all(d.outcome == "rejected" for d in rejected)
    assert all(d.reason == "child rejected: score 500.0 > mc_upper 450" for d in rejected)
    assert result.summary["admitted"] == 0 and len(co.population.active) == 1


def test_children_identical_to_existing_tasks_are_dropped(
    cartpole, cartpole_policy, cartpole_solver
):
    space = tasks.get("cartpole", {p.name: {"step": 0.0} for p in cartpole.params})
    config = dataclasses.replace(SMALL, optimizer_steps=0, transfer_every=0)
    with EvaluationPool(space, cartpole_policy, "local", 1) as pool:
        co = _make(space, cartpole_policy, pool, config)
        co.population.active[0].theta = cartpole_solver.copy()
        result = co.step()
    children = [d for d in result.decisions if d.kind == "child"]
    assert len(children) == 4
    assert all(d.rule == "duplicate" and d.outcome == "rejected" for d in children)
    assert children[0].reason == "child rejected: task identical to that of pair 0"
    assert result.summary["children_tried"] == 0


def test_capacity_moves_the_oldest_pairs_to_the_archive(cartpole, cartpole_policy, cartpole_solver):
    config = dataclasses.replace(
        SMALL, optimizer_steps=0, transfer_every=0, max_children=0, max_active=3
    )
    initial = [cartpole.task(gravity=g) for g in (9.8, 11.0, 12.0)]
    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        co = _make(cartpole, cartpole_policy, pool, config, initial_tasks=initial)
        # One pair too many: more initial tasks than max_active are refused, so the
        # capacity is lowered once the three pairs exist.
        co.config = dataclasses.replace(config, max_active=2)
        result = co.step()
    assert [p.pair_id for p in co.population.active] == [1, 2]
    assert [p.pair_id for p in co.population.archive] == [0]
    assert co.population.archive[0].archived_at == 1
    archived = [d for d in result.decisions if d.kind == "capacity"]
    assert [(d.pair_id, d.outcome) for d in archived] == [(0, "archived")]
    assert "max_active 2" in archived[0].reason
    frame = co.population.to_frame()
    assert frame.set_index("pair_id").loc[0, "status"] == "archived"


def test_transfer_gives_a_task_the_better_policy(cartpole, cartpole_policy, cartpole_solver):
    config = dataclasses.replace(SMALL, optimizer_steps=0, max_children=0, transfer_every=1)
    initial = [cartpole.initial_task(), cartpole.task(gravity=11.0)]
    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        co = _make(cartpole, cartpole_policy, pool, config, initial_tasks=initial)
        co.population.active[0].theta = cartpole_solver.copy()
        co.population.active[1].theta = np.zeros_like(cartpole_solver)
        result = co.step()
    transfers = {d.pair_id: d for d in result.decisions if d.kind == "transfer"}
    assert transfers[0].outcome == "kept"
    assert transfers[1].outcome == "transferred"
    assert transfers[1].reason.startswith("transferred: policy of pair 0 (direct) scores 500.0 >")
    np.testing.assert_array_equal(co.population.active[1].theta, cartpole_solver)


def test_initial_tasks_that_a_run_would_quietly_change_are_refused(cartpole, cartpole_policy):
    """4 initial tasks with max_active 2 made 4 active pairs, duplicates made pairs on one
    task, and [] fell back to the default task; each is now refused, naming the counts."""
    config = dataclasses.replace(SMALL, max_active=2)
    given = [cartpole.task(gravity=g) for g in (5.0, 9.8, 15.0, 20.0)]
    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:

        def make(initial, config=config):
            return _make(cartpole, cartpole_policy, pool, config, initial_tasks=initial)

        with pytest.raises(
            ConfigError, match=r"^initial_tasks: 4 tasks > curriculum.max_active 2; allowed: 1..2"
        ):
            make(given)
        with pytest.raises(
            ConfigError,
            match=r"^initial_tasks: 3 tasks but 2 distinct \(Task\(cartpole: .*\) 2 times\); "
            "give distinct tasks",
        ):
            make([given[0], given[1], given[0]])
        with pytest.raises(ConfigError, match=r"^initial_tasks: 3 tasks but 1 distinct"):
            make([given[0]] * 3)  # the duplicates are what to fix first, not the count
        with pytest.raises(ConfigError, match=r"^initial_tasks: empty; give at least one task"):
            make([])
        with pytest.raises(TypeError, match=r"got Task \(one task: initial_tasks=\[task\]\)"):
            make(given[0])
        with pytest.raises(
            ConfigError, match=r"^curriculum.initial_pairs: must be <= curriculum.max_active"
        ):
            dataclasses.replace(config, initial_pairs=3)
        co = make(tuple(given[:2]))  # at most max_active distinct tasks: one pair each
        assert [p.task for p in co.population.active] == given[:2]
        assert len(make(None, dataclasses.replace(config, initial_pairs=2)).population.active) == 2
