"""The single-policy curricula (dr, plr, accel, alp_gmm) on a real local pool: what they pick
and why, their tables, and exact continuation from a state_dict."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from phrases import assert_says

from coevo.curricula.accel import ACCEL, ACCELConfig
from coevo.curricula.alp_gmm import ALPGMM, ALPGMMConfig
from coevo.curricula.dr import DomainRandomization, DRConfig
from coevo.curricula.level_sampling import Signal
from coevo.curricula.plr import PLRConfig, PrioritizedLevelReplay
from coevo.errors import ConfigError
from coevo.optimizers.es import ESConfig, EvolutionStrategy
from coevo.pool import EvaluationPool
from coevo.pool.stats import is_runtime_column

TINY = {
    "dr": (DomainRandomization, DRConfig(generations=4)),
    # return_regret named: these tests check the buffer's rules on scores known by hand (ES
    # would score by learnability, 0 for every level an untrained policy never solves).
    "plr": (
        PrioritizedLevelReplay,
        PLRConfig(generations=6, buffer_size=6, tasks_per_step=3, score="return_regret"),
    ),
    "accel": (
        ACCEL,
        ACCELConfig(generations=6, buffer_size=6, tasks_per_step=3, score="return_regret"),
    ),
    "alp_gmm": (
        ALPGMM,
        ALPGMMConfig(generations=6, fit_rate=8, bootstrap=8, max_components=3, tasks_per_step=4),
    ),
}


@pytest.fixture(scope="module")
def pool(cartpole, cartpole_policy):
    with EvaluationPool(cartpole, cartpole_policy, "local", 1, envs_per_worker=16) as pool:
        yield pool


def _build(name, pool, space, seed=3, **overrides):
    cls, config = TINY[name]
    if overrides:
        config = type(config)(**{**config.__dict__, **overrides})
    optimizer = EvolutionStrategy(ESConfig(population=4), pool.policy.num_params)
    return cls(config, space=space, pool=pool, optimizer=optimizer, seed=seed)


def _rows(results):
    summaries = [{k: v for k, v in r.summary.items() if not is_runtime_column(k)} for r in results]
    decisions = [d.as_row() for r in results for d in r.decisions]
    return pd.DataFrame(summaries), pd.DataFrame(decisions)


@pytest.mark.parametrize("name", list(TINY))
def test_state_dict_continues_exactly_like_an_undisturbed_run(name, pool, cartpole):
    whole = _build(name, pool, cartpole)
    expected = _rows(whole.run())

    first = _build(name, pool, cartpole)
    head = first.run(3)
    saved = pickle.loads(pickle.dumps(first.state_dict()))
    second = _build(name, pool, cartpole)
    second.load_state_dict(saved)
    tail = second.run()
    got = _rows(head + tail)
    pd.testing.assert_frame_equal(got[0], expected[0])
    pd.testing.assert_frame_equal(got[1], expected[1])
    pd.testing.assert_frame_equal(second.population_frame(), whole.population_frame())
    for a, b in zip(second.students, whole.students, strict=True):
        np.testing.assert_array_equal(a.theta, b.theta)


def test_dr_trains_on_uniform_tasks_and_keeps_their_history(pool, cartpole):
    dr = _build("dr", pool, cartpole)
    results = dr.run()
    decisions = [d for r in results for d in r.decisions]
    assert len(decisions) == 4 * 4  # generations x tasks_per_step
    assert {d.rule for d in decisions} == {"sample"}
    assert all(
        d.reason.startswith("uniform task from the space; training return") for d in decisions
    )
    assert dr.students[0].steps == 4
    frame = dr.population_frame()
    params = [f"task.{name}" for name in sorted(cartpole.names)]
    assert list(frame.columns) == ["student", "generation", "task_id", *params, "train_return"]
    assert len(frame) == 16 and frame["task_id"].nunique() == 16


def test_plr_trains_only_on_replayed_levels_and_explains_each_pick(pool, cartpole):
    plr = _build("plr", pool, cartpole, generations=8)
    results = plr.run()
    decisions = [d for r in results for d in r.decisions]
    replays = sum(r.summary["replays"] for r in results)
    new_batches = sum(r.summary["new_batches"] for r in results)
    assert replays + new_batches == 8 and replays > 0 and new_batches > 0
    assert plr.students[0].steps == replays  # PLR⊥: no gradient step on new levels
    replayed = [d for d in decisions if d.rule == "replay"]
    assert len(replayed) == 3 * replays
    assert all("replayed level L" in d.reason and ", rank " in d.reason for d in replayed)
    assert all("staleness" in d.reason for d in replayed)
    new = [d for d in decisions if d.rule == "new_level"]
    assert all("evaluated without training: return regret" in d.reason for d in new)
    assert {d.outcome for d in new} <= {"added", "rescored", "rejected"}
    frame = plr.population_frame()
    assert len(frame) == 6  # the full buffer
    assert frame["replay_probability"].sum() == pytest.approx(1.0)
    assert set(frame["rank"]) <= set(range(1, 7))
    assert results[-1].summary["level_score"] == "return_regret"


def test_accel_edits_replayed_levels_and_counts_edits(pool, cartpole):
    accel = _build("accel", pool, cartpole, generations=8, replay_prob=0.9)
    results = accel.run()
    edits = [d for r in results for d in r.decisions if d.rule == "edit"]
    assert edits, "replays must produce edited levels"
    for d in edits:
        assert d.reason.startswith(f"new level from mutation of L{d.parent_id} (1 edit(s)")
    frame = accel.population_frame()
    children = frame[frame["parent_id"].notna()]
    for _, child in children.iterrows():
        parent = frame[frame["level_id"] == child["parent_id"]]
        if len(parent):  # the parent may have left the buffer since
            assert child["edits"] == parent["edits"].iloc[0] + 1
    assert (frame["edits"] >= 1).all()  # easy base levels are edited initial tasks


def test_alp_gmm_fits_and_samples_from_components(pool, cartpole):
    teacher_run = _build("alp_gmm", pool, cartpole)
    results = teacher_run.run()
    decisions = [d for r in results for d in r.decisions]
    assert sum(r.summary["fits"] for r in results) == 3  # at 8, 16, 24 tasks recorded
    origins = {d.outcome for d in decisions}
    assert {"bootstrap", "gmm"} <= origins
    gmm = [d for d in decisions if d.outcome == "gmm"]
    assert all(d.reason.startswith("sampled from GMM component ") for d in gmm)
    frame = teacher_run.population_frame()
    assert len(frame) == 24 and list(frame.columns)[-2:] == ["return", "alp"]
    for _, row in frame.iterrows():
        cartpole.check(cartpole.task(**{n: row[f"task.{n}"] for n in cartpole.names}))


def test_student_zero_is_the_same_alone_or_beside_others(pool, cartpole):
    alone = _build("plr", pool, cartpole, policies=1)
    together = _build("plr", pool, cartpole, policies=2)
    alone.run()
    together.run()
    np.testing.assert_array_equal(alone.students[0].theta, together.students[0].theta)
    first = together.population_frame()
    pd.testing.assert_frame_equal(
        first[first["student"] == 0].reset_index(drop=True), alone.population_frame()
    )
    assert not np.array_equal(together.students[0].theta, together.students[1].theta)


def test_value_scores_without_a_critic_fall_back_or_refuse(pool, cartpole):
    with pytest.raises(ConfigError, match="curriculum.score.*needs the value predictions"):
        _build("plr", pool, cartpole, score="positive_value_loss", score_fallback="none")
    plr = _build("plr", pool, cartpole, score="max_mc")
    assert plr.score_used == "learnability"
    _build("plr", pool, cartpole, score="return_regret", score_fallback="none")  # no critic needed


class _Trajectory:
    """An episode as an actor-critic optimizer returns it: rewards and value predictions."""

    def __init__(self, rewards, values, last_value=0.0):
        self.ret = float(sum(rewards))
        self.rewards, self.values, self.last_value = rewards, values, last_value


def test_value_scores_are_used_when_results_carry_values(pool, cartpole):
    plr = _build("plr", pool, cartpole, gamma=1.0, gae_lambda=1.0)
    plr.score_used = "positive_value_loss"  # as with an optimizer that provides values
    task = cartpole.initial_task()
    signal = Signal(task, 2.0, (_Trajectory([1, 0, 1], [0.5, 0.5, 0.5]),))
    score, how = plr.level_score(plr.students[0], signal, None)
    assert score == pytest.approx(2.5 / 3) and how.startswith("positive value loss 0.833")
    plr.score_used = "max_mc"
    score, how = plr.level_score(plr.students[0], signal, None)
    assert score == pytest.approx(1.5) and "R_max 2)" in how  # mean(2 - 0.5)
    plain = Signal(task, 2.0, ())
    score, how = plr.level_score(plr.students[0], plain, None)
    assert how.startswith("return regret")


def test_levels_scored_together_share_one_best_return_whatever_their_order(pool, cartpole):
    """return_regret's anchor (the best return so far) takes the whole batch in before any
    level of it is scored: a level listed before a better one is not scored 0."""
    from coevo.curricula.level_sampling import Outcome, Plan

    plr = _build("plr", pool, cartpole)
    plr.begin_generation()
    student = plr.students[0]
    tasks = [cartpole.task(gravity=g) for g in (12.0, 11.0, 10.0)]
    signals = [Signal(t, r) for t, r in zip(tasks, (-0.6, -0.6, -0.2), strict=True)]
    decisions = []
    plan = Plan(score=tasks, note=("new", "a new batch", None))
    plr.observe(student, plan, Outcome(trained=[], scored=signals), decisions)
    assert [d.score for d in decisions] == pytest.approx([0.4, 0.4, 0.0])
    assert "best return -0.2 - return -0.6" in decisions[0].reason
    # Replayed levels likewise: rescored against the best of the replay batch.
    from coevo.curricula.level_buffer import Pick

    buffer = plr.buffers[student.index]
    levels = [lv for lv in buffer.levels if lv.task in tasks[:2]]
    picks = [Pick(level, 0.5, 1, 0, len(buffer), level.score) for level in levels]
    trained = [Signal(lv.task, r) for lv, r in zip(levels, (-0.5, 0.3), strict=True)]
    replayed = []
    plan = Plan(train=[lv.task for lv in levels], note=("replay", "a replay", picks))
    plr.observe(student, plan, Outcome(trained=trained, scored=[]), replayed)
    assert [d.score for d in replayed] == pytest.approx([0.8, 0.0])


def test_a_buffer_that_new_levels_stop_filling_is_warned_of_once(pool, cartpole, caplog):
    """Few distinct new levels (int levels, easy base levels) can leave the buffer short of
    replay's fill forever, and the policy untrained: the run says so after 10 batches."""
    from coevo.curricula.level_sampling import Outcome, Plan

    plr = _build("plr", pool, cartpole, buffer_size=8)
    plr.begin_generation()
    student = plr.students[0]
    same = [cartpole.task(gravity=g) for g in (10.0, 11.0)]  # the only two levels it ever sees
    with caplog.at_level("WARNING", logger="coevo.curricula"):
        for _ in range(25):
            outcome = Outcome(trained=[], scored=[Signal(t, 1.0) for t in same])
            plr.observe(student, Plan(score=same, note=("new", "new", None)), outcome, [])
    warned = [r.getMessage() for r in caplog.records if "new-level batches" in r.getMessage()]
    assert len(warned) == 1
    assert warned[0].startswith("policy_0: the level buffer has held 2 levels for 10 new-level")
    assert "needs 4 (min_fill 0.5 x buffer_size 8)" in warned[0]


@pytest.mark.parametrize(
    ("name", "short", "enough", "says"),
    [
        # PLR⊥: replay (the only training) starts at min_fill 0.5 x 64 = 32 new levels
        ("plr", {"generations": 7}, {"generations": 8}, "buffer_size 64 levels (32), but 7"),
        ("accel", {"generations": 7}, {"generations": 8}, "buffer_size 64 levels (32), but 7"),
        # ALP-GMM's first mixture after `bootstrap` tasks: DR until then
        ("alp_gmm", {"generations": 1}, {"generations": 2}, "bootstrap tasks (8), but 1"),
    ],
)
def test_a_run_too_short_for_the_curriculum_to_start_is_warned_of(
    name, short, enough, says, pool, cartpole, caplog
):
    tasks = {"tasks_per_step": 4, "buffer_size": 64} if name != "alp_gmm" else {}
    with caplog.at_level("WARNING", logger="coevo.curricula"):
        _build(name, pool, cartpole, **tasks, **enough)
        assert not [r for r in caplog.records if "would never start" in r.getMessage()]
        _build(name, pool, cartpole, **tasks, **short)
    warned = [r.getMessage() for r in caplog.records if "would never start" in r.getMessage()]
    assert len(warned) == 1 and warned[0].startswith(f"{name}: ") and says in warned[0]


def test_more_tasks_per_step_than_es_pairs_is_refused(pool, cartpole):
    with pytest.raises(ConfigError, match="curriculum.tasks_per_step.*allowed: 1..4"):
        _build("dr", pool, cartpole, tasks_per_step=5)


@pytest.mark.parametrize("name", list(TINY))
def test_config_file_picks_the_dataclass_defaults(name):
    """conf/curriculum/NAME.yaml only picks NAME_defaults: each default stated once, in code."""
    import yaml

    from coevo import curricula, hydra_configs
    from coevo.config import parse_config

    root = Path(__file__).resolve().parents[2]
    text = yaml.safe_load((root / "conf" / "curriculum" / f"{name}.yaml").read_text())
    assert text == {"defaults": [f"{name}_defaults", "_self_"]}
    composed = parse_config(hydra_configs.compose(root / "conf", [f"curriculum={name}"]))
    assert composed.curriculum == curricula.get(name).config_class()


def test_a_critic_is_recognised_by_declaration_or_by_a_value_head():
    from types import SimpleNamespace

    from coevo.curricula.level_sampling import has_critic

    assert has_critic(SimpleNamespace(provides_values=True))
    assert not has_critic(SimpleNamespace(provides_values=False, policy=None))
    value_head = SimpleNamespace(values=lambda params, obs: obs)
    assert has_critic(SimpleNamespace(policy=value_head))  # PPO keeps its actor-critic spec
    assert not has_critic(EvolutionStrategy(ESConfig(), 10))


ALP_GMM_UNFIT = [
    ("curriculum.bootstrap=4", "curriculum.bootstrap: must be >= curriculum.fit_rate (8)"),
    ("curriculum.max_components=9", "curriculum.fit_rate: must be >= curriculum.max_comp"),
    ("curriculum.min_components=4", "curriculum.min_components: must be <= curriculum.max"),
]


def test_alp_gmm_settings_that_cannot_fit_exit_2_before_any_worker(tmp_path):
    # Every case in one fresh process (coevo-run's entry function, the default Ray pool):
    # exit 2 naming the setting, and Ray not yet imported, so no worker started.
    from cli_support import refusals_in_a_fresh_process

    fitting = ["curriculum.fit_rate=8", "curriculum.bootstrap=8", "curriculum.max_components=3"]
    cases = [["curriculum=alp_gmm", *fitting, override] for override, _ in ALP_GMM_UNFIT]
    results = refusals_in_a_fresh_process(cases, tmp_path)
    for (override, message), (code, stderr, ray_imported) in zip(
        ALP_GMM_UNFIT, results, strict=True
    ):
        assert (code, ray_imported) == (2, False), (override, stderr[-2000:])
        assert message in stderr, (override, stderr[-2000:])


def test_plr_counts_a_level_already_in_its_buffer_as_rescored_not_added(cartpole, cartpole_policy):
    """With two possible tasks, most new levels are ones the buffer holds: the summary's
    levels_added counts only the levels the decisions say were added."""
    import dataclasses

    from coevo.tasks.task import Param

    params = tuple(
        Param("gravity", 9.0, 10.0, 9.0, 1.0, round_to=1.0)
        if p.name == "gravity"
        else Param(p.name, p.init, p.init, p.init, 0.0)
        for p in cartpole.params
    )
    two_tasks = dataclasses.replace(cartpole, params=params)
    with EvaluationPool(two_tasks, cartpole_policy, "local", 1, envs_per_worker=8) as pool:
        plr = _build("plr", pool, two_tasks, generations=8, replay_prob=0.3)
        results = plr.run()
    new = [d for r in results for d in r.decisions if d.rule == "new_level"]
    added = [d for d in new if "added as L" in d.reason]
    known = [d for d in new if "already in buffer" in d.reason]
    assert known, "the test needs offers of levels the buffer already holds"
    assert {d.outcome for d in added} == {"added"} and {d.outcome for d in known} == {"rescored"}
    assert sum(r.summary["levels_added"] for r in results) == len(added) <= 2
    assert sum(r.summary["levels_rejected"] for r in results) == sum(
        d.outcome == "rejected" for d in new
    )


@pytest.mark.parametrize("curriculum", ["dr", "poet"])
def test_a_space_other_than_the_pools_is_refused_when_built(curriculum, pool, cartpole):
    """DR on pendulum with a CartPole pool stepped with every episode failing and raised a
    KeyError at generation 3; now the shared base refuses it, naming both spaces. The same
    registered space fetched again (another object) is the same space."""
    from coevo import tasks
    from coevo.curricula.poet import Poet, PoetConfig

    def build(space):
        optimizer = EvolutionStrategy(ESConfig(population=4), pool.policy.num_params)
        if curriculum == "poet":
            return Poet(PoetConfig(), space=space, pool=pool, optimizer=optimizer)
        return DomainRandomization(
            DRConfig(tasks_per_step=2), space=space, pool=pool, optimizer=optimizer
        )

    again = tasks.get("cartpole")
    assert again is not cartpole
    build(again)
    with pytest.raises(
        ConfigError,
        match=r"^space: the curriculum's task space is not the pool's: 'pendulum' \(gravity, "
        r"mass, length\) here, 'cartpole' \(pole_length, .*\) in the pool",
    ):
        build(tasks.get("pendulum"))
    narrower = tasks.get("cartpole", {"gravity": {"high": 20.0}})
    with pytest.raises(
        ConfigError, match=r"^space: .* gravity \[2, 20\] init 9.8 .* here, gravity \[2, 30\] "
    ):
        build(narrower)


@pytest.mark.parametrize("optimizer", ["es", "ars", "ppo"])
@pytest.mark.parametrize("curriculum", ["dr", "poet"])
def test_an_optimizer_built_for_another_parameter_count_is_refused(
    curriculum, optimizer, pool, cartpole
):
    """EvolutionStrategy(ESConfig(population=4), 10) with a 114-parameter policy failed at
    the first step with numpy's broadcast error; the shared base refuses it when built."""
    from coevo import optimizers
    from coevo.curricula.poet import Poet, PoetConfig

    cls = optimizers.get(optimizer)
    wrong = cls(cls.config_class(), 10)
    needed = pool.policy.num_params
    with pytest.raises(
        ConfigError,
        match=rf"^optimizer: built for 10 parameters; the pool's policy has {needed} \(",
    ):
        if curriculum == "poet":
            Poet(PoetConfig(), space=cartpole, pool=pool, optimizer=wrong)
        else:
            DomainRandomization(
                DRConfig(tasks_per_step=2), space=cartpole, pool=pool, optimizer=wrong
            )


@pytest.mark.parametrize("name", ["poet", "enhanced_poet", "dr", "plr", "accel", "alp_gmm"])
def test_a_config_of_another_class_is_refused_naming_the_one_needed(name, pool, cartpole):
    """Poet({"generations": 3}) and Poet(DRConfig()) raised AttributeError 'novelty'."""
    from coevo import curricula

    cls = curricula.get(name)
    wanted = cls.config_class.__name__
    article = "an" if wanted[0] in "AE" else "a"
    optimizer = EvolutionStrategy(ESConfig(population=4), pool.policy.num_params)
    other = DRConfig() if name != "dr" else PLRConfig()
    for config, got in (({"generations": 3}, "dict"), (other, type(other).__name__)):
        with pytest.raises(TypeError) as info:
            cls(config, space=cartpole, pool=pool, optimizer=optimizer)
        message = str(info.value)
        assert message.startswith(f"{cls.__name__} needs {article} {wanted} (or a subclass), ")
        assert f"got {got}" in message
    with pytest.raises(TypeError, match=rf"got dict; from a mapping: {wanted}\(\*\*values\)$"):
        cls({"generations": 3}, space=cartpole, pool=pool, optimizer=optimizer)


@pytest.mark.parametrize("name", ["poet", "dr"])
def test_constructor_arguments_of_the_wrong_kind_are_refused_by_name(name, pool, cartpole):
    """Each of these failed later: an AttributeError deep inside, or numpy's seed error."""
    from coevo import curricula

    cls = curricula.get(name)
    es = EvolutionStrategy(ESConfig(population=4), pool.policy.num_params)
    parts = {"space": cartpole, "pool": pool, "optimizer": es, "seed": 0}
    wrong = {
        "seed": (-1, ValueError, "seed must be an integer >= 0, got -1"),
        "optimizer": (ESConfig(), TypeError, "optimizer must be an Optimizer, e.g. Evolution"),
        "pool": (None, TypeError, "pool must be an EvaluationPool(space, policy, ...), got None"),
        "space": ("cartpole", TypeError, "space must be a TaskSpace, e.g. coevo.tasks.get("),
        "initial_theta": ("x.npy", TypeError, "initial_theta takes the parameter vector, not"),
    }
    for argument, (value, error, message) in wrong.items():
        with pytest.raises(error) as info:
            cls(cls.config_class(), **{**parts, argument: value})
        assert str(info.value).startswith(message), info.value
    assert "(a config: build the optimizer from it)" in str(
        pytest.raises(
            TypeError, cls, cls.config_class(), **{**parts, "optimizer": ESConfig()}
        ).value
    )
    cls(cls.config_class(), **{**parts, "seed": np.int64(3)})  # numpy ints are ints


def test_an_optimizer_refuses_a_parameter_count_that_is_not_a_positive_integer():
    for given in (0, -3, 10.0, True):
        with pytest.raises(
            ValueError, match=rf"num_params must be an integer >= 1 .*got {given!r}$"
        ):
            EvolutionStrategy(ESConfig(), given)
    assert EvolutionStrategy(ESConfig(), np.int64(5)).num_params == 5


def test_a_state_that_does_not_fit_is_refused_before_anything_is_loaded(pool, cartpole):
    """Another policy size loaded and failed at the next step; another student count was
    loaded half way (zip() error after generation and weights were replaced)."""
    from coevo.curricula.poet import Poet, PoetConfig
    from coevo.policies import MLPPolicy

    env = cartpole.make_env()
    small = MLPPolicy.for_spaces(env.observation_space, env.action_space, hidden=(8,))
    with EvaluationPool(cartpole, small, "local", 1, envs_per_worker=16) as other_pool:
        es_small = EvolutionStrategy(ESConfig(population=4), small.num_params)
        dr_small = DomainRandomization(
            DRConfig(tasks_per_step=1), space=cartpole, pool=other_pool, optimizer=es_small
        )
        dr_small.step()
        poet_small = Poet(PoetConfig(), space=cartpole, pool=other_pool, optimizer=es_small)
        poet_small.step()
    es = EvolutionStrategy(ESConfig(population=4), pool.policy.num_params)
    dr = DomainRandomization(DRConfig(tasks_per_step=1), space=cartpole, pool=pool, optimizer=es)
    two = DomainRandomization(
        DRConfig(tasks_per_step=1, policies=2), space=cartpole, pool=pool, optimizer=es
    )
    two.step()
    poet = Poet(PoetConfig(), space=cartpole, pool=pool, optimizer=es)
    before = dr.students[0].theta.copy()
    cases = [
        (
            dr,
            dr_small.state_dict(),
            "state: its policy 0 has 58 parameters; this pool's policy "
            "has 114: the state is of a run with another policy",
        ),
        (dr, two.state_dict(), "state: holds 2 students; this curriculum has 1"),
        (dr, {"weights": [1, 2]}, "state: lacks generation, students, last_returns, curriculum"),
        (poet, poet_small.state_dict(), "state: its policy 0 has 58 parameters"),
    ]
    for target, state, message in cases:
        with pytest.raises(ConfigError) as refused:
            target.load_state_dict(state)
        assert str(refused.value).startswith(message), refused.value
        assert target.generation == 0  # nothing was loaded
    np.testing.assert_array_equal(dr.students[0].theta, before)
    accel = ACCEL(ACCELConfig(), space=cartpole, pool=pool, optimizer=es)
    with pytest.raises(
        ConfigError, match="^state: saved by a DomainRandomization curriculum; this is an ACCEL"
    ):
        accel.load_state_dict(dr.state_dict())


def test_a_state_of_another_curriculum_is_refused_and_an_old_state_still_loads(pool, cartpole):
    """DomainRandomization.load_state_dict(poet.state_dict()) raised KeyError 'students'.
    States now say their kind; one saved before they did (no 'kind') loads as it did."""
    from coevo.curricula.poet import EnhancedPoet, EnhancedPoetConfig, Poet, PoetConfig

    optimizer = EvolutionStrategy(ESConfig(population=4), pool.policy.num_params)
    poet = Poet(PoetConfig(), space=cartpole, pool=pool, optimizer=optimizer)
    dr = _build("dr", pool, cartpole)
    with pytest.raises(
        ConfigError,
        match=r"^state: saved by a Poet curriculum; this is a DomainRandomization: load a "
        r"state_dict\(\) of the same curriculum$",
    ):
        dr.load_state_dict(poet.state_dict())
    with pytest.raises(ConfigError, match=r"^state: saved by a DomainRandomization curriculum"):
        _build("plr", pool, cartpole).load_state_dict(dr.state_dict())
    # Enhanced POET is POET's loop: POET's state is its own.
    enhanced = EnhancedPoet(EnhancedPoetConfig(), space=cartpole, pool=pool, optimizer=optimizer)
    enhanced.load_state_dict(poet.state_dict())

    whole = _build("dr", pool, cartpole)
    expected = _rows(whole.run())
    first = _build("dr", pool, cartpole)
    head = first.run(2)
    old = pickle.loads(pickle.dumps(first.state_dict()))
    assert old.pop("kind") == "DomainRandomization"
    second = _build("dr", pool, cartpole)
    second.load_state_dict(old)
    got = _rows(head + second.run())
    pd.testing.assert_frame_equal(got[0], expected[0])
    pd.testing.assert_frame_equal(got[1], expected[1])


class FirstTaskOnly(EvolutionStrategy):
    """An optimizer that plays only the first of the tasks it is given and declares no
    task_capacity() (as the docs' HillClimber once did)."""

    def ask(self, theta, state, tasks, rng, register):
        return super().ask(theta, state, tasks[:1], rng, register)

    def task_capacity(self):
        return None


@pytest.mark.parametrize("name", list(TINY))
def test_a_training_task_the_optimizer_put_no_job_on_is_not_played(name, pool, cartpole):
    """DR wrote 'trained' rows with return NaN and counted tasks_trained 4 for 3 tasks no
    episode ran on (PLR and ALP-GMM would have scored or recorded them); now such a task
    has one 'not_played' row and counts nowhere."""
    cls, config = TINY[name]
    optimizer = FirstTaskOnly(ESConfig(population=4), pool.policy.num_params)
    curriculum = cls(config, space=cartpole, pool=pool, optimizer=optimizer, seed=3)
    results = curriculum.run()
    decisions = [d for r in results for d in r.decisions]
    trained_nan = [d for d in decisions if d.outcome == "trained" and not np.isfinite(d.score)]
    assert trained_nan == []
    unplayed = [d for d in decisions if d.outcome == "not_played"]
    assert unplayed, "each step's tasks after the first should have a not_played row"
    for row in unplayed:
        assert row.rule == "optimizer" and re.match(
            r"no episodes: the optimizer put no job on this task \(its jobs went to 1 of the "
            rf"step's [2-{config.tasks_per_step}] tasks; .* declares Optimizer.task_capacity\(\)",
            row.reason,
        )
    # No other row names an unplayed task of its generation.
    for row in unplayed:
        same = [d for d in decisions if (d.generation, d.task_id) == (row.generation, row.task_id)]
        assert same == [row]
    if name == "dr":
        assert [r.summary["tasks_trained"] for r in results] == [1] * len(results)
        assert all(len(h) == len(results) for h in curriculum.history.values())
    assert all(r.summary["tasks"] >= 1 for r in results if r.summary["optimizer_steps"])


@pytest.mark.parametrize(
    ("name", "high", "reached"), [("plr", 5, 5), ("accel", 5, 1), ("accel", 1000, 1)]
)
def test_plr_and_accel_train_on_a_space_of_few_int_levels(
    name, high, reached, caplog, pool, cartpole
):
    """Five int levels: PLR's uniform new levels reach 5 distinct tasks, ACCEL's easy ones
    (level 1 edited once: always level 2, a mutation never giving its parent back) 1, on 5
    levels or 1000, far fewer than the 32 the default buffer's
    fill needs. The fill is lowered to what 32 draws reach, with a warning, and the policy
    trains (it never did: the buffer waited for 32 levels forever). A run resumed from a
    state saved without the cap gets it."""
    from coevo.curricula.level_buffer import levels_for_replay
    from coevo.policies import MLPPolicy
    from coevo.tasks.generic import class_task_space

    space = class_task_space(
        "corridor",
        "rllib_style_env:CorridorLevelsEnv",
        {"level": {"low": 1, "high": high, "init": 1, "step": 1, "type": "int"}},
        env_config={"start_level": 1},
        max_episode_steps=30,
        task_format="scalar",
    )
    env = space.make_env()
    policy = MLPPolicy.for_spaces(env.observation_space, env.action_space, (4,))
    config_class = PLRConfig if name == "plr" else ACCELConfig
    # The default buffer: 64. return_regret: the corridor declares no solved_score.
    config = config_class(generations=12, tasks_per_step=2, score="return_regret")
    assert levels_for_replay(config.min_fill, config.buffer_size) == 32
    curriculum_class = PrioritizedLevelReplay if name == "plr" else ACCEL
    with EvaluationPool(space, policy, "local", 1, envs_per_worker=8) as levels_pool:

        def build():
            optimizer = EvolutionStrategy(ESConfig(population=4), policy.num_params)
            return curriculum_class(config, space=space, pool=levels_pool, optimizer=optimizer)

        with caplog.at_level("WARNING", logger="coevo.curricula"):
            curriculum = build()
            head = curriculum.run(6)
            saved = pickle.loads(pickle.dumps(curriculum.state_dict()))
            tail = curriculum.run()
        resumed = build()
        for buffer in saved["curriculum"]["buffers"].values():
            buffer.fill_cap = None  # as a checkpoint from before the cap was saved
        resumed.load_state_dict(saved)
        assert resumed.buffers[0].fill_cap == reached
        again = resumed.run()
    warned = [r.getMessage() for r in caplog.records if "distinct tasks" in r.getMessage()]
    assert warned[0].startswith(f"{name}: new levels (new_levels={config.new_levels}) ")
    assert_says(
        warned[0],
        f"reach only {reached} distinct tasks of task space 'corridor'",
        "fewer than the 32 (min_fill 0.5 x buffer_size 64)",
        f"replay starts once the buffer holds {reached}",
    )
    assert curriculum.buffers[0].replay_fill() == reached
    results = head + tail
    assert sum(r.summary["replays"] for r in results) > 0
    assert results[-1].summary["optimizer_steps"] > 0
    for resumed_rows, rows in zip(_rows(again), _rows(tail), strict=True):
        pd.testing.assert_frame_equal(resumed_rows, rows)  # resumed: the same run
    # Continuous spaces keep min_fill x buffer_size whatever the draws.
    assert _build(name, pool, cartpole).buffers[0].fill_cap is None


def test_alp_gmm_counts_bootstrap_tasks_apart_from_its_random_share(pool, cartpole):
    """Before its first mixture ALP-GMM's tasks are bootstrap draws, after it GMM draws and
    the random share: summary.csv and the progress line name each (bootstrap tasks were
    counted as `random`)."""
    alp = _build("alp_gmm", pool, cartpole)  # bootstrap 8 = 2 generations of 4 tasks
    results = alp.run()
    counts = [
        (r.summary["bootstrap_tasks"], r.summary["random_tasks"], r.summary["gmm_tasks"])
        for r in results
    ]
    assert counts[:2] == [(4, 0, 0), (4, 0, 0)]
    assert all(bootstrap == 0 and random + gmm == 4 for bootstrap, random, gmm in counts[2:])
    assert sum(gmm for _, _, gmm in counts) > 0
    line = alp.progress_line(results[0], 6)
    assert "| tasks from GMM  0 random  0 bootstrap  4 |" in line
