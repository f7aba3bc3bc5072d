"""RLlib's PPO (new API stack) with coevo's PLR⊥ through `CurriculumCallback`: every finished
episode reaches the sampler, the envs play the tasks it drew, and its state round-trips.

Runs where RLlib is installed: `make test` runs it in .venv-rllib (ray[rllib] pins its own
gymnasium); the main venv has no RLlib and skips it."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

pytest.importorskip(
    "ray.rllib.algorithms.ppo",
    reason="RLlib is not installed here (make test runs this file in .venv-rllib)",
)

import ray  # noqa: E402
from phrases import assert_says  # noqa: E402
from ray.rllib.algorithms.ppo import PPOConfig  # noqa: E402
from ray.rllib.callbacks.callbacks import RLlibCallback  # noqa: E402
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig  # noqa: E402

from coevo.curricula import sampler  # noqa: E402
from coevo.errors import ConfigError  # noqa: E402
from coevo.integrations.rllib import (  # noqa: E402
    CurriculumCallback,
    CurriculumEnv,
    curriculum_callback,
    curriculum_of,
    load_state,
    save_state,
)

NUM_ENVS = 2
SETTINGS = {"buffer_size": 8}


class Recorder(RLlibCallback):
    """What the envs played, seen from RLlib's side (the env runner is in this process)."""

    started: dict[Any, dict[str, Any]] = {}
    ended: list[dict[str, Any]] = []

    def on_episode_start(self, *, episode, env, env_index, **kwargs) -> None:
        sub_env = env.envs[env_index]
        cartpole = sub_env.unwrapped
        Recorder.started[episode.id_] = {
            "task": sub_env.get_wrapper_attr("task"),
            "physics": {
                "pole_length": cartpole.length,
                "pole_mass": cartpole.masspole,
                "cart_mass": cartpole.masscart,
                "force_mag": cartpole.force_mag,
                "gravity": cartpole.gravity,
            },
        }

    def on_episode_end(self, *, episode, prev_episode_chunks, **kwargs) -> None:
        chunks = [episode, *prev_episode_chunks]
        Recorder.ended.append(
            {
                **Recorder.started.pop(episode.id_),
                "return": sum(chunk.get_return() for chunk in chunks),
                "length": sum(len(chunk) for chunk in chunks),
            }
        )


@pytest.fixture(scope="module")
def trained(ray_session):
    """PPO, 2 tiny iterations on CartPole tasks from PLR⊥: (algo, last result, snapshot)."""
    config = (
        PPOConfig()
        .environment(CurriculumEnv, env_config={"space": "cartpole"})
        .callbacks([curriculum_callback("plr", "cartpole", seed=0, **SETTINGS), Recorder])
        .env_runners(num_env_runners=0, num_envs_per_env_runner=NUM_ENVS)
        .training(train_batch_size_per_learner=256, minibatch_size=128, num_epochs=1)
        .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[16]))
        .debugging(seed=0)
    )
    algo = config.build_algo()
    result = {}
    for _ in range(2):
        result = algo.train()
    curriculum = curriculum_of(algo)
    snapshot = {
        "summary": curriculum.summary(),
        "decisions": curriculum.decisions(),
        "state": curriculum.state_dict(),
        "ended": list(Recorder.ended),
    }
    yield algo, result, snapshot
    algo.stop()


def test_every_finished_episode_reached_the_sampler(trained):
    _, result, snap = trained
    ended = snap["ended"]
    assert len(ended) > 0
    assert snap["summary"]["episodes"] == len(ended)
    assert result["env_runners"]["num_episodes_lifetime"] == len(ended)
    assert result["coevo"] == snap["summary"]  # the train() result carries the counts
    assert snap["summary"]["pending"] == NUM_ENVS  # the envs' running episodes
    # PLR⊥ saw RLlib's returns: its best is the best episode RLlib logged.
    assert snap["state"]["own"]["best_return"] == max(e["return"] for e in ended)


def test_the_envs_played_the_tasks_the_sampler_drew(trained):
    _, _, snap = trained
    ended, rows = snap["ended"], snap["decisions"]
    # One row per reported episode, in the order the episodes ended, on the env's task.
    assert [row.task_id for row in rows] == [e["task"].id for e in ended]
    for episode in ended:  # the env's physics was the task's
        assert episode["physics"] == pytest.approx(episode["task"].as_dict())
    outcomes = {(row.rule, row.outcome) for row in rows}
    assert ("new_level", "added") in outcomes and ("replay", "replayed") in outcomes


def test_the_state_round_trips_through_a_checkpoint_directory(trained, tmp_path):
    algo, _, snap = trained
    curriculum = curriculum_of(algo)

    def draws(n: int) -> list:
        return [ray.get(curriculum.actor.sample.remote())[0] for _ in range(n)]

    save_state(algo, tmp_path)
    saved = pickle.loads((tmp_path / "coevo_curriculum.pkl").read_bytes())
    running = [task for task, notes in saved["pending"].items() for _ in notes]
    assert len(running) == NUM_ENVS  # the envs' episodes when it was saved
    fresh = draws(3)
    load_state(algo, tmp_path)
    # The running episodes are played again first, then the draws go on as before the load.
    assert draws(NUM_ENVS + 3) == running + fresh
    # The file is a plain sampler state: a sampler outside RLlib continues from it.
    resumed = sampler("plr", "cartpole", seed=0, **SETTINGS)
    resumed.load_state_dict(saved)
    assert resumed.episodes == snap["summary"]["episodes"] == len(resumed.decisions())
    # Training goes on after a load: the envs' running episodes (drawn from the replaced
    # sampler) are dropped, and the saved state's running episodes are played again.
    load_state(algo, tmp_path)
    before = curriculum.summary()["episodes"]
    result = algo.train()
    assert result["coevo"]["dropped"] == NUM_ENVS
    assert result["coevo"]["owed"] == 0 and result["coevo"]["episodes"] > before


def test_a_wrong_setting_fails_when_the_config_is_written():
    with pytest.raises(ConfigError) as error:
        curriculum_callback("plr", "cartpole", buffer_sise=8)
    assert_says(str(error.value), "buffer_sise", "buffer_size")
    with pytest.raises(TypeError) as unserved:
        CurriculumCallback()  # the base class serves no sampler
    assert_says(str(unserved.value), "curriculum_callback(name, space", "serving(sampler)")


def _tiny_ppo(**env_runners: Any) -> PPOConfig:
    return (
        PPOConfig()
        .callbacks(curriculum_callback("dr", "cartpole"))
        .env_runners(num_env_runners=0, num_envs_per_env_runner=1, **env_runners)
        .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[8]))
    )


@pytest.mark.parametrize(
    ("env", "env_config", "env_runners", "phrases"),
    [
        ("CartPole-v1", {}, {}, ("config.environment", "CurriculumEnv", "attach_sampler")),
        (
            CurriculumEnv,
            {"space": "cartpole"},
            {"gym_env_vectorize_mode": "async"},
            ("gym_env_vectorize_mode", "must be 'sync'", "got 'async'"),
        ),
    ],
)
def test_an_env_the_sampler_cannot_reach_fails_when_the_algorithm_is_built(
    ray_session, env, env_config, env_runners, phrases
):
    config = _tiny_ppo(**env_runners).environment(env, env_config=env_config)
    with pytest.raises(ConfigError) as error:
        config.build_algo()
    assert_says(str(error.value), *phrases)
