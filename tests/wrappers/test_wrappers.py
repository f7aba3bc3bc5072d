"""CurriculumWrapper and the ordered shared sampler (coevo/wrappers/)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
from gymnasium.vector import AutoresetMode

from coevo.curricula.sampler import sampler
from coevo.wrappers import CurriculumWrapper, VectorSampler, serve

ENVS = 3
STEPS = 300


def _plr(seed: int = 7):
    return sampler("plr", "cartpole", seed=seed, buffer_size=8)


def _sfl(seed: int = 7):
    return sampler(
        "sfl", "cartpole", seed=seed, levels_sampled=4, buffer_size=2, eval_episodes=2,
        refresh_every=1, tasks_per_step=2,
    )  # fmt: skip


def _actions(steps: int = STEPS) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 2, size=(steps, ENVS))


def _drive(vector_env, shared) -> pd.DataFrame:
    vector_env.reset(seed=0)
    for action in _actions():
        vector_env.step(action)
    vector_env.close()
    shared.flush()
    return pd.DataFrame([row.as_row() for row in shared.decisions()])


def test_each_reset_sets_the_next_task_and_each_episode_is_reported():
    s = sampler("dr", "cartpole", seed=1)
    env = CurriculumWrapper.for_space(s)
    returns, total = [], 0.0
    obs, info = env.reset(seed=0)
    assert env.unwrapped.get_task() == info["task"].as_dict() == env.task.as_dict()
    tasks = [info["task"]]
    for action in _actions()[:, 0]:
        obs, reward, terminated, truncated, info = env.step(int(action))
        total += reward
        if terminated or truncated:
            returns.append(total)
            total = 0.0
            obs, info = env.reset()
            assert env.unwrapped.get_task() == info["task"].as_dict()
            tasks.append(info["task"])
    rows = s.decisions()
    assert [r.score for r in rows] == pytest.approx(returns)
    assert [r.task_id for r in rows] == [t.id for t in tasks[: len(rows)]]
    assert len(set(r.task_id for r in rows)) == len(rows) >= 3  # a new uniform task each


def test_subprocess_envs_repeat_the_in_process_order():
    """AsyncVectorEnv with a served sampler gives the rows of SyncVectorEnv with the same
    ordered sampler in-process, run after run: the order does not depend on timing."""
    local = VectorSampler(_plr(), ENVS)
    fns = [
        lambda i=i: CurriculumWrapper.for_space(local, env_index=i, autoreset="next_step")
        for i in range(ENVS)
    ]
    expected = _drive(gym.vector.SyncVectorEnv(fns), local)
    assert (expected.rule == "replay").any()
    for _ in range(2):
        with serve(_plr(), ENVS) as shared:
            fns = [
                lambda i=i, proxy=shared.proxy: CurriculumWrapper.for_space(
                    proxy, env_index=i, autoreset="next_step"
                )
                for i in range(ENVS)
            ]
            got = _drive(gym.vector.AsyncVectorEnv(fns), shared.proxy)
        pd.testing.assert_frame_equal(got, expected)


def test_sb3_subprocess_envs_repeat_the_in_process_order():
    vec_env = pytest.importorskip("stable_baselines3.common.vec_env")
    local = VectorSampler(_plr(), ENVS)
    fns = [
        lambda i=i: CurriculumWrapper.for_space(local, env_index=i, autoreset="same_step")
        for i in range(ENVS)
    ]
    expected = _drive(gym.vector.SyncVectorEnv(fns, autoreset_mode=AutoresetMode.SAME_STEP), local)
    with serve(_plr(), ENVS) as shared:
        proxy = shared.proxy
        fns = [
            lambda i=i: CurriculumWrapper.for_space(proxy, env_index=i, autoreset="same_step")
            for i in range(ENVS)
        ]
        envs = vec_env.SubprocVecEnv(fns)
        envs.seed(0)
        envs.reset()
        for action in _actions():
            envs.step(action)
        envs.close()
        proxy.flush()
        got = pd.DataFrame([row.as_row() for row in proxy.decisions()])
    pd.testing.assert_frame_equal(got, expected)


@pytest.mark.parametrize("make", [_plr, _sfl], ids=["plr", "sfl"])
def test_a_restored_vector_sampler_continues_exactly(make):
    def run(split: int | None) -> pd.DataFrame:
        shared = VectorSampler(make(), ENVS)
        envs = [CurriculumWrapper.for_space(shared, env_index=i) for i in range(ENVS)]
        vector = gym.vector.SyncVectorEnv(
            [lambda e=e: e for e in envs], autoreset_mode=AutoresetMode.SAME_STEP
        )
        vector.reset(seed=0)
        for step, action in enumerate(_actions()):
            if step == split:
                saved = shared.state_dict()
                shared = VectorSampler(make(seed=99), ENVS)  # a fresh one, restored
                shared.load_state_dict(saved)
                for env in envs:
                    env.sampler = shared
            vector.step(action)
        shared.flush()
        return pd.DataFrame([row.as_row() for row in shared.decisions()])

    whole = run(split=None)
    assert whole.rule.isin(["replay", "buffer"]).any()
    pd.testing.assert_frame_equal(run(split=150), whole)


def test_an_sfl_sampler_scores_its_levels_then_trains_through_the_wrapper():
    """One env: the refresh's scoring episodes come first (`scoring(info["task"])` at the
    reset), each reported with its return; then training tasks from the buffer and fresh."""
    s = _sfl(seed=1)
    env = CurriculumWrapper.for_space(s)
    obs, info = env.reset(seed=0)
    scoring, total, returns = [s.scoring(info["task"])], 0.0, []
    for action in _actions(2000)[:, 0]:
        obs, reward, terminated, truncated, info = env.step(int(action))
        total += reward
        if terminated or truncated:
            returns.append(total)
            total = 0.0
            obs, info = env.reset()
            scoring.append(s.scoring(info["task"]))
    assert scoring[:8] == [True] * 8 and not scoring[8]  # 4 levels x 2 episodes, then a step
    rows = s.decisions_frame()
    assert list(rows.rule[:4]) == ["sample_for_learnability"] * 4 and s.refreshes >= 2
    assert set(rows.rule) == {"sample_for_learnability", "buffer", "fresh"}
    training = rows[rows.rule != "sample_for_learnability"]
    trained = [ret for ret, scored in zip(returns, scoring, strict=False) if not scored]
    assert list(training.score) == pytest.approx(trained)


def test_an_env_without_set_task_is_refused():
    with pytest.raises(TypeError, match="set_task"):
        CurriculumWrapper(gym.make("CartPole-v1"), sampler("dr", "cartpole"))


def test_a_reset_mid_episode_reports_the_episode_as_it_stands():
    shared = VectorSampler(sampler("dr", "cartpole", seed=0), 1)
    env = CurriculumWrapper.for_space(shared, env_index=0)
    for _ in range(5):  # more resets than the tasks queued at the start
        env.reset(seed=0)
        env.step(0)
    shared.flush()
    assert [(r.score, r.rule) for r in shared.decisions()] == [(1.0, "sample")] * 4
