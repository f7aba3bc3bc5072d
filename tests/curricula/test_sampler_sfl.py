"""The SFL task sampler (sampler.py's SFLSampler): refreshes hand out scoring episodes, the
buffer keeps the most learnable levels, steps mix buffer and fresh levels, and a restored
sampler continues exactly wherever it was cut."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from phrases import assert_says

from coevo.curricula.sampler import SFLSampler, sampler
from coevo.curricula.sfl import BufferLevel, SFLConfig
from coevo.curricula.task_sampling import uniform_task
from coevo.errors import ConfigError
from coevo.tasks import registry
from coevo.tasks.task import Param, TaskSpace

SMALL = {"levels_sampled": 6, "buffer_size": 3, "eval_episodes": 4, "refresh_every": 2}
PATTERN = (0, 2, 4, 1, 3, 2)  # level i solves the first PATTERN[i] of its 4 episodes


def _score_refresh(s: SFLSampler) -> list:
    """Play a refresh's 24 scoring episodes one at a time, level i solving PATTERN[i]."""
    draws = []
    for i in range(24):
        task = s.sample()
        assert s.scoring(task)
        draws.append(task)
        s.update(task, episode_return=0.0, episode_length=1, success=i % 4 < PATTERN[i // 4])
    return draws


def test_a_refresh_scores_fresh_levels_and_keeps_the_most_learnable():
    s = sampler("sfl", "cartpole", seed=3, **SMALL)
    assert isinstance(s, SFLSampler) and isinstance(s.config, SFLConfig)
    assert s.config.buffer_share == SFLConfig().buffer_share  # the curriculum's default
    rng = np.random.default_rng([3, 0])  # the sampler's generator: student 0's seed
    levels = [uniform_task(registry.get("cartpole"), rng) for _ in range(6)]
    assert _score_refresh(s) == [level for level in levels for _ in range(4)]
    # learnability 0, .25, 0, .1875, .1875, .25: the top 3, ties in sampled order
    assert [lv.task for lv in s.buffer] == [levels[1], levels[5], levels[3]]
    assert [lv.learnability for lv in s.buffer] == pytest.approx([0.25, 0.25, 0.1875])
    assert all(isinstance(lv, BufferLevel) for lv in s.buffer) and s.refreshes == 1
    rows = s.decisions()
    assert [r.rule for r in rows] == ["sample_for_learnability"] * 6
    assert [r.outcome for r in rows] == ["dropped", "kept", "dropped", "kept", "dropped", "kept"]
    assert all(r.threshold == pytest.approx(0.1875) for r in rows)
    assert_says(
        rows[3].reason,
        "refresh 1 after 0 training episodes",
        "scored without training",
        "solved 1 of 4 episodes (success as the trainer reported)",
        "rank 3 of 6 sampled: in the top 3 kept",
    )
    assert_says(rows[4].reason, "rank 4 of 6 sampled: below the 3 kept (lowest kept 0.188)")


def test_steps_mix_buffer_and_fresh_levels_and_the_next_refresh_comes_on_time():
    s = sampler("sfl", "cartpole", seed=3, **SMALL)
    levels = set(_score_refresh(s))
    kept = {lv.task for lv in s.buffer}
    for _ in range(SMALL["refresh_every"]):  # a run's step: 4 tasks, half from the buffer
        step = [s.sample() for _ in range(4)]
        assert not any(s.scoring(task) for task in step)
        assert all(task in kept for task in step[:2])
        assert not any(task in kept or task in levels for task in step[2:])
        for task in step:
            s.update(task, episode_return=7.0, episode_length=7)
    training = s.decisions()[6:]
    assert [r.rule for r in training] == ["buffer", "buffer", "fresh", "fresh"] * 2
    assert {r.outcome for r in training} == {"trained"}
    assert_says(
        training[0].reason,
        "drawn uniformly from the buffer",
        "(2 of the step's 4 tasks drawn from the buffer)",
        "kept at refresh 1, learnability",
        "training return 7",
    )
    assert s.trained == 8 and s.due()  # refresh_every x tasks_per_step training episodes
    task = s.sample()
    assert s.scoring(task) and task not in levels and s.refreshing is not None
    assert s.refreshing.number == 2 and s.refreshing.began == 8


def test_with_episodes_in_flight_every_level_gets_its_scoring_episodes():
    """Three envs: the refresh's last scoring episodes are still played when training
    draws begin; those come from the buffer as it stands (empty: all fresh)."""
    s = sampler("sfl", "cartpole", seed=2, **SMALL)
    held, scored = [], []
    for n in range(82):
        task = s.sample()
        held.append(task)
        if s.scoring(task):
            scored.append(task.id)
        if n >= 2:
            done = held.pop(0)
            s.update(done, episode_return=0.0, episode_length=1, success=n % 3 == 0)
    rows = s.decisions_frame()
    levels = rows.task_id[rows.rule == "sample_for_learnability"]
    assert len(levels) == 6 * s.refreshes >= 12
    assert all(scored.count(level) == 4 for level in levels)  # each level's 4 episodes
    training = rows[rows.rule != "sample_for_learnability"]
    first_step = training.reason.iloc[:4]
    assert first_step.str.contains("0 of the step's 4 tasks drawn from the buffer").all()
    assert (training.rule.iloc[4:6] == "buffer").all()


def _run(s: SFLSampler, episodes: int, held: list) -> list[str]:
    """Report `episodes` episodes with three in flight (`held`: the trainer's own state)."""
    phases = []
    for _ in range(episodes):
        refresh = s.refreshing
        phases.append(
            "scoring"
            if refresh is not None and refresh.handed < len(refresh.levels) * 2
            else "waiting"
            if refresh is not None
            else "mid_step"
            if s._step
            else "training"
        )
        held.append(s.sample())
        task = held.pop(0)
        s.update(
            task, episode_return=float(s.episodes), episode_length=1, success=s.episodes % 3 == 0
        )
    return phases


def test_a_sampler_restored_in_any_phase_continues_as_an_uninterrupted_one():
    settings = {"levels_sampled": 4, "buffer_size": 2, "eval_episodes": 2, "refresh_every": 1}
    whole = sampler("sfl", "cartpole", seed=1, **settings)
    phases = _run(whole, 50, [whole.sample(), whole.sample()])
    assert set(phases) == {"scoring", "waiting", "mid_step", "training"}
    expected = whole.decisions_frame()
    assert (expected.rule == "sample_for_learnability").sum() >= 3 * 4
    for cut in range(0, 50, 3):
        first = sampler("sfl", "cartpole", seed=1, **settings)
        held = [first.sample(), first.sample()]
        _run(first, cut, held)
        saved = pickle.loads(pickle.dumps(first.state_dict()))
        _run(first, 2, list(held))  # the state is a copy: what follows does not change it
        resumed = sampler("sfl", "cartpole", seed=99, **settings)
        resumed.load_state_dict(saved)
        _run(resumed, 50 - cut, list(held))
        pd.testing.assert_frame_equal(resumed.decisions_frame(), expected)
        assert resumed.buffer == whole.buffer


@pytest.mark.parametrize(
    ("settings", "phrases"),
    [
        ({"buffer_sise": 3}, ("buffer_sise", "did you mean buffer_size")),
        ({"buffer_share": 1.5}, ("buffer_share", "[0, 1]", "1.5")),
        ({"buffer_size": 8, "levels_sampled": 4}, ("buffer_size", "levels_sampled 4")),
    ],
)
def test_settings_are_checked_by_sfl_own_config_and_rules(settings, phrases):
    with pytest.raises(ConfigError) as refused:
        sampler("sfl", "cartpole", **settings)
    assert_says(str(refused.value), *phrases)


def test_success_is_the_trainer_s_when_given_else_the_space_s_threshold():
    s = sampler("sfl", "cartpole", levels_sampled=2, buffer_size=1, eval_episodes=2)
    for n in range(4):  # level 0: the space decides (500 >= 475, then 10); level 1: mixed
        task = s.sample()
        success = None if n < 3 else True
        s.update(task, episode_return=500.0 if n != 1 else 10.0, episode_length=1, success=success)
    first, second = s.decisions()
    assert_says(first.reason, "solved 1 of 2 episodes (return >= 475)")
    assert_says(
        second.reason, "solved 2 of 2", "success as the trainer reported in 1, else return >= 475"
    )
    plain = TaskSpace(
        "plain", (Param("x", 0.0, 1.0, 0.5, 0.1),), make_env=object, max_episode_steps=5
    )
    blind = sampler("sfl", plain, levels_sampled=2, buffer_size=1, eval_episodes=1)
    task = blind.sample()
    blind.update(task, episode_return=1.0, episode_length=1, success=True)  # said by the trainer
    with pytest.raises(ConfigError, match="solved_score"):
        blind.update(blind.sample(), episode_return=1.0, episode_length=1)
