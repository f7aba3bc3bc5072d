"""A pairs file's `{checkpoint: RUN}` policy runs with its own run's policy settings
(RUN/config.yaml): a PPO run's actor-critic is judged by `experiment=eligible_parents`
without `policy=actor_critic` on the command line, scoring what its run scores it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from cli_support import SMALL_PPO, cli_in_process
from phrases import assert_says

from coevo.replay import episode_returns, load_saved_run
from coevo.run_setup import prepare

pytest.importorskip("torch")


def test_a_checkpoint_pair_takes_its_runs_policy_settings(tmp_path):
    run = tmp_path / "ppo"
    trained = cli_in_process(
        "coevo-run",
        *SMALL_PPO,
        "pool=local",
        "curriculum.generations=1",
        "test_set.every=0",
        f"hydra.run.dir={run}",
    )
    assert trained.returncode == 0, trained.stderr[-3000:]
    newest = sorted((run / "checkpoints").glob("gen_*.pkl"))[-1]
    pairs = tmp_path / "pairs.yaml"
    pairs.write_text(
        yaml.safe_dump(
            {
                "pairs": [
                    {"name": "run", "policy": {"checkpoint": str(run)}},
                    {"name": "file", "policy": {"checkpoint": str(newest), "pair": 0}},
                ]
            }
        )
    )
    judged = tmp_path / "judged"
    done = cli_in_process(
        "coevo-run",
        "experiment=eligible_parents",
        f"eligible.pairs_file={pairs}",
        "eligible.episodes=2",
        "eligible.threshold=0",
        "pool=local",
        f"hydra.run.dir={judged}",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    table = pd.read_csv(judged / "eligibility.csv")
    assert list(table["outcome"]) == ["eligible", "eligible"] and table["error"].isna().all()
    # The scores are the run's own policy's: as coevo-eval's replay plays it.
    saved = load_saved_run(run)
    assert saved.population is not None
    space, policy = prepare(saved.config)
    theta = saved.population.get(0).theta
    expected = episode_returns(space, policy, theta, space.initial_task(), 2, 0)
    returns = pd.read_csv(judged / "returns.csv")
    for row in range(2):
        np.testing.assert_allclose(returns.loc[row, ["episode_0", "episode_1"]], expected)
    # The same vector as a .npy takes this command's policy (the mlp): refused by its size.
    np.save(tmp_path / "ppo.npy", theta)
    pairs.write_text(yaml.safe_dump({"pairs": [{"policy": "ppo.npy"}]}))
    refused = cli_in_process(
        "coevo-run",
        "experiment=eligible_parents",
        f"eligible.pairs_file={pairs}",
        f"hydra.run.dir={tmp_path / 'refused'}",
    )
    assert refused.returncode == 2
    assert_says(refused.stderr, "pairs[0].policy: ppo.npy has", "the policy config needs")
