"""One source of config truth: the dataclasses. coevo-run composes exactly their defaults,
the YAML files of conf/ only pick an implementation and state what they change, and the
Python API and coevo-run produce identical tables for the same settings."""

import dataclasses

import pandas as pd
import pytest
import yaml
from cli_support import ROOT, cli_in_process, run_tables

from coevo import hydra_configs, runner
from coevo.config import RunConfig, parse_config
from coevo.curricula.poet import EnhancedPoetConfig, PoetConfig
from coevo.optimizers.ars import ARSConfig
from coevo.optimizers.es import ESConfig

TABLES = ("summary.csv", "eligibility.csv", "population.csv", "cross_scores.csv")


def test_coevo_runs_default_composition_is_the_dataclass_defaults():
    composed = parse_config(hydra_configs.compose(ROOT / "conf"))
    expected = RunConfig()
    for field in dataclasses.fields(RunConfig):
        if field.name == "task":  # conf/task/cartpole.yaml states the space's episode limit
            continue
        assert getattr(composed, field.name) == getattr(expected, field.name), field.name


@pytest.mark.parametrize(
    ("group", "choice", "config"),
    [
        ("optimizer", "es", ESConfig()),
        ("optimizer", "ars", ARSConfig()),
        ("curriculum", "poet", PoetConfig()),
        ("curriculum", "enhanced_poet", EnhancedPoetConfig()),
    ],
)
def test_a_group_file_only_picks_its_dataclass_defaults(group, choice, config):
    text = yaml.safe_load((ROOT / "conf" / group / f"{choice}.yaml").read_text())
    assert text == {"defaults": [f"{choice}_defaults", "_self_"]}  # no value stated twice
    composed = parse_config(hydra_configs.compose(ROOT / "conf", [f"{group}={choice}"]))
    assert getattr(composed, group) == config


def test_a_ppo_mapping_gets_the_policy_coevo_run_optimizer_ppo_composes():
    # From Python, {'optimizer': {'name': 'ppo'}} trains the same actor-critic (its own
    # (64, 64) layers, not the mlp's policy.hidden) as coevo-run optimizer=ppo.
    composed = parse_config(hydra_configs.compose(ROOT / "conf", ["optimizer=ppo"])).policy
    for raw in ({}, {"name": "actor_critic"}):
        from_python = parse_config({"optimizer": {"name": "ppo"}, "policy": raw}).policy
        assert (from_python.name, from_python.hidden) == ("actor_critic", (64, 64))
        assert from_python.hidden == composed.hidden and from_python.name == composed.name
    # Only what was left out: layers given stay, and other optimizers keep the mlp.
    given = {"optimizer": {"name": "ppo"}, "policy": {"name": "actor_critic", "hidden": [8]}}
    assert parse_config(given).policy.hidden == (8,)
    assert parse_config({"optimizer": {"name": "es"}}).policy.name == "mlp"
    # A PPO subclass of the user's own, named by import path, trains the actor-critic too.
    renamed = parse_config({"optimizer": {"name": "user_curricula:RenamedPPO"}}).policy
    assert (renamed.name, renamed.hidden) == ("actor_critic", (64, 64))


def test_presets_state_only_what_they_change():
    paper = yaml.safe_load((ROOT / "conf" / "curriculum" / "poet_paper.yaml").read_text())
    defaults = dataclasses.asdict(PoetConfig())
    assert all(defaults[key] != value for key, value in paper.items() if key != "defaults")


SETTINGS = {
    "pool": {"backend": "local", "num_workers": 1},
    "seed": 4,
    "optimizer": {"name": "ars", "directions": 6, "top": 3, "noise": 0.1},
    "curriculum": {
        "name": "poet",
        "generations": 3,
        "repro_threshold": 50,
        "reproduce_every": 1,
        "max_children": 3,
        "transfer_every": 1,
    },
}
OVERRIDES = [
    "pool=local",
    "seed=4",
    "optimizer=ars",
    "optimizer.directions=6",
    "optimizer.top=3",
    "optimizer.noise=0.1",
    "curriculum=poet",
    "curriculum.generations=3",
    "curriculum.repro_threshold=50",
    "curriculum.reproduce_every=1",
    "curriculum.max_children=3",
    "curriculum.transfer_every=1",
]


def test_the_api_and_coevo_run_write_identical_tables_for_the_same_settings(tmp_path):
    api_dir, cli_dir = tmp_path / "api", tmp_path / "cli"
    runner.run(parse_config(SETTINGS), api_dir, echo=lambda line: None)
    done = cli_in_process("coevo-run", *OVERRIDES, f"hydra.run.dir={cli_dir}")
    assert done.returncode == 0, done.stderr[-3000:]
    api, command = run_tables(api_dir, TABLES), run_tables(cli_dir, TABLES)
    assert len(api["summary.csv"]) == 3 and len(api["eligibility.csv"]) > 3
    for name in api:
        pd.testing.assert_frame_equal(command[name], api[name], obj=name)
    assert yaml.safe_load((api_dir / "config.yaml").read_text()) == yaml.safe_load(
        (cli_dir / "config.yaml").read_text()
    ) | {"task": yaml.safe_load((api_dir / "config.yaml").read_text())["task"]}
