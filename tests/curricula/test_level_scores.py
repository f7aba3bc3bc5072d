"""Level scores (coevo/curricula/level_scores.py) on hand-built episodes, the discount they
use, what success is, and PPO streams keeping their level until the episode ends."""

from __future__ import annotations

import logging
from dataclasses import replace

import numpy as np
import pytest

from coevo.curricula.alp_gmm import ALPGMM, ALPGMMConfig
from coevo.curricula.level_sampling import Outcome, Plan, Signal, finished_returns
from coevo.curricula.level_scores import (
    SCORES,
    LevelScore,
    Partial,
    learnability,
    merge_partial,
    trajectory_positive_value_loss,
)
from coevo.curricula.plr import PLRConfig, PrioritizedLevelReplay
from coevo.errors import ConfigError
from coevo.optimizers.es import ESConfig, EvolutionStrategy
from coevo.optimizers.ppo import PPO
from coevo.optimizers.ppo_config import PPOConfig
from coevo.optimizers.ppo_streams import StreamEnd, StreamingPPOState, stream_tasks
from coevo.policies.actor_critic import ActorCriticSpec
from coevo.pool import EvaluationPool
from coevo.pool.trajectories import Continuation


@pytest.fixture(scope="module")
def es_pool(cartpole, cartpole_policy):
    with EvaluationPool(cartpole, cartpole_policy, "local", 1, envs_per_worker=16) as pool:
        yield pool


@pytest.fixture(scope="module")
def ac_pool(cartpole):
    env = cartpole.make_env()
    spec = ActorCriticSpec.for_spaces(env.observation_space, env.action_space, hidden=(16,))
    with EvaluationPool(cartpole, spec, "local", 1, envs_per_worker=16) as pool:
        yield pool


def _plr(pool, space, optimizer, **settings):
    config = PLRConfig(generations=4, buffer_size=6, tasks_per_step=3, **settings)
    return PrioritizedLevelReplay(config, space=space, pool=pool, optimizer=optimizer, seed=3)


def _es(pool):
    return EvolutionStrategy(ESConfig(population=4), pool.policy.num_params)


def _ppo(pool, n_steps=16, **settings):
    config = PPOConfig(n_envs=4, n_steps=n_steps, batch_size=24, n_epochs=1, **settings)
    return PPO(config, pool.policy.num_params, policy=pool.policy)


class _Stream:
    """A rollout stream as PPO's results carry it (rewards, values, episode ends)."""

    def __init__(self, rewards, values, next_values, terminated, truncated):
        self.rewards, self.values, self.next_values = rewards, values, next_values
        self.terminated, self.truncated = terminated, truncated


def _exact_values(steps_left: np.ndarray, gamma: float) -> np.ndarray:
    """V(s) of a reward-1-per-step episode with `steps_left` steps to go, discount gamma."""
    return (1.0 - gamma**steps_left) / (1.0 - gamma)


def test_the_registry_names_every_score_and_its_source():
    assert set(SCORES) == set(LevelScore)
    assert "Rutherford et al. 2024" in SCORES[LevelScore.LEARNABILITY].__doc__
    assert "dcd" in SCORES[LevelScore.POSITIVE_VALUE_LOSS].__doc__
    assert "dcd" in SCORES[LevelScore.MAX_MC].__doc__
    assert LevelScore.LEARNABILITY.needs_success and not LevelScore.LEARNABILITY.needs_values
    assert LevelScore.MAX_MC.needs_values and not LevelScore.RETURN_REGRET.needs_success


def test_learnability_by_hand():
    assert learnability([True, False]) == 0.25
    assert learnability([True, False, False, False]) == pytest.approx(0.1875)
    assert learnability([True] * 3) == 0.0 and learnability([False] * 3) == 0.0
    assert np.isnan(learnability([]))


def test_partial_episodes_merge_step_weighted_as_dcd():
    # dcd: partial + (score - partial) * n / (n_partial + n)
    merged = merge_partial(Partial(2.0, 30), 5.0, 10)
    assert merged == Partial(pytest.approx(2.75), 40)
    assert merge_partial(None, 1.5, 7) == Partial(1.5, 7)


def test_value_scores_use_the_learners_discount(ac_pool, cartpole):
    """The issue's numbers: an exact gamma-0.99 critic, a 256-step stream balanced to the end
    (bootstrapped) and a 10-step failure. Scored with 0.995 / 0.95 (PLR's former pair) the
    balanced level scored 8.2 (the issue: 8.5) and the failure 0.07: mastered levels ranked
    first."""
    gamma = 0.99
    balanced_left = 500 - np.arange(256)  # CartPole's 500-step limit, cut at 256
    balanced = _Stream(
        np.ones(256),
        _exact_values(balanced_left, gamma),
        _exact_values(balanced_left - 1, gamma),
        np.zeros(256, bool),
        np.zeros(256, bool),
    )
    failure_left = 10 - np.arange(10)
    failure = _Stream(
        np.ones(10),
        _exact_values(failure_left, gamma),
        _exact_values(failure_left - 1, gamma),
        np.arange(10) == 9,
        np.zeros(10, bool),
    )
    old = [trajectory_positive_value_loss(s, 0.995, 0.95) for s in (balanced, failure)]
    assert old[0] > 8.0 and old[1] == pytest.approx(0.07, abs=0.01)  # the balanced one first

    plr = _plr(ac_pool, cartpole, _ppo(ac_pool, gamma=gamma))
    assert (plr.gamma, plr.gae_lambda) == (gamma, 0.95)  # the learner's own pair
    task = cartpole.initial_task()
    for stream in (balanced, failure):
        score, _ = plr.level_score(plr.students[0], Signal(task, 1.0, (stream,)), None)
        assert score == pytest.approx(0.0, abs=1e-9)


def test_a_second_discount_is_refused(ac_pool, cartpole):
    with pytest.raises(ConfigError, match=r"curriculum.gamma: 0.995 differs from optimizer"):
        _plr(ac_pool, cartpole, _ppo(ac_pool), gamma=0.995)
    _plr(ac_pool, cartpole, _ppo(ac_pool), gamma=0.99)  # the same value: allowed


def test_black_box_optimizers_score_by_learnability(es_pool, cartpole, caplog):
    with caplog.at_level(logging.WARNING, logger="coevo.curricula"):
        plr = _plr(es_pool, cartpole, _es(es_pool))
    assert plr.score_used == "learnability"
    assert "scores levels by learnability instead" in caplog.text
    assert "favours unsolvable levels" not in caplog.text
    task = cartpole.initial_task()
    half = Signal(task, 250.0, episode_returns=(500.0, 10.0))
    score, how = plr.level_score(plr.students[0], half, None)
    assert score == 0.25 and how.startswith("learnability 0.25: solved 1 of 2")
    never = Signal(task, 10.0, episode_returns=(10.0, 12.0))
    assert plr.level_score(plr.students[0], never, None)[0] == 0.0


def test_return_regret_only_when_named_and_with_its_warning(es_pool, cartpole, caplog):
    with caplog.at_level(logging.WARNING, logger="coevo.curricula"):
        plr = _plr(es_pool, cartpole, _es(es_pool), score="return_regret")
    assert plr.score_used == "return_regret"
    assert "favours unsolvable levels" in caplog.text


def test_learnability_on_a_space_without_success_names_what_to_add(es_pool, cartpole):
    unsolved = replace(cartpole, solved_score=None)
    with pytest.raises(ConfigError, match=r"^task.solved_score: .*declares no solved_score"):
        _plr(es_pool, unsolved, _es(es_pool))
    _plr(es_pool, unsolved, _es(es_pool), score="return_regret")  # needs no success


def test_an_unsolvable_level_no_longer_ranks_first_without_a_critic(es_pool, cartpole):
    """ES-scored PLR: return_regret put the lowest-return level first (an unsolvable one);
    learnability puts the level solved half the time first."""
    tasks = [cartpole.task(pole_length=v) for v in (0.05, 0.5, 1.0)]
    returns = [(9.0, 9.0), (500.0, 20.0), (500.0, 500.0)]
    signals = [
        Signal(t, float(np.mean(r)), episode_returns=r) for t, r in zip(tasks, returns, strict=True)
    ]
    first = {}
    for score in ("return_regret", "learnability"):
        plr = _plr(es_pool, cartpole, _es(es_pool), score=score)
        plr.begin_generation()
        plan = Plan(score=tasks, note=("new", "a new batch", None))
        plr.observe(plr.students[0], plan, Outcome(trained=[], scored=signals), [])
        top = plr.buffers[0].rows()[0]
        first[score] = top["task.pole_length"]
    assert first == {"return_regret": 0.05, "learnability": 0.5}


def test_a_stream_keeps_its_level_until_its_episode_ends(ac_pool, cartpole):
    a, b, c, d = (cartpole.task(pole_length=v) for v in (0.2, 0.4, 0.6, 0.8))
    going_on = Continuation(reset_seed=1, actions=np.zeros(3, np.int64), episode_return=3.0)
    fresh = StreamingPPOState.fresh(ac_pool.policy, 0)
    assert stream_tasks(fresh, [c, d], 4) == [c, d, c, d]  # no streams yet: cycling
    ends = (StreamEnd(a, going_on), StreamEnd(b, None), StreamEnd(a, going_on))
    # Streams 0 and 2 go on with a; streams 1 (its episode ended) and 3 (new) take c, d.
    assert stream_tasks(replace(fresh, streams=ends), [c, d], 4) == [a, c, a, d]


def test_finished_returns_count_the_continued_part(cartpole):
    stream = _Stream(
        np.ones(6), np.zeros(6), np.zeros(6), np.array([0, 1, 0, 0, 0, 0], bool), np.zeros(6, bool)
    )

    class _Job:
        continuation = Continuation(reset_seed=1, actions=np.zeros(5, np.int64), episode_return=5.0)

    assert finished_returns(_Job(), stream) == [7.0]  # 5 carried + 2; the last 4 go on


def test_alp_gmm_fits_a_mixture_under_ppo_in_a_short_cartpole_run(ac_pool, cartpole):
    """6-step rollouts, shorter than CartPole's episodes: a stream cut at every update
    returned no return, the teacher dropped the task, and no mixture was ever fitted (at
    2e94478: history 2, no fit; now 17 episodes, 2 fits)."""
    config = ALPGMMConfig(
        generations=30, fit_rate=8, bootstrap=8, max_components=3, tasks_per_step=4
    )
    ppo = _ppo(ac_pool, n_steps=6)
    run = ALPGMM(config, space=cartpole, pool=ac_pool, optimizer=ppo, seed=0)
    results = run.run()
    assert sum(r.summary["fits"] for r in results) >= 1
    assert run.teachers[0].mixture is not None
    decisions = [d for r in results for d in r.decisions if d.rule == "sample"]
    assert any(d.outcome == "continued" for d in decisions)


def test_replay_support_evicts_the_level_least_likely_to_be_replayed(cartpole):
    """dcd's default seed_buffer_priority (and minimax 0.2): the new level competes with the
    level of lowest P_replay, staleness included, and a tie is enough; `score` evicts the
    lowest score only for a strictly higher one."""
    from coevo.curricula.level_buffer import LevelBuffer

    a, b, c = (cartpole.task(pole_length=v) for v in (0.2, 0.4, 0.6))

    def full(eviction):
        buffer = LevelBuffer(2, 1.0, 0.5, 0.5, 0.5, eviction=eviction)
        buffer.offer(a, 1.0, 0)
        buffer.offer(b, 2.0, 0)
        buffer.levels[0].last_sampled = 0  # A stale, B fresh: P(A) 2/3, P(B) 1/3
        buffer.levels[1].last_sampled = buffer.clock
        return buffer

    assert full("replay_support").distribution() == pytest.approx([2 / 3, 1 / 3])
    level, reason = full("replay_support").offer(c, 1.5, 1)
    assert level is None and "score 1.5 < 2 of L1, the level of lowest replay" in reason
    buffer = full("replay_support")
    level, reason = buffer.offer(c, 2.0, 1)  # a tie with L1 admits it
    assert level is not None and "replacing L1 (score 2, P " in reason
    assert [lv.task for lv in buffer.levels] == [a, c]
    buffer = full("score")
    level, reason = buffer.offer(c, 1.5, 1)
    assert level is not None and "replacing L0 (score 1)" in reason
    assert PLRConfig().eviction == "replay_support"


def test_easy_base_levels_count_their_edits(es_pool, cartpole):
    """ACCEL's easy base levels are the initial task edited num_edits times: population.csv
    said 0 edits for them."""
    from coevo.curricula.accel import ACCEL, ACCELConfig

    config = ACCELConfig(generations=2, buffer_size=6, tasks_per_step=3, num_edits=2)
    accel = ACCEL(config, space=cartpole, pool=es_pool, optimizer=_es(es_pool), seed=3)
    accel.run()
    frame = accel.population_frame()
    assert len(frame) and (frame["edits"] >= 2).all()


def test_value_scores_are_per_finished_episode_with_cut_ones_carried(ac_pool, cartpole):
    """gamma 0: each step's advantage is its reward (values 0), so a part's positive value
    loss is its mean reward. Rollout 1 ends one episode (1, 1, 1) and cuts the next after
    (2, 2, 2); rollout 2 ends that one after one more step (5). Training merges the cut part
    with its rest step-weighted, as dcd's partial updates: (2 * 3 + 5) / 4 = 2.75."""
    from coevo.pool.jobs import Stored
    from coevo.pool.trajectories import TrajectoryJob

    task = cartpole.initial_task()
    ends = np.array([0, 0, 1, 0, 0, 0], bool)
    first = _Stream(
        np.array([1, 1, 1, 2, 2, 2.0]), np.zeros(6), np.zeros(6), ends, np.zeros(6, bool)
    )
    then = _Stream(
        np.array([5, 0, 0, 0.0]),
        np.zeros(4),
        np.zeros(4),
        np.array([1, 0, 0, 0], bool),
        np.zeros(4, bool),
    )
    going_on = Continuation(reset_seed=1, actions=np.zeros(3, np.int64), episode_return=6.0)
    job1 = TrajectoryJob(Stored("k"), task, 0, 0, 6)
    job2 = TrajectoryJob(Stored("k"), task, 0, 0, 4, going_on)

    def score(plr, stream, job, trained):
        signal = Signal(task, 3.0, (stream,), jobs=(job,), trained=trained)
        return plr.level_score(plr.students[0], signal, None)

    plr = _plr(ac_pool, cartpole, _ppo(ac_pool, gamma=0.0, gae_lambda=0.0))
    # An evaluation: nothing goes on; dcd's mazes leave the cut ("cliffhanger") episode out.
    assert score(plr, first, job1, False) == (
        1.0,
        "positive value loss 1, 1 episode(s) scored, the cut one left out",
    )
    # ... unless no episode finished: then the cut one is the level's only score.
    none_ends = np.zeros(6, bool)
    unfinished = _Stream(np.full(6, 2.0), np.zeros(6), np.zeros(6), none_ends, none_ends)
    assert score(plr, unfinished, job1, False) == (
        2.0,
        "positive value loss 2, no episode finished: the cut one scored",
    )
    value, how = score(plr, first, job1, True)  # training: the cut part is carried
    assert value == 1.0 and how.endswith(
        "1 episode(s) scored, 1 unfinished carried to the next step"
    )
    assert score(plr, then, job2, True)[0] == pytest.approx(2.75)
    # dcd's after_update: the cut part is scored at the update.
    plr = _plr(
        ac_pool, cartpole, _ppo(ac_pool, gamma=0.0, gae_lambda=0.0), partial_episodes="commit"
    )
    assert score(plr, first, job1, True)[0] == 2.0
    assert score(plr, then, job2, True)[0] == 0.0  # (5) alone, then the cut (0, 0, 0) latest


def test_the_staleness_clock_ticks_on_draws_or_on_replays_only(cartpole):
    """`draws` (minimax 0.2): every level offered ages the buffer; `replays` (dcd): new
    levels enter fresh and age nothing, a level seen again ticks the clock."""
    from coevo.curricula.level_buffer import LevelBuffer, staleness_weights

    a, b, c = (cartpole.task(pole_length=v) for v in (0.2, 0.4, 0.6))

    def stale(buffer):
        return list(buffer.clock - np.array([lv.last_sampled for lv in buffer.levels]))

    for clock, after_new, after_seen_again in (
        ("draws", [2, 1, 0], [0, 2, 1]),
        ("replays", [0, 0, 0], [0, 1, 1]),
    ):
        buffer = LevelBuffer(4, 1.0, 0.5, 0.5, 0.5, staleness_clock=clock)
        for task in (a, b, c):
            buffer.offer(task, 1.0, 0)
        assert stale(buffer) == after_new, clock
        buffer.offer(a, 1.0, 1)  # seen again
        assert stale(buffer) == after_seen_again, clock
    assert staleness_weights([0, 0, 0], 0) == pytest.approx([1 / 3] * 3)
    assert PLRConfig().staleness_clock == "draws"
