"""`coevo-run optimizer=ppo`: POET and Enhanced POET with PPO from the command line, bad
settings refused before Ray starts, refused updates explained in eligibility.csv."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml
from cli_support import PPO_DIAGNOSTICS, SMALL_PPO, cli_in_process

pytest.importorskip("torch")


@pytest.mark.parametrize(
    "overrides, message",
    [
        (
            ["optimizer=ppo", "policy=mlp"],
            "policy.name: optimizer ppo needs the actor-critic policy",
        ),
        (
            ["optimizer=ppo", "policy=actor_critic", "optimizer.batch_size=1"],
            "optimizer.batch_size",
        ),
        (
            ["optimizer=ppo", "policy=actor_critic", "optimizer.schedule=cosine"],
            "optimizer.schedule",
        ),
        (
            ["optimizer=ppo", "policy=actor_critic", "optimizer.schedule=linear"],
            "optimizer.anneal_updates: must be >= 1 with schedule linear",
        ),
        (["optimizer=ppo", "policy=actor_critic", "+optimizer.n_stepz=3"], "optimizer.n_stepz"),
        (
            ["optimizer=ppo", "policy=actor_critic", "policy.kwargs.sde_sample_freq=0"],
            "policy.kwargs.sde_sample_freq: must be -1 (once per rollout) or an integer >= 1",
        ),
        (
            ["optimizer=ppo", "policy=actor_critic", "optimizer.learner=gpu"],
            "optimizer.learner: unknown value 'gpu'; allowed: driver, ray",
        ),
    ],
)
def test_bad_ppo_settings_exit_2_naming_the_field(tmp_path, overrides, message):
    done = cli_in_process("coevo-run", *overrides, f"hydra.run.dir={tmp_path}")
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert message in done.stdout + done.stderr
    assert "pool:" not in done.stdout  # refused before any worker started


def test_policy_name_on_the_command_line_takes_that_kinds_own_defaults(tmp_path):
    # policy.name=actor_critic beside the default policy=mlp group: the mlp file's
    # hidden [16] was for the mlp; the actor-critic takes its own [64, 64], as
    # policy=actor_critic gives it. What the command line states stays.
    done = cli_in_process(
        "coevo-run",
        "optimizer=ppo",
        "policy=mlp",
        "policy.name=actor_critic",
        "policy.activation=relu",
        *SMALL_PPO[4:],  # n_envs, n_steps, batch_size, n_epochs
        "pool=local",
        "curriculum.generations=1",
        "test_set.every=0",
        f"hydra.run.dir={tmp_path}",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    policy = yaml.safe_load((tmp_path / "config.yaml").read_text())["policy"]
    assert (policy["name"], policy["hidden"], policy["activation"]) == (
        "actor_critic",
        [64, 64],
        "relu",
    )


def test_enhanced_poet_with_ppo_admits_children_and_transfers(tmp_path):
    # In this process on the local pool: PPO's streams on Ray's workers give the same
    # arrays and training (tests/optimizers/test_ppo.py), and a stream a new worker has not
    # seen is replayed (tests/pool/test_trajectories.py), as after the handover to Ray.
    done = cli_in_process(
        "coevo-run",
        *SMALL_PPO,
        "pool=local",
        "curriculum=enhanced_poet",
        "curriculum.generations=2",
        "curriculum.reproduce_every=1",
        "curriculum.transfer_every=1",
        "curriculum.repro_threshold=0",
        "curriculum.mc_lower=0",
        "curriculum.initial_pairs=2",
        "curriculum.optimizer_steps=1",
        f"hydra.run.dir={tmp_path}",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert summary["admitted_total"].iloc[-1] >= 1
    assert (summary["trajectory_bytes"] > 0).all()
    # Later rollouts continue earlier ones' unfinished episodes (found live, or replayed).
    continued = summary["stream_cache_hits"] + summary["stream_cache_misses"]
    assert (continued > 0).all()
    rows = pd.read_csv(tmp_path / "eligibility.csv")
    assert (rows["outcome"] == "admitted").any()
    # Transfer candidates were judged, the proposal ones after one PPO update each.
    assert rows["rule"].eq("transfer").any()
    assert summary["train_mean_return"].notna().all()  # PPO rollouts' episode returns
    # The update's own numbers, averaged over the generation's steps (SB3's train/*).
    for column in PPO_DIAGNOSTICS:
        assert summary[column].notna().all(), column
    assert (summary["clip_fraction"].between(0, 1)).all()
    # ... drawn in the report, one panel each.
    page = (tmp_path / "report.html").read_text()
    assert 'src="plots/learner.png"' in page and "train/* figures" in page
    assert (tmp_path / "plots" / "learner.png").stat().st_size > 1000


def test_a_refused_update_is_a_row_in_eligibility_csv(tmp_path):
    # Every update moves the weights farther than max_update_norm allows: each is refused,
    # the pairs keep their weights and the run goes on. (NaN rewards are refused the same
    # way: tests/optimizers/test_ppo.py.)
    done = cli_in_process(
        "coevo-run",
        *SMALL_PPO,
        "pool=local",
        "optimizer.max_update_norm=1e-9",
        "curriculum.generations=1",
        "curriculum.optimizer_steps=2",
        f"hydra.run.dir={tmp_path}",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = pd.read_csv(tmp_path / "eligibility.csv")
    failed = rows[rows["rule"] == "optimizer"]
    assert len(failed) == 2  # one row per refused step
    assert (failed["outcome"] == "step_failed").all()
    assert failed["reason"].str.startswith("update refused: exploding update").all()
    # ... and the console says so: a policy whose every update is refused is frozen.
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("gen   1/1")]
    assert (
        " | 2 optimizer steps not applied, weights kept (first: update refused: exploding " in line
    )


def test_a_single_policy_curriculum_writes_refused_updates_and_counts_ppo_episodes(tmp_path):
    """DR with PPO: a refused update is a step_failed row (as POET writes it), the policy
    keeps its weights; the summary counts the episodes that ended in the rollouts."""
    done = cli_in_process(
        "coevo-run",
        *SMALL_PPO,
        "pool=local",
        "curriculum=dr",
        "curriculum.tasks_per_step=2",
        "optimizer.max_update_norm=1e-9",
        "curriculum.generations=2",
        "test_set.every=0",
        f"hydra.run.dir={tmp_path}",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = pd.read_csv(tmp_path / "eligibility.csv")
    failed = rows[rows["rule"] == "optimizer"]
    assert list(failed["generation"]) == [1, 2] and (failed["outcome"] == "step_failed").all()
    assert failed["reason"].str.startswith("update refused: exploding update").all()
    sampled = rows[rows["rule"] == "sample"]  # the tasks played, not trained on: said so
    assert len(sampled) == 4 and (sampled["outcome"] == "not_trained").all()
    summary = pd.read_csv(tmp_path / "summary.csv")
    # CartPole under random weights: 256 steps per stream end many episodes
    assert (summary["episodes"] > 0).all()
    assert (summary["steps_per_s"] <= summary["env_steps"] / summary["wall_s"] * 1.001).all()
    # Every update refused: no diagnostics. Those of DR's applied updates, in every row:
    # tests/curricula/test_curricula_cli.py's test_each_curriculum_trains_with_ppo.
    assert not set(PPO_DIAGNOSTICS) & set(summary.columns)


def test_a_resumed_ppo_run_equals_an_undisturbed_one(tmp_path):
    """The learner's state (Adam moments, minibatch generator, obs statistics) is in the
    checkpoint: 3 generations, then the run resumed from its checkpoint of generation 2,
    give the tables of the 3 straight generations again (generation 3 run anew). No
    transfers: a transfer starts its pair's learner afresh, and POET's default (every 2nd
    generation) would leave checkpoint 2 with no learner state to restore."""
    from coevo import checkpoint
    from coevo.pool.stats import is_runtime_column

    args = [
        *SMALL_PPO,
        "pool=local",
        "policy.kwargs.normalize_obs=true",
        "curriculum.optimizer_steps=1",
        "curriculum.reproduce_every=1",
        "curriculum.repro_threshold=0",
        "curriculum.mc_lower=0",
        "curriculum.transfer_every=0",
        "curriculum.generations=3",
        "seed=3",
    ]
    done = cli_in_process("coevo-run", *args, f"hydra.run.dir={tmp_path}")
    assert done.returncode == 0, done.stderr[-3000:]
    names = ("summary.csv", "eligibility.csv", "population.csv")
    straight = {name: pd.read_csv(tmp_path / name) for name in names}
    second = tmp_path / "checkpoints" / "gen_000002.pkl"
    pairs = checkpoint.load(second)["curriculum"]["population"].active
    assert any(pair.state.updates > 0 for pair in pairs)  # a learner state to restore
    resumed = cli_in_process("coevo-run", f"resume={second}")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resuming" in resumed.stdout and "after generation 2" in resumed.stdout
    assert "gen   3/3" in resumed.stdout  # generation 3 ran again
    for name, expected in straight.items():
        got = pd.read_csv(tmp_path / name)
        runtime = [c for c in expected if is_runtime_column(c)]
        pd.testing.assert_frame_equal(
            got.drop(columns=runtime), expected.drop(columns=runtime), obj=name
        )


def test_plr_replay_rows_say_when_the_step_kept_the_weights(tmp_path):
    done = cli_in_process(
        "coevo-run",
        *SMALL_PPO,
        "pool=local",
        "curriculum=plr",
        "curriculum.buffer_size=4",
        "curriculum.tasks_per_step=2",
        "curriculum.generations=6",
        "optimizer.max_update_norm=1e-9",  # every update refused
        "test_set.every=0",
        f"hydra.run.dir={tmp_path}",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = pd.read_csv(tmp_path / "eligibility.csv")
    replayed = rows[(rows["rule"] == "replay") & rows["reason"].str.contains("positive value")]
    assert len(replayed) > 0
    assert replayed["reason"].str.contains("not trained on it (the step kept", regex=False).all()


def test_optimizer_ppo_picks_its_actor_critic_policy_unless_one_is_named():
    from coevo import hydra_configs
    from coevo.cli.conf import CONF_DIR

    hydra_configs.register()
    picked = {
        "optimizer=ppo": "actor_critic",
        "optimizer=ppo policy=gru": "gru",
        "policy=gru optimizer=ppo": "gru",
        "optimizer=es": "mlp",
    }
    for command, policy in picked.items():
        assert hydra_configs.compose(CONF_DIR, command.split())["policy"]["name"] == policy


def test_a_rollout_in_which_no_episode_ends_says_why_it_has_no_training_return(tmp_path):
    """n_steps shorter than every episode: the training return is NaN, and the rows and a
    single warning say why (they said nothing)."""
    done = cli_in_process(
        "coevo-run",
        *SMALL_PPO,
        "optimizer.n_steps=4",  # CartPole's episodes last at least 8 steps
        "pool=local",
        "curriculum=dr",
        "curriculum.generations=2",
        "test_set.every=0",
        f"hydra.run.dir={tmp_path}",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    why = "no episode ended within the rollout's optimizer.n_steps=4 steps per stream"
    assert (done.stdout + done.stderr).count(why) == 1, done.stdout + done.stderr[-3000:]
    # ... and the warning says when a curriculum sees a return.
    assert "a curriculum sees an episode's return only when it ends" in done.stdout
    rows = pd.read_csv(tmp_path / "eligibility.csv").query("rule == 'optimizer'")
    # Generation 2's new tasks wait: every stream keeps its task until its episode ends.
    waiting = rows[rows["outcome"] == "not_played"]
    assert set(waiting["generation"]) == {2}
    assert waiting["reason"].str.contains("PPO's streams keep the tasks").all()
    steps = rows[rows["outcome"] != "not_played"]
    assert list(steps["generation"]) == [1, 2]
    assert steps["reason"].str.startswith(why).all()
