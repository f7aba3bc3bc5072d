"""The optimizer seam: ask/tell, states as values, the registry, mixed job kinds in one pool
call, and POET through coevo-run with each built-in optimizer."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from cli_support import cli_in_process

from coevo import optimizers
from coevo.curricula.training import optimize
from coevo.errors import ConfigError
from coevo.optimizers.ars import ARSConfig, AugmentedRandomSearch
from coevo.optimizers.es import ESConfig, EvolutionStrategy
from coevo.pool import EpisodeJob, EpisodeResult, EvaluationPool, Stored, register_job_kind


def test_ars_balances_cartpole(cartpole, cartpole_policy):
    # The reference code's defaults (noise 0.03) barely move a random MLP on CartPole (every
    # perturbation falls at once); a larger noise and step show the update rule learning.
    config = ARSConfig(noise=0.1, step_size=0.1)
    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        ars = AugmentedRandomSearch(config, cartpole_policy.num_params)
        rng = np.random.default_rng(1)
        theta = cartpole_policy.init(rng)
        state = ars.init_state(theta, rng)
        task = cartpole.initial_task()
        before = pool.evaluate([(theta, task)], 10, 10_000).mean()
        for _ in range(20):
            told = ars.step(pool, theta, state, [task], rng)
            theta, state = told.theta, told.state
        after = pool.evaluate([(theta, task)], 10, 10_000).mean()
    assert before < 50 and after > 400
    assert state.t == 20


@pytest.mark.parametrize(
    "build",
    [
        lambda n: EvolutionStrategy(ESConfig(population=4), n),
        lambda n: AugmentedRandomSearch(ARSConfig(directions=4, top=2), n),
    ],
    ids=["es", "ars"],
)
def test_a_step_leaves_the_given_state_unchanged_and_repeats_exactly(
    cartpole, cartpole_policy, build
):
    optimizer = build(cartpole_policy.num_params)
    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        theta = cartpole_policy.init(np.random.default_rng(0))
        state = optimizer.init_state(theta, np.random.default_rng(0))
        snapshot = pickle_bytes(state)
        task = cartpole.initial_task()
        first = optimizer.step(pool, theta, state, [task], np.random.default_rng(5))
        assert pickle_bytes(state) == snapshot  # a transfer's proposal step relies on this
        again = optimizer.step(pool, theta, state, [task], np.random.default_rng(5))
    np.testing.assert_array_equal(first.theta, again.theta)
    assert pickle_bytes(first.state) == pickle_bytes(again.state)
    assert not np.array_equal(first.theta, theta)
    assert first.state.t == 1  # ES's Adam step count


def pickle_bytes(value) -> bytes:
    import pickle

    return pickle.dumps(value)


def test_several_tasks_spread_a_step_over_them(cartpole, cartpole_policy):
    es = EvolutionStrategy(ESConfig(population=4), cartpole_policy.num_params)
    tasks_ = [cartpole.task(gravity=9.8), cartpole.task(gravity=12.0)]
    asked = es.ask(
        cartpole_policy.init(np.random.default_rng(0)),
        es.init_state(None, None),
        tasks_,
        np.random.default_rng(0),
        lambda theta: "key",
    )
    # Mirrored pairs share a task (their difference is the gradient signal).
    assert [job.task for job in asked.jobs] == [tasks_[i // 2 % 2] for i in range(8)]


def test_the_registry_finds_names_and_import_paths():
    assert optimizers.get("es") is EvolutionStrategy
    assert optimizers.get("coevo.optimizers.ars:AugmentedRandomSearch") is AugmentedRandomSearch
    with pytest.raises(ConfigError, match="optimizer.name: unknown optimizer 'sgd'; allowed: ars"):
        optimizers.get("sgd")
    with pytest.raises(ConfigError, match="module 'coevo.optimizers.es' has no 'Nope'"):
        optimizers.get("coevo.optimizers.es:Nope")
    with pytest.raises(ConfigError, match="is not a coevo.optimizers.base.Optimizer subclass"):
        optimizers.get("coevo.optimizers.es:ESConfig")


@pytest.mark.parametrize("name", ["es", "ars", "ppo"])
def test_a_config_of_another_class_is_refused_naming_the_one_needed(name):
    """EvolutionStrategy({"population": 4}, 100) was accepted and failed later."""
    cls = optimizers.get(name)
    wanted = cls.config_class.__name__
    article = "an" if wanted[0] in "AE" else "a"
    other = ARSConfig() if name != "ars" else ESConfig()
    for config, got in (({"population": 4}, "dict"), (other, type(other).__name__)):
        with pytest.raises(TypeError) as info:
            cls(config, 100)
        assert str(info.value).startswith(
            f"{cls.__name__} needs {article} {wanted} (or a subclass), got {got}"
        )
    cls(cls.config_class(), 100)  # its own config, as before


@dataclass(frozen=True)
class SquareJob:
    """A job kind the pool does not know by itself: the square of a number."""

    value: float


def _run_squares(pool, jobs):
    return [job.value**2 for job in jobs]


def test_dispatch_runs_jobs_of_several_kinds_and_keeps_their_order(cartpole, cartpole_policy):
    register_job_kind(SquareJob, _run_squares)
    with EvaluationPool(cartpole, cartpole_policy, "local", 2, envs_per_worker=2) as pool:
        theta = cartpole_policy.init(np.random.default_rng(0))
        key = pool.register(theta)
        task = cartpole.initial_task()
        jobs = [EpisodeJob(Stored(key), task, 0), SquareJob(3.0), EpisodeJob(Stored(key), task, 1)]
        results = pool.dispatch(jobs)
        expected = pool.evaluate([(theta, task)], 2, 0)[0]
        with pytest.raises(TypeError, match="no runner for jobs of type str"):
            pool.dispatch(["what"])
    assert isinstance(results[0], EpisodeResult) and results[1] == 9.0
    assert [results[0].ret, results[2].ret] == expected.tolist()


def test_optimize_sends_every_pairs_jobs_in_one_pool_call(cartpole, cartpole_policy):
    es = EvolutionStrategy(ESConfig(population=3), cartpole_policy.num_params)
    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        calls = []
        original = pool.run_checked  # every episode call reaches it
        pool.run_checked = lambda jobs: calls.append(len(jobs)) or original(jobs)
        rng = np.random.default_rng(0)
        thetas = [cartpole_policy.init(rng) for _ in range(4)]
        items = [(t, es.init_state(t, rng), [cartpole.initial_task()]) for t in thetas]
        told = optimize(pool, es, items, rng)
    assert calls == [4 * 3 * 2] and len(told) == 4


POET_SMALL = [
    "pool=local",
    "curriculum.generations=3",
    "curriculum.optimizer_steps=2",
    "curriculum.repro_threshold=0",
    "curriculum.reproduce_every=1",
    "curriculum.max_children=3",
    "curriculum.transfer_every=1",
]


@pytest.mark.parametrize(
    "optimizer",
    [
        ["optimizer=es", "optimizer.population=6"],
        ["optimizer=ars", "optimizer.directions=6", "optimizer.top=3", "optimizer.noise=0.1"],
    ],
    ids=["es", "ars"],
)
def test_poet_runs_with_each_optimizer_from_the_command_line(tmp_path, optimizer):
    done = cli_in_process("coevo-run", *POET_SMALL, *optimizer, f"hydra.run.dir={tmp_path}")
    assert done.returncode == 0, done.stderr[-3000:]
    summary = pd.read_csv(tmp_path / "summary.csv")
    population = pd.read_csv(tmp_path / "population.csv")
    assert summary["generation"].tolist() == [1, 2, 3]
    assert summary["episodes"].gt(0).all() and summary["admitted_total"].iloc[-1] >= 1
    assert (population["optimizer_steps"] > 0).any()
    recorded = (tmp_path / "config.yaml").read_text()
    assert f"name: {optimizer[0].split('=')[1]}" in recorded


def test_ars_state_checkpoints_and_resumes_exactly(tmp_path):
    args = [
        *POET_SMALL,
        "optimizer=ars",
        "optimizer.directions=6",
        "optimizer.top=3",
        "optimizer.noise=0.1",
        "checkpoints_kept=5",
        f"hydra.run.dir={tmp_path}",
    ]
    assert cli_in_process("coevo-run", *args).returncode == 0
    tables = {n: pd.read_csv(tmp_path / n) for n in ("eligibility.csv", "population.csv")}
    resumed = cli_in_process("coevo-run", f"resume={tmp_path / 'checkpoints' / 'gen_000001.pkl'}")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "after generation 1" in resumed.stdout
    for name, frame in tables.items():
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / name), frame, obj=name)


def test_the_docs_hill_climber_declares_that_it_plays_one_task_per_step(cartpole, cartpole_policy):
    """docs/architecture.md's example optimizer puts every try on tasks[0]; without
    task_capacity() DR's default 4 tasks per step left 3 unplayed. As a model to copy it
    now says so: more tasks per step are refused, one task per step trains."""
    import sys
    import types
    from pathlib import Path

    from coevo.curricula.dr import DomainRandomization, DRConfig

    docs = (Path(__file__).resolve().parents[2] / "docs" / "architecture.md").read_text()
    source = docs.split("```python\n# mypkg/hill.py\n", 1)[1].split("```", 1)[0]
    module = types.ModuleType("docs_hill")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    try:
        exec(compile(source, "docs/architecture.md: mypkg/hill.py", "exec"), module.__dict__)
        with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
            hill = module.HillClimber(module.HillConfig(tries=4), pool.policy.num_params)
            with pytest.raises(
                ConfigError,
                match=r"^curriculum.tasks_per_step: 4 > HillClimber's tasks per step 1; "
                r"allowed: 1..1$",
            ):
                DomainRandomization(DRConfig(), space=cartpole, pool=pool, optimizer=hill)
            dr = DomainRandomization(
                DRConfig(tasks_per_step=1, generations=2), space=cartpole, pool=pool, optimizer=hill
            )
            decisions = [d for r in dr.run() for d in r.decisions]
            # Every try failed (NaN weights fail every episode): the weights are kept.
            broken = np.full(pool.policy.num_params, np.nan, dtype=np.float32)
            rng = np.random.default_rng(0)
            kept = hill.step(pool, broken, 0, [cartpole.initial_task()], rng)
            assert kept.record.applied is False and kept.record.reason == "every try failed"
            assert kept.theta is broken and kept.state == 0
    finally:
        del sys.modules[module.__name__]
    assert [d.outcome for d in decisions] == ["trained", "trained"]
    assert all(np.isfinite(d.score) for d in decisions)
