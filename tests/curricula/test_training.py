"""Every optimizer's update is checked before a learner takes it (coevo/curricula/training.py):
a plug-in's non-finite or misshapen update keeps the weights, with a `step_failed` row."""

import numpy as np
import pytest

from coevo.curricula.dr import DomainRandomization, DRConfig
from coevo.curricula.poet import Poet, PoetConfig
from coevo.optimizers.base import Told
from coevo.optimizers.es import ESConfig, EvolutionStrategy
from coevo.pool import EvaluationPool


class BrokenES(EvolutionStrategy):
    """ES whose update is spoiled as `spoil` says: a plug-in optimizer with a bug."""

    spoil = "nan"

    def tell(self, theta, state, asked, results):
        told = super().tell(theta, state, asked, results)
        new = told.theta.copy()
        if self.spoil == "nan":
            new[3] = np.nan
        elif self.spoil == "short":
            new = new[:-1]
        elif self.spoil == "text":
            new = [str(v) for v in new]
        elif self.spoil == "list":  # a fine update, as a list of Python floats
            new = new.tolist()
        elif self.spoil == "float64":
            new = new.astype(np.float64)
        elif self.spoil == "huge":  # finite as float64, inf as the policy's float32
            new = new.astype(np.float64)
            new[3] = 1e39
        return Told(new, told.state, told.record)


@pytest.mark.parametrize("spoil", ["nan", "short", "text", "huge"])
@pytest.mark.parametrize("curriculum", ["dr", "poet"])
def test_a_broken_update_is_not_applied_and_its_row_says_why(
    cartpole, cartpole_policy, spoil, curriculum
):
    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        es = BrokenES(ESConfig(population=4), cartpole_policy.num_params)
        es.spoil = spoil
        if curriculum == "dr":
            built = DomainRandomization(
                DRConfig(tasks_per_step=1), space=cartpole, pool=pool, optimizer=es
            )
            learners = built.students
        else:
            config = PoetConfig(initial_pairs=1, optimizer_steps=1)
            built = Poet(config, space=cartpole, pool=pool, optimizer=es)
            learners = built.population.active
        before = [lr.theta.copy() for lr in learners]
        first = built.step()
        second = built.step()
    for learner, theta in zip(learners, before, strict=True):
        np.testing.assert_array_equal(learner.theta, theta)
    failed = [d for d in first.decisions + second.decisions if d.outcome == "step_failed"]
    assert len(failed) == 2
    expected = {
        "nan": "the optimizer's update gave 1 non-finite parameter (nan/inf) of 114",
        "short": "the optimizer's update gave a parameter vector of shape (113,); the policy "
        "has 114",
        "text": "the optimizer's update gave parameters of type list (dtype <U",
        "huge": "the optimizer's update gave 1 non-finite parameter (nan/inf) of 114",
    }[spoil]
    assert all(expected in d.reason for d in failed), failed[0].reason
    assert second.summary["failed_episodes"] == 0  # the kept weights still play


@pytest.mark.parametrize("given", ["list", "float64"])
def test_an_update_as_a_list_or_float64_becomes_the_learners_float32_weights(
    cartpole, cartpole_policy, given
):
    with EvaluationPool(cartpole, cartpole_policy, "local", 1) as pool:
        es = BrokenES(ESConfig(population=4), cartpole_policy.num_params)
        es.spoil = given
        built = DomainRandomization(
            DRConfig(tasks_per_step=1), space=cartpole, pool=pool, optimizer=es
        )
        before = built.students[0].theta.copy()
        result = built.step()
    theta = built.students[0].theta
    assert isinstance(theta, np.ndarray) and theta.dtype == np.float32
    assert not np.array_equal(theta, before)  # the update was applied
    assert not [d for d in result.decisions if d.outcome == "step_failed"]
