"""coevo-compare's α-CVaR on hand-built runs: the worst tasks ranked on the even-numbered
test episodes, their return reported from the odd (SFL's evaluation), beside the biased
same-episodes figure; and the notes that say why a run has none."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from phrases import assert_says

from coevo.compare.analysis import (
    Budget,
    group_stats,
    run_figure,
    same_episodes_cvar,
    task_cvar,
)
from coevo.compare.report import console_table, run_frame
from coevo.compare.runs import Run

# Ten test tasks. On the even episodes task 3 looks worst (a bad draw); on the odd ones it
# is as good as most, and task 7 is the worst on both halves.
EVEN = [80.0, 90.0, 70.0, 5.0, 60.0, 95.0, 85.0, 20.0, 75.0, 65.0]
ODD = [82.0, 88.0, 72.0, 64.0, 58.0, 97.0, 83.0, 10.0, 77.0, 63.0]


def scores(generations=(1, 2), even=EVEN, odd=ODD, policies=("policy_0",)) -> pd.DataFrame:
    """test_scores.csv's rows: the same returns at every scoring and for every policy."""
    rows = []
    for generation in generations:
        for policy in policies:
            for task, (e, o) in enumerate(zip(even, odd, strict=True)):
                rows.append(
                    {
                        "generation": generation,
                        "test_task": task,
                        "policy": policy,
                        "return": (e + o) / 2,
                        "mastered": False,
                        "error": "",
                        "return_even": e,
                        "return_odd": o,
                    }
                )
    return pd.DataFrame(rows)


def run(name: str, test_scores: pd.DataFrame | None, episodes: int = 2) -> Run:
    summary = pd.DataFrame(
        {"generation": [1, 2], "env_steps": [100, 100], "test_mastered": [0.1, 0.3]}
    )
    config = {"seed": 0, "test_set": {"episodes": episodes}, "curriculum": {"name": "dr"}}
    return Run(Path(name), config, summary, test_scores)


def test_the_worst_tasks_are_ranked_on_the_even_episodes_and_reported_from_the_odd():
    table = scores()
    # 10 % of 10 tasks: one. Task 3 ranks worst on the even episodes; its odd return is 64.
    assert task_cvar(table, (1, 2), 0.1) == 64.0
    # Ranked and reported on the same (whole) returns: task 7, (20 + 10) / 2.
    assert same_episodes_cvar(table, (1, 2), 0.1) == 15.0
    # 20 %: tasks 3 and 7 by the even episodes; reported (64 + 10) / 2.
    assert task_cvar(table, (1, 2), 0.2) == 37.0
    # Only the scorings given count, averaged with every policy scored there.
    later = scores(generations=(3,), even=[100.0] * 10, odd=[0.0] * 10)
    both = pd.concat([table, later, scores(policies=("policy_1",))])
    assert task_cvar(both, (1, 2), 0.1) == 64.0
    # Per task, generation 2's two policies and generation 3's one: task 3 still ranks
    # worst, and reports the mean of its three odd returns.
    averaged = task_cvar(both, (2, 3), 0.1)
    assert averaged == pytest.approx(np.mean([ODD[3], ODD[3], 0.0]))


def test_a_run_without_a_second_episode_has_no_cvar_and_the_notes_say_why():
    one_episode = scores().assign(return_odd=np.nan)
    older = scores().drop(columns=["return_even", "return_odd"])
    runs = [
        run("fine", scores()),
        run("single", one_episode, episodes=1),
        run("older", older),
        run("unscored", None),
    ]
    figures = [run_figure(r, "dr", "test_mastered", Budget(), 3, 0.1) for r in runs]
    assert [f.cvar for f in figures[:1]] == [64.0]
    assert all(math.isnan(f.cvar) for f in figures[1:])
    # The same-episodes figure needs no halves: old runs keep it, in compare_runs.csv.
    assert [f.cvar_same_episodes for f in figures[:3]] == [15.0, 15.0, 15.0]
    (group,) = group_stats(figures, None, reps=200, seed=0)
    assert group.cvar_iqm == 64.0  # the one run with halves
    (note,) = [n for n in group.notes if "α-CVaR" in n]
    assert_says(
        note,
        "needs test_set.episodes >= 2",
        "single (one episode per test task (test_set.episodes=1))",
        "older (its test_scores.csv has no return_odd",
        "unscored (no test_scores.csv)",
    )
    table = run_frame([group], "curriculum.name")
    assert list(table["cvar"].fillna(-1)) == [64.0, -1, -1, -1]
    assert list(table["cvar_same_episodes"].fillna(-1)) == [15.0, 15.0, 15.0, -1]
    assert "0.1-CVaR (rescored) IQM [95% CI]" in console_table([group], "c", "m", None, 0.1)
