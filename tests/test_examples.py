"""Each script of examples/ runs at its small size and prints what it promises.

A script runs as `python examples/SCRIPT --small` would run it (`__main__`, its command
line), in this process: a fresh interpreter would add only its imports, several seconds
of torch's. The scripts whose work is processes of their own (sb3_plr.py's subprocess envs,
rllib_plr.py's Ray) run as a subprocess, as a user runs them."""

import contextlib
import importlib.util
import io
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(script: str, *args: str) -> list[str]:
    """The lines `script --small ARGS` prints, run as its `__main__` in this process."""
    path = ROOT / "examples" / script
    argv, out = sys.argv[:], io.StringIO()
    try:
        sys.argv = [str(path), "--small", *args]
        with contextlib.redirect_stdout(out):
            runpy.run_path(str(path), run_name="__main__")
    except SystemExit as exit:  # sys.exit(): a process's exit code
        assert exit.code in (None, 0), f"{script} exited with {exit.code}"
    finally:
        sys.argv = argv
    return out.getvalue().splitlines()


def _run_in_a_process(script: str, *args: str) -> list[str]:
    """The lines `python examples/SCRIPT --small ARGS` prints, in a process of its own."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / script), "--small", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


def test_every_example_is_tested_and_short():
    scripts = sorted(p.name for p in (ROOT / "examples").glob("*.py"))
    tested = sorted(name[len("test_") :] + ".py" for name in globals() if name.startswith("test_"))
    assert set(scripts) <= set(tested), "an example without a test"
    for script in scripts:
        assert len((ROOT / "examples" / script).read_text().splitlines()) <= 90, script


def test_poet():
    out = _run("poet.py")
    assert [line.split("|")[0].strip() for line in out[:2]] == ["gen   1/2", "gen   2/2"]
    assert out[-1].startswith("ANNECS: ")
    assert "pair_id" in out[2]  # the population table


def test_own_env():
    out = _run("own_env.py")
    assert out[:2] == ["generation 1: mean return 0.50", "generation 2: mean return 1.00"]
    assert out[-1].startswith("return per level 1-8: [")


def test_own_policy():
    out = _run("own_policy.py")
    assert [line.split(":")[0] for line in out[:3]] == [
        "torch, generation 1",
        "torch, generation 2",
        "action for an upright pole",
    ]
    if importlib.util.find_spec("stable_baselines3"):
        assert out[3].startswith("SB3 zip, 3 episodes: [")
    else:
        assert out[3].startswith("SB3 not installed")


def test_own_curriculum():
    out = _run("own_curriculum.py")
    # the small run's low bar widens the range every generation, and says why
    assert [line.split(" mean")[0] for line in out] == [
        "gen 1: width 0.3",
        "gen 2: width 0.5",
        "gen 3: width 0.7",
    ]
    assert all(">= solved 20" in line for line in out)


def test_sweep_compare(tmp_path):
    out = _run("sweep_compare.py", str(tmp_path))
    assert sum(line.startswith("ran ") for line in out) == 4
    assert out[4].startswith("4 runs in 2 groups")
    assert any(line.startswith("plr | 2 |") for line in out)
    assert (tmp_path / "compare.html").is_file() and (tmp_path / "compare.csv").is_file()


def test_evaluate_saved():
    out = _run("evaluate_saved.py")
    assert "generation 2, policies ['policy_0']" in out[0]
    gravities = [line.split("gravity")[1].split(":")[0].strip() for line in out[1:]]
    assert gravities == ["9.8", "30.0", "60.0"]  # the initial task, the bound, twice the bound


def test_sb3_plr(tmp_path):
    if not importlib.util.find_spec("stable_baselines3"):
        return  # coevo[sb3] not installed: nothing to run
    import pickle

    from coevo.curricula import sampler

    out = _run_in_a_process("sb3_plr.py", "--state", str(tmp_path / "plr.pkl"))
    episodes = int(out[-1].split()[0])
    assert episodes > 0 and "('new_level', 'added')" in out[-1]
    # The saved state continues a sampler here, as a resumed job would.
    resumed = sampler("plr", "cartpole", buffer_size=16)
    resumed.load_state_dict(pickle.loads((tmp_path / "plr.pkl").read_bytes())["sampler"])
    assert resumed.episodes == episodes == len(resumed.decisions())


def test_cleanrl_plr():
    out = _run("cleanrl_plr.py")
    assert "(positive_value_loss)" in out[-1]  # scored by the loop's own critic
    assert "('replay', 'replayed')" in out[-1] and "('new_level', 'added')" in out[-1]


def test_rllib_plr(tmp_path):
    pytest.importorskip(
        "ray.rllib", reason="RLlib is not installed here (make test runs this in .venv-rllib)"
    )
    import pickle

    from coevo.curricula import sampler

    out = _run_in_a_process("rllib_plr.py", "--state", str(tmp_path))
    assert [line.split(":")[0] for line in out[-3:-1]] == ["iteration 1", "iteration 2"]
    episodes = int(out[-1].split()[0])
    assert episodes > 0 and "('new_level', 'added')" in out[-1]
    # RLlib's checkpoint and the sampler's state side by side; the state continues a sampler.
    assert (tmp_path / "rllib_checkpoint.json").is_file()
    resumed = sampler("plr", "cartpole", buffer_size=16)
    resumed.load_state_dict(pickle.loads((tmp_path / "coevo_curriculum.pkl").read_bytes()))
    assert resumed.episodes == episodes == len(resumed.decisions())
