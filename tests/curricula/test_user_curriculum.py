"""A curriculum from outside the coevo package (tests/user_curricula.py) through coevo-run:
its own config file in the user's config directory (Hydra search path), tables, report,
checkpoints, and SIGKILL-resume identical to an undisturbed run."""

import json
import os
import signal
from pathlib import Path

import pandas as pd
import pytest
from cli_support import cli, cli_in_process, run_and_kill_after_checkpoint, run_tables
from phrases import assert_says

HERE = Path(__file__).resolve().parents[1]  # tests/, where user_curricula.py lives
# where the user's module lives, ahead of whatever PYTHONPATH already says
ENV = {"PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))}


def _user_conf(tmp_path: Path) -> Path:
    conf = tmp_path / "my_conf"
    (conf / "curriculum").mkdir(parents=True)
    (conf / "curriculum" / "nearby.yaml").write_text(
        "# the user's curriculum, by import path, with its settings\n"
        "name: user_curricula:NearbyTasks\n"
        "generations: 10\n"
        "rounds: 3\n"
        "tasks_per_step: 4\n"
        "eval_episodes: 2\n"
        "spread: 0.3\n"
        "hard_below: 150\n"
    )
    return conf


def _args(tmp_path: Path) -> list[str]:
    return [
        f"hydra.searchpath=[file://{_user_conf(tmp_path)}]",
        "curriculum=nearby",
        "pool=local",
        "optimizer.population=48",
        "seed=7",
    ]


def test_a_user_curriculum_runs_through_coevo_run_and_resumes_after_sigkill(tmp_path):
    args = _args(tmp_path)
    clean = tmp_path / "clean"
    done = cli_in_process("coevo-run", *args, f"hydra.run.dir={clean}")
    assert done.returncode == 0, done.stderr[-3000:]
    assert (clean / "report.html").stat().st_size > 1000
    assert (clean / "checkpoints" / "gen_000010.pkl").exists()
    expected = run_tables(clean)
    summary, decisions = expected["summary.csv"], expected["eligibility.csv"]
    assert summary["generation"].tolist() == list(range(1, 11))
    # 3 rounds x 4 tasks a generation; the hooks' own column, rows and decisions arrive
    assert summary["episodes"].gt(0).all() and summary["tasks"].eq(12).all()
    assert set(decisions["rule"]) == {"train", "keep_hard"}
    kept = decisions[decisions["rule"] == "keep_hard"]
    assert set(kept["outcome"]) <= {"kept", "dropped"} and len(kept) == 10 * 12
    last = kept[kept["generation"] == 10].tail(4)  # the last round's verdicts
    assert summary["hard_tasks"].iloc[-1] == (last["outcome"] == "kept").sum()
    assert len(expected["population.csv"]) == summary["hard_tasks"].iloc[-1]
    recorded = (clean / "config.yaml").read_text()
    assert "name: user_curricula:NearbyTasks" in recorded and "spread: 0.3" in recorded

    killed = tmp_path / "killed"
    process = run_and_kill_after_checkpoint(args, killed, env=ENV)
    assert process.returncode == -signal.SIGKILL
    assert not (killed / "checkpoints" / "gen_000010.pkl").exists()

    resumed = cli_in_process("coevo-run", f"resume={killed}")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resuming" in resumed.stdout and "gen  10/10" in resumed.stdout
    got = run_tables(killed)
    for name in expected:
        pd.testing.assert_frame_equal(got[name], expected[name], obj=name)
    assert (killed / "report.html").exists()


def test_a_bad_setting_of_a_user_curriculum_is_refused_by_name(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    done = cli_in_process("coevo-run", *_args(tmp_path), "curriculum.spread=2", cwd=work)
    assert done.returncode == 2
    assert "curriculum.spread: must be a number in [0, 1], got 2" in done.stderr
    # Hydra made a run directory before the config was checked; nothing of it is left.
    assert not [p for p in work.rglob("*") if p.is_file()], "a refused run left files behind"


def test_settings_a_user_config_file_leaves_out_are_settings_on_the_command_line(tmp_path):
    # A file naming only the class: its dataclass's fields, its own (`spread`) and inherited
    # ones (`rounds`), are settings all the same, range-checked by their own rules.
    conf = tmp_path / "short_conf"
    (conf / "curriculum").mkdir(parents=True)
    (conf / "curriculum" / "bare.yaml").write_text("name: user_curricula:NearbyTasks\n")
    args = [f"hydra.searchpath=[file://{conf}]", "curriculum=bare", "pool=local"]
    done = cli_in_process("coevo-run", *args, "curriculum.spread=2", cwd=tmp_path)
    assert done.returncode == 2
    assert "curriculum.spread: must be a number in [0, 1], got 2" in done.stderr
    run_dir = tmp_path / "run"
    done = cli_in_process(
        "coevo-run",
        *args,
        "curriculum.generations=2",
        "curriculum.spread=0.5",
        "curriculum.rounds=1",
        "optimizer.population=8",
        f"hydra.run.dir={run_dir}",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    recorded = (run_dir / "config.yaml").read_text()
    assert "spread: 0.5" in recorded and "rounds: 1" in recorded


def test_a_plugin_named_on_the_command_line_takes_the_presets_settings_it_has(tmp_path):
    # `curriculum.name=pkg:Class` with the default preset (POET): POET's keys that are no
    # settings of the user's class are dropped, not refused as unknown keys; those it has
    # (generations) carry over.
    run_dir = tmp_path / "run"
    done = cli_in_process(
        "coevo-run",
        "curriculum.name=user_curricula:NearbyTasks",
        "curriculum.generations=2",
        "curriculum.hard_below=50",
        "optimizer.population=8",
        "pool=local",
        f"hydra.run.dir={run_dir}",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    recorded = (run_dir / "config.yaml").read_text()
    assert "name: user_curricula:NearbyTasks" in recorded and "hard_below: 50" in recorded
    assert "mc_lower" not in recorded and "spread: 0.2" in recorded  # its own default


@pytest.mark.parametrize(
    "named",
    [
        "curriculum.name=user_curricula:NearbyTasks",
        "++curriculum.name=user_curricula:NearbyTasks",
        "curriculum.name='user_curricula:NearbyTasks'",
    ],
)
def test_a_plugin_named_in_any_override_form_takes_its_own_settings(tmp_path, named):
    run_dir = tmp_path / "run"
    done = cli_in_process(
        "coevo-run",
        named,
        "curriculum.generations=2",
        "curriculum.spread=0.3",
        "optimizer.population=8",
        "pool=local",
        f"hydra.run.dir={run_dir}",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "spread: 0.3" in (run_dir / "config.yaml").read_text()


@pytest.mark.parametrize(
    "names", ["user_curricula:NearbyTasks,dr", "choice(user_curricula:NearbyTasks,dr)"]
)
def test_a_sweep_over_plugin_names_accepts_each_ones_settings(tmp_path, names):
    done = cli_in_process(
        "coevo-run",
        "-m",
        f"curriculum.name={names}",
        "curriculum.generations=1",
        "optimizer.population=8",
        "pool=local",
        f"hydra.sweep.dir={tmp_path / 'sweep'}",
        "curriculum.spread=0.3",
        cwd=tmp_path,
    )
    # Checked before Hydra: spread is a setting of one of the swept plug-ins. (DR's job is
    # then refused by parse_config: spread is none of DR's settings.)
    assert "curriculum.spread: unknown key; did you mean" not in done.stderr, done.stderr[-2000:]
    assert (tmp_path / "sweep" / "0" / "config.yaml").is_file()


def test_an_experiment_presets_settings_carry_over_to_a_plugin_that_has_them(tmp_path):
    # poet_bipedal sets walker-scale thresholds; naming Enhanced POET keeps them.
    from coevo import hydra_configs
    from coevo.cli.conf import CONF_DIR
    from coevo.cli.overrides import check_overrides
    from coevo.cli.plugins import named_on_command_line

    preset = hydra_configs.compose(CONF_DIR, ["experiment=poet_bipedal"])["curriculum"]
    command = ["experiment=poet_bipedal", "curriculum.name=enhanced_poet"]
    check_overrides(command)  # as coevo-run does first: it notes the presets' classes
    raw = hydra_configs.compose(CONF_DIR, command)
    named_on_command_line(raw, command)
    assert raw["curriculum"]["name"] == "enhanced_poet"
    for key in ("repro_threshold", "mc_lower", "mc_upper", "generations"):
        assert raw["curriculum"][key] == preset[key], key
    # POET's own defaults are not the preset's settings: Enhanced POET keeps its own.
    command = ["curriculum.name=enhanced_poet"]
    check_overrides(command)
    raw = hydra_configs.compose(CONF_DIR, command)
    named_on_command_line(raw, command)
    assert "novelty" not in raw["curriculum"] and "max_active" not in raw["curriculum"]


def test_a_plugin_unrelated_to_the_preset_keeps_its_own_defaults(tmp_path):
    # A user's optimizer with a `sigma` of its own (default 0.05) named over ES's preset
    # (sigma 0.1): the same name, another meaning; its default stays.
    run_dir = tmp_path / "run"
    done = cli_in_process(
        "coevo-run",
        "optimizer.name=user_curricula:SigmaOptimizer",
        "curriculum.name=user_curricula:NearbyTasks",
        "curriculum.generations=1",
        "pool=local",
        f"hydra.run.dir={run_dir}",
        cwd=tmp_path,
    )
    # (Its ask raises: the run stops at its first step, after config.yaml is written.)
    recorded = (run_dir / "config.yaml").read_text()
    assert "sigma: 0.05" in recorded and "population" not in recorded, done.stderr[-2000:]
    assert "generations: 1" in recorded  # a setting both configs' base has


def test_a_task_space_of_the_users_own_by_import_path(tmp_path):
    # tests/user_tasks.py: CartPole whose mutation changes one parameter at a time. POET's
    # children then differ from their parent in exactly one parameter.
    run_dir = tmp_path / "run"
    done = cli_in_process(
        "coevo-run",
        "task.name=user_tasks:cartpole_one_at_a_time",
        "curriculum.generations=4",
        "curriculum.reproduce_every=1",
        "curriculum.repro_threshold=50",
        "optimizer.population=8",
        "pool=local",
        f"hydra.run.dir={run_dir}",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    children = pd.read_csv(run_dir / "eligibility.csv").query("kind == 'child'")
    assert len(children) > 0
    population = pd.read_csv(run_dir / "population.csv").set_index("pair_id")
    for _, child in children.iterrows():
        task = json.loads(child["task"])
        assert task["space"] == "cartpole_one_at_a_time"
        parent = population.loc[int(child["parent_id"])]
        changed = [k for k, v in task["params"].items() if v != parent[f"task.{k}"]]
        assert len(changed) == 1, (task, parent)
    typo = cli_in_process("coevo-run", "task.name=user_tasks:nope", "pool=local", cwd=tmp_path)
    assert typo.returncode == 2
    assert "task.name: module 'user_tasks' has no 'nope'" in typo.stderr
    a_class = cli_in_process(
        "coevo-run", "task.name=user_tasks:OneAtATime", "pool=local", cwd=tmp_path
    )
    assert a_class.returncode == 2
    assert "task.name: 'user_tasks:OneAtATime' is a class; name a TaskSpace" in a_class.stderr


def test_a_named_plugin_that_does_not_import_is_the_error_not_its_settings(tmp_path):
    done = cli_in_process(
        "coevo-run",
        "optimizer.name=mypkg.hill:HillClimber",
        "optimizer.tries=16",
        "pool=local",
        f"hydra.run.dir={tmp_path / 'run'}",
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("coevo-run: error: optimizer.name: "), done.stderr
    assert_says(done.stderr, "cannot import 'mypkg.hill'", "No module named 'mypkg'")


def test_a_plugin_module_whose_own_code_raises_at_import_is_a_named_error(tmp_path):
    # Not an ImportError: a config dataclass not frozen under a frozen base raises TypeError
    # while the module runs. Exit 2 with where, not a traceback and exit 1.
    (tmp_path / "loose.py").write_text(
        "from dataclasses import dataclass\n"
        "from coevo.optimizers.base import OptimizerConfig\n"
        "@dataclass\n"
        "class LooseConfig(OptimizerConfig):\n"
        "    tries: int = 3\n"
    )
    done = cli(
        "coevo-run",
        "optimizer.name=loose:Loose",
        "pool=local",
        f"hydra.run.dir={tmp_path / 'run'}",
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path)},
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("coevo-run: error: optimizer.name: "), done.stderr
    assert_says(
        done.stderr,
        "importing 'loose'",
        "TypeError('cannot inherit non-frozen dataclass from a frozen one')",
        f"{tmp_path / 'loose.py'}, line 3",
    )


@pytest.mark.parametrize(
    ("name", "phrases"),
    [
        (
            "user_curricula:UndecoratedOptimizer",
            ("UndecoratedConfig declares tries but is not a dataclass", "@dataclass(frozen=True)"),
        ),
        (
            "user_curricula:UnrelatedOptimizer",
            ("config_class UnrelatedConfig", "must subclass OptimizerConfig"),
        ),
    ],
)
def test_a_config_class_whose_settings_would_go_unread_or_unchecked_is_refused(name, phrases):
    from coevo.config import parse_config
    from coevo.errors import ConfigError

    with pytest.raises(ConfigError) as refused:
        parse_config({"optimizer": {"name": name}})
    assert str(refused.value).startswith(f"optimizer.name: {name}'s ")
    assert_says(str(refused.value), *phrases)


def test_a_policy_kind_of_the_users_own_by_import_path(tmp_path):
    # policy.name=package.module:builder, as task.name and the plug-ins take theirs: a kind
    # registered in the user's module was reachable only if something else imported it.
    done = cli_in_process(
        "coevo-run",
        "policy.name=user_curricula:small_mlp",
        "curriculum.generations=1",
        "optimizer.population=4",
        "pool=local",
        "test_set.every=0",
        f"hydra.run.dir={tmp_path}",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    from coevo import checkpoint

    _, state = checkpoint.load_latest(tmp_path / "checkpoints")
    pair = state["curriculum"]["population"].active[0]
    assert pair.theta.size == 4 * 3 + 3 + 3 * 2 + 2  # CartPole: 4 -> 3 -> 2 logits
    for name, message in [
        ("user_curricula:nope", "policy.name: module 'user_curricula' has no 'nope'"),
        (
            "user_curricula:NoConfigES",
            "policy.name: 'user_curricula:NoConfigES' is not a builder function",
        ),
        (
            "user_curricula:one_argument_builder",
            "policy.name: 'user_curricula:one_argument_builder' is not a builder function",
        ),
        (
            "user_curricula:number_builder",
            "policy.name: 'user_curricula:number_builder' returned a int, not a coevo Policy",
        ),
    ]:
        refused = cli_in_process("coevo-run", f"policy.name={name}", "pool=local")
        assert refused.returncode == 2 and message in refused.stderr, refused.stderr


def test_a_named_plugins_unknown_key_is_matched_against_its_own_settings(tmp_path):
    # The preset's ES keys (optimizer.lr_min, ...) are no suggestion for a plug-in that
    # replaces ES: its own fields are (SigmaConfig: name, sigma).
    done = cli_in_process(
        "coevo-run",
        "optimizer.name=user_curricula:SigmaOptimizer",
        "optimizer.lr_mn=1",
        "pool=local",
        f"hydra.run.dir={tmp_path}",
    )
    assert done.returncode == 2
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("coevo-run:")]
    head, _, suggested = line.partition("; did you mean: ")
    assert head == "coevo-run: error: optimizer.lr_mn: unknown key"
    assert set(suggested.split(", ")) <= {"optimizer.name", "optimizer.sigma"}, line


def test_an_env_module_whose_own_code_raises_at_import_is_a_named_error(tmp_path, monkeypatch):
    # task.entry_point's module, as a plug-in's: the error and its line, exit 2 (in this
    # process, the module's folder on sys.path; the console script's own exit 2 for a
    # plug-in module that raises: the test above).
    (tmp_path / "broken_env.py").write_text("SIZE = 1 / 0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    done = cli_in_process(
        "coevo-run",
        "task.name=broken",
        "+task.entry_point=broken_env:Env",
        "pool=local",
        f"hydra.run.dir={tmp_path / 'run'}",
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert_says(
        done.stderr,
        "importing 'broken_env'",
        "ZeroDivisionError('division by zero')",
        f"{tmp_path / 'broken_env.py'}, line 1",
    )
