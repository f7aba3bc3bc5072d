"""The report page shows what the curriculum did: parameter panels, labels, rounding, config."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from cli_support import SMALL_POET, cli_in_process, page_result_in_chromium
from phrases import assert_says

from coevo import tasks
from coevo.report import plots
from coevo.report.html import ParamFormat, drawing_once, write_report

# One worker under xdist: the run (`run_dir`) made once for the module.
pytestmark = pytest.mark.xdist_group("test_report")
SMALL = [*SMALL_POET, "test_set.every=2"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "r"
    done = cli_in_process("coevo-run", *SMALL, f"hydra.run.dir={path}")
    assert done.returncode == 0, done.stderr[-3000:]
    return path


def test_parameters_are_shown_to_their_round_to_and_never_as_inf():
    fmt = ParamFormat(tasks.get("cartpole"))
    assert fmt.param("gravity", 11.100000000000001) == "11.1"  # round_to 0.1
    assert fmt.param("pole_length", 0.30000000000000004) == "0.30"  # round_to 0.01
    assert fmt.param("unknown", 1 / 3) == "0.3333"
    assert fmt.param("gravity", float("-inf")) == "none yet"
    assert fmt.param("gravity", float("nan")) == ""
    assert fmt.column("test_mastered")(0.25) == "0.25"
    assert fmt.column("active")(3.0) == "3"
    assert fmt.column("best_score")(float("-inf")) == "none yet"


def test_task_states_follow_birth_solving_and_archiving():
    population = pd.DataFrame(
        {
            "pair_id": [0, 1],
            "born": [0, 2],
            "archived_at": [3, None],
            "solved_at": [1, None],
            "task.x": [0.5, 0.7],
        }
    )
    states = plots.task_states(population, last_generation=4)
    zero = states[states["pair_id"] == 0].set_index("generation")["state"].to_dict()
    assert zero == {0: "active", 1: "solved", 2: "solved", 3: "archived", 4: "archived"}
    one = states[states["pair_id"] == 1]
    assert list(one["generation"]) == [2, 3, 4] and set(one["state"]) == {"active"}
    assert set(states["task.x"]) == {0.5, 0.7}


def test_the_page_has_the_parameter_panels_labels_config_and_no_raw_floats(run_dir):
    page = (run_dir / "report.html").read_text()
    for figure in (
        "fig-curves",
        "fig-test-mastery",
        "fig-task-parameters",
        "fig-heatmap",
        "fig-lineage",
    ):
        assert f'id="{figure}"' in page
    summary = pd.read_csv(run_dir / "summary.csv")
    mastered = summary["test_mastered"].iloc[-1]  # the last generation is always tested
    assert f"{100 * mastered:.0f}% of test tasks mastered (generation 4)" in page
    assert (run_dir / "plots" / "task_parameters.png").stat().st_size > 0
    # Each caption sits inside its own figure, after the image it describes.
    for figure in re.findall(r"<figure.*?</figure>", page):
        assert figure.index("<img") < figure.index("<figcaption>")
    assert 'id="config"' in page and "repro_threshold: 100.0" in page
    text = re.sub(r"<[^>]+>", " ", page.split("<h2>Configuration</h2>")[0])
    assert "-inf" not in text and not re.search(r"\d\.\d{7,}", text)
    population = pd.read_csv(run_dir / "population.csv")
    assert len(population) >= 2  # children were admitted: labels and panels have content
    child = population.iloc[1]
    assert f"{child['task.gravity']:.1f}" in page


def test_a_single_row_summary_draws_no_generation_curves(tmp_path):
    pd.DataFrame(
        [{"generation": 0, "active": 3, "archived": 0, "best_score": 1.0, "env_steps": 10}]
    ).to_csv(tmp_path / "summary.csv", index=False)
    page = write_report(tmp_path).read_text()
    assert 'id="fig-curves"' not in page and "1 generations" in page


def test_the_curriculums_own_columns_get_a_panel_each(tmp_path):
    """A curriculum's own counts (a plug-in's, PLR's buffer) are drawn, one panel each; the
    pool's, the optimizer's, the test set's and the population curves' columns are not."""
    rows = [
        {
            "generation": g,
            "policies": 1,
            "my_levels_seen": 3 * g,  # a plug-in curriculum's own
            "buffer_mean_score": 0.5 * g,
            "label": "text",  # not a number
            "best_score": 1.0,
            "approx_kl": 0.01,
            "env_steps": 10,
            "steps_per_s": 5.0,
            "busy_s_worker_0": 0.1,
            "wall_s": 0.2,
            "test_mastered": 0.5,
        }
        for g in (1, 2, 3)
    ]
    summary = pd.DataFrame(rows)
    assert plots.curriculum_columns(summary) == ["my_levels_seen", "buffer_mean_score"]
    summary.to_csv(tmp_path / "summary.csv", index=False)
    page = write_report(tmp_path).read_text()
    assert 'id="fig-curriculum"' in page and 'src="plots/curriculum.png"' in page
    assert (tmp_path / "plots" / "curriculum.png").stat().st_size > 1000
    assert 'src="plots/learner.png"' in page  # approx_kl: the optimizer's own figure


def test_the_headline_of_an_unfinished_run_says_how_far_it_got(tmp_path):
    rows = [
        {"generation": g, "best_score": 1.0, "env_steps": 10, "steps_per_s": 5.0} for g in (1, 2, 3)
    ]
    pd.DataFrame(rows).to_csv(tmp_path / "summary.csv", index=False)
    (tmp_path / "config.yaml").write_text("curriculum:\n  name: dr\n  generations: 10\n")
    page = write_report(tmp_path).read_text()
    # No stopped.txt: nothing said why it ended (SIGKILL), or it still runs.
    assert "<p>3 of 10 generations (no end recorded: still running, or killed);" in page
    assert "best score 1.0 in the last generation" in page
    (tmp_path / "stopped.txt").write_text("interrupted after generation 3; resume with: ...\n")
    page = write_report(tmp_path).read_text()
    assert "<p>3 of 10 generations;" in page and "interrupted after generation 3" in page
    (tmp_path / "config.yaml").write_text("curriculum:\n  name: dr\n  generations: 3\n")
    assert "<p>3 generations;" in write_report(tmp_path).read_text()


def test_the_eligible_parents_headline_counts_no_generations(tmp_path):
    row = {"generation": 0, "pairs": 4, "eligible": 2, "best_score": 1.0, "env_steps": 10}
    pd.DataFrame([row]).to_csv(tmp_path / "summary.csv", index=False)
    page = write_report(tmp_path).read_text()
    assert "<p>one evaluation of the pairs file; 2 of 4 pairs eligible;" in page


def test_the_new_panels_load_in_headless_chromium(run_dir, tmp_path):
    result = page_result_in_chromium(
        run_dir,
        tmp_path,
        """window.addEventListener('load', () => {
  const ok = id => {
    const img = document.querySelector('#' + id + ' img');
    const caption = document.querySelector('#' + id + ' figcaption');
    return img && img.complete && img.naturalWidth > 100 && caption
      && img.getBoundingClientRect().bottom <= caption.getBoundingClientRect().top + 1;
  };
  const ids = ['fig-curves', 'fig-test-mastery', 'fig-task-parameters', 'fig-heatmap',
               'fig-lineage'];
  const config = document.getElementById('config');
  document.body.setAttribute('data-result', ids.map(id => id + '=' + ok(id)).join(' ')
    + ' config=' + (config !== null && config.textContent.includes('curriculum:')));
});""",
    )
    assert all(value == "true" for value in result.values()), result


def test_id_columns_are_integers_and_task_parameters_keep_their_values():
    from coevo.report.tables import integer_ids

    frame = pd.DataFrame(
        {
            "pair_id": [1.0, 2.0],
            "parent_id": [float("nan"), 1.0],
            "task.level_id": [3.0, 4.5],  # a task parameter that happens to end in _id
            "task.room_id": [2.0, 3.0],
        }
    )
    converted = integer_ids(frame)
    assert str(converted["parent_id"].dtype) == "Int64"
    assert converted["parent_id"].isna().tolist() == [True, False]
    assert converted["pair_id"].tolist() == [1, 2]
    assert converted["task.level_id"].tolist() == [3.0, 4.5]
    assert converted["task.room_id"].dtype.kind == "f"  # a parameter's values stay floats
    assert frame["parent_id"].dtype.kind == "f"  # the caller's frame unchanged


def test_a_summary_column_that_appears_later_is_written_with_earlier_rows_empty(tmp_path):
    """PLR with PPO has no update in its first generations, so no loss columns yet: the
    table is written again when they appear, never a row longer than the header."""
    from coevo.curricula.base import GenerationResult
    from coevo.report.tables import RunRecorder

    recorder = RunRecorder(tmp_path)
    empty = pd.DataFrame()
    recorder.record(GenerationResult(1, {"generation": 1, "best_score": 1.0}, []), empty)
    recorder.record(
        GenerationResult(2, {"generation": 2, "best_score": 2.0, "approx_kl": 0.01}, []), empty
    )
    recorder.record(GenerationResult(3, {"generation": 3, "best_score": 3.0}, []), empty)
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert list(summary.columns) == ["generation", "best_score", "approx_kl"]
    assert summary["generation"].tolist() == [1, 2, 3]
    assert summary["approx_kl"].isna().tolist() == [True, False, True]


def test_alp_gmm_tasks_are_coloured_by_where_they_came_from():
    """The levels figure tells ALP-GMM's GMM, random-share and bootstrap tasks apart (all
    were one grey 'sample'); DR's sampled tasks stay plain training."""

    task = '{"params": {"gravity": 9.8}, "space": "cartpole"}'
    eligibility = pd.DataFrame(
        {
            "generation": [1, 2, 2, 3],
            "kind": ["level"] * 4,
            "rule": ["sample"] * 4,
            "outcome": ["bootstrap", "gmm", "random", "trained"],
            "task": [task] * 4,
        }
    )
    played = plots.levels_played(eligibility)
    assert played["rule"].tolist() == ["bootstrap", "gmm", "random", "sample"]
    assert_says(  # each rule of the plot with its colour
        plots.rule_legend(played), "GMM (purple)", "(olive)", "(brown)", "trained on (grey)"
    )


def test_a_plugin_table_first_written_after_the_checkpoint_is_not_doubled_on_resume(tmp_path):
    """A plug-in curriculum's extra table whose first rows came after the checkpoint a run
    resumes from: the resumed run writes those rows again, once (they were appended twice)."""
    from coevo.curricula.base import GenerationResult
    from coevo.report.tables import RunRecorder

    empty = pd.DataFrame()

    def generation(n: int) -> GenerationResult:
        extra = {"my_levels": [{"generation": n, "level": n * 10}]} if n >= 2 else {}
        return GenerationResult(n, {"generation": n}, [], tables=extra)

    first = RunRecorder(tmp_path)
    first.record(generation(1), empty)
    checkpoint = first.state_dict()
    first.record(generation(2), empty)  # then the process dies before its checkpoint
    resumed = RunRecorder(tmp_path)
    resumed.load_state_dict(checkpoint, empty)
    resumed.record(generation(2), empty)
    resumed.record(generation(3), empty)
    table = pd.read_csv(tmp_path / "my_levels.csv")
    assert table["generation"].tolist() == [2, 3]
    assert table["level"].tolist() == [20, 30]


def test_every_column_the_pool_adds_is_known_as_the_pools():
    """The report leaves the pool's columns out of the curriculum's figure by name: a new
    pool column must be named in POOL_COLUMNS too."""
    from coevo.pool.stats import generation_figures, is_pool_column

    snapshot = {"wall_s": 1.0, "busy_s": 0.5, "busy_s_worker_0": 0.5, "busy_s_worker_1": 0.2}
    later = {**snapshot, "wall_s": 2.0, "busy_s": 1.0}
    columns = [*generation_figures(snapshot, later), "wall_s"]
    assert [c for c in columns if not is_pool_column(c)] == []
    assert "busy_s_worker_1" in columns


def test_an_extra_table_whose_later_rows_have_a_new_column_keeps_it(tmp_path):
    """test_scores rows of a run resumed from an older version lack `error`; the new rows'
    error was dropped (the header came from the first row): the table is written again."""
    from coevo.curricula.base import GenerationResult
    from coevo.report.tables import RunRecorder

    empty = pd.DataFrame()
    recorder = RunRecorder(tmp_path, tables=("test_scores",))
    old = {"test_scores": [{"generation": 1, "return": 1.0}]}
    new = {"test_scores": [{"generation": 2, "return": float("nan"), "error": "boom"}]}
    later = {"test_scores": [{"generation": 3, "return": 3.0, "error": ""}]}
    for n, tables in ((1, old), (2, new), (3, later)):
        recorder.record(GenerationResult(n, {"generation": n}, [], tables=tables), empty)
    table = pd.read_csv(tmp_path / "test_scores.csv")
    assert list(table.columns) == ["generation", "return", "error"]
    assert table["generation"].tolist() == [1, 2, 3]
    assert table["error"].fillna("").tolist() == ["", "boom", ""]


def test_a_runs_task_pictures_are_drawn_once_and_again_only_when_gone(tmp_path):
    drawn = []

    def render(task: dict, path):
        drawn.append(task["x"])
        path.write_bytes(b"png")
        return path

    once = drawing_once(render)
    assert once is not None and drawing_once(None) is None
    picture = tmp_path / "task_a.png"
    assert once({"x": 1}, picture) == picture
    assert once({"x": 1}, picture) == picture  # the page rebuilt: the same task's picture
    assert once({"x": 2}, tmp_path / "task_b.png") == tmp_path / "task_b.png"
    picture.unlink()  # gone (a user tidying plots/): drawn again
    once({"x": 1}, picture)
    assert drawn == [1, 2, 1] and picture.read_bytes() == b"png"
