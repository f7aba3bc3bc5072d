"""SFL (Sampling For Learnability, Rutherford et al. 2024) on a real local pool: the buffer
keeps the most learnable of the sampled levels, each step mixes buffer and fresh levels, and
runs are deterministic and resume exactly."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_support import SMALL_PPO, cli_in_process

from coevo.curricula.level_sampling import Signal
from coevo.curricula.sfl import SampleForLearnability, SFLConfig
from coevo.curricula.task_sampling import uniform_task
from coevo.errors import ConfigError
from coevo.optimizers.es import ESConfig, EvolutionStrategy
from coevo.pool import EvaluationPool
from coevo.pool.stats import is_runtime_column

TINY = SFLConfig(generations=6, levels_sampled=6, buffer_size=3, refresh_every=2, eval_episodes=2)


@pytest.fixture(scope="module")
def pool(cartpole, cartpole_policy):
    with EvaluationPool(cartpole, cartpole_policy, "local", 1, envs_per_worker=16) as pool:
        yield pool


def _build(pool, space, seed=3, **overrides):
    config = SFLConfig(**{**TINY.__dict__, **overrides})
    optimizer = EvolutionStrategy(ESConfig(population=4), pool.policy.num_params)
    return SampleForLearnability(config, space=space, pool=pool, optimizer=optimizer, seed=seed)


def _rows(results):
    summaries = [{k: v for k, v in r.summary.items() if not is_runtime_column(k)} for r in results]
    decisions = [d.as_row() for r in results for d in r.decisions]
    return pd.DataFrame(summaries), pd.DataFrame(decisions)


def _signal(task, solved_of):
    """A level's signal from hand-built episodes: `solved` of `episodes` reach 500."""
    solved, episodes = solved_of
    returns = tuple([500.0] * solved + [10.0] * (episodes - solved))
    mean = float(np.mean(returns)) if returns else float("nan")
    return Signal(task, mean, episode_returns=returns)


def test_the_buffer_keeps_the_most_learnable_levels_of_a_hand_built_scoring(pool, cartpole):
    sfl = _build(pool, cartpole, buffer_size=3)
    student = sfl.students[0]
    rng = np.random.default_rng(0)
    tasks = [uniform_task(cartpole, rng) for _ in range(7)]
    # (solved, episodes): learnability 0, 0.25, 0, 0.1875, 0.25, 0.16, none
    counts = [(0, 4), (2, 4), (4, 4), (1, 4), (5, 10), (1, 5), (0, 0)]
    signals = [_signal(t, c) for t, c in zip(tasks, counts, strict=True)]
    sfl.begin_generation()
    rows = sfl.refresh(student, signals)
    buffer = sfl.buffers[0]
    # Highest first; the two 0.25 ties keep the order they were sampled in.
    assert [lv.task for lv in buffer] == [tasks[1], tasks[4], tasks[3]]
    assert [lv.learnability for lv in buffer] == pytest.approx([0.25, 0.25, 0.1875])
    assert [(lv.solved, lv.episodes, lv.rank) for lv in buffer] == [
        (2, 4, 1),
        (5, 10, 2),
        (1, 4, 3),
    ]
    assert [r.outcome for r in rows] == [
        "dropped", "kept", "dropped", "kept", "kept", "dropped", "failed"
    ]  # fmt: skip
    assert "solved 1 of 4 episodes (return >= 475); rank 3 of 7 sampled: in the top 3" in (
        rows[3].reason
    )
    assert "rank 4 of 7 sampled: below the 3 kept (lowest kept 0.188)" in rows[5].reason
    assert "no learnability (no episode finished): never kept" in rows[6].reason
    assert all(r.threshold == pytest.approx(0.1875) for r in rows)
    frame = sfl.population_frame()
    assert list(frame["rank"]) == [1, 2, 3] and list(frame["refresh"]) == [1, 1, 1]
    # A later refresh replaces the whole buffer, as the reference's does.
    sfl.refresh(student, [_signal(tasks[0], (1, 2))])
    assert [lv.task for lv in sfl.buffers[0]] == [tasks[0]]


@pytest.mark.parametrize(
    ("share", "tasks_per_step", "from_buffer"),
    [(0.5, 4, 2), (0.75, 4, 3), (0.5, 3, 2), (0.0, 4, 0), (1.0, 4, 4)],
)
def test_each_step_mixes_buffer_and_fresh_levels_by_buffer_share(
    pool, cartpole, share, tasks_per_step, from_buffer
):
    sfl = _build(pool, cartpole, buffer_share=share, tasks_per_step=tasks_per_step)
    student = sfl.students[0]
    rng = np.random.default_rng(1)
    kept = [uniform_task(cartpole, rng) for _ in range(3)]
    sfl.begin_generation()
    sfl.refresh(student, [_signal(t, (1, 2)) for t in kept])
    drawn = []
    for _ in range(200):
        plan = sfl.plan(student, [])
        assert not plan.score and len(plan.train) == tasks_per_step
        assert all(t in kept for t in plan.train[:from_buffer])
        assert not any(t in kept for t in plan.train[from_buffer:])  # fresh uniform draws
        drawn.extend(plan.train[:from_buffer])
    if from_buffer:  # uniform over the buffer, with replacement
        shares = [drawn.count(t) / len(drawn) for t in kept]
        assert shares == pytest.approx([1 / 3] * 3, abs=0.06)


def test_an_empty_buffer_trains_on_fresh_levels_only(pool, cartpole):
    sfl = _build(pool, cartpole)
    sfl.begin_generation()
    sfl.refresh(sfl.students[0], [Signal(uniform_task(cartpole, np.random.default_rng(2)), 0.0)])
    assert sfl.buffers[0] == []
    plan = sfl.plan(sfl.students[0], [])
    assert len(plan.train) == TINY.tasks_per_step and plan.note == ("train", [])


def test_refreshes_come_every_refresh_every_steps_and_rows_say_why(pool, cartpole):
    sfl = _build(pool, cartpole, generations=7, refresh_every=2)
    results = sfl.run()
    refreshes = [r.summary["refreshes"] for r in results]
    assert refreshes == [1, 0, 0, 1, 0, 0, 1]  # first, then after 2 optimizer steps each
    assert sfl.students[0].steps == 4
    decisions = [d for r in results for d in r.decisions]
    sampled = [d for d in decisions if d.rule == "sample_for_learnability"]
    assert len(sampled) == 3 * TINY.levels_sampled
    assert sum(d.outcome == "kept" for d in sampled) == 3 * TINY.buffer_size
    assert all("scored without training; learnability" in d.reason for d in sampled)
    buffer = [d for d in decisions if d.rule == "buffer"]
    assert buffer and all("drawn uniformly from the buffer" in d.reason for d in buffer)
    assert all("kept at refresh" in d.reason and "learnability" in d.reason for d in buffer)
    assert sum(r.summary["buffer_tasks"] for r in results) == 4 * 2  # 4 steps x 2 of 4 tasks
    assert sum(r.summary["fresh_tasks"] for r in results) == 4 * 2
    assert results[-1].summary["level_score"] == "learnability"


def test_runs_are_deterministic_per_seed(pool, cartpole):
    first = _rows(_build(pool, cartpole, seed=5).run())
    again = _rows(_build(pool, cartpole, seed=5).run())
    other = _rows(_build(pool, cartpole, seed=6).run())
    pd.testing.assert_frame_equal(first[1], again[1])
    pd.testing.assert_frame_equal(first[0], again[0])
    assert not first[1]["task_id"].equals(other[1]["task_id"])


def test_state_dict_continues_exactly_like_an_undisturbed_run(pool, cartpole):
    whole = _build(pool, cartpole)
    expected = _rows(whole.run())
    first = _build(pool, cartpole)
    head = first.run(2)  # stops between refreshes, buffer full
    saved = pickle.loads(pickle.dumps(first.state_dict()))
    second = _build(pool, cartpole)
    second.load_state_dict(saved)
    got = _rows(head + second.run())
    pd.testing.assert_frame_equal(got[0], expected[0])
    pd.testing.assert_frame_equal(got[1], expected[1])
    pd.testing.assert_frame_equal(second.population_frame(), whole.population_frame())
    np.testing.assert_array_equal(second.students[0].theta, whole.students[0].theta)


def test_a_space_that_cannot_say_what_success_is_is_refused(pool, cartpole):
    from dataclasses import replace

    blind = replace(cartpole, solved_score=None)
    with pytest.raises(ConfigError, match="task.solved_score"):
        SampleForLearnability.check_space(TINY, blind)


@pytest.mark.parametrize("optimizer", [("optimizer=es",), SMALL_PPO], ids=["es", "ppo"])
def test_coevo_run_curriculum_sfl_end_to_end(optimizer, tmp_path):
    done = cli_in_process(
        "coevo-run",
        "pool=local",
        "curriculum=sfl",
        "curriculum.generations=4",
        "curriculum.levels_sampled=4",
        "curriculum.buffer_size=2",
        "curriculum.refresh_every=2",
        "curriculum.eval_episodes=2",
        "curriculum.tasks_per_step=2",
        "test_set.size=4",
        "test_set.every=4",
        *optimizer,
        f"hydra.run.dir={tmp_path}",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "refreshes" in done.stdout
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert list(summary["refreshes"]) == [1, 0, 0, 1]
    assert summary["optimizer_steps"].iloc[-1] == 2
    decisions = pd.read_csv(tmp_path / "eligibility.csv")
    assert (decisions["rule"] == "sample_for_learnability").sum() == 8
    assert set(decisions["rule"]) >= {"sample_for_learnability", "buffer", "fresh"}
    population = pd.read_csv(tmp_path / "population.csv")
    assert len(population) == 2 and set(population["refresh"]) == {2}
    assert Path(tmp_path / "config.yaml").exists()


def test_a_buffer_larger_than_the_sample_is_refused(pool):
    optimizer = EvolutionStrategy(ESConfig(population=4), pool.policy.num_params)
    config = SFLConfig(**{**TINY.__dict__, "buffer_size": 7, "levels_sampled": 6})
    with pytest.raises(ConfigError, match="curriculum.buffer_size.*levels_sampled 6"):
        SampleForLearnability.check(config, optimizer)


def test_student_zero_is_the_same_alone_or_beside_others(pool, cartpole):
    alone = _rows(_build(pool, cartpole, policies=1).run())[1]
    beside = _rows(_build(pool, cartpole, policies=2).run())[1]
    pd.testing.assert_frame_equal(
        beside[beside["pair_id"] == 0].reset_index(drop=True), alone.reset_index(drop=True)
    )


def test_a_policy_that_solves_some_levels_keeps_the_half_solved_ones_first(
    pool, cartpole, cartpole_solver
):
    """With a CartPole solver, the refresh ranks first the levels it solves in some episodes
    and not others (0 < p < 1), ahead of those it always or never solves."""
    config = SFLConfig(generations=1, levels_sampled=40, buffer_size=5, eval_episodes=6)
    optimizer = EvolutionStrategy(ESConfig(population=4), pool.policy.num_params)
    sfl = SampleForLearnability(
        config,
        space=cartpole,
        pool=pool,
        optimizer=optimizer,
        seed=0,
        initial_theta=cartpole_solver,
    )
    (result,) = sfl.run()
    sampled = [d for d in result.decisions if d.rule == "sample_for_learnability"]
    learnable = [d for d in sampled if d.score > 0]
    assert 0 < len(learnable) < config.buffer_size  # on this seed: 3 of 40
    assert all(d.outcome == "kept" for d in learnable)
    buffer = sfl.buffers[0]
    assert [lv.learnability for lv in buffer[: len(learnable)]] == sorted(
        (d.score for d in learnable), reverse=True
    )
    assert all(0 < lv.solved < lv.episodes for lv in buffer[: len(learnable)])
    assert all(lv.learnability == 0 for lv in buffer[len(learnable) :])


def test_the_config_file_picks_the_dataclass_defaults():
    import yaml

    from coevo import hydra_configs
    from coevo.config import parse_config

    root = Path(__file__).resolve().parents[2]
    text = yaml.safe_load((root / "conf" / "curriculum" / "sfl.yaml").read_text())
    assert text == {"defaults": ["sfl_defaults", "_self_"]}
    composed = parse_config(hydra_configs.compose(root / "conf", ["curriculum=sfl"]))
    assert composed.curriculum == SFLConfig()


def test_the_sampler_draws_and_decides_as_the_curriculum_student_zero(pool, cartpole):
    """`sampler("sfl")` on SFL's own rules: with student 0's generator and the same episodes
    it scores the levels student 0 plans, keeps the same buffer with the same rows, hands out
    each step's planned tasks, and refreshes after refresh_every steps of tasks."""
    from coevo.curricula.level_sampling import Outcome
    from coevo.curricula.sampler import sampler

    sfl = _build(pool, cartpole, seed=4)
    student = sfl.students[0]
    settings = {k: getattr(TINY, k) for k in ("levels_sampled", "buffer_size", "eval_episodes")}
    s = sampler("sfl", cartpole, seed=4, refresh_every=TINY.refresh_every, **settings)
    # The run's student 0 drew its parameters from its generator first: the same state here.
    s.rng.bit_generator.state = student.rng.bit_generator.state
    sfl.begin_generation()
    plan = sfl.plan(student, [])
    returns = {}  # level i solves its first i % 3 of 2 episodes: learnability 0 or 0.25
    for n in range(TINY.levels_sampled * TINY.eval_episodes):
        task = s.sample()
        assert task == plan.score[n // 2] and s.scoring(task)
        returns.setdefault(task, []).append(500.0 if n % 2 < (n // 2) % 3 else 10.0)
        s.update(task, episode_return=returns[task][-1], episode_length=1)
    signals = [
        Signal(t, float(np.mean(returns[t])), episode_returns=tuple(returns[t])) for t in plan.score
    ]
    expected = pd.DataFrame([d.as_row() for d in sfl.refresh(student, signals)])
    got = s.decisions_frame()
    same = ["rule", "outcome", "task_id", "task", "score", "threshold", "error"]
    pd.testing.assert_frame_equal(got[same], expected[same])
    tail = [r.split(": ", 1)[1] for r in got.reason]  # after "refresh 1 at/after ..."
    assert tail == [r.split(": ", 1)[1] for r in expected.reason]
    assert s.buffer == sfl.buffers[0] and list(got.score > 0).count(True) == 2
    for _ in range(TINY.refresh_every):
        plan = sfl.plan(student, [])
        step = [s.sample() for _ in range(TINY.tasks_per_step)]
        assert step == plan.train
        for task in step:
            s.update(task, episode_return=9.0, episode_length=9)
        trained = Outcome(trained=[Signal(t, 9.0) for t in plan.train], scored=[])
        rows = sfl._training_rows(student, plan, plan.note[1], trained)
        assert [r.reason for r in s.decisions()[-len(step) :]] == [r.reason for r in rows]
    student.steps = TINY.refresh_every  # the run's refresh is due after its steps
    plan = sfl.plan(student, [])
    assert [s.sample() for _ in range(2)] == [plan.score[0]] * 2
