"""PPO on envs that raise: a failed stream is a failed episode, never a score.

FragileCartPole (tests/fragile_env.py): task hazard 0 is CartPole, 1 raises at every
episode's third step. A run whose every stream fails stops with the error, as one whose every
episode fails does; PLR gives a failed level no score (its stream's arrays are zeros).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from cli_support import SMALL_PPO, cli_in_process

pytest.importorskip("torch")

FRAGILE = [
    "pool=local",
    "task.name=fragile",
    "+task.entry_point=fragile_env:FragileCartPole",
    *SMALL_PPO,
]
ALWAYS_BROKEN = "+task.params.hazard={low: 1, high: 1, init: 1, step: 0, round_to: 1}"
HALF_BROKEN = "+task.params.hazard={low: 0, high: 1, init: 0, step: 1, round_to: 1}"


@pytest.mark.parametrize("curriculum", ["dr", "poet"])
def test_a_ppo_run_whose_every_stream_fails_stops_with_the_error(tmp_path, curriculum):
    done = cli_in_process(
        "coevo-run",
        *FRAGILE,
        ALWAYS_BROKEN,
        f"curriculum={curriculum}",
        "curriculum.generations=5",
        "curriculum.failed_generations=2",
        f"hydra.run.dir={tmp_path}",
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "coevo-run: error: generation 2: all " in done.stderr
    assert "(every episode failed in 2 generations in a row)" in done.stderr
    assert "first error: RuntimeError: hazard 1: the cart lost a wheel" in done.stderr
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert summary["generation"].tolist() == [1]  # generation 2 stopped the run
    assert summary["episodes"].iloc[0] > 0
    assert summary["failed_episodes"].iloc[0] == summary["episodes"].iloc[0]
    rows = pd.read_csv(tmp_path / "eligibility.csv")
    skipped = rows[rows["rule"] == "optimizer"]
    assert len(skipped) > 0 and (skipped["outcome"] == "step_failed").all()
    # every stream of the step failed (n_envs 2, or DR's 4 tasks per step, a stream each)
    reason = r"update skipped: (\d) of \1 streams failed \(RuntimeError: hazard 1: the cart"
    assert skipped["reason"].str.match(reason).all(), skipped["reason"].tolist()
    assert (tmp_path / "report.html").exists()


def test_plr_with_ppo_never_scores_or_adds_a_failed_level(tmp_path):
    done = cli_in_process(
        "coevo-run",
        *FRAGILE,
        HALF_BROKEN,
        "curriculum=plr",
        "curriculum.buffer_size=4",
        "curriculum.generations=6",
        "curriculum.failed_generations=100",  # some batches draw only broken levels
        "test_set.every=0",
        "seed=1",
        f"hydra.run.dir={tmp_path}",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = pd.read_csv(tmp_path / "eligibility.csv")
    levels = rows[rows["kind"] == "level"]
    hazard = levels["task"].str.contains('"hazard": 1.0')
    broken, healthy = levels[hazard], levels[~hazard]
    assert len(broken) > 0 and len(healthy) > 0
    assert (broken["error"] == "RuntimeError: hazard 1: the cart lost a wheel").all()
    assert broken["score"].isna().all()  # not the zeros of a failed stream's arrays
    assert (broken["outcome"] == "rejected").all()
    assert broken["reason"].str.contains("evaluation failed, no score").all()
    assert np.isfinite(healthy["score"]).all() and (healthy["score"] > 0).all()
    buffer = pd.read_csv(tmp_path / "population.csv")
    assert len(buffer) > 0 and not buffer["task.hazard"].eq(1.0).any()


def test_healthy_streams_that_end_no_episode_keep_a_generation_from_counting_as_failed(
    tmp_path,
):
    """Streams keep their episode across updates, and a 6-step generation rarely ends a
    healthy CartPole episode: a generation whose only ended "episode" is a failed stream
    still had healthy streams (and updates), and must not stop the run."""
    done = cli_in_process(
        "coevo-run",
        *FRAGILE,
        HALF_BROKEN,
        "curriculum=dr",
        "curriculum.tasks_per_step=1",
        "curriculum.rounds=1",
        "optimizer.n_steps=6",
        "optimizer.batch_size=12",
        "curriculum.generations=8",
        "curriculum.failed_generations=1",  # one generation counted as all-failed would stop
        "test_set.every=0",
        "seed=1",  # generation 6: one stream fails, the healthy one ends no episode
        f"hydra.run.dir={tmp_path}",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert len(summary) == 8
    assert (summary["jobs"] == 2).all()  # 1 round x 2 streams
    # some generations had failed streams and no healthy stream ended an episode
    mixed = summary[(summary["failed_episodes"] > 0) & (summary["failed_episodes"] < 2)]
    assert (mixed["episodes"] == mixed["failed_episodes"]).any()
