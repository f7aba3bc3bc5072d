"""experiments/curricula/run_study.py: its `--quick` pipeline end to end (coevo-run arms,
coevo-compare, study.md), `--check` reproducing a recorded cell, and the arms' configs being
coevo-run's own composition (conf/optimizer/ppo.yaml's values, not PPOConfig's defaults)."""

from __future__ import annotations

import contextlib
import io

import pandas as pd
import pytest
import yaml
from cli_support import ROOT, cli_in_process, script_module

from coevo.compare.analysis import GroupStats, RunFigure

# The module's quick study runs once, on one xdist worker, for the tests that read it.
pytestmark = pytest.mark.xdist_group("test_curricula_study")

STUDY = ROOT / "experiments" / "curricula" / "run_study.py"
PLR_ARM = "task=cartpole,optimizer=es,curriculum=plr,curriculum.buffer_size=64"


def study_module():
    """run_study.py imported (a script, not a package)."""
    return script_module(STUDY, "run_study")


def study(*args) -> tuple[int, str]:
    """`python run_study.py ARGS` as its `__main__` runs it, in this process (an arm's runs
    are coevo-run processes all the same): its exit code and what it printed."""
    printed = io.StringIO()
    code = 0
    with contextlib.redirect_stdout(printed):  # the arms' threads print here too
        try:
            study_module().main([*map(str, args)])
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else 1
    return code, printed.getvalue()


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """The quick study of DR and PLR⊥ at one seed each (`--seeds`: every seed goes through
    the same pipeline), each arm's pilot and runs in legs as --quick makes them."""
    out = tmp_path_factory.mktemp("quick")
    code, printed = study("--quick", "--seeds", 1, "--curricula", "dr,plr", "--out", out)
    assert code == 0, printed[-3000:]
    return out, printed


def _records(out) -> dict[str, dict]:
    """Every recorded run of a study: 'ARM_DIR/seed=N' -> its study_run.yaml."""
    return {
        f"{path.parent.parent.name}/{path.parent.name}": yaml.safe_load(path.read_text())
        for path in sorted((out / "arms").glob("*/seed=*/study_run.yaml"))
    }


@pytest.mark.slow
def test_quick_study_runs_each_arm_to_the_budget_and_compares_them(quick):
    out, printed = quick
    module = study_module()
    budget = module.SCALES["quick"].budget
    arms = sorted(p.name for p in (out / "arms").iterdir())
    assert arms == ["task=cartpole,optimizer=es,curriculum=dr", PLR_ARM]
    for arm in arms:
        record = yaml.safe_load((out / "arms" / arm / "arm.yaml").read_text())
        assert record["expectation"]  # declared before the runs
        assert sorted(p.name for p in (out / "arms" / arm).glob("seed=*")) == ["seed=0"]
        run_dir = out / "arms" / arm / "seed=0"
        config = yaml.safe_load((run_dir / "config.yaml").read_text())  # resolved config
        assert config["seed"] == 0 and config["test_set"]["every"] == record["test_set.every"]
        assert config["test_set"]["episodes"] == module.TEST_EPISODES == 2  # for α-CVaR
        steps = pd.read_csv(run_dir / "summary.csv")["env_steps"].sum()
        assert steps >= budget  # ran to the budget
        legs = yaml.safe_load((run_dir / "study_run.yaml").read_text())["legs"]
        assert legs == sorted(legs) and legs[-1] == config["curriculum"]["generations"]
    runs = pd.read_csv(out / "compare" / "task=cartpole,optimizer=es" / "compare_runs.csv")
    assert len(runs) == 2 and (runs["env_steps"] <= budget).all()  # scorings inside the budget
    # Every run scored inside the budget has an α-CVaR ranked and rescored apart.
    assert (runs["cvar"].notna() == runs["value"].notna()).all()
    text = (out / "study.md").read_text()
    assert "P(> dr)" in text and "IQM [95% CI]" in text
    assert "- plr: expected: PLR⊥ beats DR" in text and ("held" in text)
    assert "Budget 6,000 training env steps per run; 1 seed per arm" in text
    commits = list(dict.fromkeys(r["commit"] for r in _records(out).values()))
    assert f"runs at commit {', '.join(commits)} (each run's study_run.yaml)" in text
    # The same runs at equal gradient updates: as many as the arm with the fewest made, each
    # run read at its last scoring at or below that.
    fewest = runs.groupby("curriculum.name")["updates"].median().min()
    assert f"At equal updates ({fewest:,.0f}, and the step budget" in text
    equal = pd.read_csv(out / "compare" / "task=cartpole,optimizer=es" / "equal_updates" /
                        "compare_runs.csv")  # fmt: skip
    assert (equal["updates"] <= fewest).all() and len(equal) == 2
    assert (equal["generations"].astype(str).str.split().str.len() == 1).all()  # one scoring
    assert text.strip() in printed


def _figure(updates: float) -> RunFigure:
    return RunFigure(None, "", 0.5, (0.5,), (1,), 1.0, updates, True, 0.0, 0.0)  # type: ignore[arg-type]


def test_equal_updates_cut_at_the_median_run_of_the_arm_with_the_fewest():
    def group(label, *updates):
        return GroupStats(label, [_figure(u) for u in updates], 0.5, (0, 1), 0.0, (0, 1))

    groups = [
        group("dr", 240, 230, 250),
        group("plr", 100, 130, 116),  # its fewest run (100) is not the cut: its median is
        group("custom", 50, float("nan")),  # a run without updates: left out, not the cut
    ]
    fewest, medians = study_module().updates_cut(groups)
    assert fewest == 116 and medians == {"dr": 240, "plr": 116}


def test_run_commits_are_listed_once_each_in_arm_and_seed_order(tmp_path):
    module = study_module()
    arms = [module.Arm("cartpole", "es", "dr"), module.Arm("cartpole", "es", "plr")]
    for arm, seed, commit in ((arms[0], 0, "bbb"), (arms[0], 1, "aaa"), (arms[1], 0, "bbb")):
        run = tmp_path / "arms" / arm.name / f"seed={seed}"
        run.mkdir(parents=True)
        (run / module.RUN_RECORD).write_text(yaml.safe_dump({"commit": commit}))
    assert module._run_commits(arms, tmp_path) == "bbb, aaa"


@pytest.mark.slow
def test_check_reproduces_a_recorded_cell_bit_for_bit(quick):
    out, _ = quick
    records = _records(out)
    legs = {cell: len(record["legs"]) for cell, record in records.items()}
    # The run of the most legs: --check replays each of its recorded `resume=` legs.
    cell = max(legs, key=legs.__getitem__)
    assert legs[cell] >= 2, legs
    code, printed = study("--check", out, "--cell", cell)
    assert code == 0 and "reproduced bit for bit" in printed, printed[-3000:]
    # A tampered record is caught: the figure no longer matches (on the run of the fewest
    # legs, the cheapest to run again).
    cell = min(legs, key=legs.__getitem__)
    record_file = out / "arms" / cell / "study_run.yaml"
    record = records[cell]
    record_file.write_text(yaml.safe_dump({**record, "figure": record["figure"] + 0.5}))
    try:
        code, printed = study("--check", out, "--cell", cell)
        assert code == 1 and "NOT reproduced" in printed, printed[-3000:]
    finally:
        record_file.write_text(yaml.safe_dump(record))


def test_a_ppo_arm_runs_the_config_files_ppo():
    """The issue's bug: the old study passed only the optimizer's name, so PPOConfig's
    defaults (8 x 256, gamma 0.99) ran instead of conf/optimizer/ppo.yaml. An arm is now
    coevo-run's own composition of its overrides (the quick study above runs such arms)."""
    arm = study_module().Arm("cartpole", "ppo", "dr")
    done = cli_in_process("coevo-run", *arm.overrides, "seed=0", "--cfg", "job")
    assert done.returncode == 0, done.stderr[-3000:]
    config = yaml.safe_load(done.stdout)
    written = yaml.safe_load((ROOT / "conf" / "optimizer" / "ppo.yaml").read_text())
    for key in ("n_envs", "n_steps", "batch_size", "gamma"):
        assert config["optimizer"][key] == written[key]
    assert config["policy"]["name"] == "actor_critic"


def test_arms_are_named_by_their_overrides_and_declare_expectations():
    module = study_module()
    arm = module.Arm("acrobot_reach", "es", "poet", ("optimizer.lr=0.02",))
    assert arm.name == (
        "task=acrobot_reach,optimizer=es,curriculum=poet,curriculum.repro_threshold=-300.0,"
        "curriculum.mc_lower=-450.0,curriculum.mc_upper=-25.0,optimizer.lr=0.02"
    )
    assert "pool=local" in arm.overrides  # one in-process worker per run; runs in parallel
    for curriculum in module.CURRICULA:
        assert module.EXPECTATIONS[curriculum].claim
    assert module.SCALES["full"].seeds >= 10


@pytest.mark.parametrize("optimizer, refresh_every", [("es", 20), ("ars", 40), ("ppo", 100)])
def test_sfl_arms_compose_and_pass_coevo_runs_checks(tmp_path, optimizer, refresh_every):
    """SFL's study settings (ARM_ and OPTIMIZER_OVERRIDES) as coevo-run composes them: the
    sample halved, the refresh period per optimizer, and every check a run makes first."""
    from coevo import hydra_configs, run_setup
    from coevo.cli.conf import CONF_DIR
    from coevo.config import parse_config

    module = study_module()
    assert "sfl" in module.CURRICULA and "SFL beats DR" in module.EXPECTATIONS["sfl"].claim
    for space in ("cartpole", "acrobot_reach"):
        arm = module.Arm(space, optimizer, "sfl")
        assert arm.name.endswith(
            f"curriculum=sfl,curriculum.levels_sampled=50,curriculum.refresh_every={refresh_every}"
        )
        config = parse_config(hydra_configs.compose(CONF_DIR, list(arm.overrides)))
        assert config.curriculum.refresh_every == refresh_every
        assert config.curriculum.levels_sampled == 50 > config.curriculum.buffer_size
        run_setup.preflight(config, tmp_path / space, False, None, lambda _: None)
