"""The gate claim (experiments/gate, issue 31 claim 2): its arms' configs, its verdict rule and
its --quick smoke run, resumed from the cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from cli_support import script_module

ROOT = Path(__file__).resolve().parents[1]
gate = script_module(ROOT / "experiments/gate/run.py", "gate_run")


def test_arms_run_ppo_as_currot_and_direct_trains_on_the_target():
    config = gate.arm_config("alp_gmm", 0, gate.MODES["full"])
    ppo = config.optimizer
    assert (ppo.gamma, ppo.gae_lambda, ppo.batch_size) == (0.95, 0.99, 128)
    assert ppo.n_envs * ppo.n_steps == 4096 and ppo.learning_rate == 3e-4
    assert tuple(config.policy.hidden) == (128, 128, 128)
    assert (config.curriculum.fit_rate, config.curriculum.random_ratio) == (100, 0.1)
    assert config.task.name == "point_mass_gate"
    direct = gate.arm_config("direct", 0, gate.MODES["full"]).curriculum
    assert direct.name == "gate_target:TargetTasks"
    assert set(gate.CONFIRM_SEEDS).isdisjoint(range(gate.PROBE_SEED_START, 10**6))


def test_verdict_needs_every_declared_check_on_the_declared_seeds():
    fail, teach = np.zeros(10), np.full(10, 60.0)
    late = {"direct": fail, "dr": fail + 5, "alp_gmm": teach, "sfl": teach, "plr": fail}
    outcome, checks = gate.verdict(late, 10)
    assert outcome == "confirmed" and len(checks) == 6
    outcome, checks = gate.verdict({**late, "dr": np.full(10, 40.0)}, 10)
    assert outcome == "not confirmed" and "fails: dr's IQM <= 25 % (40.0)" in "\n".join(checks)
    outcome, _ = gate.verdict({**late, "sfl": teach[:4]}, 10)
    assert outcome.startswith("inconclusive (partial")


def test_quick_run_writes_parseable_results_and_resumes_from_its_cache(tmp_path):
    cache = tmp_path / "cache"
    gate.main(["--quick", "--out", str(tmp_path / "a"), "--cache", str(cache)])
    runs = pd.read_csv(tmp_path / "a" / "runs.csv")
    assert list(runs["arm"]) == list(gate.ARMS) and set(runs["seed"]) == {gate.PROBE_SEED_START}
    assert bool((runs["env_steps"] >= runs["budget"]).all())
    assert bool(runs["success_late"].between(0, 100).all())
    curves = pd.read_csv(tmp_path / "a" / "curves.csv")
    assert len(curves) == len(gate.ARMS) * gate.MODES["quick"].scorings
    assert bool(curves["uniform_success"].between(0, 100).all())  # the diagnostic column
    table = (tmp_path / "a" / "table.md").read_text()
    assert "IQM" in table and "Verdict: **none: probe seeds" in table and "sfl" in table
    assert (tmp_path / "a" / "success.png").stat().st_size > 0
    saved = yaml.safe_load((tmp_path / "a" / "configs" / "sfl.yaml").read_text())
    assert (
        saved["config"]["curriculum"]["name"] == "sfl"
        and "optimizer.gamma=0.95" in saved["overrides"]
    )
    # A second call finds the run in the cache: the same row, its recorded times included.
    gate.main(["--quick", "--arms", "dr", "--out", str(tmp_path / "b"), "--cache", str(cache)])
    again = pd.read_csv(tmp_path / "b" / "runs.csv")
    expected = pd.DataFrame(runs[runs["arm"] == "dr"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(again, expected)
