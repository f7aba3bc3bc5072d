import pytest
from phrases import assert_says

from coevo.config import RunConfig, parse_config
from coevo.errors import ConfigError
from coevo.run_setup import prepare


def test_empty_config_takes_the_defaults():
    assert parse_config({}) == RunConfig()


def test_values_are_typed():
    config = parse_config(
        {
            "seed": 3,
            "pool": {"num_workers": 1, "backend": "local"},
            "optimizer": {"lr": 1},
            "policy": {"hidden": [8, 8]},
        }
    )
    assert config.pool.num_workers == 1 and config.optimizer.lr == 1.0
    assert config.policy.hidden == (8, 8)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"pool": {"num_workers": 0}}, "pool.num_workers: must be an integer >= 1, got 0"),
        ({"pool": {"num_workers": -3}}, "pool.num_workers: must be an integer >= 1, got -3"),
        ({"pool": {"num_workers": "two"}}, "pool.num_workers: must be an integer >= 1, got 'two'"),
        ({"pool": {"num_workers": 1.5}}, "pool.num_workers: must be an integer >= 1, got 1.5"),
        (
            {"pool": {"backend": "spark"}},
            "pool.backend: unknown value 'spark'; allowed: local, ray",
        ),
        (
            {"pool": {"num_worker": 2}},
            "pool.num_worker: unknown key; allowed: backend, num_workers, envs_per_worker, address",
        ),
        (
            {"bogus": 1},
            "bogus: unknown key; allowed: mode, logger, seed, task, policy, pool, "
            "optimizer, curriculum, eligible, test_set, resume, checkpoints_kept, "
            "report_every_s",
        ),
        ({"curriculum": {"generations": 0}}, "curriculum.generations: must be an integer >= 1"),
        (
            {"curriculum": {"mc_lower": 300, "mc_upper": 100}},
            "curriculum.mc_lower: must be <= curriculum.mc_upper (100), got 300",
        ),
        (
            {"optimizer": {"sigma_decay": 1.5}},
            "optimizer.sigma_decay: must be a number in [0, 1], got 1.5",
        ),
        ({"optimizer": {"lr": True}}, "optimizer.lr: must be a number >= 0, got True"),
        ({"policy": {"hidden": [16, 0]}}, "policy.hidden[1]: must be a positive integer, got 0"),
        (
            {"policy": {"activation": "gelu"}},
            "policy.activation: unknown value 'gelu'; allowed: tanh, relu",
        ),
        ({"task": "cartpole"}, "task: must be a mapping, got 'cartpole'"),
    ],
)
def test_bad_values_name_the_field_and_what_is_allowed(raw, message):
    with pytest.raises(ConfigError) as info:
        parse_config(raw)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(
    ("task", "message"),
    [
        ({"name": "cartpol"}, "task.name: unknown task space 'cartpol'; known: "),
        (
            {"params": {"gravty": {"low": 1}}},
            "task.params.gravty: unknown parameter of task "
            "space 'cartpole'; known: pole_length, pole_mass, cart_mass, force_mag, gravity",
        ),
        (
            {"params": {"gravity": {"low": 20, "high": 5}}},
            "task.params.gravity: lower bound 20 > upper bound 5 in 'cartpole'",
        ),
        ({"params": {"gravity": {"high": "x"}}}, "task.params.gravity.high: must be a number"),
    ],
)
def test_task_errors_surface_in_prepare(task, message):
    with pytest.raises(ConfigError) as info:
        prepare(parse_config({"task": task}))
    assert str(info.value).startswith(message)


def test_prepare_builds_space_and_policy():
    space, policy = prepare(
        parse_config({"task": {"max_episode_steps": 50}, "policy": {"hidden": [8]}})
    )
    assert space.max_episode_steps == 50
    assert policy.layer_sizes == (4, 8, 2)


def test_nan_typed_for_a_word_setting_says_to_quote_it():
    # Hydra reads `policy.name=nan` as a float: a word needs quotes there.
    with pytest.raises(ConfigError) as refused:
        parse_config({"policy": {"name": float("nan")}})
    assert refused.value.field == "policy.name"
    assert_says(
        str(refused.value), "must be a string, got nan", "quote it", "policy.name=\"'nan'\""
    )
    # A setting of fixed words: which ones (quoted, nan would be refused next).
    with pytest.raises(ConfigError) as refused:
        parse_config({"optimizer": {"name": "ppo", "schedule": float("nan")}})
    assert refused.value.field == "optimizer.schedule"
    assert_says(str(refused.value), "got nan", "allowed: constant, linear")
