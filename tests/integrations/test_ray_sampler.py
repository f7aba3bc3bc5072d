"""A sampler served by a Ray actor to envs holding a `RemoteSampler` (what RLlib's env
runners use, tested here without RLlib): reports in order, the envs' tasks, the epoch a
loaded state starts, and the errors of a wrong setup."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import ray
from phrases import assert_says

from coevo.curricula import sampler
from coevo.errors import ConfigError
from coevo.integrations.ray_sampler import CurriculumEnv, serve_on_ray


def _play(env: CurriculumEnv, rng: np.random.Generator) -> tuple[Any, float]:
    """One whole episode of random actions: (its task, its return)."""
    _, info = env.reset(seed=int(rng.integers(1 << 30)))
    played: Any = env.unwrapped  # the space's task env
    assert played.get_task() == info["task"].as_dict()  # the env plays the draw
    total, done = 0.0, False
    while not done:
        _, reward, terminated, truncated, _ = env.step(int(rng.integers(2)))
        total, done = total + float(reward), terminated or truncated
    return info["task"], total


def _served_envs(n: int) -> tuple[Any, list[CurriculumEnv]]:
    """A DR sampler's actor and `n` envs drawing from it, env i as owner i + 1."""
    actor = serve_on_ray(sampler("dr", "cartpole", seed=3))
    envs = [CurriculumEnv({"space": "cartpole"}) for _ in range(n)]
    for i, env in enumerate(envs):
        env.attach_sampler(actor, "cartpole", owner=i + 1)
    return actor, envs


def _summary(actor: Any, envs: list[CurriculumEnv]) -> dict[str, Any]:
    for env in envs:
        env.flush_reports()
    return ray.get(actor.summary.remote())


def test_envs_report_their_episodes_in_the_order_they_ended(ray_session):
    actor, envs = _served_envs(2)
    rng = np.random.default_rng(0)
    played = [_play(envs[i % 2], rng) for i in range(6)]
    summary = _summary(actor, envs)
    rows = ray.get(actor.decisions.remote())
    # DR's rows carry each episode's return: one row per episode, in order, on its task.
    assert [(row.task_id, row.score) for row in rows] == [(t.id, r) for t, r in played]
    assert summary == {"sampler": "dr", "episodes": 6, "pending": 0, "owed": 0, "dropped": 0}


def test_a_loaded_state_replays_its_running_episodes_and_drops_older_reports(ray_session):
    actor, (env, other) = _served_envs(2)
    rng = np.random.default_rng(1)
    _play(env, rng)
    _, info = env.reset()  # running when the state is saved
    env.flush_reports()
    state = ray.get(actor.state_dict.remote())
    ray.get(actor.load_state_dict.remote(state))
    # The saved state's running episode is the next draw, played again by another env ...
    assert _play(other, rng)[0] == info["task"]
    # ... and the env that ran it reports it cut short, to the replaced sampler: dropped.
    _play(env, rng)
    assert _summary(actor, [env, other]) == {
        "sampler": "dr",
        "episodes": 3,
        "pending": 0,
        "owed": 0,
        "dropped": 1,
    }


def test_a_lost_runner_s_draws_are_handed_to_the_next_envs(ray_session):
    actor, (env, other) = _served_envs(2)
    rng = np.random.default_rng(2)
    _, info = env.reset()  # drawn for owner 1, whose envs are then lost
    ray.get(actor.lost.remote([1]))
    assert _play(other, rng)[0] == info["task"]
    assert _summary(actor, [other]) == {
        "sampler": "dr",
        "episodes": 1,
        "pending": 0,
        "owed": 0,
        "dropped": 0,
    }


def test_an_env_without_a_sampler_says_how_to_attach_one():
    with pytest.raises(RuntimeError) as error:
        CurriculumEnv({"space": "cartpole"}).reset()
    assert_says(str(error.value), "no sampler attached", "curriculum_callback")


def test_a_sampler_of_another_space_is_refused(ray_session):
    actor = serve_on_ray(sampler("dr", "pendulum"))
    with pytest.raises(ConfigError) as error:
        CurriculumEnv({"space": "cartpole"}).attach_sampler(actor, "pendulum")
    assert_says(str(error.value), "env_config.space", "'cartpole'", "'pendulum'")


@pytest.mark.parametrize(
    ("config", "phrases"),
    [
        ({}, ("env_config.space", "missing", "'cartpole'")),
        ({"space": "cartpole", "seed": 1}, ("env_config.seed", "allowed: space")),
        ({"space": 3}, ("env_config.space", "TaskSpace", "got 3")),
    ],
)
def test_a_wrong_env_config_names_the_key(config, phrases):
    with pytest.raises(ConfigError) as error:
        CurriculumEnv(config)
    assert_says(str(error.value), *phrases)
