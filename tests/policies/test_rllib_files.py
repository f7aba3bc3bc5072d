"""Where an RLlib checkpoint directory keeps its RLModule, told from its files alone (no RLlib
needed: these run in the main venv), and what a pairs file or coevo-eval says of one where
RLlib is not installed."""

from __future__ import annotations

import importlib

import pytest
from cli_support import cli_in_process
from phrases import assert_says

from coevo import tasks
from coevo.eligible import load_pairs
from coevo.errors import ConfigError
from coevo.policies import make_policy
from coevo.policies.rllib_files import is_rllib_checkpoint, module_files


def _module(path):
    """The files `module.save_to_path(path)` writes that mark an RLModule checkpoint."""
    path.mkdir(parents=True)
    for name in ("class_and_ctor_args.pkl", "module_state.pkl", "metadata.json"):
        (path / name).write_bytes(b"")
    return path


def _algorithm(path, *modules: str):
    """An algorithm checkpoint's marker file and its learner's module folders."""
    path.mkdir(parents=True)
    (path / "rllib_checkpoint.json").write_text("{}")
    for name in modules:
        _module(path / "learner_group" / "learner" / "rl_module" / name)
    return path


def _rllib_installed() -> bool:
    try:
        importlib.import_module("ray.rllib.core.rl_module")
    except ImportError:  # no ray[rllib]: e.g. the main venv lacks its dm_tree
        return False
    return True


def test_the_module_is_found_in_an_algorithm_or_module_checkpoint(tmp_path):
    algorithm = _algorithm(tmp_path / "algo", "default_policy", "other")
    found = module_files(algorithm, "policy")
    assert found.module == algorithm / "learner_group/learner/rl_module/default_policy"
    assert found.algorithm == algorithm
    inner = module_files(found.module.parent / "other", "policy")  # a module folder inside it
    assert inner.module.name == "other" and inner.algorithm == algorithm.resolve()
    alone = _module(tmp_path / "saved_module")
    assert module_files(alone, "policy").algorithm is None
    multi = tmp_path / "multi"
    _module(multi / "only")
    assert module_files(multi, "policy").module == multi / "only"  # the only one
    assert all(is_rllib_checkpoint(p) for p in (algorithm, alone, multi))
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.yaml").write_text("")
    assert not is_rllib_checkpoint(tmp_path / "run") and not is_rllib_checkpoint(tmp_path / "no")


@pytest.mark.parametrize(
    ("case", "phrases"),
    [
        ("missing", ["pairs[0].policy.rllib", "missing not found"]),
        ("two", ["holds the RLModules a, b", "give the folder of one", "rl_module/a"]),
        ("old_stack", ["without learner_group/learner/rl_module", "new API stack"]),
        ("plain", ["not an RLlib checkpoint", "rllib_checkpoint.json"]),
    ],
)
def test_a_directory_without_one_module_is_refused_by_name(tmp_path, case, phrases):
    if case == "two":
        _algorithm(tmp_path / case, "a", "b")
    elif case == "old_stack":
        _algorithm(tmp_path / case)
    elif case == "plain":
        (tmp_path / case).mkdir()
    with pytest.raises(ConfigError) as error:
        module_files(tmp_path / case, "pairs[0].policy.rllib")
    assert_says(str(error.value), *phrases)


@pytest.mark.skipif(_rllib_installed(), reason="RLlib is installed here: it reads checkpoints")
def test_without_rllib_a_pairs_file_and_coevo_eval_name_the_extra(tmp_path):
    _algorithm(tmp_path / "ppo", "default_policy")
    pairs = tmp_path / "pairs.yaml"
    pairs.write_text("pairs:\n  - {name: ppo, policy: ppo}\n")  # the directory alone
    space = tasks.get("cartpole")
    env = space.make_env()
    policy = make_policy("mlp", env.observation_space, env.action_space, {})
    with pytest.raises(ConfigError) as error:
        load_pairs(pairs, space, policy)
    assert_says(str(error.value), "pairs[0].policy.rllib", "pip install 'coevo[rllib]'")
    done = cli_in_process("coevo-eval", tmp_path / "ppo", "task=cartpole")
    assert done.returncode == 2
    assert_says(done.stderr, "coevo-eval: error: policy: ", "pip install 'coevo[rllib]'")
