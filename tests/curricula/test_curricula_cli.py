"""The single-policy curricula through `coevo-run`: two task spaces each, and a SIGKILL in
the middle of an ACCEL run followed by `resume=` gives tables identical to an undisturbed run
(each curriculum's own continuation from its state: tests/curricula/test_curricula.py)."""

from __future__ import annotations

import signal

import pandas as pd
import pytest
from cli_support import (
    PPO_DIAGNOSTICS,
    cli_in_process,
    refusals_in_a_fresh_process,
    run_and_kill_after_checkpoint,
    run_tables,
)

# Small settings that still exercise each rule within a few generations.
SETTINGS = {
    "dr": [],
    "plr": ["curriculum.buffer_size=8", "curriculum.tasks_per_step=2"],
    "accel": ["curriculum.buffer_size=8", "curriculum.tasks_per_step=2"],
    "alp_gmm": [
        "curriculum.fit_rate=8",
        "curriculum.bootstrap=8",
        "curriculum.max_components=3",
        "curriculum.tasks_per_step=4",
    ],
}


def _args(name: str, generations: int, *extra: str) -> list[str]:
    return [
        "pool=local",
        f"curriculum={name}",
        f"curriculum.generations={generations}",
        *SETTINGS[name],
        *extra,
    ]


# With ES: pendulum here; CartPole with PPO below (two task spaces each).
@pytest.mark.parametrize("task", ["pendulum"])
@pytest.mark.parametrize("name", list(SETTINGS))
def test_each_curriculum_runs_on_a_continuous_task_space(name, task, tmp_path):
    run = tmp_path / "run"
    done = cli_in_process(
        "coevo-run",
        *_args(name, 3, f"task={task}", "optimizer.population=4", "seed=2"),
        f"hydra.run.dir={run}",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    tables = run_tables(run)
    assert tables["summary.csv"]["generation"].tolist() == [1, 2, 3]
    decisions = tables["eligibility.csv"]
    assert len(decisions) > 0 and set(decisions["kind"]) == {"level"}
    assert decisions["task"].str.contains(f'"space": "{task}"').all()
    assert len(tables["population.csv"]) > 0
    assert (run / "report.html").exists()


def test_sigkill_mid_accel_run_then_resume_matches_an_undisturbed_run(tmp_path):
    # One curriculum killed for real: what a SIGKILL leaves and `resume=` reads back is the
    # run's (coevo/run.py restores any curriculum through its state_dict; a POET run:
    # tests/run/test_resume.py). That each curriculum's state_dict continues its run
    # exactly, dr, plr, accel and alp_gmm alike: test_curricula.py's
    # test_state_dict_continues_exactly_like_an_undisturbed_run. ACCEL's state is the
    # largest: PLR's level buffer and scores, plus its edited levels.
    # Enough work per generation (ES population 48 on CartPole) that a kill just after
    # checkpoint 3 lands in the middle of the run.
    args = _args("accel", 14, "optimizer.population=48", "seed=4")
    clean = tmp_path / "clean"
    done = cli_in_process("coevo-run", *args, f"hydra.run.dir={clean}")
    assert done.returncode == 0, done.stderr[-3000:]

    killed = tmp_path / "killed"
    process = run_and_kill_after_checkpoint(args, killed)
    assert process.returncode == -signal.SIGKILL
    assert not (killed / "checkpoints" / "gen_000014.pkl").exists()

    resumed = cli_in_process("coevo-run", f"resume={killed}")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resuming" in resumed.stdout

    expected, got = run_tables(clean), run_tables(killed)
    for table in expected:
        pd.testing.assert_frame_equal(got[table], expected[table], obj=table)
    assert expected["summary.csv"]["generation"].tolist() == list(range(1, 15))


PPO = ["optimizer=ppo", "policy=actor_critic", "optimizer.n_envs=2", "optimizer.n_epochs=2"]
# Streams long enough that episodes end in them (a task's return needs a finished episode):
# Pendulum's episodes are 200 steps.
PPO_STEPS = {"cartpole": 64, "pendulum": 200}
# Every curriculum with PPO on CartPole (discrete actions); on Pendulum (continuous actions,
# episodes ended only by the time limit) the two whose scores differ: ACCEL's positive value
# loss (PLR's rule and code, plus edits) and ALP-GMM's learning progress. DR only trains on
# what it draws: its Pendulum run with PPO would repeat ACCEL's and ALP-GMM's PPO path.
PPO_CASES = [
    *((name, "cartpole") for name in SETTINGS),
    ("accel", "pendulum"),
    ("alp_gmm", "pendulum"),
]


@pytest.mark.parametrize("name, task", PPO_CASES)
def test_each_curriculum_trains_with_ppo(name, task, tmp_path):
    run = tmp_path / "run"
    steps = PPO_STEPS[task]
    ppo = [*PPO, f"optimizer.n_steps={steps}", f"optimizer.batch_size={steps}"]
    done = cli_in_process(
        "coevo-run", *_args(name, 4, f"task={task}", "seed=3", *ppo), f"hydra.run.dir={run}"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    tables = run_tables(run)
    summary = tables["summary.csv"]
    assert summary["optimizer_steps"].iloc[-1] > 0
    if name == "dr":  # a PPO update every generation: its own numbers (SB3's train/*)
        for column in PPO_DIAGNOSTICS:
            assert summary[column].notna().all(), column
    if name in ("plr", "accel"):
        # PPO's rollouts carry value predictions: the paper's score, no fallback
        assert set(summary["level_score"]) == {"positive_value_loss"}
        reasons = tables["eligibility.csv"]["reason"]
        scored = reasons[~reasons.str.contains("drawn again this step")]
        assert scored.str.contains("positive value loss").all()
        assert "return regret" not in " ".join(reasons)


MISMATCHED = [
    (
        ["curriculum=plr", "curriculum.score_fallback=none"],
        "curriculum.score: positive_value_loss needs the value predictions",
    ),
    (
        ["curriculum=dr", "curriculum.tasks_per_step=9", "optimizer.population=4"],
        "curriculum.tasks_per_step: 9 > optimizer.population 4; allowed: 1..4",
    ),
    (
        ["curriculum=plr", "optimizer=ars", "curriculum.tasks_per_step=9"],
        "curriculum.tasks_per_step: 9 > optimizer.directions 8; allowed: 1..8",
    ),
]


def test_a_curriculum_that_cannot_work_with_its_optimizer_stops_before_ray(tmp_path):
    # Every case in one fresh process: exit 2 naming the setting, Ray not imported, no run.
    cases = [["pool=ray", *overrides] for overrides, _ in MISMATCHED]
    results = refusals_in_a_fresh_process(cases, tmp_path)
    for (overrides, message), (code, stderr, ray_imported) in zip(MISMATCHED, results, strict=True):
        assert (code, ray_imported) == (2, False), (overrides, stderr)
        assert f"coevo-run: error: {message}" in stderr, (overrides, stderr)
    assert not (tmp_path / "config.yaml").exists()


@pytest.mark.parametrize("name", ["plr", "accel"])
def test_the_default_settings_replay_and_train_within_the_default_run(name, tmp_path):
    """`coevo-run curriculum=plr` as typed: PLR⊥ trains only on replayed levels, so the
    buffer must reach its fill within the run (dcd's 4000 levels never did in 30 gens)."""
    done = cli_in_process(
        "coevo-run", "pool=local", f"curriculum={name}", f"hydra.run.dir={tmp_path}"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "would never start" not in done.stdout + done.stderr
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert len(summary) == 30 and summary["replays"].sum() > 0
    assert summary["optimizer_steps"].iloc[-1] > 0  # the policy was trained
