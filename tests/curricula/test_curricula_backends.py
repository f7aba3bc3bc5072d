"""The curricula give the same tables whatever the pool's backend and worker count, and a
PPO-trained PLR⊥ run continues exactly from its state_dict."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

from coevo.curricula.accel import ACCEL, ACCELConfig
from coevo.curricula.alp_gmm import ALPGMM, ALPGMMConfig
from coevo.curricula.plr import PLRConfig, PrioritizedLevelReplay
from coevo.optimizers.es import ESConfig, EvolutionStrategy
from coevo.optimizers.ppo import PPO
from coevo.optimizers.ppo_config import PPOConfig
from coevo.policies.actor_critic import ActorCriticSpec
from coevo.pool import EvaluationPool
from coevo.pool.stats import is_runtime_column


def _tables(curriculum):
    results = curriculum.run()
    summary = pd.DataFrame(
        [{k: v for k, v in r.summary.items() if not is_runtime_column(k)} for r in results]
    )
    decisions = pd.DataFrame([d.as_row() for r in results for d in r.decisions])
    return summary, decisions, curriculum.population_frame()


@pytest.mark.parametrize(
    ("cls", "config"),
    [
        (ACCEL, ACCELConfig(generations=5, buffer_size=6, tasks_per_step=3, policies=2)),
        (ALPGMM, ALPGMMConfig(generations=5, fit_rate=8, bootstrap=8, max_components=3)),
    ],
)
def test_same_tables_on_ray_with_two_workers_as_in_process(
    cls, config, ray_session, cartpole, cartpole_policy
):
    tables = {}
    for backend, workers in (("local", 1), ("ray", 2)):
        with EvaluationPool(cartpole, cartpole_policy, backend, workers, envs_per_worker=8) as pool:
            optimizer = EvolutionStrategy(ESConfig(population=4), cartpole_policy.num_params)
            curriculum = cls(config, space=cartpole, pool=pool, optimizer=optimizer, seed=2)
            tables[backend] = _tables(curriculum)
    for local, ray in zip(tables["local"], tables["ray"], strict=True):
        pd.testing.assert_frame_equal(ray, local)


def test_plr_with_ppo_continues_exactly_from_its_state_dict(cartpole):
    env = cartpole.make_env()
    policy = ActorCriticSpec.for_spaces(env.observation_space, env.action_space, hidden=(16,))
    config = PLRConfig(generations=6, buffer_size=4, tasks_per_step=2)
    ppo = PPOConfig(n_envs=2, n_steps=32, batch_size=32, n_epochs=2)

    def build(pool):
        optimizer = PPO(ppo, policy.num_params, policy=policy)
        return PrioritizedLevelReplay(config, space=cartpole, pool=pool, optimizer=optimizer)

    with EvaluationPool(cartpole, policy, "local", 1, envs_per_worker=8) as pool:
        whole = build(pool)
        expected = _tables(whole)
        first = build(pool)
        head = first.run(3)
        state = pickle.loads(pickle.dumps(first.state_dict()))
        second = build(pool)
        second.load_state_dict(state)
        tail = second.run()
    assert whole.score_used == "positive_value_loss"
    assert whole.students[0].steps > 0
    got = pd.DataFrame([d.as_row() for r in head + tail for d in r.decisions])
    pd.testing.assert_frame_equal(got, expected[1])
    pd.testing.assert_frame_equal(second.population_frame(), expected[2])
    np.testing.assert_array_equal(second.students[0].theta, whole.students[0].theta)
