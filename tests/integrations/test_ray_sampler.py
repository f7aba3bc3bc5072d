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
    actor = serve_on_ray(sampler("dr", "cartpole", seed=3))
    envs = [CurriculumEnv({"space": "cartpole"}) for _ in range(n)]
    for env in envs:
        env.attach_sampler(actor, "cartpole")
    return actor, envs


def test_envs_report_their_episodes_in_the_order_they_ended(ray_session):
    actor, envs = _served_envs(2)
    rng = np.random.default_rng(0)
    played = [_play(envs[i % 2], rng) for i in range(6)]
    for env in envs:
        env.flush_reports()
    rows = ray.get(actor.decisions.remote())
    # DR's rows carry each episode's return: one row per episode, in order, on its task.
    assert [(row.task_id, row.score) for row in rows] == [(t.id, r) for t, r in played]
    summary = ray.get(actor.summary.remote())
    assert summary == {"sampler": "dr", "episodes": 6, "pending": 0, "dropped": 0}


def test_a_loaded_state_drops_the_reports_of_earlier_draws(ray_session):
    actor, (env,) = _served_envs(1)
    rng = np.random.default_rng(1)
    _play(env, rng)
    env.flush_reports()
    state = ray.get(actor.state_dict.remote())
    env.reset()  # an episode drawn before the load ...
    ray.get(actor.load_state_dict.remote(state))
    _play(env, rng)  # ... is cut short here, and this one drawn after it
    env.reset()
    env.flush_reports()
    assert ray.get(actor.summary.remote()) == {
        "sampler": "dr",
        "episodes": 2,  # the one before the save, the one after the load
        "pending": 1,
        "dropped": 1,
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
