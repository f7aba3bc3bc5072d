"""The maze claim (experiments/mazes_ued, issue 31 claim 3): the actor-critic's sampled
evaluation episodes it needs (`policy.kwargs.evaluation`), SFL's learnability on mazes with
and without them, its arms' configs, its verdict rule and its --quick run, resumed."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
import yaml

from coevo import hydra_configs, run_setup
from coevo.config import parse_config
from coevo.errors import ConfigError
from coevo.policies.actor_critic import ActorCriticSpec
from coevo.policies.noise import uniforms
from coevo.pool import EvaluationPool
from coevo.tasks.maze.held_out import random_solvable
from tests.cli_support import script_module
from tests.phrases import assert_says

ROOT = Path(__file__).resolve().parents[1]
claim = script_module(ROOT / "experiments/mazes_ued/run.py", "mazes_ued_run")
ued_table = sys.modules["ued_table"]  # run.py's sibling, imported by it

MAZE_PPO = ["task=maze", "optimizer=ppo", "policy=conv_actor_critic", "pool=local"]


def maze_config(*extra: str):
    return parse_config(hydra_configs.compose(claim.CONF_DIR, [*MAZE_PPO, *extra]))


# -- policy.kwargs.evaluation ---------------------------------------------------------------
def test_sampled_evaluation_draws_from_the_categorical_and_is_keyed_by_the_episode():
    spec = ActorCriticSpec.for_spaces(
        gym.spaces.Box(-1, 1, (3,)), gym.spaces.Discrete(3), evaluation="sample"
    )
    assert spec.noise_dim == 1 and spec.action.mode == "sample"
    theta = spec.init(np.random.default_rng(0))
    theta[spec.segments["action.weight"].start : spec.segments["action.bias"].stop] *= 300
    rows = 20_000
    params = np.repeat(theta[None], rows, axis=0)
    obs = np.repeat(np.array([[0.3, -0.2, 0.5]], dtype=np.float32), rows, axis=0)
    noise = uniforms(np.arange(rows), np.zeros(rows), 1)
    actions = spec.act(params, obs, noise)
    logits = spec.forward(params[:1], obs[:1])[0][0].astype(float)
    probs = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    assert 0.05 < probs.min() and probs.max() < 0.9  # not a near-deterministic policy
    assert np.allclose(np.bincount(actions, minlength=3) / rows, probs, atol=0.015)
    assert np.array_equal(spec.act(params[:5], obs[:5], noise[:5]), actions[:5])
    deterministic = replace(spec, evaluation="deterministic")
    assert deterministic.noise_dim == 0
    assert set(deterministic.act(params, obs).tolist()) == {int(np.argmax(probs))}


def test_sampled_gaussian_evaluation_is_clipped_and_spread_by_the_log_std():
    box = gym.spaces.Box(-1.0, 1.0, (2,))
    spec = ActorCriticSpec.for_spaces(gym.spaces.Box(-1, 1, (3,)), box, evaluation="sample")
    assert spec.noise_dim == 4 and spec.action.mode == "gaussian"
    theta = spec.init(np.random.default_rng(1))
    rows = 4000
    params = np.repeat(theta[None], rows, axis=0)
    obs = np.zeros((rows, 3), dtype=np.float32)
    actions = spec.act(params, obs, uniforms(np.arange(rows), np.zeros(rows), 4))
    assert actions.min() >= -1.0 and actions.max() <= 1.0
    # Mean 0 (zero biases, zero observations), log_std 0: N(0, 1) per dimension, clipped.
    assert np.allclose((np.abs(actions) < 0.5).mean(axis=0), 0.383, atol=0.03)
    assert np.allclose((np.abs(actions) == 1.0).mean(axis=0), 0.317, atol=0.03)


def test_evaluation_values_are_refused_by_field():
    with pytest.raises(ConfigError) as error:
        run_setup.prepare(maze_config("policy.kwargs.evaluation=greedy"))
    assert_says(str(error.value), "policy.kwargs.evaluation", "greedy", "deterministic, sample")
    box = gym.spaces.Box(-1.0, 1.0, (2,))
    with pytest.raises(ConfigError) as error:
        ActorCriticSpec.for_spaces(box, box, use_sde=True, evaluation="sample")
    assert_says(str(error.value), "policy.kwargs.evaluation", "gSDE", "deterministic")


def test_maze_episodes_vary_with_sampled_evaluation_only():
    config = maze_config("policy.kwargs.evaluation=sample")
    space, policy = run_setup.prepare(config)
    assert isinstance(policy, ActorCriticSpec)
    assert policy.evaluation == "sample" and config.policy.kwargs["evaluation"] == "sample"
    theta = policy.init(np.random.default_rng(0))
    mazes: list[Any] = random_solvable(4, 3)
    returns = {}
    for name, spec in (("sample", policy), ("argmax", replace(policy, evaluation="deterministic"))):
        with EvaluationPool(space, spec, "local", 1) as pool:
            returns[name] = pool.evaluate_detailed([(theta, m) for m in mazes], 6, 0)[0]
            again = pool.evaluate_detailed([(theta, m) for m in mazes], 6, 0)[0]
            assert np.array_equal(returns[name], again)  # deterministic given the seeds
    assert (returns["argmax"] == returns["argmax"][:, :1]).all()  # one episode, six times
    assert (returns["sample"].std(axis=1) > 0).any()


@pytest.mark.parametrize(("evaluation", "learnable"), [("deterministic", False), ("sample", True)])
def test_sfl_finds_learnable_mazes_only_with_sampled_evaluation(evaluation, learnable):
    """On a maze every deterministic episode is the same, so p is 0 or 1 and SFL's
    learnability p(1 - p) is 0 for every level; sampled episodes give it a signal."""
    config = maze_config(
        "curriculum=sfl",
        f"policy.kwargs.evaluation={evaluation}",
        "curriculum.levels_sampled=16",
        "curriculum.eval_episodes=4",
        "curriculum.buffer_size=4",
    )
    space, policy = run_setup.prepare(config)
    with EvaluationPool(space, policy, "local", 1) as pool:
        summary = run_setup.build(config, space, pool).step().summary
    assert summary["refreshes"] == 1
    score = summary["buffer_mean_learnability"]
    assert (score > 0) if learnable else (math.isnan(score) or score == 0)


# -- the claim's arms, verdict and quick run --------------------------------------------------
def test_arms_share_ppo_and_the_sampled_evaluation_and_seeds_stay_apart():
    full = claim.MODES["full"]
    configs = {arm: claim.arm_config(arm, 0, full) for arm in claim.ARMS}
    for config in configs.values():
        assert config.task.name == "maze" and config.policy.name == "conv_actor_critic"
        assert config.policy.kwargs["evaluation"] == "sample"
        assert (config.optimizer.n_envs, config.optimizer.n_steps) == (16, 256)
        assert config.curriculum.tasks_per_step == 16
    assert {arm: c.curriculum.name for arm, c in configs.items()} == {
        "dr": "dr",
        "plr": "plr",
        "accel": "accel",
        "sfl": "sfl",
    }
    assert configs["plr"].curriculum.buffer_size == configs["accel"].curriculum.buffer_size
    assert configs["accel"].curriculum.num_edits == 5
    assert set(claim.CONFIRM_SEEDS).isdisjoint(range(claim.PROBE_SEED_START, 10**6))
    with pytest.raises(SystemExit):
        claim.main(["--probe", "--seeds", "3"])


def test_verdict_needs_both_checks_for_every_curriculum_on_the_declared_seeds():
    def arm(mean: float, worst: float) -> dict[str, np.ndarray]:
        spread = np.linspace(-1.0, 1.0, 10)
        return {ued_table.MEAN: mean + spread, ued_table.WORST: worst + spread}

    figures = {"dr": arm(50, 5), "plr": arm(50, 20), "accel": arm(50, 20), "sfl": arm(50, 20)}
    outcome, checks = ued_table.verdict(figures, 10, 2000)
    assert outcome == "confirmed" and len(checks) == 6
    outcome, checks = ued_table.verdict({**figures, "sfl": arm(50, 5)}, 10, 2000)
    assert outcome == "partly confirmed (the pattern holds for plr, accel)"
    assert "fails: SFL leads DR in the worst 10 %" in "\n".join(checks)
    outcome, _ = ued_table.verdict({**figures, "plr": arm(70, 5), "accel": arm(30, 20)}, 10, 2000)
    assert outcome == "partly confirmed (the pattern holds for sfl)"
    partial = {**figures, "sfl": {k: v[:4] for k, v in figures["sfl"].items()}}
    assert ued_table.verdict(partial, 10, 2000)[0].startswith("inconclusive (partial")


def test_quick_run_writes_parseable_results_and_resumes_from_its_cache(tmp_path, capsys):
    claim.main(["--quick", "--out", str(tmp_path / "a")])
    # Each scoring of a run in flight is a line of progress.
    assert_says(capsys.readouterr().out, "dr seed 1000: ", " M steps, named ", "0.1-CVaR")
    runs = pd.read_csv(tmp_path / "a" / "runs.csv")
    assert list(runs["arm"]) == list(claim.ARMS)
    assert set(runs["seed"]) == {claim.PROBE_SEED_START}
    assert bool((runs["env_steps"] >= runs["budget"]).all())
    for column in ("named_solved_late", "cvar_late", "named_argmax_late", "random_solved_late"):
        assert bool(runs[column].between(0, 100).all()), column
    curves = pd.read_csv(tmp_path / "a" / "curves.csv")
    assert {"named_solved", "cvar", "cvar_same_episodes"} <= set(curves.columns)
    table = (tmp_path / "a" / "table.md").read_text()
    assert_says(table, "IQM", "P(> DR)", "0.1-CVaR", "Verdict: **none: probe seeds", "SFL")
    assert (tmp_path / "a" / "curves.png").stat().st_size > 0
    saved = yaml.safe_load((tmp_path / "a" / "configs" / "sfl.yaml").read_text())
    assert saved["config"]["curriculum"]["name"] == "sfl"
    assert "policy.kwargs.evaluation=sample" in saved["overrides"]
    # Again into the same folder: every run comes from runs/, the same rows, times included.
    claim.main(["--quick", "--arms", "dr", "--out", str(tmp_path / "a")])
    again = pd.read_csv(tmp_path / "a" / "runs.csv")
    expected = pd.DataFrame(runs[runs["arm"] == "dr"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(again, expected)


# SFL's first generation scores its sample: at the quick budget the run is one generation.
@pytest.mark.parametrize(("arm", "budget"), [("plr", 1024), ("sfl", 4096)])
def test_a_run_stopped_at_every_generation_and_resumed_equals_one_run(
    arm, budget, tmp_path, monkeypatch
):
    """--stop-after-min's path: past the deadline a run saves its state and returns None; run
    again, it goes on from the snapshot. Stopped after every generation (so across its
    scorings and its curriculum's buffer), it gives the uninterrupted run's figures."""
    mode = replace(claim.MODES["quick"], budget=budget)
    straight = claim.run_one(arm, claim.PROBE_SEED_START, mode)
    assert straight is not None
    monkeypatch.setattr(claim, "SNAPSHOT_EVERY_S", 0.0)
    snapshot, stops, resumed = tmp_path / "partial" / "run.pkl", 0, None
    while resumed is None:
        resumed = claim.run_one(arm, claim.PROBE_SEED_START, mode, snapshot, deadline=0.0)
        stops += resumed is None
        assert stops < 20
    assert stops >= 3 and len(resumed["curve"]) == mode.scorings
    assert resumed["curve"] == straight["curve"]
    timings = ("wall_s", "cpu_s", "scoring_cpu_s")
    for key, value in straight["row"].items():
        if key not in timings:
            assert resumed["row"][key] == value, key


def test_a_run_still_queued_at_the_deadline_is_not_started(tmp_path):
    mode = claim.MODES["quick"]
    job = ("dr", claim.PROBE_SEED_START, mode, tmp_path, 0.0)  # a deadline long past
    assert claim.cached_run(job) is None
    assert not any(tmp_path.iterdir())  # no snapshot, no run file


# -- the buffer diagnosis (diagnose.py) -----------------------------------------------------
diagnose = script_module(ROOT / "experiments/mazes_ued/diagnose.py", "mazes_ued_diagnose")


def test_quick_diagnosis_records_the_buffer_at_each_mark_and_refuses_confirmation_seeds(
    tmp_path, capsys
):
    path = diagnose.main(
        ["--arm", "plr", "--quick", "--score", "learnability", "--out", str(tmp_path)]
    )
    record = json.loads(path.read_text())
    assert (record["arm"], record["score"], record["seed"]) == ("plr", "learnability", 1000)
    assert "curriculum.score=learnability" in record["overrides"]
    assert len(record["marks"]) == diagnose.QUICK_MARKS
    buckets = {"1-3", "4-8", "9+", "unsolvable"}
    for point in [record["generator"], *record["marks"]]:
        assert set(point["mass"]) == buckets
        assert math.isclose(sum(point["mass"].values()), 1.0)
        assert 0 <= point["unsolvable_share"] <= 1 and 1 <= point["mean_path"] < 13 * 13
    assert 9 < record["generator"]["mean_path"] < 10  # the generator's, 2,000 mazes
    for point in record["marks"]:
        assert 0 < point["levels"] <= 8  # quick's buffer_size
        for name in ("random_solved", "cvar", "named_solved", "buffer_solved"):
            assert 0 <= point[name] <= 100, name
    assert record["marks"][-1]["env_steps"] >= record["budget"]
    table = (tmp_path / "table.md").read_text()
    assert_says(table, "not the confirmation", "## plr, score learnability, seed 1000", "mass 9+")
    with pytest.raises(SystemExit):
        diagnose.main(["--arm", "plr", "--quick", "--seed", "15"])
    assert_says(capsys.readouterr().err, "--seed 15", "probe seeds are >= 1000")
