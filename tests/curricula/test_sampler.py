"""The task sampler: coevo's level-sampling curricula for any trainer (sampler.py)."""

from __future__ import annotations

import logging
import pickle

import numpy as np
import pandas as pd
import pytest

from coevo.curricula.alp_gmm_teacher import ALPGMMTeacher
from coevo.curricula.level_buffer import LevelBuffer
from coevo.curricula.sampler import SAMPLERS, sampler
from coevo.curricula.task_sampling import uniform_task
from coevo.errors import ConfigError
from coevo.tasks import registry
from coevo.tasks.task import Param, TaskSpace

SMALL = {
    "dr": {},
    "plr": {"buffer_size": 8},
    "accel": {"buffer_size": 8},
    "alp_gmm": {"fit_rate": 10, "bootstrap": 10, "max_components": 3},
    "sfl": {"levels_sampled": 4, "buffer_size": 2, "eval_episodes": 2, "refresh_every": 1},
}


def _returns(task) -> float:
    """A made-up return that depends on the task only: short poles are easy."""
    return float(500.0 * (1.0 - task["pole_length"] / 2.0))


def _play(s, episodes: int, start: int = 0) -> list[str]:
    """Sample and report `episodes` episodes, two in flight at once (as two envs)."""
    seen, held = [], [s.sample()]
    for _ in range(episodes):
        held.append(s.sample())
        task = held.pop(0)
        seen.append(task.id)
        ret = _returns(task)
        s.update(task, episode_return=ret, episode_length=int(ret), success=ret > 400)
    return seen


def _rows(s) -> pd.DataFrame:
    return s.decisions_frame()


@pytest.mark.parametrize("name", sorted(SMALL))
def test_a_seeded_sampler_repeats_and_another_seed_differs(name):
    a, b, c = (sampler(name, "cartpole", seed=seed, **SMALL[name]) for seed in (3, 3, 4))
    tasks_a, tasks_b, tasks_c = _play(a, 40), _play(b, 40), _play(c, 40)
    assert tasks_a == tasks_b and tasks_a != tasks_c
    pd.testing.assert_frame_equal(_rows(a), _rows(b))
    # A row per episode; SFL's scoring episodes: a row per level at its refresh's end.
    rows = 40 if name != "sfl" else a.trained + a.refreshes * SMALL["sfl"]["levels_sampled"]
    assert len(a.decisions()) == rows and a.episodes == 40


@pytest.mark.parametrize("name", sorted(SMALL))
def test_a_restored_sampler_continues_as_an_uninterrupted_one(name):
    whole = sampler(name, "cartpole", seed=1, **SMALL[name])
    first = sampler(name, "cartpole", seed=1, **SMALL[name])
    _play(whole, 50)
    _play(first, 20)
    saved = pickle.loads(pickle.dumps(first.state_dict()))
    _play(first, 5)  # the state is a copy: what follows does not change it
    resumed = sampler(name, "cartpole", seed=99, **SMALL[name])
    resumed.load_state_dict(saved)
    # The two tasks in flight at the save are reported by the resumed sampler.
    interrupted = sampler(name, "cartpole", seed=1, **SMALL[name])
    _play(interrupted, 20)
    expected_next = [interrupted.sample().id for _ in range(3)]
    assert [resumed.sample().id for _ in range(3)] == expected_next
    resumed.load_state_dict(saved)
    _continue(resumed, 30)
    pd.testing.assert_frame_equal(_rows(resumed), _rows(whole))


def _continue(s, episodes: int) -> None:
    """`_play`'s loop continued: the task it held in flight was sampled before the save."""
    pending = [t for t, notes in s._pending.items() for _ in notes]
    held = list(pending)
    for _ in range(episodes):
        held.append(s.sample())
        task = held.pop(0)
        ret = _returns(task)
        s.update(task, episode_return=ret, episode_length=int(ret), success=ret > 400)


def test_the_samplers_are_built_on_the_curricula_own_objects():
    plr = sampler("plr", "cartpole", seed=5, buffer_size=8)
    assert isinstance(plr.buffer, LevelBuffer) and plr.buffer.capacity == 8
    assert plr.buffer.eviction == "replay_support"  # PLRConfig's default, not a copy of it
    alp = sampler("alp_gmm", "cartpole", **SMALL["alp_gmm"])
    assert isinstance(alp.teacher, ALPGMMTeacher)
    # DR draws as student 0 of a run with the same seed: default_rng([seed, 0]).
    dr = sampler("dr", "cartpole", seed=5)
    rng = np.random.default_rng([5, 0])
    space = registry.get("cartpole")
    assert [dr.sample() for _ in range(4)] == [uniform_task(space, rng) for _ in range(4)]
    assert set(SAMPLERS) >= {"dr", "plr", "accel", "alp_gmm", "sfl"}


def test_settings_are_checked_by_the_curriculum_own_config():
    with pytest.raises(ConfigError, match="did you mean buffer_size"):
        sampler("plr", "cartpole", buffer_sise=8)
    with pytest.raises(ConfigError, match="replay_prob"):
        sampler("accel", "cartpole", replay_prob=1.5)
    with pytest.raises(ConfigError, match="fit_rate"):
        sampler("alp_gmm", "cartpole", fit_rate=3)
    with pytest.raises(ConfigError, match="known: accel, alp_gmm, dr, plr, sfl"):
        sampler("plrr", "cartpole")


def test_plr_replays_once_filled_and_its_rows_say_why():
    s = sampler("plr", "cartpole", seed=0, buffer_size=8)
    _play(s, 40)
    rows = _rows(s)
    assert set(zip(rows.rule, rows.outcome, strict=True)) <= {
        ("new_level", "added"),
        ("new_level", "rejected"),
        ("new_level", "rescored"),
        ("replay", "replayed"),
    }
    first_replay = rows.index[rows.rule == "replay"][0]
    assert first_replay >= 4  # min_fill 0.5 x 8 levels before any replay
    assert rows.reason[first_replay].startswith("replay: draw")
    assert "rank" in rows.reason[first_replay] and (rows.pair_id == 0).all()


def test_accel_edits_each_replayed_level_and_offers_the_edit_next():
    s = sampler("accel", "cartpole", seed=0, buffer_size=8, num_edits=2)
    _play(s, 60)
    rows = s.decisions()
    edits = [r for r in rows if r.rule == "edit"]
    assert edits, "no replay was edited"
    replayed = {r.task_id for r in rows if r.rule == "replay"}
    parents = {lv.level_id: lv for lv in s.buffer.levels}
    for edit in edits:
        assert edit.parent_id is not None and "mutation of L" in edit.reason
    kept = [lv for lv in s.buffer.levels if lv.parent_id is not None]
    for level in kept:  # an edit holds its parent's edits plus num_edits
        parent = parents.get(level.parent_id)
        if parent is not None:
            assert level.edits == parent.edits + 2
    assert replayed


def test_learnability_is_over_a_level_recent_episodes():
    one_task = TaskSpace(
        "one", (Param("x", 0.5, 0.5, 0.5, 0.1),), make_env=object, max_episode_steps=5
    )
    s = sampler("plr", one_task, buffer_size=4, success_window=4, replay_prob=1.0)
    for success in (True, True, True, False, True, False):
        s.update(s.sample(), episode_return=0.0, episode_length=1, success=success)
    # the level's last 4 episodes: 2 solved, p(1-p) = 0.25
    assert s.buffer.levels[0].score == pytest.approx(0.25)
    assert "solved 2 of 4" in s.decisions()[-1].reason
    assert [r.rule for r in s.decisions()] == ["new_level"] + ["replay"] * 5


def test_value_scores_take_the_trainer_values_and_rewards():
    s = sampler("plr", "cartpole", critic=True, gamma=1.0, gae_lambda=1.0, buffer_size=4)
    assert s.score_used == "positive_value_loss"
    task = s.sample()
    with pytest.raises(ValueError, match="needs the episode's values= and rewards="):
        s.update(task, episode_return=3.0, episode_length=3, values=[0.0, 0.0, 0.0])
    s.sample()
    task = s.sample()
    # Advantages with γ = λ = 1 and zero values: the rewards to go, 3, 2, 1.
    s.update(task, episode_return=3.0, episode_length=3, values=[0, 0, 0], rewards=[1, 1, 1])
    assert s.decisions()[-1].score == pytest.approx(2.0)
    maxmc = sampler("plr", "cartpole", critic=True, score="max_mc", buffer_size=4)
    task = maxmc.sample()
    maxmc.update(task, episode_return=10.0, episode_length=2, values=[4.0, 6.0])
    assert maxmc.decisions()[-1].score == pytest.approx(5.0)  # mean(10 - V)


def test_without_a_critic_the_fallback_scores(caplog):
    with caplog.at_level(logging.WARNING, logger="coevo.curricula"):
        quiet = sampler("plr", "cartpole")
    assert quiet.score_used == "learnability" and not caplog.records
    with caplog.at_level(logging.WARNING, logger="coevo.curricula"):
        named = sampler("plr", "cartpole", score="positive_value_loss")
    assert named.score_used == "learnability" and "learnability instead" in caplog.text
    with pytest.raises(ConfigError, match="needs the value predictions"):
        sampler("plr", "cartpole", score_fallback="none")


def test_learnability_without_success_needs_a_solved_score():
    space = TaskSpace(
        "plain", (Param("x", 0.0, 1.0, 0.5, 0.1),), make_env=object, max_episode_steps=5
    )
    s = sampler("plr", space, buffer_size=4)
    task = s.sample()
    with pytest.raises(ConfigError, match="solved_score"):
        s.update(task, episode_return=1.0, episode_length=5)
    task = s.sample()
    s.update(task, episode_return=1.0, episode_length=5, success=True)  # said by the trainer
    assert "as the trainer reported" in s.decisions()[-1].reason


def test_an_update_of_a_task_not_sampled_is_refused():
    s = sampler("dr", "cartpole")
    other = registry.get("cartpole").initial_task()
    with pytest.raises(ValueError, match="was not sampled"):
        s.update(other, episode_return=1.0, episode_length=1)
    task = s.sample()
    s.update(task, episode_return=1.0, episode_length=1)
    with pytest.raises(ValueError, match="was not sampled"):
        s.update(task, episode_return=1.0, episode_length=1)


def test_alp_gmm_fits_after_its_bootstrap():
    s = sampler("alp_gmm", "cartpole", seed=2, **SMALL["alp_gmm"])
    _play(s, 25)
    origins = [r.outcome for r in s.decisions()]
    assert origins[:10] == ["bootstrap"] * 10
    assert "gmm" in origins[11:]
    assert any("refit:" in r.reason for r in s.decisions())


def test_a_state_of_another_sampler_is_refused():
    with pytest.raises(ConfigError, match="'dr' sampler's"):
        sampler("plr", "cartpole").load_state_dict(sampler("dr", "cartpole").state_dict())


def test_level_kinds_are_sampled_and_alp_gmm_refuses_them_as_its_run_does():
    maze = "maze"
    s = sampler("accel", maze, buffer_size=4)
    task = s.sample()
    s.update(task, episode_return=0.5, episode_length=10)
    assert s.decisions()[-1].rule == "new_level" and type(task).__name__ == "Maze"
    sfl = sampler("sfl", maze, levels_sampled=2, buffer_size=1, eval_episodes=1)
    task = sfl.sample()
    assert sfl.scoring(task) and type(task).__name__ == "Maze"
    with pytest.raises(ConfigError, match="Maze levels and has no decode"):
        sampler("alp_gmm", maze)
