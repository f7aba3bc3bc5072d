"""Faults during a run: a worker killed mid-generation, envs that raise or return NaN / inf.

The run goes on and loses nothing: a killed worker's chunks are re-run (results identical to
an undisturbed run); a broken evaluation is a failure with its error in eligibility.csv,
never a score.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal

import numpy as np
import pandas as pd
from cli_support import cli_in_process

from coevo import ESConfig, EvolutionStrategy, Poet, PoetConfig, tasks
from coevo.policies import MLPPolicy
from coevo.pool import EvaluationPool
from coevo.pool.stats import is_runtime_column


class _KillWorkerAfterFirstChunk:
    """A progress listener that, once armed, SIGKILLs a worker process as soon as the first
    chunk of the next call has come back: the other chunks of that call are still out."""

    def __init__(self, pid: int):
        self.pid = pid
        self.armed = False
        self.killed_in_call_of = 0

    def planned(self, episodes: int) -> None:
        self.episodes = episodes

    def done(self, episodes: int, env_steps: float) -> None:
        if self.armed and episodes < self.episodes:
            self.armed = False
            self.killed_in_call_of = self.episodes
            os.kill(self.pid, signal.SIGKILL)


def _generations(pool: EvaluationPool, space, count: int, before_step=None) -> list:
    config = PoetConfig(
        generations=count,
        optimizer_steps=2,
        eval_episodes=2,
        repro_threshold=-2000.0,  # pendulum returns are negative: everyone reproduces
        reproduce_every=1,
        max_children=3,
        mc_lower=-2000.0,
        mc_upper=0.0,
        transfer_every=2,
    )
    es = EvolutionStrategy(
        ESConfig(population=8, lr=0.01, lr_decay=0.9999, lr_min=0.001, l2=0.01),
        pool.policy.num_params,
    )
    coevolution = Poet(config, space=space, pool=pool, optimizer=es, seed=11)
    results = []
    for generation in range(1, count + 1):
        if before_step:
            before_step(generation)
        results.append(coevolution.step())
    return results, coevolution.population


def _frames(results, population) -> dict[str, pd.DataFrame]:
    summary = pd.DataFrame([r.summary for r in results])
    return {
        "summary": summary.drop(columns=[c for c in summary if is_runtime_column(c)]),
        "decisions": pd.DataFrame([d.as_row() for r in results for d in r.decisions]),
        "population": population.to_frame(),
    }


def test_a_worker_killed_mid_generation_changes_no_result(ray_session):
    # Gymnasium's pendulum, one env per slot, 200-step episodes: chunks take long enough
    # (tens of ms) that a killed worker still holds some.
    space = dataclasses.replace(tasks.get("pendulum"), make_slots=None)
    env = space.make_env()
    policy = MLPPolicy.for_spaces(env.observation_space, env.action_space, hidden=(8,))
    with EvaluationPool(space, policy, "ray", num_workers=2, envs_per_worker=4) as pool:
        undisturbed = _frames(*_generations(pool, space, 3))
        restarts_before = pool.stats["worker_restarts"]
        pid = pool.worker_info()[0]["pid"]
        killer = _KillWorkerAfterFirstChunk(pid)
        pool.progress = killer

        def arm_in_generation_2(generation: int) -> None:
            killer.armed = generation == 2

        disturbed = _frames(*_generations(pool, space, 3, arm_in_generation_2))
        assert killer.killed_in_call_of > 0  # the kill landed inside generation 2's first call
        assert pool.worker_info()[0]["pid"] != pid  # Ray started worker 0 anew
        assert pool.stats["worker_restarts"] == restarts_before + 1
    assert len(disturbed["summary"]) == 3
    for name, frame in undisturbed.items():
        pd.testing.assert_frame_equal(disturbed[name], frame, obj=name)


def test_coevo_run_with_envs_that_raise_or_return_nan_or_inf_goes_on(tmp_path):
    # FragileCartPole (tests/fragile_env.py): task hazard 0 is CartPole, 1 raises, 2 rewards
    # NaN, 3 rewards inf. Children of the hazard-0 pair mutate into all three. In this
    # process, on the local backend: a Ray worker's failed episode comes back as the same
    # text (tests/pool/test_failures.py runs both backends).
    done = cli_in_process(
        "coevo-run",
        "pool=local",
        "task.name=fragile",
        "+task.entry_point=fragile_env:FragileCartPole",
        "+task.params.hazard={low: 0, high: 3, init: 0, step: 3, round_to: 1}",
        "curriculum.generations=3",
        "curriculum.repro_threshold=0",
        "curriculum.reproduce_every=1",
        "curriculum.max_children=8",
        "optimizer.population=4",
        "seed=1",
        f"hydra.run.dir={tmp_path}",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "gen   3/3" in done.stdout
    # The console says when episodes failed, with the generation's count from summary.csv.
    failed_counts = pd.read_csv(tmp_path / "summary.csv")["failed_episodes"].tolist()
    lines = [line for line in done.stdout.splitlines() if line.startswith("gen ")]
    for line, count in zip(lines, failed_counts, strict=True):
        # ... with the first error's last line.
        assert (f"| {count} episodes failed (first: " in line) is (count > 0), line
    assert sum(failed_counts) > 0
    # Once per run, the first error whole: where in the env it was raised.
    shown = done.stdout.split("the first failed episode's error (every error: eligibility")
    assert len(shown) == 2 and 'fragile_env.py", line' in shown[1], done.stdout[-3000:]
    rows = pd.read_csv(tmp_path / "eligibility.csv")
    hazard = rows["task"].map(lambda text: json.loads(text)["params"]["hazard"])
    expected_errors = {
        1.0: "RuntimeError: hazard 1: the cart lost a wheel",
        2.0: "non-finite return nan after",
        3.0: "non-finite return inf after",
    }
    evaluated = rows["rule"] != "duplicate"  # a duplicate child is never evaluated
    for value, message in expected_errors.items():
        broken = rows[evaluated & (hazard == value)]
        assert len(broken) > 0, f"no child with hazard {value}"
        assert broken["error"].str.startswith(message).all(), broken["error"].tolist()
        assert broken["score"].isna().all()  # a failure, never a score
        assert (broken["outcome"] == "rejected").all()
        assert broken["reason"].str.contains("evaluation failed").all()
    healthy = rows[hazard == 0.0]
    assert healthy["error"].isna().all()  # empty in the CSV
    parents = healthy[healthy["kind"] == "parent"]
    assert len(parents) == 3 and (parents["outcome"] == "eligible").all()
    assert np.isfinite(parents["score"]).all()
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert np.isfinite(summary["best_score"]).all() and summary["best_score"].max() < 1000
    population = pd.read_csv(tmp_path / "population.csv")
    assert population["task.hazard"].tolist() == [0.0]  # no broken task was admitted
