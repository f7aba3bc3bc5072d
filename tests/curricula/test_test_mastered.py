"""Every curriculum's summary.csv carries test_mastered, measured apart from training."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from phrases import assert_says

from coevo import run_setup, runner
from coevo.config import parse_config
from coevo.pool.stats import is_runtime_column
from coevo.tasks.test_sets import SUMMARY_COLUMNS

CURRICULA = ["poet", "enhanced_poet", "dr", "plr", "accel", "alp_gmm"]


def _test_set(config, space, echo):
    """The test set `config` gives a run on `space` (as `coevo.run.Run` builds it)."""
    return run_setup.run_test_set(config.test_set, config.curriculum.generations, space, echo)


def _run(
    tmp_path, curriculum: str, every: int, generations: int = 4, lines: list | None = None
) -> pd.DataFrame:
    config = parse_config(
        {
            "pool": {"backend": "local", "num_workers": 1, "envs_per_worker": 16},
            "optimizer": {"name": "es", "population": 8},
            "curriculum": {"name": curriculum, "generations": generations},
            "test_set": {"every": every, "size": 12},
        }
    )
    run_dir = tmp_path / f"{curriculum}-{every}"
    runner.run(config, run_dir, echo=(lines.append if lines is not None else lambda _: None))
    return pd.read_csv(run_dir / "summary.csv")


def test_a_space_with_fewer_distinct_tasks_than_the_test_set_size_says_so(tmp_path):
    from coevo.tasks import get

    space = get("cartpole", {"gravity": {"low": 9.0, "high": 10.0, "round_to": 0.5}})
    seen = []
    for name in ("pole_length", "pole_mass", "cart_mass", "force_mag"):
        space = space.with_overrides(
            {name: {"low": space.param(name).init, "high": space.param(name).init}}
        )
    config = parse_config({"test_set": {"size": 12}})
    test_set = _test_set(config, space, seen.append)
    assert len(test_set.tasks) == 3  # gravity 9, 9.5 and 10; the other parameters fixed
    (said,) = seen
    assert said.startswith("test set: the 3 distinct tasks of task space 'cartpole'")
    assert_says(said, "test_set.size 12", "task.params", "test_set.params")
    # Bounds of its own: the test tasks lie there, beyond the training ones (held out).
    seen.clear()
    config = parse_config(
        {"test_set": {"size": 12, "params": {"gravity": {"low": 11, "high": 12}}}}
    )
    test_set = _test_set(config, space, seen.append)
    assert sorted(task["gravity"] for task in test_set.tasks) == [11.0, 11.5, 12.0]
    (said,) = seen
    assert said.startswith("test set: the 3 distinct tasks of test_set.params' bounds")
    assert_says(said, "gravity 11 to 12", "test_set.size 12")


def test_a_run_shorter_than_the_test_cadence_says_it_measures_nothing(cartpole):
    seen: list[str] = []
    short = parse_config({"curriculum": {"generations": 3}})  # test_set.every 5 by default
    assert _test_set(short, cartpole, seen.append) is not None
    (said,) = seen
    assert said.startswith("test set: measured every 5 generations (test_set.every)")
    assert_says(said, "not in this run of 3", "test_* columns stay empty")
    seen.clear()
    _test_set(parse_config({"curriculum": {"generations": 5}}), cartpole, seen.append)
    assert seen == []


@pytest.mark.parametrize("curriculum", CURRICULA)
def test_every_curriculum_reports_test_mastered_at_its_cadence(tmp_path, curriculum):
    lines: list[str] = []
    summary = _run(tmp_path, curriculum, every=2, lines=lines)
    assert set(SUMMARY_COLUMNS) <= set(summary.columns)
    measured = summary[summary["test_mastered"].notna()]
    assert list(measured["generation"]) == [2, 4]
    # The console's generation line says it too, in test generations only.
    tested = [line for line in lines if line.startswith("gen ") and "| test " in line]
    assert [line[:9] for line in tested] == ["gen   2/4", "gen   4/4"]
    for line, row in zip(tested, measured.itertuples(), strict=True):
        assert line.endswith(
            f" | test {row.test_mastered:.0%} of 12 mastered, mean {row.test_mean_return:.1f}"
        )
    assert measured["test_mastered"].between(0, 1).all()
    # 12 test tasks x 1 episode x the policies tested (POET: its active pairs, >= 1).
    assert (measured["test_episodes"] % 12 == 0).all() and (measured["test_episodes"] > 0).all()
    assert (measured["test_env_steps"] >= measured["test_episodes"]).all()
    # The report's caption says whose score counts.
    page = (tmp_path / f"{curriculum}-2" / "report.html").read_text()
    by = "by the best active policy on each task" if "poet" in curriculum else "by the policy,"
    assert f"Share of the 12 held-out test tasks mastered, {by}" in page
    assert "mean return of at least 475 over 1 episode. The returns counted" in page
    # The rows behind the figures: every test task, and every policy's return on each.
    test_set = pd.read_csv(tmp_path / f"{curriculum}-2" / "test_set.csv")
    assert list(test_set["test_task"]) == list(range(12))
    assert (test_set["threshold"] == 475).all() and (test_set["episodes"] == 1).all()
    assert test_set["distance"].is_monotonic_increasing  # easiest first
    scores = pd.read_csv(tmp_path / f"{curriculum}-2" / "test_scores.csv")
    by_generation = scores.groupby("generation")
    assert list(by_generation.groups) == [2, 4]
    # POET: one row per task, its best policy's; DR...: one per policy and task.
    assert (by_generation.size() % 12 == 0).all()
    assert (by_generation["test_task"].nunique() == 12).all()
    np.testing.assert_allclose(by_generation["mastered"].mean(), measured["test_mastered"])
    np.testing.assert_allclose(by_generation["return"].mean(), measured["test_mean_return"])
    if "poet" in curriculum:
        assert (by_generation.size() == 12).all() and scores["policy"].str.match(r"pair_\d+").all()
    # Single-policy curricula: the tasks they played over the generations, as a figure.
    assert ("fig-levels" in page) is ("poet" not in curriculum)
    if curriculum == "dr":  # the caption names the colours of what DR plays only
        assert "one panel per parameter: tasks trained on (grey);" in page
    if curriculum == "plr":
        assert "new levels (green)" in page and "edited levels" not in page


@pytest.mark.parametrize("curriculum", ["poet", "dr"])
def test_testing_changes_nothing_else_and_its_episodes_are_not_training(tmp_path, curriculum):
    tested = _run(tmp_path, curriculum, every=1)
    untested = _run(tmp_path, curriculum, every=0)
    assert "test_mastered" not in untested  # tests off: no test columns
    assert tested["test_mastered"].notna().all()
    same = [c for c in untested.columns if not is_runtime_column(c) and c not in SUMMARY_COLUMNS]
    pd.testing.assert_frame_equal(tested[same], untested[same])  # episodes, env_steps included


def test_a_test_set_with_bounds_of_its_own_holds_its_tasks_out(tmp_path):
    """test_set.params: the test tasks are drawn there (past the training bounds), scored
    through the run's pool like any other, and the report says where they came from."""
    config = parse_config(
        {
            "pool": {"backend": "local", "num_workers": 1, "envs_per_worker": 16},
            "optimizer": {"name": "es", "population": 8},
            "curriculum": {"name": "dr", "generations": 2},
            "test_set": {"every": 1, "size": 4, "params": {"gravity": {"low": 35, "high": 40}}},
        }
    )
    runner.run(config, tmp_path, echo=lambda _: None)
    test_set = pd.read_csv(tmp_path / "test_set.csv")
    trained = pd.read_csv(tmp_path / "eligibility.csv")["task"].map(json.loads)
    assert test_set["task.gravity"].between(35, 40).all() and len(test_set) == 4
    assert max(task["params"]["gravity"] for task in trained) <= 30  # the space's high
    scores = pd.read_csv(tmp_path / "test_scores.csv")
    assert len(scores) == 8 and np.isfinite(scores["return"]).all()
    page = (tmp_path / "report.html").read_text()
    assert "drawn uniformly within test_set.params&#x27; bounds (gravity 35 to 40)" in page


@pytest.mark.parametrize(
    "bounds, message",
    [
        ({"gravit": {"low": 1}}, "test_set.params.gravit: not a parameter of task space"),
        ({"gravity": {"lo": 1}}, "test_set.params.gravity: expected {low: .., high: ..}"),
        ({"gravity": 20}, "test_set.params.gravity: expected {low: .., high: ..}"),
        ({"gravity": {"low": 30, "high": 20}}, "gravity: lower bound 30 > upper bound 20"),
        ({"gravity": {"low": "x"}}, "test_set.params.gravity"),
        ({"gravity": {"high": float("inf")}}, "test_set.params.gravity.high: must be a finite"),
    ],
)
def test_bad_test_set_bounds_are_refused_by_name_before_a_run_starts(tmp_path, bounds, message):
    config = parse_config({"pool": {"backend": "local"}, "test_set": {"params": bounds}})
    with pytest.raises(Exception, match="test_set.params") as caught:
        runner.run(config, tmp_path / "run", echo=lambda _: None)
    assert message in str(caught.value)
    assert not (tmp_path / "run").exists()  # refused before the run directory


def test_a_test_task_that_fails_says_why_in_test_scores(tmp_path):
    """An env that breaks only on held-out test tasks: the error is in test_scores.csv's
    error column, and the console's first-error note points there (it pointed to
    eligibility.csv, which has no row for a test episode)."""
    hazard = {"low": 0, "high": 0, "init": 0, "step": 1, "round_to": 1}  # training: safe
    config = parse_config(
        {
            "task": {
                "name": "fragile",
                "entry_point": "fragile_env:FragileCartPole",
                "params": {"hazard": hazard},
                "max_episode_steps": 50,
                "solved_score": 50,
            },
            "pool": {"backend": "local", "num_workers": 1, "envs_per_worker": 8},
            "optimizer": {"name": "es", "population": 4},
            "curriculum": {"name": "dr", "generations": 1},
            # hazard 1 raises at the third step: every test episode fails
            "test_set": {"every": 1, "size": 3, "params": {"hazard": {"low": 1, "high": 1}}},
        }
    )
    said: list[str] = []
    runner.run(config, tmp_path, echo=said.append)
    scores = pd.read_csv(tmp_path / "test_scores.csv")
    assert scores["error"].tolist() == ["RuntimeError: hazard 1: the cart lost a wheel"]
    assert not scores["mastered"].any() and scores["return"].isna().all()
    assert pd.read_csv(tmp_path / "eligibility.csv")["error"].isna().all()  # training was fine
    note = next(line for line in said if line.startswith("the first failed episode's error"))
    assert_says(note, "on a test task", "test_scores.csv's error column")
    assert "fragile_env.py" in note


def test_held_out_tasks_are_ordered_by_a_parameter_training_keeps_fixed():
    """Training at gravity 9.8 only, testing on 10 to 40: the test tasks go easy to hard by
    gravity (its span in training is 0, which made every distance 0 and the order the
    other parameters')."""
    from coevo.tasks import get
    from coevo.tasks.test_sets import make_test_set

    space = get("cartpole", {"gravity": {"low": 9.8, "high": 9.8, "init": 9.8}})
    for name in ("pole_length", "pole_mass", "cart_mass", "force_mag"):
        init = space.param(name).init
        space = space.with_overrides({name: {"low": init, "high": init}})
    test_set = make_test_set(space, 6, bounds={"gravity": {"low": 10, "high": 40}})
    gravities = [task["gravity"] for task in test_set.tasks]
    assert gravities == sorted(gravities) and len(set(gravities)) == 6
    distances = [row["distance"] for row in test_set.rows(space, 1)]
    assert distances == sorted(distances) and distances[0] > 0
