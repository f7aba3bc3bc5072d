"""`coevo.Run`: a run a generation at a time records what `runner.run` (coevo-run) records,
resumes from its checkpoint as an uninterrupted run, and runs a curriculum built in Python."""

from pathlib import Path

import pandas as pd
import pytest
from cli_support import run_tables

from coevo import Run, runner
from coevo.config import parse_config
from coevo.errors import ConfigError
from coevo.tasks.test_sets import TestSetConfig

# One worker under xdist: the uninterrupted run (`uninterrupted`) made once for the module.
pytestmark = pytest.mark.xdist_group("test_run")
# POET with a test set: every table of a run (cross_scores, test_scores) gets rows.
# report_every_s is left at its default: the page is built at the end, not at every
# generation (which was most of these small runs' time).
RAW = {
    "pool": {"backend": "local", "num_workers": 1},
    "seed": 4,
    "policy": {"hidden": [8]},
    "curriculum": {
        "name": "poet",
        "generations": 4,
        "optimizer_steps": 1,
        "repro_threshold": 20,
        "mc_lower": 5,
        "initial_pairs": 2,
        "reproduce_every": 1,
        "max_children": 2,
        "transfer_every": 2,
    },
    "optimizer": {"name": "es", "population": 6},
    "test_set": {"every": 2, "size": 3, "episodes": 1},
}
TABLES = (
    "summary.csv",
    "eligibility.csv",
    "population.csv",
    "cross_scores.csv",
    "test_scores.csv",
    "test_set.csv",
)


def quiet(_line: str) -> None:
    pass


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> Path:
    """RAW's four generations through runner.run, as coevo-run runs them."""
    run_dir = tmp_path_factory.mktemp("runner") / "run"
    runner.run(parse_config(RAW), run_dir, quiet)
    return run_dir


def assert_same_tables(got: Path, expected: Path) -> None:
    want, have = run_tables(expected, TABLES), run_tables(got, TABLES)
    assert len(want["summary.csv"]) == 4 and len(want["test_scores.csv"]) > 0
    for name in TABLES:
        pd.testing.assert_frame_equal(have[name], want[name], obj=name)


def test_a_run_stepped_one_generation_at_a_time_records_what_runner_run_does(
    uninterrupted, tmp_path
):
    run_dir = tmp_path / "stepped"
    lines: list[str] = []
    with Run.from_config(parse_config(RAW), run_dir, echo=lines.append) as run:
        assert repr(run).startswith(f"Run({str(run_dir)!r}, generation 0 of 4, curriculum Poet")
        first = run.step()
        assert first.generation == 1 and run.generation == 1
        assert (run_dir / "checkpoints" / "gen_000001.pkl").is_file()
        assert len(pd.read_csv(run_dir / "summary.csv")) == 1  # recorded at once
        results = run.generations(2)
        assert [r.generation for r in results] == [2, 3]
        with pytest.raises(ConfigError, match="would pass the run's 4"):
            run.generations(2)  # refused before it runs anything
        assert run.generation == 3
        run.step()
        assert run.done
    assert "closed" in repr(run)
    assert_same_tables(run_dir, uninterrupted)
    assert (run_dir / "config.yaml").read_text() == (uninterrupted / "config.yaml").read_text()
    assert any(line.startswith("gen   4/4") for line in lines)
    assert lines[-1] == f"run directory: {run_dir}"
    assert "No generation" not in (run_dir / "report.html").read_text()
    with pytest.raises(RuntimeError, match="is closed"):
        run.step()


def test_a_run_closed_after_two_generations_and_resumed_matches_an_uninterrupted_one(
    uninterrupted, tmp_path
):
    run_dir = tmp_path / "resumed"
    run = Run.from_config(parse_config(RAW), run_dir, echo=quiet)
    run.generations(2)
    run.close()
    assert pd.read_csv(run_dir / "summary.csv")["generation"].tolist() == [1, 2]
    lines: list[str] = []
    with Run.resume(run_dir, echo=lines.append) as resumed:
        assert resumed.generation == 2
        resumed.generations()
    assert f"resuming {run_dir} after generation 2" in lines
    assert_same_tables(run_dir, uninterrupted)


def test_a_run_directory_in_use_is_refused_until_its_run_closes(uninterrupted, tmp_path):
    run_dir = tmp_path / "locked"
    config = parse_config({**RAW, "curriculum": {**RAW["curriculum"], "generations": 1}})
    with Run.from_config(config, run_dir, echo=quiet) as run:
        with pytest.raises(ConfigError, match="is in use"):
            Run.resume(run_dir, echo=quiet)
        run.generations()
    with pytest.raises(ConfigError, match="already holds a run"):
        Run.from_config(config, run_dir, echo=quiet)  # a new run would mix its rows in
    with Run.resume(run_dir, echo=quiet) as again:  # let go: a resume may take it
        assert again.done


def _python_run(
    run_dir: Path, generations: int, resume: bool = False, space=None, **settings
) -> Run:
    """DR built from Python on a local pool, with a test set; the Run owns the pool. `space`:
    CartPole's unless given."""
    from coevo import DomainRandomization, DRConfig, ESConfig, EvolutionStrategy, MLPPolicy
    from coevo import tasks as coevo_tasks
    from coevo.pool import EvaluationPool

    space = space or coevo_tasks.get("cartpole")
    env = space.make_env()
    policy = MLPPolicy.for_spaces(env.observation_space, env.action_space, hidden=(8,))
    env.close()
    pool = EvaluationPool(space, policy, "local", 1, envs_per_worker=8)
    optimizer = EvolutionStrategy(ESConfig(population=6), policy.num_params)
    config = DRConfig(generations=generations, tasks_per_step=2)
    curriculum = DomainRandomization(config, space=space, pool=pool, optimizer=optimizer, seed=2)
    test_set = TestSetConfig(every=1, size=2, episodes=1)
    return Run(curriculum, run_dir, test_set=test_set, echo=quiet, resume=resume, **settings)


def test_a_curriculum_built_in_python_runs_records_and_resumes(tmp_path):
    whole, parted = tmp_path / "whole", tmp_path / "parted"
    with _python_run(whole, 3) as run:
        assert "DomainRandomization" in repr(run)
        run.generations()
    assert (whole / "checkpoints" / "gen_000003.pkl").is_file()
    assert not (whole / "config.yaml").exists()  # nothing to resume a config from
    page = (whole / "report.html").read_text()
    assert "3 generations" in page and "test tasks mastered" in page

    page = parted / "report.html"
    with _python_run(parted, 3, report_every_s=0) as run:
        run.step()  # its page, written at once (report_every_s=0), is already the final one
        written = (page.stat().st_ino, page.stat().st_mtime_ns)
    assert (page.stat().st_ino, page.stat().st_mtime_ns) == written  # close kept it
    assert "<p>1 generations;" in page.read_text()  # the one generation it ran
    assert run.curriculum.pool.closed  # the run's pool, let go with it
    with pytest.raises(ConfigError, match="already holds a run"):
        _python_run(parted, 3)
    with _python_run(parted, 3, resume=True) as resumed:
        assert resumed.generation == 1
        resumed.generations()
    names = ("summary.csv", "eligibility.csv", "population.csv", "test_scores.csv")
    expected, got = run_tables(whole, names), run_tables(parted, names)
    for name in names:
        pd.testing.assert_frame_equal(got[name], expected[name], obj=name)


def _ctrl_c_as_a_pybind11_import_shows_it() -> None:
    """What a Ctrl-C during the import of a pybind11 module (matplotlib's) raises."""
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt as interrupt:
        raise ImportError("initialization failed") from interrupt


def _ctrl_c() -> None:
    raise KeyboardInterrupt


@pytest.mark.parametrize("interrupted", [_ctrl_c, _ctrl_c_as_a_pybind11_import_shows_it])
def test_ctrl_c_while_the_last_page_is_drawn_is_a_stop_after_the_last_generation(
    tmp_path, interrupted
):
    """A Ctrl-C after the last generation, while `close()` draws the final page (here in the
    task space's picture hook), stops the run as one in a generation does: RunInterrupted,
    stopped.txt with the way back; the resume then draws the page. (It used to go on as a
    bare KeyboardInterrupt, which coevo-run took for one before the first generation.) A
    library that turns the Ctrl-C into an error of its own, then fails again as the stop
    draws the page (a module left half imported), changes none of that."""
    import dataclasses

    import matplotlib.image
    import numpy as np

    from coevo import tasks as coevo_tasks
    from coevo.run import RunInterrupted

    drawn: list[str] = []

    def render_png(task: dict, path: Path) -> Path:
        drawn.append(path.name)
        if len(drawn) == 1:
            interrupted()  # Ctrl-C, mid-page
        elif interrupted is not _ctrl_c and len(drawn) == 2:  # the stop's page
            raise ValueError("a half-imported module fails again")
        matplotlib.image.imsave(path, np.zeros((2, 2)))
        return path

    cartpole = coevo_tasks.get("cartpole")
    space = dataclasses.replace(cartpole, metadata={**cartpole.metadata, "render_png": render_png})
    run_dir = tmp_path / "run"
    with pytest.raises(RunInterrupted) as stop:
        with _python_run(run_dir, 2, space=space) as run:
            run.generations()
            assert not drawn  # no page yet: the final one is drawn by close()
    assert (stop.value.generation, stop.value.how) == (2, "interrupted")
    reason = (run_dir / "stopped.txt").read_text()
    assert reason.startswith("interrupted after generation 2; resume with: Run(curriculum, ")
    if interrupted is _ctrl_c:  # the stop's page says why
        assert 'class="stopped"' in (run_dir / "report.html").read_text()
    with _python_run(run_dir, 2, resume=True, space=space) as resumed:
        assert resumed.done  # nothing to run: close() draws the page
    assert not (run_dir / "stopped.txt").exists()
    page = (run_dir / "report.html").read_text()
    assert 'class="stopped"' not in page and "<p>2 generations;" in page


def test_a_run_needs_a_curriculum_and_checks_its_settings(tmp_path):
    with pytest.raises(TypeError, match="Run needs a Curriculum"):
        Run(parse_config(RAW), tmp_path / "x")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="checkpoints_kept: must be an integer >= 1"):
        _python_run(tmp_path / "bad", 1, checkpoints_kept=0)
    assert not (tmp_path / "x").exists() and not (tmp_path / "bad").exists()


def test_a_python_runs_error_stops_it_with_the_way_back_in_stopped_txt(tmp_path):
    run_dir = tmp_path / "broken"
    lines: list[str] = []
    with _python_run(run_dir, 2) as run:
        run.echo = lines.append
        run.curriculum.pool.close()  # its next generation fails inside the step
        with pytest.raises(Exception, match="closed"):
            run.step()
        assert "stopped" in repr(run)
        with pytest.raises(RuntimeError, match="has stopped"):
            run.step()
    stopped = (run_dir / "stopped.txt").read_text()
    assert stopped.startswith("stopped by an error after generation 0: ")
    assert f"Run(curriculum, {str(run_dir)!r}, resume=True)" in stopped
    assert any(line.startswith("error: ") for line in lines)
    assert "run directory:" not in " ".join(lines)  # a stopped run does not end as a done one
    assert 'class="stopped"' in (run_dir / "report.html").read_text()
