"""The selection rules of the single-policy curricula, on constructed histories.

Expected numbers are computed by hand in the comments; a fixed generator fixes every draw.
"""

from __future__ import annotations

import numpy as np
import pytest

from coevo.curricula.alp_gmm_teacher import ALPGMMTeacher
from coevo.curricula.level_buffer import (
    LevelBuffer,
    competition_ranks,
    rank_weights,
    replay_distribution,
    staleness_weights,
)
from coevo.curricula.level_editor import edit_level
from coevo.curricula.level_scores import (
    gae_advantages,
    max_mc,
    positive_value_loss,
    return_regret,
    stream_advantages,
    trajectory_positive_value_loss,
)
from coevo.curricula.task_sampling import decode_task, uniform_task
from coevo.tasks.task import Param, TaskSpace


def _space(**extra) -> TaskSpace:
    params = (
        Param("x", 0.0, 1.0, 0.5, 0.1),
        Param("y", -2.0, 2.0, 0.0, 0.5),
        *extra.pop("params", ()),
    )
    return TaskSpace("toy", params, make_env=lambda: None, max_episode_steps=10, **extra)


def _buffer(**overrides) -> LevelBuffer:
    settings = dict(capacity=4, temperature=1.0, staleness_coef=0.0, replay_prob=0.5, min_fill=0)
    return LevelBuffer(**{**settings, **overrides})


def test_a_failed_evaluation_of_a_level_the_buffer_holds_keeps_its_score():
    space = _space()
    buffer = _buffer()
    task = space.task(x=0.2, y=1.0)
    level, _ = buffer.offer(task, 5.0, 1)
    again, reason = buffer.offer(task, float("nan"), 2)
    assert again is level and level.score == 5.0
    assert reason == f"already in buffer as L{level.level_id}; score kept at 5"


# -- rank prioritisation ---------------------------------------------------------------------
def test_ranks_share_the_best_rank_of_a_tie():
    assert competition_ranks([5, 3, 3, 1]).tolist() == [1, 2, 2, 4]
    assert competition_ranks([1, 3, 3, 5]).tolist() == [4, 2, 2, 1]
    assert competition_ranks([2, 2, 2]).tolist() == [1, 1, 1]


def test_rank_priorities_by_hand():
    # ranks 1, 2, 2, 4 -> h = 1, 1/2, 1/2, 1/4; sum 2.25
    assert rank_weights([5, 3, 3, 1], 1.0) == pytest.approx([4 / 9, 2 / 9, 2 / 9, 1 / 9])
    # temperature 0.5: h^2 = 1, 1/4, 1/4, 1/16; sum 1.5625
    assert rank_weights([5, 3, 3, 1], 0.5) == pytest.approx([0.64, 0.16, 0.16, 0.04])
    # equal scores: equal priority whatever their place in the buffer
    weights = rank_weights([1, 3, 3, 5], 0.3)
    assert weights[1] == weights[2]


def test_staleness_and_mixing_by_hand():
    # clock 6, last sampled 0, 2, 5, 5 -> staleness 6, 4, 1, 1; sum 12
    assert staleness_weights([0, 2, 5, 5], 6) == pytest.approx([1 / 2, 1 / 3, 1 / 12, 1 / 12])
    assert staleness_weights([3, 3], 3) == pytest.approx([0.5, 0.5])  # all fresh: uniform
    mixed = replay_distribution([5, 3, 3, 1], [0, 2, 5, 5], 6, temperature=1.0, staleness_coef=0.3)
    expected = 0.7 * np.array([4, 2, 2, 1]) / 9 + 0.3 * np.array([6, 4, 1, 1]) / 12
    assert mixed == pytest.approx(expected)
    assert mixed == pytest.approx([0.461111, 0.255556, 0.180556, 0.102778], abs=1e-6)
    assert mixed.sum() == pytest.approx(1.0)


# -- replay decision and sampling ------------------------------------------------------------
def test_replay_decisions_with_a_fixed_generator():
    space = _space()
    buffer = _buffer(replay_prob=0.5, min_fill=0.5)
    rng = np.random.default_rng(0)
    # Below min_fill (0 of 4, need 2): always a new level, and the generator still advances.
    replay, reason = buffer.decide_replay(rng)
    assert not replay and "buffer holds 0 of 4, replay needs 2" in reason
    for score in (1.0, 2.0):
        buffer.offer(uniform_task(space, np.random.default_rng(int(score))), score, 0)
    # PCG64(0) draws: 0.637 (first, used above), 0.270, 0.041, 0.017, 0.813
    decisions = [buffer.decide_replay(rng) for _ in range(4)]
    assert [d for d, _ in decisions] == [True, True, True, False]
    assert decisions[0][1] == "replay: draw 0.270 < replay_prob 0.5"
    assert decisions[3][1] == "new level: draw 0.813 ≥ replay_prob 0.5"


def test_sampling_follows_the_distribution_and_resets_staleness():
    space = _space()
    buffer = _buffer(staleness_coef=0.3, capacity=3)
    tasks = [space.task(x=v) for v in (0.1, 0.2, 0.3)]
    for task, score in zip(tasks, (3.0, 2.0, 1.0), strict=True):
        buffer.offer(task, score, 0)
    # offers tick the clock: levels were added at clock 1, 2, 3
    assert [lv.last_sampled for lv in buffer.levels] == [1, 2, 3] and buffer.clock == 3
    expected = 0.7 * np.array([6, 3, 2]) / 11 + 0.3 * np.array([2, 1, 0]) / 3
    assert buffer.distribution() == pytest.approx(expected)
    pick = buffer.sample(np.random.default_rng(1))[0]
    assert pick.staleness == 2 - pick.level.level_id  # clock 3 - added at id + 1
    assert pick.level.last_sampled == buffer.clock == 4 and pick.level.replays == 1
    assert "rank" in pick.reason() and f"L{pick.level.level_id}" in pick.reason()
    # Many draws: frequencies approach P_replay's (staleness keeps every level in play).
    counts = np.zeros(3)
    rng = np.random.default_rng(2)
    for _ in range(3000):
        counts[buffer.sample(rng)[0].level.level_id] += 1
    assert counts.min() > 300 and counts.argmax() == 0


def test_pick_reports_rank_and_staleness():
    space = _space()
    buffer = _buffer(temperature=1.0, staleness_coef=0.0, capacity=2)
    buffer.offer(space.task(x=0.1), 0.42, 0)  # clock 1
    buffer.offer(space.task(x=0.2), 0.10, 0)  # clock 2
    # staleness_coef 0: P_S only, 2/3 vs 1/3; PCG64(1)'s first draw 0.511 < 2/3 picks L0,
    # PCG64(0)'s 0.637 too, PCG64(2)'s 0.261 too; PCG64(4)'s 0.943 picks L1.
    pick = buffer.sample(np.random.default_rng(1))[0]
    assert pick.reason() == "replayed level L0: score 0.42, rank 1 of 2, staleness 1, P 0.667"
    pick = buffer.sample(np.random.default_rng(4))[0]
    assert pick.reason() == "replayed level L1: score 0.1, rank 2 of 2, staleness 1, P 0.333"


def test_pick_keeps_the_score_its_rank_came_from_after_the_level_is_rescored():
    # The eligibility row of a replay is written after the replay rescored the level: it
    # must still show the score the draw ranked, or a rank-1 level reads lower than a
    # rank-2 one beside it.
    space = _space()
    buffer = _buffer(temperature=1.0, staleness_coef=0.0, capacity=2)
    buffer.offer(space.task(x=0.1), 0.42, 0)
    buffer.offer(space.task(x=0.2), 0.10, 0)
    pick = buffer.sample(np.random.default_rng(1))[0]
    buffer.rescore(pick.level, 0.05, 1.0)
    assert pick.level.score == 0.05
    assert pick.reason() == "replayed level L0: score 0.42, rank 1 of 2, staleness 1, P 0.667"


# -- buffer replacement ----------------------------------------------------------------------
def test_full_buffer_replaces_the_lowest_only_with_a_higher_score():
    space = _space()
    buffer = _buffer(capacity=2)
    a, b, c, d = (space.task(x=v) for v in (0.1, 0.2, 0.3, 0.4))
    assert buffer.offer(a, 1.0, 0)[0].level_id == 0
    assert buffer.offer(b, 2.0, 0)[0].level_id == 1
    level, reason = buffer.offer(c, 1.0, 1)  # a tie with the lowest is not enough
    assert level is None and reason == "not added: score 1 ≤ lowest in full buffer 1 (L0)"
    level, reason = buffer.offer(d, 1.5, 1)
    assert level.level_id == 2 and "replacing L0 (score 1)" in reason
    assert {lv.task for lv in buffer.levels} == {b, d}
    # A level already in the buffer is rescored, not duplicated.
    level, reason = buffer.offer(b, 0.3, 2)
    assert level.level_id == 1 and level.score == 0.3 and len(buffer) == 2
    assert buffer.offer(c, float("nan"), 2) == (None, "not added: score nan is not finite")


def test_buffer_rejects_bad_settings():
    with pytest.raises(ValueError, match="temperature"):
        _buffer(temperature=0)
    with pytest.raises(ValueError, match="replay_prob"):
        _buffer(replay_prob=1.5)


# -- scores ----------------------------------------------------------------------------------
def test_positive_value_loss_by_hand():
    # gamma = lambda = 1: advantages are returns-to-go minus values: 2-.5, 1-.5, 1-.5
    assert gae_advantages([1, 0, 1], [0.5] * 3, 0.0, 1.0, 1.0) == pytest.approx([1.5, 0.5, 0.5])
    assert positive_value_loss([1, 0, 1], [0.5] * 3, 0.0, 1.0, 1.0) == pytest.approx(2.5 / 3)
    # gamma 0.5: returns 1.25, 0.5, 1 -> advantages .75, 0, .5
    assert positive_value_loss([1, 0, 1], [0.5] * 3, 0.0, 0.5, 1.0) == pytest.approx(1.25 / 3)
    # over-estimated values: negative advantages clip to 0
    assert positive_value_loss([1, 0, 1], [3.0] * 3, 0.0, 1.0, 1.0) == 0.0
    # a truncated episode bootstraps with the last value: 0 + 1*2 - 0 = 2
    assert gae_advantages([0], [0.0], 2.0, 1.0, 0.95) == pytest.approx([2.0])


def test_stream_advantages_stop_at_episode_ends_and_bootstrap_by_hand():
    rewards, values = [1.0] * 4, [0.0] * 4
    # Episode 1 terminates at t1; episode 2 runs to the stream's end, bootstrapped with 5:
    # A3 = 1 + 5 = 6, A2 = 1 + A3 = 7, A1 = 1 (terminated), A0 = 1 + A1 = 2.
    terminated, truncated = [False, True, False, False], [False] * 4
    next_values = [0.0, 0.0, 0.0, 5.0]
    advantages = stream_advantages(rewards, values, next_values, terminated, truncated, 1, 1)
    assert advantages == pytest.approx([2.0, 1.0, 7.0, 6.0])
    # Truncated at t1 instead: bootstrap with next_values[1] = 3: A1 = 4, A0 = 5.
    truncated = [False, True, False, False]
    next_values = [0.0, 3.0, 0.0, 5.0]
    advantages = stream_advantages(rewards, values, next_values, [False] * 4, truncated, 1, 1)
    assert advantages == pytest.approx([5.0, 4.0, 7.0, 6.0])

    class Stream:  # the fields of a PPO rollout stream
        pass

    stream = Stream()
    stream.rewards, stream.values, stream.next_values = rewards, values, next_values
    stream.terminated, stream.truncated = [False] * 4, truncated
    assert trajectory_positive_value_loss(stream, 1.0, 1.0) == pytest.approx(22 / 4)


def test_max_mc_and_return_regret_by_hand():
    assert max_mc([1.0, 2.0, 3.0], 4.0) == pytest.approx(2.0)
    assert np.isnan(max_mc([], 4.0))
    assert return_regret(120.0, 500.0) == 380.0
    assert return_regret(600.0, 500.0) == 0.0
    assert return_regret(10.0, float("-inf")) == 0.0
    assert np.isnan(return_regret(float("nan"), 500.0))


# -- domain randomisation --------------------------------------------------------------------
def test_uniform_tasks_keep_bounds_grids_and_intervals():
    space = _space(
        params=(
            Param("n", 1.0, 4.0, 1.0, 1.0, round_to=1.0),
            Param("lo", 0, 1, 0, 0.1),
            Param("hi", 0, 1, 1, 0.1),
        ),
        ordered=(("lo", "hi"),),
    )
    rng = np.random.default_rng(5)
    drawn = [uniform_task(space, rng) for _ in range(400)]
    for task in drawn:
        space.check(task)
        assert task["lo"] <= task["hi"]
    ns = [task["n"] for task in drawn]
    assert set(ns) == {1.0, 2.0, 3.0, 4.0}  # every grid point, ends included
    assert min(ns.count(v) for v in (1.0, 4.0)) > 60  # ends as likely as the middle
    xs = np.array([task["x"] for task in drawn])
    assert 0.4 < xs.mean() < 0.6 and xs.min() < 0.05 and xs.max() > 0.95
    again = [uniform_task(space, np.random.default_rng(5)) for _ in range(1)]
    assert again[0] == drawn[0]


def test_uniform_int_parameters_stay_ints_and_cover_their_range():
    space = _space(params=(Param("blocks", 0, 3, 0, 1, type="int"),))
    rng = np.random.default_rng(9)
    values = [uniform_task(space, rng)["blocks"] for _ in range(400)]
    assert all(type(v) is int for v in values)
    assert {v: values.count(v) > 70 for v in range(4)} == {0: True, 1: True, 2: True, 3: True}
    decoded = decode_task(space, np.array([0.5, 0.5, 0.9]))["blocks"]
    assert decoded == 3 and type(decoded) is int  # 0.9 of [0, 3] = 2.7 rounds to 3


def test_decode_inverts_encode_and_clips():
    space = _space()
    task = space.task(x=0.25, y=1.0)
    assert decode_task(space, space.encode(task)) == task
    assert decode_task(space, np.array([-3.0, 7.0])) == space.task(x=0.0, y=2.0)


# -- ACCEL's editor --------------------------------------------------------------------------
def test_edit_is_the_space_mutator_applied_num_edits_times():
    space = _space()
    start = space.task(x=0.5, y=0.0)
    edited = edit_level(space, start, 3, np.random.default_rng(7))
    rng = np.random.default_rng(7)
    by_hand = space.mutate(space.mutate(space.mutate(start, rng), rng), rng)
    assert edited == by_hand and edited != start
    space.check(edited)
    with pytest.raises(ValueError, match="num_edits"):
        edit_level(space, start, 0, rng)


# -- ALP-GMM ---------------------------------------------------------------------------------
def test_alp_is_the_return_gap_to_the_nearest_previous_task():
    space = _space()
    teacher = ALPGMMTeacher(space, fit_rate=10, bootstrap=10, max_components=3)
    history = [
        (0.0, -2.0, 1.0),
        (1.0, 2.0, 5.0),
        (0.5, 0.0, 3.0),
        (0.2, 1.0, 2.0),
        (0.8, -1.0, 4.0),
        (0.4, 0.4, 7.0),
    ]
    for x, y, r in history:
        assert teacher.record(space.task(x=x, y=y), r) == 0.0  # history too short
    # nearest previous task of (0.95, 1.8) is (1.0, 2.0) with return 5: ALP |9 - 5|
    assert teacher.record(space.task(x=0.95, y=1.8), 9.0) == 4.0
    assert teacher.record(space.task(x=0.5, y=0.1), 1.0) == 2.0  # vs (0.5, 0) return 3
    assert np.isnan(teacher.record(space.task(x=0.5, y=0.1), float("nan")))
    assert len(teacher) == 8


def _teacher_with_progress_in_one_corner(criterion: str = "aic") -> ALPGMMTeacher:
    """Learning progress only where x < 0.3: returns there swing, elsewhere they are flat."""
    space = _space()
    teacher = ALPGMMTeacher(
        space,
        fit_rate=60,
        bootstrap=60,
        max_components=4,
        criterion=criterion,
        random_ratio=0.0,
    )
    data = np.random.default_rng(12)
    for i in range(60):
        task = uniform_task(space, data)
        r = (10.0 * (i % 2)) if task["x"] < 0.3 else 1.0
        teacher.record(task, r)
    return teacher


@pytest.mark.parametrize("criterion", ["aic", "bic"])
def test_gmm_is_fitted_by_criterion_and_samples_where_progress_is(criterion):
    teacher = _teacher_with_progress_in_one_corner(criterion)
    mixture = teacher.mixture
    assert mixture is not None and mixture.fitted_at == 60
    assert set(mixture.criterion_values) == {2, 3, 4}
    best = min(mixture.criterion_values, key=mixture.criterion_values.get)
    assert mixture.components == best
    rng = np.random.default_rng(3)
    samples = [teacher.sample(rng) for _ in range(300)]
    assert all(s.origin == "gmm" for s in samples)
    xs = np.array([s.task["x"] for s in samples])
    assert (xs < 0.35).mean() > 0.7  # mostly where the ALP is
    for s in samples:
        teacher.space.check(s.task)  # clipped to bounds
        assert "sampled from GMM component" in s.reason(0.2)


def test_a_gmm_on_a_few_int_levels_tries_no_more_components_than_distinct_points():
    """Three int levels give at most three distinct (level, ALP) points per level's ALP: more
    components than distinct points made sklearn warn and collapse them."""
    import warnings

    space = TaskSpace(
        "levels",
        (Param("level", 1, 3, 1, 1, type="int"),),
        make_env=lambda: None,
        max_episode_steps=10,
    )
    teacher = ALPGMMTeacher(space, fit_rate=12, bootstrap=12, max_components=6, random_ratio=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a ConvergenceWarning would fail the test
        for i in range(12):
            teacher.record(space.task(level=1 + i % 3), 1.0)  # flat returns: ALP 0 after the first
    mixture = teacher.mixture
    assert mixture is not None and max(mixture.criterion_values) <= 4
    assert min(mixture.criterion_values) == teacher.min_components


def test_gmm_samples_stay_within_bounds_and_exploration_is_uniform():
    teacher = _teacher_with_progress_in_one_corner()
    teacher.random_ratio = 0.5
    rng = np.random.default_rng(4)
    samples = [teacher.sample(rng) for _ in range(400)]
    origins = [s.origin for s in samples]
    assert 150 < origins.count("random") < 250
    for s in samples:
        assert 0.0 <= s.task["x"] <= 1.0 and -2.0 <= s.task["y"] <= 2.0
    # same generator state, same history: same tasks
    again = [teacher.sample(np.random.default_rng(4)) for _ in range(1)]
    assert again[0] == samples[0]


def test_bootstrap_samples_uniformly_before_the_first_fit():
    teacher = ALPGMMTeacher(_space(), fit_rate=10, bootstrap=20, max_components=3)
    sampled = teacher.sample(np.random.default_rng(0))
    assert sampled.origin == "bootstrap" and teacher.mixture is None
    with pytest.raises(ValueError, match="bootstrap"):
        ALPGMMTeacher(_space(), fit_rate=10, bootstrap=5)
