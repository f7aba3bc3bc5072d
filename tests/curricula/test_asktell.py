"""Curricula built from the pool with settings as keywords, and asked and told by hand:
the same generations as `step()` (coevo/batches.py, Curriculum.ask/tell)."""

from typing import Any

import numpy as np
import pandas as pd
import pytest

from coevo.batches import JobBatches, drive
from coevo.curricula import (
    ACCEL,
    PLR,
    Curriculum,
    GenerationResult,
    Poet,
    PoetConfig,
    PoliciesForTesting,
)
from coevo.errors import ConfigError
from coevo.optimizers import ARS, ES, ESConfig, EvolutionStrategy
from coevo.pool import EvaluationPool
from coevo.pool.stats import is_runtime_column

SETTINGS: dict[str, Any] = dict(
    generations=4,
    optimizer_steps=3,
    eval_episodes=2,
    repro_threshold=100,
    reproduce_every=1,
    max_children=4,
    max_admitted=1,
    mc_lower=20,
    mc_upper=475,
    max_active=2,
    transfer_every=2,
)
ES_SETTINGS: dict[str, Any] = dict(population=8, lr=0.1, lr_decay=0.9999, lr_min=0.001, l2=0.01)


@pytest.fixture(scope="module")
def pool(cartpole, cartpole_policy):
    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        yield pool


def _tables(curriculum, results):
    summary = pd.DataFrame([r.summary for r in results])
    summary = summary.drop(columns=[c for c in summary if is_runtime_column(c)])
    decisions = pd.DataFrame([d.as_row() for r in results for d in r.decisions])
    return summary, decisions, curriculum.population_frame()


def _by_hand(curriculum, pool, generations):
    """Each batch asked, evaluated in two pieces (as elsewhere) and told back."""
    results, batches = [], 0
    for _ in range(generations):
        result = None
        while result is None:
            jobs = curriculum.ask()
            assert curriculum.ask() is jobs  # asked again before telling: the same batch
            half = len(jobs) // 2
            answers = pool.dispatch(jobs[:half]) + pool.dispatch(jobs[half:])
            batches += 1
            result = curriculum.tell(answers)
        results.append(result)
    return results, batches


def _assert_same(a, b):
    for left, right in zip(a, b, strict=True):
        pd.testing.assert_frame_equal(left, right)


def test_poet_by_keywords_asked_and_told_matches_config_form_stepped(cartpole, cartpole_policy):
    with EvaluationPool(cartpole, cartpole_policy, "local", 1, envs_per_worker=4) as pool:
        es = EvolutionStrategy(ESConfig(**ES_SETTINGS), pool.policy.num_params)
        stepped = Poet(PoetConfig(**SETTINGS), space=cartpole, pool=pool, optimizer=es, seed=3)
        expected = _tables(stepped, stepped.run())
    with EvaluationPool(cartpole, cartpole_policy, "local", 1, envs_per_worker=4) as pool:
        poet = Poet(pool, optimizer=ES(**ES_SETTINGS), seed=3, **SETTINGS)
        assert poet.config == PoetConfig(**SETTINGS)
        assert poet.optimizer.num_params == pool.policy.num_params  # learned from the pool
        results, batches = _by_hand(poet, pool, 4)
    _assert_same(_tables(poet, results), expected)
    decisions = expected[1]
    # The run exercised every pool call of a generation, so agreement means something.
    assert {"eligible", "admitted", "archived"} <= set(decisions["outcome"])
    assert {"novelty", "transfer"} <= set(decisions["rule"])
    assert batches > 4 * 3  # several batches per generation: steps, evaluation, children...
    assert [r.generation for r in results] == [1, 2, 3, 4]


@pytest.mark.parametrize("kind", [PLR, ACCEL])
def test_level_sampling_asked_and_told_matches_step(cartpole, cartpole_policy, kind):
    settings = dict(generations=3, buffer_size=6, tasks_per_step=3, policies=2)

    def build(pool):
        return kind(pool, optimizer=ES(**ES_SETTINGS), seed=5, **settings)

    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        stepped = build(pool)
        expected = _tables(stepped, stepped.run())
    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        curriculum = build(pool)
        results, _ = _by_hand(curriculum, pool, 3)
    _assert_same(_tables(curriculum, results), expected)
    for left, right in zip(
        stepped.policies_for_testing().policies.values(),
        curriculum.policies_for_testing().policies.values(),
        strict=True,
    ):
        np.testing.assert_array_equal(left, right)


def test_bad_keywords_raise_the_config_error_naming_the_field(cartpole, cartpole_policy):
    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        with pytest.raises(ConfigError, match="did you mean max_active") as typo:
            Poet(pool, max_activ=8)
        assert typo.value.field == "curriculum.max_activ"
        with pytest.raises(ConfigError) as low:
            Poet(pool, max_active=0)
        assert low.value.field == "curriculum.max_active"
        with pytest.raises(ConfigError) as across:  # the config's checks across fields too
            Poet(pool, mc_lower=500, mc_upper=400)
        assert across.value.field == "curriculum.mc_lower"
        with pytest.raises(ConfigError) as optimizer:
            ES(population=0)
        assert optimizer.value.field == "optimizer.population"
        with pytest.raises(ConfigError) as ars:  # the ARS config's check across fields
            ARS(directions=4, top=5)
        assert ars.value.field == "optimizer.top"
        with pytest.raises(TypeError, match="not both"):
            ES(ESConfig(), population=4)
        with pytest.raises(ConfigError, match="built for 7 parameters"):
            Poet(pool, optimizer=ES(num_params=7))
        poet = Poet(pool)  # every default: the default optimizer's, the config's
        assert isinstance(poet.optimizer, EvolutionStrategy)
        assert poet.config == PoetConfig() and poet.space is pool.space


def test_telling_out_of_turn_is_refused_and_the_generation_goes_on(cartpole, cartpole_policy):
    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        poet = Poet(pool, optimizer=ES(population=4), seed=1, **SETTINGS)
        with pytest.raises(RuntimeError, match="before ask"):
            poet.tell([])
        jobs = poet.ask()
        assert poet.generation == 1
        with pytest.raises(ValueError, match="one result per job"):
            poet.tell(pool.dispatch(jobs)[:-1])
        result = drive(pool, poet)  # the batch still pending: nothing was lost
    assert result.generation == 1 and result.summary["active"] >= 1


def test_job_batches_hand_out_a_generators_batches_and_return_its_outcome():
    def work():
        first = yield ["a", "b"]
        second = yield [x.upper() for x in first]
        return first + second

    batches = JobBatches(work())
    assert batches.ask() == ["a", "b"]
    assert batches.tell(["x", "y"]) is None
    assert batches.ask() == ["X", "Y"]
    assert batches.tell(["p", "q"]) == ["x", "y", "p", "q"]
    assert batches.done

    def nothing_to_run():
        return 7
        yield  # a generator that needs no jobs

    idle = JobBatches(nothing_to_run())
    assert idle.ask() == []
    assert idle.tell([]) == 7

    class EchoPool:
        def dispatch(self, jobs):
            return [job * 2 for job in jobs]

    assert drive(EchoPool(), work()) == ["aa", "bb", "AAAA", "BBBB"]


@pytest.mark.parametrize("name", ["poet", "enhanced_poet", "dr", "plr", "accel", "alp_gmm"])
def test_every_curriculum_is_built_from_the_pool_with_its_settings(name, pool):
    from coevo import curricula

    cls = curricula.get(name)
    built = cls(pool, optimizer=ARS(directions=4, top=2), generations=2, seed=1)
    assert built.config == cls.config_class(generations=2)
    assert built.optimizer.num_params == pool.policy.num_params
    assert built.space is pool.space and built.seed == 1
    with pytest.raises(ConfigError) as bad:
        cls(pool, generations=0)
    assert bad.value.field == "curriculum.generations"
    with pytest.raises(TypeError, match="pool must be an EvaluationPool"):
        cls(pool=None, generations=2)


class Ladder(Curriculum):
    """A curriculum whose generation calls the pool itself (no batches of its own)."""

    def run_generation(self):
        theta = self.pool.policy.init(np.random.default_rng(self.generation))
        score = self.pool.evaluate([(theta, self.space.initial_task())], 2, 0).mean()
        return GenerationResult(self.generation, {"best_score": float(score)})

    def state_dict(self):
        return {"generation": self.generation}

    def load_state_dict(self, state):
        self.generation = state["generation"]

    def population_frame(self):
        return pd.DataFrame({"rung": [0]})

    def policies_for_testing(self):
        return PoliciesForTesting({}, best_of=False)


def test_a_curriculum_that_calls_the_pool_itself_is_stepped_and_asked_alike(pool):
    stepped = Ladder(pool, optimizer=ES(population=4))
    first = stepped.step()
    asked = Ladder(pool, optimizer=ES(population=4))
    assert asked.ask() == []  # its generation ran whole, on the pool
    second = asked.tell([])
    assert first.summary["best_score"] == second.summary["best_score"]
    assert first.summary["episodes"] == second.summary["episodes"] == 2
