"""The examples of coevo's curricula in other trainers, run at their small size."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sb3_ppo_trains_on_a_plr_curriculum_over_subprocess_envs(tmp_path):
    pytest.importorskip("stable_baselines3")
    import pickle

    from coevo.curricula.sampler import sampler

    state = tmp_path / "plr.pkl"
    rows = _example("sb3_plr").main(["--small", "--state", str(state)])
    rules = {row["rule"] for row in rows}
    assert rows and rules <= {"new_level", "replay"} and "new_level" in rules
    # The state continues a sampler in this process (what a resumed job would do).
    saved = pickle.loads(state.read_bytes())["sampler"]
    resumed = sampler("plr", "cartpole", buffer_size=16)
    resumed.load_state_dict(saved)
    assert resumed.episodes == len(rows) and len(resumed.decisions()) == len(rows)


def test_cleanrl_ppo_loop_scores_levels_by_its_critic():
    plr = _example("cleanrl_plr").main(["--small"])
    rows = plr.decisions()
    assert plr.score_used == "positive_value_loss"
    assert {r.rule for r in rows} == {"new_level", "replay"}
    assert all("positive value loss" in r.reason for r in rows if r.rule == "new_level")
    again = _example("cleanrl_plr").main(["--small"])
    assert [r.task_id for r in again.decisions()] == [r.task_id for r in rows]
