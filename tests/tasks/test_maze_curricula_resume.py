"""DR, PLR⊥, SFL and POET on mazes (issue 30; ACCEL's case: test_maze.py) go on exactly
where they stopped, whatever the worker count.

PLR⊥ and SFL, whose level buffers are the largest state, are killed for real: `coevo-run` on
two workers SIGKILLed just after a checkpoint, then `resume=`, gives the tables of one run
on one worker. DR and POET are not killed: each continues from its pickled state_dict on
two workers exactly as one run on one worker goes. What a kill and `resume=` add to that,
the checkpoint file written and read back into the state_dict, is the same code for every
curriculum and is killed for real here, for ACCEL in test_maze.py, for POET's loop in
tests/run/test_resume.py and test_cppn.py; a killed run costs a process start-up and two
reports, several CPU-seconds, that would show nothing more for DR and POET."""

from __future__ import annotations

import pickle
import signal

import numpy as np
import pandas as pd
import pytest
from cli_support import cli_in_process, run_and_kill_after_checkpoint, run_tables

from coevo import ESConfig, EvolutionStrategy, Poet, PoetConfig, tasks
from coevo.curricula.dr import DomainRandomization, DRConfig
from coevo.policies.registry import make_policy
from coevo.pool import EvaluationPool
from coevo.pool.stats import is_runtime_column
from coevo.tasks.maze import Maze

GENERATIONS = 12  # the 9 after the kill take ~0.4 s: it lands well before the end
KILLED_AFTER = 3

# Small settings that still use each buffer after the kill: PLR⊥'s is half full (replays
# start) at generation 2; SFL's is filled at generation 1 and refreshed every fourth, so
# generations 4 and 5 draw from the one restored.
SETTINGS = {
    "plr": ["curriculum.buffer_size=8"],
    "sfl": [
        "curriculum.levels_sampled=8",
        "curriculum.buffer_size=4",
        "curriculum.refresh_every=3",
        "curriculum.eval_episodes=2",
    ],
}
# summary.csv's count of what the buffer gave, after the kill.
FROM_THE_BUFFER = {"plr": "replays", "sfl": "buffer_tasks"}


def _args(name: str) -> list[str]:
    return [
        "task=maze",
        "pool=local",
        f"curriculum={name}",
        f"curriculum.generations={GENERATIONS}",
        "curriculum.tasks_per_step=2",
        "optimizer.population=16",
        *SETTINGS[name],
        "test_set.every=3",
        "test_set.size=4",
        "report_every_s=1000",
        "seed=5",
    ]


@pytest.mark.parametrize("name", list(SETTINGS))
def test_a_maze_run_killed_on_two_workers_and_resumed_equals_one_run_on_one(name, tmp_path):
    clean = tmp_path / "clean"
    done = cli_in_process("coevo-run", *_args(name), "pool.num_workers=1", f"hydra.run.dir={clean}")
    assert done.returncode == 0, done.stderr[-3000:]

    killed = tmp_path / "killed"
    process = run_and_kill_after_checkpoint(
        [*_args(name), "pool.num_workers=2"], killed, generation=KILLED_AFTER
    )
    assert process.returncode == -signal.SIGKILL
    assert not (killed / "checkpoints" / f"gen_{GENERATIONS:06d}.pkl").exists()
    resumed = cli_in_process("coevo-run", f"resume={killed}")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resuming" in resumed.stdout

    expected, got = run_tables(clean), run_tables(killed)
    for table in expected:  # 1 worker straight through = 2 workers killed and resumed
        pd.testing.assert_frame_equal(got[table], expected[table], obj=table)
    summary = expected["summary.csv"]
    assert summary["generation"].tolist() == list(range(1, GENERATIONS + 1))
    assert summary[FROM_THE_BUFFER[name]].iloc[KILLED_AFTER:].sum() > 0
    assert summary["test_mastered"].notna().sum() == GENERATIONS // 3
    decisions = expected["eligibility.csv"]
    assert {Maze.from_json(text).id for text in decisions["task"]} == set(decisions["task_id"])


# POET admits a child every generation (a maze's return lies in [0, 1], inside these MC
# bounds), archives past 3 active pairs and transfers every second generation.
IN_PROCESS = {
    "dr": (DomainRandomization, DRConfig(generations=GENERATIONS, tasks_per_step=2)),
    "poet": (
        Poet,
        PoetConfig(
            generations=6,
            reproduce_every=1,
            repro_threshold=-1,
            mc_lower=-1,
            mc_upper=2,
            max_children=3,
            max_active=3,
            transfer_every=2,
        ),
    ),
}


def _tables(results, curriculum) -> list[pd.DataFrame]:
    summary = pd.DataFrame(
        [{k: v for k, v in r.summary.items() if not is_runtime_column(k)} for r in results]
    )
    decisions = pd.DataFrame([d.as_row() for r in results for d in r.decisions])
    return [summary, decisions, curriculum.population_frame()]


@pytest.mark.parametrize("name", list(IN_PROCESS))
def test_a_maze_run_continued_from_its_state_on_two_workers_equals_one_run_on_one(name):
    cls, config = IN_PROCESS[name]
    space = tasks.get("maze")
    env = space.make_env()
    policy = make_policy("mlp", env.observation_space, env.action_space, {"hidden": [8]})

    def build(pool):
        optimizer = EvolutionStrategy(ESConfig(population=8), policy.num_params)
        return cls(config, space=space, pool=pool, optimizer=optimizer, seed=5)

    with EvaluationPool(space, policy, "local", 1, envs_per_worker=16) as pool:
        whole = build(pool)
        expected = _tables(whole.run(), whole)
    with EvaluationPool(space, policy, "local", 2, envs_per_worker=8) as pool:
        first = build(pool)
        head = first.run(KILLED_AFTER)
        state = pickle.loads(pickle.dumps(first.state_dict()))
        second = build(pool)
        second.load_state_dict(state)
        got = _tables(head + second.run(), second)
    for table, want in zip(got, expected, strict=True):
        pd.testing.assert_frame_equal(table, want)
    summary, decisions = expected[0], expected[1]
    assert len(summary) == config.generations
    assert {Maze.from_json(text).id for text in decisions["task"]} == set(decisions["task_id"])
    if name == "poet":
        counts = {key: summary[key].to_numpy() for key in ("admitted", "transfers", "archived")}
        assert counts["admitted"][KILLED_AFTER:].sum() > 0  # after the stop too
        assert counts["transfers"].sum() > 0 and counts["archived"][-1] > 0
    else:
        np.testing.assert_array_equal(second.students[0].theta, whole.students[0].theta)
