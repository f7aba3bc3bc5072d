"""The runner from Python. Resuming (`runner.run(..., resume=True)`) keeps to the same rules as
`coevo-run resume=`: the run's own config, a refusal that leaves the directory as it was,
and the generation count the checkpoint holds."""

import dataclasses
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest
from cli_support import cli, cli_in_process, run_tables
from phrases import assert_says

from coevo import run_files, run_setup, runner
from coevo.checkpoint import CheckpointError
from coevo.config import parse_config
from coevo.errors import ConfigError
from coevo.run import RunInterrupted

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # user_curricula, as a user's module

# report_every_s is left at its default: the page is built at the end, not at every
# generation (which was most of these small runs' time).
RAW = {
    "pool": {"backend": "local", "num_workers": 1},
    "seed": 3,
    "curriculum": {"name": "dr", "generations": 2, "tasks_per_step": 2},
    "optimizer": {"name": "es", "population": 8},
}


def quiet(_line: str) -> None:
    pass


@pytest.fixture(scope="module")
def raw_run(tmp_path_factory) -> Path:
    """RAW run once for the module: the tests that start from a finished RAW run get a copy
    (`_copy_of_raw_run`), each free to change it."""
    run = tmp_path_factory.mktemp("raw") / "run"
    runner.run(parse_config(RAW), run, quiet)
    return run


def _copy_of_raw_run(raw_run: Path, tmp_path: Path) -> Path:
    """A copy of the module's finished RAW run at tmp_path/run, as runner.run left it."""
    run = tmp_path / "run"
    shutil.copytree(raw_run, run)
    return run


def _snapshot(run_dir: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(run_dir)): p.read_bytes()
        for p in sorted(run_dir.rglob("*"))
        if p.is_file() and p.name != run_files.LOCK_FILE
    }


def test_a_resume_from_python_that_changes_the_run_is_refused_and_changes_nothing(
    raw_run, tmp_path
):
    run = _copy_of_raw_run(raw_run, tmp_path)
    before = _snapshot(run)

    changed = {**RAW, "seed": 99, "optimizer": {"name": "es", "population": 2}}
    with pytest.raises(ConfigError) as refused:
        runner.run(parse_config(changed), run, quiet, resume=True)
    assert str(refused.value).startswith(
        "optimizer.population: cannot be changed on resume: the run in "
    )
    assert "has 8, this config 2; also changed: seed" in str(refused.value)
    assert "runner.run(None, run_dir, resume=True)" in str(refused.value)

    other = {**RAW, "curriculum": {"name": "plr", "generations": 4}}
    with pytest.raises(ConfigError) as refused:  # the curriculum's name first, not its fields
        runner.run(parse_config(other), run, quiet, resume=True)
    assert str(refused.value).startswith(
        "curriculum.name: cannot be changed on resume: the run in "
    )
    assert "has 'dr', this config 'plr'" in str(refused.value)

    fewer = {**RAW, "curriculum": {**RAW["curriculum"], "generations": 1}}
    with pytest.raises(ConfigError, match="curriculum.generations: 1 is fewer than the 2 "):
        runner.run(parse_config(fewer), run, quiet, resume=True)
    assert _snapshot(run) == before  # config.yaml, tables and checkpoints untouched


def test_resume_from_python_with_the_runs_own_config_extends_it_like_a_longer_run(
    raw_run, tmp_path
):
    run, longer = _copy_of_raw_run(raw_run, tmp_path), tmp_path / "longer"
    three = {**RAW, "curriculum": {**RAW["curriculum"], "generations": 3}}
    runner.run(parse_config(three), longer, quiet)

    own = run_setup.load_run_config(run)  # an allowed change: more generations, another backend
    extended = dataclasses.replace(
        own, curriculum=dataclasses.replace(own.curriculum, generations=3)
    )
    runner.run(extended, run, quiet, resume=True)
    for name, frame in run_tables(longer).items():
        pd.testing.assert_frame_equal(run_tables(run)[name], frame, obj=name)
    lines = []
    runner.run(None, run, lines.append, resume=True)  # None: the run's own config.yaml
    assert any("nothing to run: the run's 3 generations are done" in line for line in lines)


def test_a_state_that_does_not_load_is_refused_before_the_run_directory_changes(raw_run, tmp_path):
    run = _copy_of_raw_run(raw_run, tmp_path)
    (run / run_files.CONFIG_FILE).unlink()  # nothing to compare with: the state itself refuses
    before = _snapshot(run)
    other = parse_config({**RAW, "curriculum": {"name": "plr", "generations": 4}})
    with pytest.raises(CheckpointError) as refused:
        runner.run(other, run, quiet, resume=True)
    assert_says(
        str(refused.value),
        "gen_000002.pkl: its state does not load into curriculum 'plr'",
        "saved by a DomainRandomization curriculum",
    )
    assert "the run directory is unchanged" in str(refused.value)
    assert _snapshot(run) == before


def test_the_runner_restores_the_generation_a_plugin_state_leaves_out(tmp_path):
    raw = {**RAW, "curriculum": {"name": "user_curricula:ForgetfulDR", "generations": 4}}
    clean, stopped = tmp_path / "clean", tmp_path / "stopped"
    runner.run(parse_config(raw), clean, quiet)

    def stop_after_two(line: str) -> None:
        if line.startswith("gen   2/"):
            raise KeyboardInterrupt

    with pytest.raises(RunInterrupted):
        runner.run(parse_config(raw), stopped, stop_after_two)
    runner.run(None, stopped, quiet, resume=True)
    summary = pd.read_csv(stopped / "summary.csv")
    assert summary["generation"].tolist() == [1, 2, 3, 4]  # not 1, 2, 1, 2, 3, 4
    for name, frame in run_tables(clean).items():
        pd.testing.assert_frame_equal(run_tables(stopped)[name], frame, obj=name)


def test_run_refuses_the_eligible_mode_and_a_refused_run_leaves_no_directory(tmp_path):
    eligible = parse_config({**RAW, "mode": "eligible_parents", "eligible": {"pairs_file": "x"}})
    with pytest.raises(ConfigError, match=r"mode: runner.run runs mode=coevolve; .*run_eligible"):
        runner.run(eligible, tmp_path / "eligible", quiet)
    unknown_task = parse_config({**RAW, "task": {"name": "cartpol"}})
    with pytest.raises(ConfigError, match="task.name: unknown task space 'cartpol'"):
        runner.run(unknown_task, tmp_path / "typo", quiet)
    with pytest.raises(ConfigError, match="config: required for a new run"):
        runner.run(None, tmp_path / "none", quiet)
    assert list(tmp_path.iterdir()) == []


def test_run_eligible_refuses_a_config_without_a_pairs_file_and_leaves_no_directory(tmp_path):
    coevolve = parse_config(RAW)  # RunConfig.check asks for a pairs file with its mode only
    with pytest.raises(ConfigError, match="eligible.pairs_file: required by runner.run_eligible"):
        runner.run_eligible(coevolve, tmp_path / "eligible", quiet)
    assert list(tmp_path.iterdir()) == []


def test_the_runs_warnings_reach_echo_once(tmp_path, capfd):
    """coevo's logging warnings during a run go to `echo` (a caller's log gets them), not
    a second time to the console."""
    raw = {**RAW, "curriculum": {"name": "plr", "generations": 1, "score": "positive_value_loss"}}
    lines = []
    runner.run(parse_config(raw), tmp_path / "run", lines.append)
    warned = [line for line in lines if line.startswith("warning: positive_value_loss")]
    assert len(warned) == 1
    assert "needs the value predictions" in warned[0]
    assert "PLR scores levels by learnability instead" in warned[0]
    out, err = capfd.readouterr()
    assert "positive_value_loss" not in out + err


def test_run_names_what_it_needs_when_given_a_mapping_or_a_run_that_never_saved(tmp_path):
    with pytest.raises(TypeError, match=r"runner.run needs a RunConfig, got dict: .*parse_config"):
        runner.run(RAW, tmp_path / "raw", quiet)

    def stop_at_start(line: str) -> None:
        if line.startswith("pool:"):  # before the run's first checkpoint
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        runner.run(parse_config(RAW), tmp_path / "early", stop_at_start)
    with pytest.raises(ConfigError, match=r"^resume: .*early holds no checkpoint: the run stopped"):
        runner.run(None, tmp_path / "early", quiet, resume=True)
    runner.run(parse_config(RAW), tmp_path / "early", quiet)  # started again, as it says
    assert len(pd.read_csv(tmp_path / "early" / "summary.csv")) == 2


def test_an_interrupt_after_the_first_checkpoint_is_a_resumable_run_interrupted(tmp_path):
    """Once generation 0's checkpoint is saved, Ctrl-C while the test set is built (its
    note printed) stops the run as one in a generation does: RunInterrupted, stopped.txt,
    and a resume that runs the whole run (it was a bare KeyboardInterrupt)."""
    raw = {**RAW, "test_set": {"every": 5}}  # more than the run's 2 generations: a note

    def stop_at_the_test_set(line: str) -> None:
        if line.startswith("test set:"):
            raise KeyboardInterrupt

    with pytest.raises(RunInterrupted) as interrupted:
        runner.run(parse_config(raw), tmp_path / "run", stop_at_the_test_set)
    assert interrupted.value.generation == 0
    assert (
        (tmp_path / "run" / "stopped.txt")
        .read_text()
        .startswith("interrupted after generation 0; resume with: coevo-run resume=")
    )
    runner.run(None, tmp_path / "run", quiet, resume=True)
    assert pd.read_csv(tmp_path / "run" / "summary.csv")["generation"].tolist() == [1, 2]


def test_a_pairs_file_naming_a_run_says_when_its_newest_checkpoint_is_skipped(raw_run, tmp_path):
    """A run directory in a pairs file: a damaged newest checkpoint is reported on `echo`
    (as coevo-eval reports it), and the one before it is read."""
    import yaml

    run = _copy_of_raw_run(raw_run, tmp_path)
    newest = run / "checkpoints" / "gen_000002.pkl"
    newest.write_bytes(b"damaged")
    pairs = tmp_path / "pairs.yaml"
    pairs.write_text(yaml.safe_dump({"pairs": [{"policy": {"checkpoint": str(run), "pair": 0}}]}))
    raw = {**RAW, "mode": "eligible_parents", "eligible": {"pairs_file": str(pairs)}}
    lines = []
    runner.run_eligible(parse_config(raw), tmp_path / "eligible", lines.append)
    warned = [line for line in lines if line.startswith("warning: ")]
    (warning,) = warned
    assert warning.startswith("warning: pairs.yaml: pairs[0].policy.checkpoint: ")
    assert_says(warning, f"{newest} is not a coevo checkpoint", "the previous checkpoint")
    returns = pd.read_csv(tmp_path / "eligible" / "returns.csv")
    assert returns["policy"].tolist() == [f"{run}/checkpoints/gen_000001.pkl#policy_0"]


def test_a_plugin_error_stops_the_run_with_its_report_and_the_way_back(tmp_path):
    import user_curricula

    raw = {**RAW, "curriculum": {"name": "user_curricula:BuggyDR", "generations": 4}}
    clean, broken = tmp_path / "clean", tmp_path / "broken"
    runner.run(parse_config(raw), clean, quiet)
    lines: list[str] = []
    user_curricula.BUG_AT["generation"] = 3
    try:
        with pytest.raises(ValueError, match="my bug in step") as raised:
            runner.run(parse_config(raw), broken, lines.append)
    finally:
        user_curricula.BUG_AT["generation"] = 0
    hint = f"after fixing it, resume with: coevo-run resume={broken}"
    assert lines[-1] == (f"error: ValueError: my bug in step (stopped after generation 2); {hint}")
    assert (broken / "stopped.txt").read_text() == (
        f"stopped by an error after generation 2: ValueError: my bug in step; {hint}\n"
    )
    assert f"coevo: stopped after generation 2; {hint}" in raised.value.__notes__
    assert "my bug in step" in (broken / "report.html").read_text()
    runner.run(None, broken, quiet, resume=True)  # the bug fixed
    assert not (broken / "stopped.txt").exists()
    for name, frame in run_tables(clean).items():
        pd.testing.assert_frame_equal(run_tables(broken)[name], frame, obj=name)


def test_coevo_run_ends_a_plugin_error_with_its_frames_and_the_way_back(tmp_path):
    run = tmp_path / "run"
    done = cli(
        "coevo-run",
        "pool=local",
        "curriculum.name=user_curricula:BuggyDR",
        "curriculum.bug_at=2",
        "curriculum.generations=3",
        "test_set.every=0",
        "optimizer.population=4",
        f"hydra.run.dir={run}",
        env={"PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    assert done.returncode == 1, done.stderr[-2000:]
    lines = done.stderr.rstrip().splitlines()
    tests = Path(__file__).resolve().parents[1]  # user_curricula's folder: the way back names it
    assert lines[-1] == (
        "coevo: stopped after generation 1; after fixing it, resume with: "
        f"PYTHONPATH={tests} coevo-run resume={run}"
    )
    assert 'user_curricula.py", line' in done.stderr and "ValueError: my bug in step" in lines
    assert "HYDRA_FULL_ERROR" not in done.stderr


def test_a_state_that_does_not_pickle_is_named_at_the_first_checkpoint(tmp_path):
    raw = {**RAW, "curriculum": {"name": "user_curricula:UnpicklableDR", "generations": 2}}
    with pytest.raises(CheckpointError) as refused:
        runner.run(parse_config(raw), tmp_path / "run", quiet)
    message = str(refused.value)
    assert_says(
        message,
        "cannot be checkpointed",
        "state['curriculum']['rule'] does not pickle",
        "AttributeError",
    )
    assert "curriculum_state" in message and "no lambdas" in message


@pytest.mark.parametrize(
    ("name", "reported"),
    [
        ("user_curricula:LearnabilityPLR", "LearnabilityPLR.level_score"),
        ("user_curricula:NamedLearnabilityPLR", "learnability"),
    ],
)
def test_a_plr_subclass_with_its_own_level_score_is_reported_as_such(tmp_path, name, reported):
    # The summary names the subclass's score. Declared with score_name, the built-in score's
    # fallback (positive_value_loss needs a critic; ES has none) is not its business: no
    # warning. Unnamed, the override may call the built-in score: the warning stays.
    raw = {
        **RAW,
        "curriculum": {"name": name, "generations": 3, "buffer_size": 4, "replay_prob": 0.5},
    }
    lines: list[str] = []
    runner.run(parse_config(raw), tmp_path / "run", lines.append)
    warned = [line for line in lines if "is learnability instead" in line]
    assert bool(warned) is (reported != "learnability")
    if warned:  # about the built-in score the override may call, and how to silence it
        assert_says(warned[0], "LearnabilityPLR.level_score", "learnability", "score_name")
    summary = pd.read_csv(tmp_path / "run" / "summary.csv")
    assert (summary["level_score"] == reported).all()
    eligibility = pd.read_csv(tmp_path / "run" / "eligibility.csv")
    assert eligibility["reason"].str.contains("learnability ").any()


def test_the_builtin_plr_on_the_subclasses_config_says_what_it_falls_back_to(tmp_path):
    # The config of the subclasses above with the built-in PLR (the same for both of them,
    # so run once): it still warns of its fallback.
    raw = {
        **RAW,
        "curriculum": {"name": "plr", "generations": 3, "buffer_size": 4, "replay_prob": 0.5},
    }
    lines: list[str] = []
    runner.run(parse_config(raw), tmp_path / "plr", lines.append)
    assert [line for line in lines if "PLR scores levels by learnability instead" in line]


def test_a_plugin_checks_its_settings_against_the_task_space_before_the_pool_starts(tmp_path):
    raw = {
        **RAW,
        "pool": {"backend": "ray", "num_workers": 2},  # never started: refused before
        "curriculum": {"name": "user_curricula:OneParameterDR", "param": "gravty"},
    }
    with pytest.raises(ConfigError, match=r"curriculum.param: must be one of \[.*\], got 'gravty'"):
        runner.run(parse_config(raw), tmp_path / "run", quiet)
    assert not (tmp_path / "run").exists()


def test_a_task_whose_every_episode_failed_reads_failed_not_trained(tmp_path):
    # Domain randomisation over tests/fragile_env.py's hazard: hazard 1 raises in step.
    raw = {
        **RAW,
        "task": {
            "name": "fragile",
            "entry_point": "fragile_env:FragileCartPole",
            "params": {"hazard": {"low": 0, "high": 1, "init": 0, "step": 1, "type": "int"}},
            "max_episode_steps": 50,
        },
        "curriculum": {"name": "dr", "generations": 3, "tasks_per_step": 4},
    }
    runner.run(parse_config(raw), tmp_path / "run", quiet)
    rows = pd.read_csv(tmp_path / "run" / "eligibility.csv").query("rule == 'sample'")
    broken = rows["task"].str.contains('"hazard": 1')
    assert broken.any() and (~broken).any()
    assert (rows.loc[broken, "outcome"] == "failed").all()
    assert rows.loc[broken, "error"].str.contains("the cart lost a wheel").all()
    assert (rows.loc[~broken, "outcome"] == "trained").all()


@pytest.mark.parametrize("older_checkpoint", [False, True])
def test_resuming_from_before_the_first_test_leaves_no_duplicate_test_rows(
    tmp_path, older_checkpoint
):
    # The test set's table first gets rows at generation 3; a resume from the checkpoint of
    # generation 2 must drop them, not append the re-run's to them; also from a checkpoint
    # written before the recorder knew its tables from the start (no test_scores entry).
    from coevo import checkpoint

    raw = {
        **RAW,
        "checkpoints_kept": 10,
        "curriculum": {"name": "dr", "generations": 4, "tasks_per_step": 2},
        "test_set": {"every": 3, "size": 4},
    }
    run = tmp_path / "run"
    runner.run(parse_config(raw), run, quiet)
    before = pd.read_csv(run / "test_scores.csv")
    assert before["generation"].tolist() == [3] * 4
    old = run / "checkpoints" / "gen_000002.pkl"
    if older_checkpoint:
        state = checkpoint.load(old)
        for stem in ("test_scores", "cross_scores"):
            state["report"]["extra"].pop(stem, None)
        checkpoint.save(old.parent, 2, state, keep=10)
    runner.run(None, run, quiet, resume=True, checkpoint_file=old)
    pd.testing.assert_frame_equal(pd.read_csv(run / "test_scores.csv"), before)


def test_a_state_that_stops_pickling_mid_run_is_reported_once_and_recorded(tmp_path):
    raw = {**RAW, "curriculum": {"name": "user_curricula:LateUnpicklableDR", "generations": 4}}
    lines: list[str] = []
    with pytest.raises(CheckpointError, match="after generation 2 cannot be checkpointed"):
        runner.run(parse_config(raw), tmp_path / "run", lines.append)
    # coevo's own error: its message is the whole story, said by the caller (coevo-run's
    # error line), not echoed a second time with a "traceback below" that never comes.
    assert not [line for line in lines if line.startswith("error:")]
    stopped = (tmp_path / "run" / "stopped.txt").read_text()
    assert stopped.startswith("stopped by an error after generation 1: CheckpointError: ")


def test_coevo_run_reports_a_state_that_stops_pickling_as_the_runs_error(tmp_path, monkeypatch):
    # Not a refused config (exit 2): the run's error, exit 1, in cli.log with the way back.
    # (In this process; the process's own exit 1 is the plugin error's test above.)
    tests = Path(__file__).resolve().parents[1]  # user_curricula's folder: the way back names it
    monkeypatch.setenv("PYTHONPATH", str(tests))
    run = tmp_path / "run"
    done = cli_in_process(
        "coevo-run",
        "pool=local",
        "curriculum.name=user_curricula:LateUnpicklableDR",
        "curriculum.generations=4",
        "test_set.every=0",
        "optimizer.population=4",
        f"hydra.run.dir={run}",
    )
    assert done.returncode == 1, done.stderr[-2000:]
    last = (run / "cli.log").read_text().splitlines()[-1]
    assert last.startswith("coevo-run: error: the run's state after generation 2 cannot be")
    assert done.stderr.strip().splitlines()[-1] == last
    assert last.endswith(f"after fixing it, resume with: PYTHONPATH={tests} coevo-run resume={run}")


def test_a_plr_subclass_wrapping_the_builtin_score_keeps_its_checks(tmp_path):
    raw = {
        **RAW,
        "curriculum": {
            "name": "user_curricula:ScaledPLR",
            "score": "positive_value_loss",
            "score_fallback": "none",
        },
    }
    with pytest.raises(ConfigError, match="curriculum.score: positive_value_loss needs the value"):
        runner.run(parse_config(raw), tmp_path / "run", quiet)


def test_a_partially_observed_space_with_a_memoryless_policy_is_warned_of():
    # cartpole_pomdp hides the velocities: an MLP acts on positions only.
    from coevo.run_setup import memory_warnings

    def warned(task: str, policy: str) -> list[str]:
        config = parse_config({"task": {"name": task}, "policy": {"name": policy}})
        return memory_warnings(config, *run_setup.prepare(config))

    (warning,) = warned("cartpole_pomdp", "mlp")
    assert warning.startswith("warning: task space 'cartpole_pomdp' ")
    assert_says(warning, "policy=mlp keeps no memory", "policy=gru or policy=lstm")
    assert warned("cartpole_pomdp", "gru") == [] and warned("cartpole", "mlp") == []
