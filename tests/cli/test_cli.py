"""coevo-run as a user runs it: a run directory, files with real content; a reader that
leaves and a refusal, in a process of their own.

The default (Ray) backend's run is in this process, on the session's Ray. The console script
starting a Ray of its own, run to its end, is tests/pool/test_cluster.py's one-node run (and
the entry function's, in a fresh process, tests/pool/test_pool_startup.py's); stopped in a
run, tests/cli/test_cli_behaviour.py's SIGTERM test's."""

import subprocess

import pandas as pd
import pytest
from cli_support import COEVO_RUN, ROOT, cli, cli_in_process, refusals_in_a_fresh_process

from coevo.pool.stats import is_runtime_column

# One worker under xdist: the Ray run (`ray_run`) and the local one (`local_run`) made once
# for the module.
pytestmark = pytest.mark.xdist_group("test_cli")
SMALL = [
    "curriculum.generations=4",
    "curriculum.optimizer_steps=3",
    "curriculum.repro_threshold=100",
    "curriculum.reproduce_every=1",
    "curriculum.max_children=4",
    "optimizer.population=8",
]


@pytest.fixture(scope="module")
def ray_run(tmp_path_factory, ray_session):
    """SMALL on the default backend: Ray's workers (the session's Ray)."""
    run_dir = tmp_path_factory.mktemp("runs") / "ray"
    done = cli_in_process("coevo-run", *SMALL, f"hydra.run.dir={run_dir}")
    assert done.returncode == 0, done.stderr[-3000:]
    return run_dir, done


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    """SMALL on one in-process worker: the Ray run's tables, and a resumed run's."""
    run_dir = tmp_path_factory.mktemp("runs") / "local"
    done = cli_in_process(
        "coevo-run", *SMALL, "pool=local", "pool.num_workers=1", f"hydra.run.dir={run_dir}"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return run_dir


def test_default_backend_run_writes_the_run_directory(ray_run):
    run_dir, done = ray_run
    lines = [line for line in done.stdout.splitlines() if line.startswith("gen ")]
    assert len(lines) == 4 and lines[-1].startswith("gen   4/4")
    for name in (
        "summary.csv",
        "eligibility.csv",
        "population.csv",
        "report.html",
        "config.yaml",
        ".hydra/config.yaml",
    ):
        assert (run_dir / name).is_file(), name
    assert len(list((run_dir / "checkpoints").glob("gen_*.pkl"))) == 3  # kept: last three
    # The console's lines are in the run's log too (a run started in the background).
    log = (run_dir / "cli.log").read_text().splitlines()
    assert [line for line in log if line.startswith("gen ")] == lines
    assert log[-1] == f"run directory: {run_dir}" and log[0].startswith("pool: ")
    assert "Ray worker(s)" in log[0]  # the default backend's workers


def test_summary_has_a_row_per_generation(ray_run):
    summary = pd.read_csv(ray_run[0] / "summary.csv")
    assert summary["generation"].tolist() == [1, 2, 3, 4]
    for column in (
        "active",
        "archived",
        "eligible",
        "admitted",
        "best_score",
        "median_score",
        "env_steps",
        "steps_per_s",
        "cache_hits",
        "cache_misses",
        "worker_busy_s",
    ):
        assert column in summary
    assert (summary["env_steps"] > 0).all() and (summary["steps_per_s"] > 0).all()
    assert summary["active"].iloc[-1] >= 2  # children were admitted


def test_eligibility_rows_explain_every_outcome(ray_run):
    rows = pd.read_csv(ray_run[0] / "eligibility.csv")
    for column in (
        "generation",
        "kind",
        "pair_id",
        "parent_id",
        "task_id",
        "task",
        "score",
        "threshold",
        "lower",
        "upper",
        "novelty",
        "rule",
        "outcome",
        "reason",
    ):
        assert column in rows
    parents = rows[rows["kind"] == "parent"]
    summary = pd.read_csv(ray_run[0] / "summary.csv")
    assert (
        len(parents)
        == summary["active"].sum() - summary["admitted"].sum() + summary["archived_now"].sum()
    )  # every active pair judged each generation
    eligible = parents[parents["outcome"] == "eligible"]
    assert (eligible["score"] >= eligible["threshold"]).all()
    assert eligible["reason"].str.contains("≥ repro_threshold 100").all()
    children = rows[rows["kind"] == "child"]
    assert len(children) > 0 and children["parent_id"].notna().all()
    admitted = children[children["outcome"] == "admitted"]
    assert (
        (admitted["score"] >= admitted["lower"]) & (admitted["score"] <= admitted["upper"])
    ).all()
    assert admitted["reason"].str.contains("passes minimal criterion").all()
    # Ids are written as integers (empty where there is none), never as 1.0 in some rows.
    for name in ("eligibility.csv", "population.csv"):
        raw = pd.read_csv(ray_run[0] / name, dtype=str, keep_default_na=False)
        for column in [c for c in raw if c.endswith("_id")]:
            assert not raw[column].str.fullmatch(r"-?\d+\.0").any(), (name, column)


def test_population_and_report(ray_run):
    population = pd.read_csv(ray_run[0] / "population.csv")
    assert {"pair_id", "status", "parent_id", "task_id", "task.gravity", "score"} <= set(
        population.columns
    )
    assert population["pair_id"].is_unique
    page = (ray_run[0] / "report.html").read_text()
    assert "<h2>Summary per generation</h2>" in page and "Eligibility" in page
    assert 'src="plots/curves.png"' in page
    assert (ray_run[0] / "plots" / "curves.png").stat().st_size > 1000


def test_local_backend_gives_the_same_tables(ray_run, local_run):
    for name in ("summary.csv", "eligibility.csv"):
        ray_table = pd.read_csv(ray_run[0] / name)
        local_table = pd.read_csv(local_run / name)
        ray_table = ray_table.drop(columns=[c for c in ray_table if is_runtime_column(c)])
        local_table = local_table.drop(columns=[c for c in local_table if is_runtime_column(c)])
        pd.testing.assert_frame_equal(ray_table, local_table)


def test_resume_continues_from_the_last_checkpoint(local_run, tmp_path):
    # A shorter run, then extended by resuming with more generations recorded in its config.
    short = [arg.replace("generations=4", "generations=2") for arg in SMALL]
    done = cli_in_process("coevo-run", *short, "pool=local", f"hydra.run.dir={tmp_path / 'b'}")
    assert done.returncode == 0, done.stderr[-3000:]
    config = tmp_path / "b" / "config.yaml"
    config.write_text(config.read_text().replace("generations: 2", "generations: 4"))
    resumed = cli_in_process("coevo-run", f"resume={tmp_path / 'b'}")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resuming" in resumed.stdout and "gen   3/4" in resumed.stdout
    log = (tmp_path / "b" / "cli.log").read_text()  # the first part's lines, then the resumed
    assert log.index("gen   2/2") < log.index("resuming") < log.index("gen   3/4")
    for name in ("summary.csv", "eligibility.csv"):
        a = pd.read_csv(local_run / name)  # the whole run, uninterrupted
        b = pd.read_csv(tmp_path / "b" / name)
        drop = [c for c in a if is_runtime_column(c)]
        pd.testing.assert_frame_equal(a.drop(columns=drop), b.drop(columns=drop))


def test_a_reader_that_stops_reading_does_not_stop_the_run(tmp_path):
    # `coevo-run ... | head -1`: the pipe breaks after the first line. The run goes on to its
    # end, its report written and every progress line in cli.log (one generation: its line
    # and the run directory's are printed after the reader has gone).
    one = [arg.replace("generations=4", "generations=1") for arg in SMALL]
    run = subprocess.Popen(
        [COEVO_RUN, *one, "pool=local", f"hydra.run.dir={tmp_path}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert run.stdout.readline()  # the first line, then the reader leaves
    run.stdout.close()
    stderr = run.stderr.read().decode()
    assert run.wait(timeout=300) == 0, stderr[-3000:]
    assert "BrokenPipeError" not in stderr
    log = (tmp_path / "cli.log").read_text()
    assert "gen   1/1" in log and "run directory:" in log
    assert (tmp_path / "report.html").is_file()


BAD_INPUT = [
    ("task.name=nosuchtask", "task.name: unknown task space 'nosuchtask'; known:"),
    ("+task.params.gravty.low=1", "task.params.gravty: unknown parameter of task space"),
    ("+task.params.gravity.low=40", "task.params.gravity: lower bound 40 > upper bound 30"),
    ("pool.num_workers=0", "pool.num_workers: must be an integer >= 1, got 0"),
    ("policy.name=transformer", "policy.name: unknown policy 'transformer'; allowed: mlp"),
    ("eligible=5", "eligible: must be a mapping, got 5"),
]


def test_bad_input_stops_before_ray_with_a_named_field(tmp_path):
    # Every case in one fresh process: exit 2 with the field named, and Ray not imported.
    results = refusals_in_a_fresh_process([[override] for override, _ in BAD_INPUT], tmp_path)
    for (override, message), (code, stderr, ray_imported) in zip(BAD_INPUT, results, strict=True):
        assert (code, ray_imported) == (2, False), (override, stderr)
        assert f"coevo-run: error: {message}" in stderr, (override, stderr)
    # And from the console script itself: a non-zero exit.
    assert cli("coevo-run", BAD_INPUT[0][0], f"hydra.run.dir={tmp_path}").returncode == 2


def test_unknown_override_key_is_refused_by_hydra(tmp_path):
    done = cli_in_process("coevo-run", "pool.num_worker=3", f"hydra.run.dir={tmp_path}")
    assert done.returncode != 0
    assert "num_worker" in done.stderr
