"""Starting a run's policies from given parameters (`policy.start_from`, or
`initial_theta=` from Python) instead of the policy's random init."""

import numpy as np
import pytest
from cli_support import cli_in_process

from coevo import checkpoint, runner, tasks
from coevo.config import parse_config
from coevo.curricula.dr import DomainRandomization, DRConfig
from coevo.curricula.poet import Poet, PoetConfig
from coevo.errors import ConfigError
from coevo.optimizers.es import ESConfig, EvolutionStrategy
from coevo.policies import make_policy
from coevo.pool import EvaluationPool
from coevo.start_policy import load_start_theta

RAW = {
    "pool": {"backend": "local", "num_workers": 1},
    "seed": 1,
    "report_every_s": 0,
    "curriculum": {"name": "dr", "generations": 2},
    "optimizer": {"name": "es", "population": 8},
}


def quiet(_line: str) -> None:
    pass


def first_policies(run_dir):
    """The policies a run started with (its generation-0 checkpoint)."""
    return checkpoint.load(checkpoint.checkpoint_path(run_dir / "checkpoints", 0))["policies"]


@pytest.fixture(scope="module")
def parts():
    space = tasks.get("cartpole")
    env = space.make_env()
    policy = make_policy("mlp", env.observation_space, env.action_space, {})
    with EvaluationPool(space, policy, backend="local", num_workers=1) as pool:
        yield space, policy, pool


def test_curricula_start_every_new_policy_from_initial_theta(parts):
    space, policy, pool = parts
    theta = np.linspace(-1, 1, policy.num_params).astype(np.float32)
    es = EvolutionStrategy(ESConfig(population=4), policy.num_params)
    dr = DomainRandomization(
        DRConfig(policies=2), space=space, pool=pool, optimizer=es, initial_theta=theta
    )
    for student in dr.students:
        np.testing.assert_array_equal(student.theta, theta)
    poet = Poet(
        PoetConfig(initial_pairs=2), space=space, pool=pool, optimizer=es, initial_theta=theta
    )
    for pair in poet.population.active:
        np.testing.assert_array_equal(pair.theta, theta)
    theta[0] = 5.0  # the curricula hold copies
    assert dr.students[0].theta[0] == -1.0 and poet.population.active[0].theta[0] == -1.0
    random = DomainRandomization(DRConfig(), space=space, pool=pool, optimizer=es)
    assert not np.array_equal(random.students[0].theta, dr.students[0].theta)


def test_initial_theta_that_does_not_fit_the_policy_is_refused(parts):
    space, policy, pool = parts
    es = EvolutionStrategy(ESConfig(population=4), policy.num_params)
    n = policy.num_params
    with pytest.raises(
        ConfigError, match=f"initial_theta: has 10 parameters; the run's policy has {n}"
    ):
        DomainRandomization(
            DRConfig(), space=space, pool=pool, optimizer=es, initial_theta=np.zeros(10)
        )
    broken = np.zeros(n)
    broken[:3] = np.nan
    with pytest.raises(ConfigError, match=f"initial_theta: 3 of its {n} parameters are not finite"):
        DomainRandomization(DRConfig(), space=space, pool=pool, optimizer=es, initial_theta=broken)


def test_a_run_starts_from_another_runs_policy_or_a_npy_file(tmp_path):
    runner.run(parse_config(RAW), tmp_path / "first", quiet)
    _, state = checkpoint.load_latest(tmp_path / "first" / "checkpoints")
    ((name, trained),) = state["policies"].items()

    again = {**RAW, "policy": {"start_from": str(tmp_path / "first")}}
    runner.run(parse_config(again), tmp_path / "again", quiet)
    np.testing.assert_array_equal(first_policies(tmp_path / "again")[name], trained)

    np.save(tmp_path / "theta.npy", trained)
    poet = {
        **RAW,
        "curriculum": {"name": "poet", "generations": 1},
        "policy": {"start_from": str(tmp_path / "theta.npy")},
    }
    runner.run(parse_config(poet), tmp_path / "poet", quiet)
    (started,) = first_policies(tmp_path / "poet").values()
    np.testing.assert_array_equal(started, trained)


def test_start_from_takes_an_archived_poet_pair_as_coevo_eval_does(parts, tmp_path):
    space, policy, pool = parts
    es = EvolutionStrategy(ESConfig(population=4), policy.num_params)
    poet = Poet(PoetConfig(initial_pairs=2), space=space, pool=pool, optimizer=es)
    first, second = poet.population.active
    first.theta[:] = 0.5
    poet.population.move_to_archive(first, 1)
    state = {
        "curriculum": {"population": poet.population, "generation": 1},
        "policies": dict(poet.policies_for_testing().policies),  # the active pairs only
    }
    checkpoint.save(tmp_path / "checkpoints", 1, state)
    theta = load_start_theta(f"{tmp_path}:pair_{first.pair_id}", policy)
    np.testing.assert_array_equal(theta, first.theta)
    # Without :NAME, the one active pair, as before archived pairs were known here.
    np.testing.assert_array_equal(load_start_theta(str(tmp_path), policy), second.theta)
    with pytest.raises(ConfigError, match=f"known: pair_{first.pair_id}, pair_{second.pair_id}$"):
        load_start_theta(f"{tmp_path}:pair_99", policy)


def test_start_from_names_what_is_wrong(tmp_path):
    poet = {**RAW, "curriculum": {"name": "poet", "generations": 1, "initial_pairs": 2}}
    runner.run(parse_config(poet), tmp_path / "two", quiet)
    names = list(first_policies(tmp_path / "two"))
    last_two = tmp_path / "two" / "checkpoints" / "gen_000001.pkl"
    cases = {
        str(
            tmp_path / "two"
        ): f"holds 2 active policies; pick one with :NAME, one of: {', '.join(names)}",
        f"{tmp_path / 'two'}:nobody": f"no policy 'nobody' in {last_two}; known: ",
        str(tmp_path / "missing.npy"): "missing.npy not found",
        str(
            tmp_path / "elsewhere"
        ): "not found (a .npy file, a run directory or a checkpoint file)",
    }
    for spec, message in cases.items():
        with pytest.raises(ConfigError) as refused:
            runner.run(parse_config({**RAW, "policy": {"start_from": spec}}), tmp_path / "x", quiet)
        assert str(refused.value).startswith("policy.start_from: "), refused.value
        assert message in str(refused.value)
    np.save(tmp_path / "small.npy", np.zeros(5))
    wide = {**RAW, "policy": {"start_from": str(tmp_path / "small.npy")}}
    with pytest.raises(ConfigError, match="has 5 parameters; the run's policy has"):
        runner.run(parse_config(wide), tmp_path / "x", quiet)
    assert not (tmp_path / "x").exists()  # refused before the run directory was made
    chosen = {**RAW, "policy": {"start_from": f"{tmp_path / 'two'}:{names[1]}"}}
    runner.run(parse_config(chosen), tmp_path / "chosen", quiet)
    two = checkpoint.load_latest(tmp_path / "two" / "checkpoints")[1]["policies"]
    (started,) = first_policies(tmp_path / "chosen").values()
    np.testing.assert_array_equal(started, two[names[1]])


def test_coevo_run_takes_start_from_on_the_command_line(tmp_path):
    theta = np.full(114, 0.01, dtype=np.float32)  # mlp [16] on CartPole: 4*16+16 + 16*2+2
    np.save(tmp_path / "theta.npy", theta)
    run_dir = tmp_path / "run"
    done = cli_in_process(
        "coevo-run",
        "pool=local",
        "curriculum=dr",
        "curriculum.generations=1",
        "policy.start_from=theta.npy",
        f"hydra.run.dir={run_dir}",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (started,) = first_policies(run_dir).values()
    np.testing.assert_array_equal(started, theta)


def test_start_from_says_which_checkpoint_it_read_and_refuses_what_it_would_ignore(tmp_path):
    runner.run(
        parse_config({**RAW, "curriculum": {"name": "dr", "generations": 3}}), tmp_path / "a", quiet
    )
    newest = checkpoint.checkpoint_path(tmp_path / "a" / "checkpoints", 3)
    newest.write_bytes(newest.read_bytes()[:50])  # damaged, as by a full disk
    lines = []
    again = {**RAW, "policy": {"start_from": str(tmp_path / "a")}}
    runner.run(parse_config(again), tmp_path / "b", lines.append)
    assert any(
        "gen_000003.pkl" in line and "trying the previous checkpoint" in line for line in lines
    )
    used = [line for line in lines if line.startswith("policy.start_from: the policies start from")]
    previous = tmp_path / "a" / "checkpoints" / "gen_000002.pkl"
    assert used == [f"policy.start_from: the policies start from {previous}:policy_0"]

    with pytest.raises(
        ConfigError, match=r"policy.start_from: give one source of starting weights"
    ):
        parse_config(
            {"policy": {"name": "torch", "module": "m:M", "file": "w.pt", "start_from": "t.npy"}}
        )
    with pytest.raises(ConfigError, match=r"policy.start_from: not used by mode=eligible_parents"):
        parse_config(
            {
                "mode": "eligible_parents",
                "eligible": {"pairs_file": "p.yaml"},
                "policy": {"start_from": "t.npy"},
            }
        )
    with pytest.raises(
        ConfigError, match=r"policy.start_from: .*model.zip: an SB3 zip is not read here"
    ):
        runner.run(
            parse_config({**RAW, "policy": {"start_from": "model.zip"}}), tmp_path / "c", quiet
        )
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"^policy.start_from: no usable checkpoint in "):
        runner.run(
            parse_config({**RAW, "policy": {"start_from": str(tmp_path / "empty")}}),
            tmp_path / "c",
            quiet,
        )
