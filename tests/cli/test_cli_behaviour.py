"""coevo-run's answers to a user's mistakes and interruptions: a typo'd key, Ctrl-C,
`resume=` with overrides (safe ones applied, others refused by name), `resume=` of a
checkpoint file, and a generation in which every evaluation fails."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from cli_support import COEVO_RUN, ROOT, cli_in_process, run_tables
from phrases import assert_says

from coevo.pool import EvaluationError, EvaluationPool

SMALL = [
    "pool=local",
    "curriculum.optimizer_steps=2",
    "curriculum.repro_threshold=100",
    "curriculum.reproduce_every=1",
    "curriculum.max_children=4",
    "optimizer.population=8",
    "seed=2",
]
# The tests that read or go on from SMALL's finished run of 5 generations (`finished_run`),
# or FAILING's stopped one (`stopped_run`), share one worker under xdist: each is made once.
FINISHED = pytest.mark.xdist_group("test_cli_behaviour_finished")


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """SMALL run to its end, 5 generations, every checkpoint kept. A test that writes to it
    takes a copy (`_copy_of`)."""
    run = tmp_path_factory.mktemp("finished") / "run"
    args = [*SMALL, "curriculum.generations=5", "checkpoints_kept=5", f"hydra.run.dir={run}"]
    done = cli_in_process("coevo-run", *args)
    assert done.returncode == 0, done.stderr[-3000:]
    return run


def _copy_of(run: Path, where: Path) -> Path:
    """A copy of a shared run at `where` (a run directory moved elsewhere, whole)."""
    shutil.copytree(run, where)
    return where


@pytest.mark.parametrize(
    ("typo", "suggestion"),
    [
        ("curriculum.generatons=2", "curriculum.generations"),
        ("optimizer.popultion=4", "optimizer.population"),
        ("evolution.generations=2", "curriculum.generations"),
        ("pool.num_worker=1", "pool.num_workers"),
        ("task.solved_scor=4", "task.solved_score"),  # a setting cartpole.yaml leaves out
    ],
)
def test_a_typo_exits_2_naming_the_closest_valid_keys(tmp_path, typo, suggestion):
    done = cli_in_process(
        "coevo-run", "pool=local", typo, f"hydra.run.dir={tmp_path}", cwd=tmp_path
    )
    assert done.returncode == 2, done.stderr
    key = typo.split("=")[0]
    assert done.stderr.startswith(f"coevo-run: error: {key}: unknown key; did you mean: ")
    assert suggestion in done.stderr.splitlines()[0]
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "summary.csv").exists()


@pytest.mark.parametrize(
    ("address", "why"),
    [("127.0.0.1:1", "Connection refused"), ("nohost.invalid:6379", "not known")],
)
def test_an_address_where_no_cluster_answers_exits_2_at_once(tmp_path, address, why):
    # Ray's own connect retries for ever (a typo'd port or host hung the run for good).
    started = time.monotonic()
    run = tmp_path / "run"
    done = cli_in_process("coevo-run", f"pool.address={address}", f"hydra.run.dir={run}")
    assert done.returncode == 2, done.stderr[-3000:]
    assert f"coevo-run: error: pool.address: no Ray cluster answers at {address} (" in done.stderr
    assert why in done.stderr and "ray start --head" in done.stderr
    assert time.monotonic() - started < 60
    assert not run.exists()  # refused before the run directory was made


def test_an_unknown_group_choice_exits_2_listing_the_choices(tmp_path):
    done = cli_in_process("coevo-run", "curriculum=poett", f"hydra.run.dir={tmp_path}")
    assert done.returncode == 2
    assert done.stderr.startswith("coevo-run: error: curriculum: ")
    assert_says(done.stderr, "unknown choice 'poett'", "did you mean: poet")
    # the presets' *_defaults nodes are not choices to offer
    assert "accel, alp_gmm, dr, enhanced_poet, plr, poet, poet_paper, sfl\n" in done.stderr


@pytest.mark.parametrize("sweep", [False, True])
def test_a_single_run_composes_its_config_twice_and_a_sweep_keeps_hydras_mode(
    tmp_path, monkeypatch, sweep
):
    # A single run: coevo's check of the overrides, then the run; Hydra's own composition to
    # read `hydra.mode` is skipped. A multirun keeps it (Hydra's sweep decides the mode).
    from hydra._internal.hydra import Hydra

    modes = []
    composing = Hydra.compose_config

    def counted(self, *args, **kwargs):
        modes.append(str(kwargs.get("run_mode")))
        return composing(self, *args, **kwargs)

    monkeypatch.setattr(Hydra, "compose_config", counted)
    sweep_args = ["-m", "seed=-1,-2", f"hydra.sweep.dir={tmp_path}"] if sweep else ["seed=-1"]
    done = cli_in_process("coevo-run", *sweep_args, f"hydra.run.dir={tmp_path}")
    assert done.returncode != 0 and "seed" in done.stderr
    if sweep:
        assert "RunMode.MULTIRUN" in modes  # Hydra's probe of the mode ran
    else:
        assert modes == ["RunMode.RUN", "RunMode.RUN"]


def _wait_for(path: Path, process: subprocess.Popen, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert process.poll() is None, process.communicate()[1][-3000:]
        assert time.monotonic() < deadline
        time.sleep(0.02)


# A shell's background job (`make test &`, nohup, some CI runners) starts with SIGINT
# ignored, and Python keeps it ignored: coevo-run is started with Ctrl-C's default back.
WITH_CTRL_C = [
    sys.executable,
    "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])",
]


def _stop_in_generation_3(command: list[str], run: Path, signum: int) -> tuple[int, str, str]:
    """Start `coevo-run COMMAND` on tests/user_tasks.py's space, held in generation 3 (its
    mutation waits there once generation 2's checkpoint is saved: the signal lands in the
    run, never after its end, whatever the load), and send `signum` there: (exit code,
    stderr, its stop line). Checked here: the stop line names generation 2 and is
    the page's banner, with no traceback."""
    from user_tasks import HELD

    env = {**os.environ, "PYTHONPATH": PYTHONPATH, "USER_TASKS_HOLD": str(run)}
    process = subprocess.Popen(
        [*WITH_CTRL_C, COEVO_RUN, *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    try:
        _wait_for(run / HELD, process)
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        process.kill()
    assert "Traceback" not in stderr + stdout
    said = "interrupted" if signum == signal.SIGINT else "terminated (SIGTERM)"
    stops = [line for line in stderr.splitlines() if line.startswith(said)]
    assert stops, f"no '{said}' line; exit code {process.returncode}; stderr:\n{stderr[-3000:]}"
    last = stops[-1]
    assert last == stderr.strip().splitlines()[-1]
    assert last.startswith(f"{said} after generation 2; ")  # where the run was held
    banner = f'<p class="stopped"><strong>{last}</strong></p>'
    assert banner in (run / "report.html").read_text()
    assert pd.read_csv(run / "summary.csv")["generation"].max() == 2
    return process.returncode, stderr, last


# tests/ on PYTHONPATH (tests/user_tasks.py, the task space the signals' runs are held in).
HERE = str(Path(__file__).parents[1])
PYTHONPATH = os.pathsep.join(filter(None, [HERE, os.environ.get("PYTHONPATH")]))
# With SMALL: POET reproduces (so mutates) from generation 1 on, hence in generation 3,
# where the run is held; its generation 3 is the one the interrupted run has not done.
HELD_RUN = ["curriculum.repro_threshold=20", "curriculum.generations=3"]


# The next two tests cover both backends and both signals (SIGTERM raises Terminated, a
# KeyboardInterrupt: one way to stop for both, on either backend).
def test_ctrl_c_names_the_pythonpath_in_the_way_back_and_the_original_command_resumes_exactly(
    tmp_path,
):
    # A task space of the user's own (tests/user_tasks.py, found through PYTHONPATH) and a
    # config directory of theirs on Hydra's search path.
    (tmp_path / "conf" / "task").mkdir(parents=True)
    (tmp_path / "conf" / "task" / "mine.yaml").write_text(
        "name: user_tasks:cartpole_one_at_a_time\n"
    )
    run = tmp_path / "run"
    args = [
        *SMALL,
        f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
        "task=mine",
        *HELD_RUN,
        "test_set.every=3",  # the resumed generation measures the test set
    ]
    command = [*args, f"hydra.run.dir={run}"]
    code, stderr, last = _stop_in_generation_3(command, run, signal.SIGINT)
    assert code == 130, stderr[-3000:]
    assert last == f"interrupted after generation 2; resume with: PYTHONPATH={HERE} " + (
        f"coevo-run resume={run}"
    )
    # The original command with resume= (in this process, whose sys.path has tests/ as the
    # PYTHONPATH named above gives it): the run goes on and ends as an undisturbed one.
    resumed = cli_in_process("coevo-run", *command, f"resume={run}")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resuming {run} after generation 2" in resumed.stdout
    assert "gen   3/3" in resumed.stdout
    assert not (run / "stopped.txt").exists()  # it went on and completed
    assert 'class="stopped"' not in (run / "report.html").read_text()
    clean = tmp_path / "clean"
    assert cli_in_process("coevo-run", *args, f"hydra.run.dir={clean}").returncode == 0
    for name, frame in run_tables(clean).items():
        pd.testing.assert_frame_equal(run_tables(run)[name], frame, obj=name)


def test_sigterm_stops_a_run_as_ctrl_c_does_where_ray_starts_in_the_main_thread(tmp_path):
    # A batch scheduler's cancel: the same stop, with a SIGTERM's exit code, where Ray starts
    # in the main thread (a worker limit, or pool.address), whose ray.init sets a SIGTERM
    # handler of its own. (Resuming is the same whatever stopped the run: see above.)
    run = tmp_path / "run"
    command = [
        *SMALL,
        "pool=ray",
        "pool.num_workers=1",  # one Ray worker process is enough to stop
        "pool.episode_timeout_s=60",
        "task.name=user_tasks:cartpole_one_at_a_time",
        *HELD_RUN,
        f"hydra.run.dir={run}",
    ]
    code, stderr, last = _stop_in_generation_3(command, run, signal.SIGTERM)
    assert code == 143, stderr[-3000:]
    assert "Token authentication" not in stderr  # Ray's notice of its own default
    assert last == (
        f"terminated (SIGTERM) after generation 2; resume with: PYTHONPATH={HERE} "
        f"coevo-run resume={run}"
    )


@FINISHED
def test_resume_extends_a_finished_run_and_refuses_unsafe_overrides(
    tmp_path, ray_session, finished_run
):
    short, long = tmp_path / "short", finished_run  # long: the same run to 5 generations
    assert (
        cli_in_process(
            "coevo-run",
            *SMALL,
            "curriculum.generations=3",
            "pool.envs_per_worker=16",  # recorded in the run's command: kept by pool=local
            f"hydra.run.dir={short}",
        ).returncode
        == 0
    )

    refused = cli_in_process("coevo-run", f"resume={short}", "optimizer.lr=0.5")
    assert refused.returncode == 2
    assert refused.stderr.startswith("coevo-run: error: optimizer.lr: cannot be changed on resume")
    assert "allowed with resume=: curriculum.generations, report_every_s" in refused.stderr
    assert f"start a new run from this run's weights: policy.start_from={short}" in refused.stderr
    bad = cli_in_process("coevo-run", f"resume={short}", "curriculum.generations=0")
    assert bad.returncode == 2 and "curriculum.generations: must be an integer >= 1" in bad.stderr

    typo = cli_in_process("coevo-run", f"resume={short}", "curriculum.generatons=5")
    assert typo.returncode == 2
    assert typo.stderr.startswith("coevo-run: error: curriculum.generatons: ")
    assert_says(typo.stderr, "unknown key", "did you mean: curriculum.generations")
    hydra_key = cli_in_process("coevo-run", f"resume={short}", "hydra.run.dir=elsewhere")
    assert hydra_key.returncode == 2
    assert hydra_key.stderr.startswith("coevo-run: error: hydra.run.dir: cannot be changed")
    # all 3 generations done: says how to extend
    complete = cli_in_process("coevo-run", f"resume={short}")
    assert complete.returncode == 0 and "gen " not in complete.stdout
    assert "nothing to run: the run's 3 generations are done; extend it with" in complete.stdout
    # The original command repeated beside resume= (its hydra.run.dir too) changes nothing.
    original = [*SMALL, "curriculum.generations=3", "pool.envs_per_worker=16"]
    repeated = cli_in_process("coevo-run", *original, f"hydra.run.dir={short}", f"resume={short}")
    assert repeated.returncode == 0, repeated.stderr[-3000:]
    assert "nothing to run: the run's 3 generations are done" in repeated.stdout
    _refused_are_only_the_real_changes(short)
    preset = cli_in_process("coevo-run", f"resume={short}", "pool=remote")
    assert preset.returncode == 2
    assert "pool: unknown preset 'remote'; allowed: local, ray" in preset.stderr

    local_limit = cli_in_process("coevo-run", f"resume={short}", "pool.episode_timeout_s=60")
    assert local_limit.returncode == 2
    assert "pool.episode_timeout_s: only the ray backend enforces it" in local_limit.stderr

    # The worker limits may be set on resume (with a backend that enforces them): same tables.
    # (In this process, on the session's Ray; a coevo-run process that starts a Ray of its
    # own with a worker limit is the Ctrl-C test's SIGTERM case.)
    limits = ["pool.backend=ray", "pool.episode_timeout_s=60", "pool.worker_memory_mb=4000"]
    extended = cli_in_process(
        "coevo-run", f"resume={short}", "curriculum.generations=5", "report_every_s=0", *limits
    )
    assert extended.returncode == 0, extended.stderr[-3000:]
    assert "after generation 3" in extended.stdout and "gen   5/5" in extended.stdout
    assert "env calls cut at 60 s, workers recycled above 4000 MB" in extended.stdout
    written = (short / "config.yaml").read_text()
    assert "generations: 5" in written
    assert "episode_timeout_s: 60" in written and "worker_memory_mb: 4000" in written
    for name, frame in run_tables(long).items():
        pd.testing.assert_frame_equal(run_tables(short)[name], frame, obj=name)
    # A pool preset, as a fresh run of the run's own command with pool=local: every pool.*
    # setting composed again (the ray-only limits set above go back to null; the command's
    # pool.envs_per_worker=16 stays).
    on_local = cli_in_process(
        "coevo-run", f"resume={short}", "curriculum.generations=6", "pool=local"
    )
    assert on_local.returncode == 0, on_local.stderr[-3000:]
    assert "after generation 5" in on_local.stdout and "gen   6/6" in on_local.stdout
    pool = yaml.safe_load((short / "config.yaml").read_text())["pool"]
    assert pool["backend"] == "local" and pool["num_workers"] == 1
    assert pool["episode_timeout_s"] is None and pool["worker_memory_mb"] is None
    assert pool["envs_per_worker"] == 16
    # A pool.* setting typed with the preset wins over it, whatever the order.
    from coevo.cli.resume import apply_resume_overrides
    from coevo.run_setup import load_run_config

    for typed in (["pool.envs_per_worker=8", "pool=ray"], ["pool=ray", "pool.envs_per_worker=8"]):
        config = apply_resume_overrides(load_run_config(short), typed, short)
        assert (config.pool.backend, config.pool.envs_per_worker) == ("ray", 8)
    # The preset's own keys win over the same keys in the run's command (SMALL's pool=local
    # is recorded; a pool.backend=local there would otherwise keep the run local).
    recorded = short / ".hydra" / "overrides.yaml"
    recorded.write_text(recorded.read_text() + "- pool.backend=local\n")
    config = apply_resume_overrides(load_run_config(short), ["pool=ray"], short)
    assert (config.pool.backend, config.pool.envs_per_worker) == ("ray", 16)
    # Fewer generations than the checkpoint holds would run nothing: refused by name.
    fewer = cli_in_process("coevo-run", f"resume={short}", "curriculum.generations=4")
    assert fewer.returncode == 2
    assert "curriculum.generations: 4 is fewer than the 6 generations the checkpoint" in (
        fewer.stderr
    )
    assert "generations: 6" in (short / "config.yaml").read_text()


def _refused_are_only_the_real_changes(run: Path) -> None:
    """Settings equal to the run's pass on resume; every one that differs is named, in one
    error (SMALL's run: seed 2, optimizer.population 8, task cartpole)."""
    from coevo.cli.resume import apply_resume_overrides
    from coevo.errors import ConfigError
    from coevo.run_setup import load_run_config

    same = ["seed=2", "curriculum.optimizer_steps=2", "task=cartpole"]
    with pytest.raises(ConfigError) as one:
        apply_resume_overrides(load_run_config(run), [*same, "optimizer.population=9"], run)
    assert one.value.field == "optimizer.population"
    assert "has optimizer.population=8; this command optimizer.population=9" in str(one.value)
    with pytest.raises(ConfigError) as two:
        apply_resume_overrides(load_run_config(run), ["seed=3", "task=pendulum", same[1]], run)
    assert two.value.field == "seed, task"
    assert "has seed=2, task='cartpole'; this command seed=3, task='pendulum'" in str(two.value)


@FINISHED
def test_resume_from_a_checkpoint_file_goes_on_from_that_generation(tmp_path, finished_run):
    run = _copy_of(finished_run, tmp_path / "run")
    expected = run_tables(run)
    second = run / "checkpoints" / "gen_000002.pkl"
    again = cli_in_process("coevo-run", f"resume={second}")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "after generation 2" in again.stdout and "gen   3/5" in again.stdout
    for name, frame in expected.items():
        pd.testing.assert_frame_equal(run_tables(run)[name], frame, obj=name)


FAILING = [
    "pool=local",
    "task.name=fragile",
    "+task.entry_point=fragile_env:FragileCartPole",
    # hazard 1 raises at every episode's third step, and mutation cannot leave it
    "+task.params.hazard={low: 1, high: 1, init: 1, step: 0, round_to: 1}",
    "curriculum.generations=3",
    "optimizer.population=4",
]


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """FAILING with the default failed_generations (3): stopped in generation 3, after the
    checkpoints of generations 1 and 2 (both all failed). A test that writes to it takes a
    copy."""
    run = tmp_path_factory.mktemp("stopped") / "run"
    done = cli_in_process("coevo-run", *FAILING, "curriculum.generations=5", f"hydra.run.dir={run}")
    return run, done


@FINISHED
@pytest.mark.parametrize("in_a_row", [1, 3])
def test_generations_where_every_evaluation_fails_stop_the_run_with_the_error(
    tmp_path, in_a_row, request
):
    if in_a_row == 3:  # the default: the run the resumed test below goes on from
        tmp_path, done = request.getfixturevalue("stopped_run")
    else:
        done = cli_in_process(
            "coevo-run",
            *FAILING,
            "curriculum.generations=5",
            f"curriculum.failed_generations={in_a_row}",
            f"hydra.run.dir={tmp_path}",
        )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert f"coevo-run: error: generation {in_a_row}: all " in done.stderr
    assert ("in 3 generations in a row" in done.stderr) == (in_a_row == 3)
    assert "first error: RuntimeError: hazard 1: the cart lost a wheel" in done.stderr
    assert done.stderr.strip().splitlines()[-1] in (tmp_path / "cli.log").read_text()
    page = (tmp_path / "report.html").read_text()  # the page says the run stopped, and why
    assert f'<p class="stopped"><strong>stopped: generation {in_a_row}: all ' in page
    if in_a_row == 1:
        assert not (tmp_path / "summary.csv").exists()  # no row of NaNs
    else:  # the generations before the last are recorded, every episode failed
        summary = pd.read_csv(tmp_path / "summary.csv")
        assert summary["generation"].tolist() == [1, 2]
        assert (summary["failed_episodes"] == summary["episodes"]).all()
    assert (tmp_path / "report.html").exists()


@FINISHED
def test_a_resumed_run_counts_the_failed_generations_before_its_stop(tmp_path, stopped_run):
    stopped, first = stopped_run
    assert "coevo-run: error: generation 3: all " in first.stderr, first.stderr[-3000:]
    tmp_path = _copy_of(stopped, tmp_path / "run")
    # Checkpoints of generations 1 and 2 (both all failed): the resumed run's generation 3
    # is the third in a row, as it was in the undisturbed run.
    again = cli_in_process("coevo-run", f"resume={tmp_path}")
    assert again.returncode == 1, again.stdout + again.stderr
    assert "resuming" in again.stdout and "after generation 2" in again.stdout
    assert "coevo-run: error: generation 3: all " in again.stderr
    assert "in 3 generations in a row" in again.stderr
    assert (tmp_path / "stopped.txt").read_text().startswith("stopped: generation 3: all ")


def test_pool_evaluate_raises_on_a_failed_episode_instead_of_a_silent_nan(rng):
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from fragile_env import FragileCartPole

    from coevo.policies import MLPPolicy
    from coevo.tasks.task import Param, TaskSpace

    space = TaskSpace("fragile", (Param("hazard", 0, 3, 0, 0.0),), FragileCartPole, 50)
    env = FragileCartPole()
    policy = MLPPolicy.for_spaces(env.observation_space, env.action_space, (4,))
    theta = policy.init(rng)
    with EvaluationPool(space, policy, "local", 1, envs_per_worker=2) as pool:
        ok = pool.evaluate([(theta, space.task(hazard=0))], 2)
        with pytest.raises(EvaluationError, match="1 of 2 evaluations failed; first") as info:
            pool.evaluate([(theta, space.task(hazard=0)), (theta, space.task(hazard=1))], 2)
    assert np.isfinite(ok).all()
    assert "the cart lost a wheel" in str(info.value)
    assert np.isnan(info.value.returns[1]).all() and list(info.value.errors) == [1]


@FINISHED
def test_a_new_run_in_a_directory_that_holds_a_run_is_refused(tmp_path, monkeypatch, finished_run):
    """Two runs in one directory would mix their rows in the tables and their checkpoints;
    the second is refused by name, and the first run's files are left as they were."""
    run = _copy_of(finished_run, tmp_path / "run2")  # SMALL's seed=2: ${seed} below names it
    before = _files(run)
    again = cli_in_process(
        "coevo-run", *SMALL, "curriculum.generations=3", "seed=5", f"hydra.run.dir={run}"
    )
    assert again.returncode == 2
    assert again.stderr.startswith(f"coevo-run: error: hydra.run.dir: {run} already holds a run")
    assert f"coevo-run resume={run}" in again.stderr
    assert _files(run) == before  # .hydra/ included: Hydra's record of the first run kept
    assert pd.read_csv(run / "summary.csv")["generation"].tolist() == [1, 2, 3, 4, 5]
    # Quoted, or through an interpolation, as Hydra resolves it: refused before Hydra writes.
    monkeypatch.setenv("RUN_N", "n")
    for given in (
        f"hydra.run.dir='{run}'",
        f"hydra.run.dir={run.parent}/ru${{oc.env:RUN_N}}2",
        f"hydra.run.dir={run.parent}/run${{seed}}",
        # a timestamp that names the same directory again (as ${now:%Y-%m-%d} does all day)
        f"hydra.run.dir={run.parent}/ru${{now:n2}}",
    ):
        again = cli_in_process("coevo-run", *SMALL, given)
        assert again.returncode == 2, (given, again.stderr[-2000:])
        assert "already holds a run" in again.stderr
        assert _files(run) == before
    # Hydra's inspect flags write nothing: they work on that directory.
    shown = cli_in_process("coevo-run", *SMALL, f"hydra.run.dir={run}", "--cfg", "job")
    assert shown.returncode == 0 and "curriculum:" in shown.stdout
    assert _files(run) == before
    # What the message says to do works: the run goes on in its own directory.
    resumed = cli_in_process("coevo-run", f"resume={run}", "curriculum.generations=6")
    assert resumed.returncode == 0, resumed.stderr
    assert pd.read_csv(run / "summary.csv")["generation"].tolist() == [1, 2, 3, 4, 5, 6]


def _files(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes() for p in directory.rglob("*") if p.is_file()
    }


def test_a_directory_of_the_users_own_is_kept_and_an_empty_checkpoints_folder_is_no_run(tmp_path):
    """A refused config leaves a directory the user made (only Hydra's files go); a
    `checkpoints/` folder with no checkpoint in it does not make a directory a run."""
    mine = tmp_path / "mine"
    mine.mkdir()
    refused = cli_in_process(
        "coevo-run", *SMALL, "curriculum.generations=0", f"hydra.run.dir='{mine}'"
    )
    assert refused.returncode == 2 and "curriculum.generations" in refused.stderr
    assert mine.is_dir() and not any(mine.iterdir())
    # The folders Hydra makes for one go too: runs/<time> in a fresh folder, or a path's
    # missing parents; a folder that existed stays.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    nested = f"hydra.run.dir={fresh / 'a' / 'b' / 'run'}"
    for where in ([], [nested]):
        bad = cli_in_process("coevo-run", *SMALL, "curriculum.generations=0", *where, cwd=fresh)
        assert bad.returncode == 2 and "curriculum.generations" in bad.stderr
        assert fresh.is_dir() and not any(fresh.iterdir()), list(fresh.rglob("*"))
    (mine / "checkpoints").mkdir()
    done = cli_in_process("coevo-run", *SMALL, "curriculum.generations=1", f"hydra.run.dir={mine}")
    assert done.returncode == 0, done.stderr[-3000:]
    # A run's tables without its config.yaml: resume= could not continue it, so not offered.
    (mine / "config.yaml").unlink()
    again = cli_in_process("coevo-run", *SMALL, "curriculum.generations=1", f"hydra.run.dir={mine}")
    assert again.returncode == 2 and "already holds a run" in again.stderr
    assert "resume=" not in again.stderr and "start this one in another directory" in again.stderr


def test_a_multirun_sweep_over_groups_is_checked_option_by_option(capsys):
    from coevo.cli.overrides import check_overrides

    args = ["-m", "curriculum=poet,enhanced_poet", "curriculum.generations=1", "seed=1,2"]
    assert check_overrides(args)[0] == args
    refused = {
        # an option that does not exist
        ("-m", "curriculum=poet,enhanced_poett"): "enhanced_poett",
        # a key of one option only: checked against each option's own keys
        ("-m", "optimizer=es,ars", "optimizer.sigma=0.2"): (
            "optimizer.sigma: unknown key with optimizer=ars"
        ),
        # a comma list without -m is not a sweep: Hydra's message, as exit 2
        ("curriculum=poet,enhanced_poet",): "Ambiguous value for argument",
    }
    for bad, message in refused.items():
        with pytest.raises(SystemExit) as stopped:
            check_overrides(list(bad))
        assert stopped.value.code == 2
        assert message in capsys.readouterr().err
    # A sweep function over a group is Hydra's to expand and check.
    swept = ["-m", "optimizer=choice(es,ars)", "optimizer.directions=4"]
    assert check_overrides(swept) == (swept, None)
    # ... a task setting the group files leave out still goes as `++` (Hydra refused it).
    swept = ["-m", "task=choice(cartpole,pendulum)", "task.solved_score=100"]
    assert check_overrides(swept) == ([*swept[:2], "++task.solved_score=100"], None)


def test_a_sweep_directory_whose_job_directory_holds_a_run_is_refused(tmp_path):
    sweep = tmp_path / "sweep"
    (sweep / "0").mkdir(parents=True)
    (sweep / "0" / "summary.csv").write_text("generation\n1\n")
    done = cli_in_process("coevo-run", "-m", *SMALL, "seed=1,2", f"hydra.sweep.dir={sweep}")
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.startswith(f"coevo-run: error: hydra.sweep.dir: {sweep / '0'} already")
    assert sorted(p.name for p in (sweep / "0").iterdir()) == ["summary.csv"]


def test_a_shared_sweep_directory_is_refused_only_for_the_jobs_this_sweep_writes(tmp_path):
    from coevo.cli.overrides import check_overrides
    from coevo.cli.run_dir import refuse_reused_dirs

    sweep = tmp_path / "shared"
    for job in ("seed=0", "5"):  # an earlier sweep's jobs, under names this one will not use
        (sweep / job).mkdir(parents=True)
        (sweep / job / "summary.csv").write_text("generation\n1\n")
    named = ["-m", "seed=2,3", f"hydra.sweep.dir={sweep}"]
    for args in (named + ["hydra.sweep.subdir=${hydra.job.override_dirname}"], named):
        refuse_reused_dirs(args, check_overrides(args)[1])  # goes on: no SystemExit
    (sweep / "1").mkdir()
    (sweep / "1" / "summary.csv").write_text("generation\n1\n")
    with pytest.raises(SystemExit):  # job 1 of this sweep would write there
        refuse_reused_dirs(named, check_overrides(named)[1])


def test_poet_thresholds_above_the_tasks_solved_score_are_warned_of(tmp_path):
    """POET's defaults are on CartPole's scale; on Pendulum (returns <= 0) no pair could
    ever reproduce, which a run used to show only as 'eligible 0' every generation."""
    small = ["pool=local", "curriculum.generations=1", "optimizer.population=4"]
    pendulum = cli_in_process(
        "coevo-run", *small, "task=pendulum", f"hydra.run.dir={tmp_path / 'p'}"
    )
    assert pendulum.returncode == 0, pendulum.stderr[-3000:]
    warning = pendulum.stdout.splitlines()[0]
    assert warning.startswith("warning: ")
    assert_says(
        warning,
        "curriculum.repro_threshold 200",
        "curriculum.mc_lower 50",
        "solved score of task space 'pendulum' (-200)",
        "mc_upper",
    )
    scaled = cli_in_process(
        "coevo-run",
        *small,
        "task=pendulum",
        "curriculum.repro_threshold=-300",
        "curriculum.mc_lower=-1200",
        "curriculum.mc_upper=-250",
        f"hydra.run.dir={tmp_path / 's'}",
    )
    assert scaled.returncode == 0 and "warning" not in scaled.stdout
    cartpole = cli_in_process("coevo-run", *small, f"hydra.run.dir={tmp_path / 'c'}")
    assert cartpole.returncode == 0 and "warning" not in cartpole.stdout


def test_a_mapping_given_whole_is_merged_into_the_configs_own():
    """`task.params={gravity: {low: 5}}` on a preset that already has parameters: Hydra
    merges it (the other parameters stay) and takes keys the mapping does not have yet."""
    from coevo import hydra_configs
    from coevo.cli.conf import CONF_DIR
    from coevo.cli.overrides import check_overrides

    args = ["task=custom_example", "task.params={gravity: {low: 5}, mass: {high: 4}}"]
    passed = check_overrides(args)[0]
    assert passed == ["task=custom_example", "++task.params={gravity: {low: 5}, mass: {high: 4}}"]
    params = hydra_configs.compose(CONF_DIR, passed)["task"]["params"]
    assert set(params) == {"gravity", "mass", "max_torque"}
    assert params["gravity"]["low"] == 5 and params["gravity"]["high"] == 20.0
    assert params["mass"]["high"] == 4


def test_the_plus_prefix_is_advised_only_where_a_new_key_can_go(capsys):
    """A section's settings are a fixed set: '+optimizer.n_epoch' would be refused too, so
    only keys inside an open mapping (task.params, policy.kwargs) get the '+' advice."""
    from coevo.cli.overrides import check_overrides

    for args, advised in (
        (["optimizer.n_epoch=3"], False),
        (["task.params.gravity={low: 5}", "task.params.gravty.low=1"], True),
    ):
        with pytest.raises(SystemExit):
            check_overrides(args)
        error = capsys.readouterr().err
        assert "unknown key" in error
        assert ("needs Hydra's '+' prefix" in error) is advised, error


def test_settings_a_group_file_leaves_out_are_taken_without_a_plus():
    """conf/task/cartpole.yaml and conf/policy/mlp.yaml state a few of their dataclass's
    fields; the README's other settings (task.solved_score, policy.log_std_init, ...) are
    settings all the same, not unknown keys."""
    from coevo import hydra_configs
    from coevo.cli.conf import CONF_DIR
    from coevo.cli.overrides import check_overrides

    args = ["task.solved_score=400", "task.task_format=dict", "policy.log_std_init=0.5"]
    passed = check_overrides(args)[0]
    assert passed == [f"++{arg}" for arg in args]
    composed = hydra_configs.compose(CONF_DIR, passed)
    assert composed["task"]["solved_score"] == 400
    assert composed["policy"]["log_std_init"] == 0.5


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["policy.file=actor.pt"], "policy.file: read only by policy=torch; policy=mlp would"),
        (
            ["policy=gru", "policy.kwargs={width: 8}"],
            "policy.kwargs: read only by policy=torch or policy=actor_critic or "
            "policy=conv_actor_critic; policy=gru would ignore it (got {'width': 8})",
        ),
    ],
)
def test_a_policy_setting_its_kind_would_ignore_is_refused(tmp_path, overrides, message):
    done = cli_in_process(
        "coevo-run", "pool=local", *overrides, f"hydra.run.dir={tmp_path / 'run'}"
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith(f"coevo-run: error: {message}"), done.stderr


def test_a_yaml_error_in_the_users_own_config_is_named_not_a_traceback(tmp_path, capsys):
    from coevo.cli.overrides import check_overrides

    (tmp_path / "task").mkdir()
    broken = tmp_path / "task" / "pt.yaml"
    broken.write_text("name: pt\nparams: {target: {low: 0, high: 1\n")  # a brace left open
    with pytest.raises(SystemExit) as stop:
        check_overrides([f"hydra.searchpath=[file://{tmp_path}]", "task=pt"])
    assert stop.value.code == 2
    error = capsys.readouterr().err
    assert error.startswith(f"coevo-run: error: {broken}: ")
    assert_says(error, "invalid YAML at line 3, column 1", "expected ',' or '}'")


def test_a_plus_on_a_key_the_config_already_has_overrides_it():
    """The README's `+task.params.NAME...` on a space whose file already states NAME: Hydra's
    `+` would refuse (exit 1); it is passed as `++` (add or override)."""
    from coevo import hydra_configs
    from coevo.cli.conf import CONF_DIR
    from coevo.cli.overrides import check_overrides

    passed = check_overrides(["task=custom_example", "+task.params.gravity.low=5"])[0]
    assert passed == ["task=custom_example", "++task.params.gravity.low=5"]
    gravity = hydra_configs.compose(CONF_DIR, passed)["task"]["params"]["gravity"]
    assert gravity["low"] == 5 and gravity["high"] == 20.0


def test_a_plus_on_a_config_group_of_the_users_own_stays_a_plus(tmp_path):
    """`+group=option` adds a group to the defaults list (Hydra refuses `++` there)."""
    from coevo import hydra_configs
    from coevo.cli.conf import CONF_DIR
    from coevo.cli.overrides import check_overrides

    (tmp_path / "extra").mkdir()
    (tmp_path / "extra" / "five.yaml").write_text("# @package _global_\nseed: 5\n")
    args = [f"hydra.searchpath=[file://{tmp_path}]", "+extra=five"]
    passed = check_overrides(args)[0]
    assert passed == args
    assert hydra_configs.compose(CONF_DIR, passed)["seed"] == 5


@FINISHED
def test_resume_of_a_run_another_process_is_running_is_refused(tmp_path, finished_run):
    import fcntl

    run = _copy_of(finished_run, tmp_path / "run")
    assert (run / ".coevo.lock").read_text().startswith("pid ")  # the finished run's
    with open(run / ".coevo.lock", "a+") as held:  # another process running there now
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.seek(0)
        held.truncate()
        held.write("pid 4242")
        held.flush()
        refused = cli_in_process("coevo-run", f"resume={run}", "curriculum.generations=6")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr.startswith(f"coevo-run: error: resume: {run} is in use")
    assert_says(refused.stderr, "(pid 4242)", "wait for it to end")
    # the lock released
    resumed = cli_in_process("coevo-run", f"resume={run}", "curriculum.generations=6")
    assert resumed.returncode == 0, resumed.stderr[-3000:]


def test_a_new_run_in_a_directory_another_run_is_starting_in_says_how_to_part_them(tmp_path):
    """Two runs started in the same second share the default directory: the second one is
    refused, told how to give itself a directory of its own."""
    import fcntl

    run = tmp_path / "run"
    run.mkdir()
    with open(run / ".coevo.lock", "a+") as held:  # the first run, still starting
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("pid 4242")
        held.flush()
        refused = cli_in_process("coevo-run", *SMALL, f"hydra.run.dir={run}")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr.startswith(f"coevo-run: error: hydra.run.dir: {run} is in use")
    assert_says(refused.stderr, "(pid 4242)", "a directory of its own (hydra.run.dir=...)")


def test_a_plus_on_a_nested_config_group_stays_a_plus(tmp_path):
    from coevo import hydra_configs
    from coevo.cli.conf import CONF_DIR
    from coevo.cli.overrides import check_overrides

    (tmp_path / "extras" / "noise").mkdir(parents=True)
    (tmp_path / "extras" / "noise" / "a.yaml").write_text("# @package _global_\nseed: 7\n")
    args = [f"hydra.searchpath=[file://{tmp_path}]", "+extras/noise=a"]
    passed = check_overrides(args)[0]
    assert passed == args
    assert hydra_configs.compose(CONF_DIR, passed)["seed"] == 7


def test_coevo_run_help_lists_the_choices_a_user_has():
    """--help starts with what coevo-run does and lists each group's options, not the
    `*_defaults` files a group's options share (Hydra's own help listed those too)."""
    done = cli_in_process("coevo-run", "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("coevo-run: co-evolve tasks and policies")
    curricula = "accel, alp_gmm, dr, enhanced_poet, plr, poet, poet_paper, sfl"
    assert f"curriculum: {curricula}\n" in done.stdout
    assert "optimizer: ars, es, poet_es, ppo\n" in done.stdout
    assert "pool: local, ray\n" in done.stdout
    assert "_defaults" not in done.stdout and "powered by Hydra" not in done.stdout
    assert "\npool:\n  backend: ray\n" in done.stdout  # the config, as Hydra prints it


def test_poet_on_a_space_without_a_solved_score_is_warned_its_thresholds_are_unchecked(
    tmp_path,
):
    # tests/fragile_env.py's space (hazard 0: CartPole) declares no solved_score: POET's
    # CartPole-scale thresholds are not checked against it, and ANNECS cannot count.
    done = cli_in_process(
        "coevo-run",
        "pool=local",
        "curriculum.generations=1",
        "optimizer.population=4",
        "task.name=fragile",
        "task.entry_point=fragile_env:FragileCartPole",
        "+task.params.hazard={low: 0, high: 3, init: 0, step: 3, round_to: 1}",
        "task.max_episode_steps=100",
        f"hydra.run.dir={tmp_path}",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    warning = done.stdout.splitlines()[0]
    assert warning.startswith("warning: task space 'fragile' declares no solved_score")
    assert_says(
        warning, "repro_threshold 200, mc_lower 50, mc_upper 475", "curriculum.solved_threshold"
    )
