"""The policy interface: torch policies, recurrent state, stochastic heads, determinism."""

from __future__ import annotations

import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch
from phrases import assert_says

from coevo import tasks
from coevo.errors import ConfigError
from coevo.policies import MLPPolicy, make_policy, torch_policy_for
from coevo.pool import EpisodeJob, EvaluationPool, Stored, Worker, weights_key

BOX4 = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
TWO = gym.spaces.Discrete(2)


class Actor(torch.nn.Module):
    """A user's actor network: what a torch researcher would write."""

    def __init__(self, obs_dim: int, act_dim: int, width: int = 8):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Linear(obs_dim, width), torch.nn.Tanh(), torch.nn.Linear(width, act_dim)
        )

    def forward(self, obs):
        return self.body(obs)


class NormActor(torch.nn.Module):
    """A module outside the numpy programs (LayerNorm): the general vmap path runs it."""

    def __init__(self, obs_dim: int, act_dim: int, width: int = 8):
        super().__init__()
        self.inp, self.norm = torch.nn.Linear(obs_dim, width), torch.nn.LayerNorm(width)
        self.out = torch.nn.Linear(width, act_dim)

    def forward(self, obs):
        return self.out(torch.tanh(self.norm(self.inp(obs))))


class ResidualActor(torch.nn.Module):
    """A residual MLP written with functions and a sum: read by torch.fx into numpy."""

    def __init__(self, obs_dim: int, act_dim: int, width: int = 8):
        super().__init__()
        self.inp, self.mid = torch.nn.Linear(obs_dim, width), torch.nn.Linear(width, width)
        self.out = torch.nn.Linear(width, act_dim)

    def forward(self, obs):
        h = torch.tanh(self.inp(obs))
        h = h + torch.relu(self.mid(h))
        return self.out(h.tanh())


def test_torch_policy_computes_the_module_function(rng):
    mlp = MLPPolicy.for_spaces(BOX4, TWO, hidden=(16,))
    theta = mlp.init(rng)
    policy = torch_policy_for(mlp.to_torch(theta), BOX4, TWO)
    assert policy.num_params == mlp.num_params
    flat = policy.flatten()
    np.testing.assert_array_equal(flat, theta)  # same layout: weight then bias per layer
    obs = rng.standard_normal((7, 4)).astype(np.float32)
    params = np.stack([flat] * 7)
    out, _, _ = policy.network(params, obs, policy.initial_state(7))
    np.testing.assert_allclose(out, mlp.forward(params, obs), rtol=1e-5, atol=1e-6)


def test_flat_vector_round_trips_through_the_module(rng):
    policy = make_policy("lstm", BOX4, TWO, {"hidden": (8, 6)})
    theta = policy.init(rng)
    policy.load_into_module(theta)
    np.testing.assert_array_equal(policy.flatten(), theta)
    views = policy.unflatten(torch.from_numpy(np.stack([theta, theta])))
    assert views["x2h.weight"].shape == (2, 24, 8)
    assert policy.state_size == 12


@pytest.mark.parametrize(
    ("kind", "module"),
    [
        ("torch", "Actor"),
        ("torch", "ResidualActor"),
        ("torch", "NormActor"),
        ("gru", "Actor"),
        ("lstm", "Actor"),
    ],
)
def test_torch_rows_are_bit_identical_whatever_the_batch(kind, module, rng):
    options = {"module": f"{__name__}:{module}"} if kind == "torch" else {"hidden": (8,)}
    policy = make_policy(kind, BOX4, TWO, options)
    n = 150  # three blocks of 64, the last padded
    params = np.stack([policy.init(rng) for _ in range(n)])
    obs = rng.standard_normal((n, 4)).astype(np.float32)
    state = rng.standard_normal((n, policy.state_size)).astype(np.float32)
    out, next_state, _ = policy.network(params, obs, state)
    for rows in ([5], [0, 149, 70], list(range(140, 0, -3))):
        part, part_state, _ = policy.network(params[rows], obs[rows], state[rows])
        assert np.array_equal(part, out[rows]) and np.array_equal(part_state, next_state[rows])


def test_stochastic_heads_draw_from_the_given_noise(rng):
    policy = MLPPolicy.for_spaces(BOX4, TWO, action_mode="sample")
    theta = np.zeros(policy.num_params, np.float32)  # logits 0: p = 1/2 each
    obs = np.zeros((1000, 4), np.float32)
    noise = rng.uniform(size=(1000, 1))
    out = policy.step(np.stack([theta] * 1000), obs, None, noise, return_info=True)
    assert np.array_equal(out.actions, (noise[:, 0] > 0.5).astype(int))
    np.testing.assert_allclose(out.log_prob, np.log(0.5))
    box = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
    gaussian = MLPPolicy.for_spaces(BOX4, box, action_mode="gaussian", bounds="clip")
    theta = gaussian.init(rng)
    theta[:] = 0.0
    theta[-1] = np.log(0.5)  # log_std, after the network's parameters
    noise = rng.uniform(size=(20000, 2))
    out = gaussian.step(np.stack([theta] * 20000), np.zeros((20000, 4), np.float32), None, noise)
    assert out.actions.min() >= -2 and out.actions.max() <= 2
    assert abs(out.actions.std() - 0.5) < 0.02 and abs(out.actions.mean()) < 0.02
    with pytest.raises(ValueError, match="needs noise"):
        gaussian.step(theta[None], np.zeros((1, 4), np.float32))


def _jobs(space, thetas, seeds):
    tasks_by_seed = {s: space.mutate(space.initial_task(), np.random.default_rng(s)) for s in seeds}
    return [EpisodeJob(Stored(weights_key(t)), tasks_by_seed[s], s) for t in thetas for s in seeds]


def test_recurrent_stochastic_episodes_do_not_depend_on_slots(rng):
    space = tasks.get("cartpole")
    policy = make_policy("gru", BOX4, TWO, {"hidden": (8,), "action": "sample"})
    thetas = [policy.init(rng) for _ in range(3)]
    sources = {weights_key(t): t for t in thetas}
    jobs = _jobs(space, thetas, range(5))
    results = [Worker(space, policy, envs).run(jobs, sources) for envs in (1, 4, 16)]
    for other in results[1:]:
        np.testing.assert_array_equal(other.returns, results[0].returns)
    # Sampling differs from argmax: the noise reaches the actions.
    greedy = make_policy("gru", BOX4, TWO, {"hidden": (8,)})
    greedy_returns = Worker(space, greedy, 4).run(jobs, sources).returns
    assert not np.array_equal(greedy_returns, results[0].returns)


def test_torch_policy_is_deterministic_across_backends_and_workers(ray_session, rng):
    space = tasks.get("cartpole")
    policy = make_policy("gru", BOX4, TWO, {"hidden": (8,), "action": "sample"})
    pairs = [(policy.init(rng), space.mutate(space.initial_task(), rng)) for _ in range(6)]
    reference = None
    # Both backends, one worker and two, different slot counts: Ray with 2 workers covers
    # what Ray with 1 would (each worker plays its chunks as the local one does).
    for backend, workers, envs in [("local", 1, 8), ("local", 2, 3), ("ray", 2, 5)]:
        with EvaluationPool(space, policy, backend, workers, envs) as pool:
            got = pool.evaluate(pairs, 3, seed=11)
        if reference is None:
            reference = got
        np.testing.assert_array_equal(got, reference, err_msg=f"{backend} x{workers}")
    assert np.isfinite(reference).all()


def test_numpy_workers_never_import_torch():
    code = (
        "import sys, numpy as np\n"
        "from coevo import tasks\n"
        "from coevo.policies import make_policy\n"
        "from coevo.pool import EvaluationPool\n"
        "space = tasks.get('cartpole'); env = space.make_env()\n"
        "p = make_policy('mlp', env.observation_space, env.action_space, {})\n"
        "with EvaluationPool(space, p, 'local', 1, 4) as pool:\n"
        "    pool.evaluate([(p.init(np.random.default_rng(0)), space.initial_task())], 2)\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_bad_torch_policy_options_name_the_field(tmp_path):
    with pytest.raises(ConfigError, match="policy.module: cannot import module 'no_such_pkg.nets'"):
        make_policy("torch", BOX4, TWO, {"module": "no_such_pkg.nets:Actor"})
    with pytest.raises(ConfigError, match="policy.module: required"):
        make_policy("torch", BOX4, TWO, {})
    with pytest.raises(ConfigError, match=r"outputs shape \(3,\) per observation.*needs \(2,\)"):
        make_policy("torch", BOX4, TWO, {"module": f"{__name__}:Actor", "kwargs": {"act_dim": 3}})
    # Built for 3 observations, the env has 4: said in the module's terms, not numpy's.
    with pytest.raises(ConfigError) as refused:
        make_policy("torch", BOX4, TWO, {"module": f"{__name__}:Actor", "kwargs": {"obs_dim": 3}})
    assert str(refused.value).startswith(
        f"policy.module: {__name__}:Actor fails on an observation of shape (4,): ValueError("
    )
    assert_says(str(refused.value), "(body.0: 3 -> 8) takes 3 inputs", "have 4 values")
    file = tmp_path / "actor.pt"
    torch.save(Actor(4, 2, width=5).state_dict(), file)
    with pytest.raises(
        ConfigError,
        match=r"policy.file: .* key 'body.0.weight' has shape \(5, 4\) in the file, "
        r"\(8, 4\) in the module",
    ):
        make_policy("torch", BOX4, TWO, {"module": f"{__name__}:Actor", "file": str(file)})


def test_layer_settings_given_to_a_torch_module_are_warned_of(caplog):
    """policy=torch builds the user's module, so policy.hidden / activation do nothing:
    said at the start (a preset's mlp sizes are not an error), silent at the defaults."""
    module = {"module": f"{__name__}:Actor"}
    with caplog.at_level("WARNING", logger="coevo.policies"):
        make_policy("torch", BOX4, TWO, {**module, "hidden": (16,), "activation": "tanh"})
    assert caplog.text == ""
    with caplog.at_level("WARNING", logger="coevo.policies"):
        make_policy("torch", BOX4, TWO, {**module, "hidden": (32, 32), "activation": "relu"})
    assert_says(caplog.text, "policy.hidden=[32, 32] is ignored by policy=torch", "policy.kwargs")
    assert "policy.activation=relu is ignored by policy=torch" in caplog.text


class LSTMCellActor(torch.nn.Module):
    """A user's recurrent module on torch's own LSTMCell (vmap cannot batch it)."""

    state_size = 12

    def __init__(self, obs_dim: int, act_dim: int):
        super().__init__()
        self.cell = torch.nn.LSTMCell(obs_dim, 6)
        self.out = torch.nn.Linear(6, act_dim)

    def forward(self, obs, state):
        h, c = self.cell(obs, (state[..., :6], state[..., 6:]))
        return self.out(h), torch.cat([h, c], dim=-1)


def test_modules_vmap_cannot_batch_run_row_by_row(rng):
    policy = make_policy("torch", BOX4, TWO, {"module": f"{__name__}:LSTMCellActor"})
    assert policy.state_size == 12
    params = np.stack([policy.init(rng) for _ in range(5)])
    obs = rng.standard_normal((5, 4)).astype(np.float32)
    state = rng.standard_normal((5, 12)).astype(np.float32)
    out, next_state, _ = policy.network(params, obs, state)
    assert policy._vmappable is False  # fell back to one row at a time
    policy.load_into_module(params[3])
    h, c = policy.module.cell(
        torch.from_numpy(obs[3:4]),
        (torch.from_numpy(state[3:4, :6]), torch.from_numpy(state[3:4, 6:])),
    )
    np.testing.assert_allclose(out[3], policy.module.out(h)[0].detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(next_state[3, 6:], c[0].detach().numpy(), rtol=1e-5)
    alone, _, _ = policy.network(params[3:4], obs[3:4], state[3:4])
    assert np.array_equal(alone[0], out[3])


def test_layer_chains_run_as_numpy_matmuls_with_the_same_function(rng):
    mlp = MLPPolicy.for_spaces(BOX4, TWO, hidden=(16, 8), activation="relu")
    theta = mlp.init(rng)
    chain = torch_policy_for(mlp.to_torch(theta), BOX4, TWO)
    general = torch_policy_for(NormActor(4, 2), BOX4, TWO)  # LayerNorm: vmap
    assert chain._chain is not None and general._chain is None
    assert torch_policy_for(Actor(4, 2), BOX4, TWO)._chain is not None  # its own forward
    params = np.stack(
        [theta + rng.standard_normal(theta.size).astype(np.float32) for _ in range(9)]
    )
    obs = rng.standard_normal((9, 4)).astype(np.float32)
    out, _, _ = chain.network(params, obs, chain.initial_state(9))
    np.testing.assert_array_equal(out, mlp.forward(params, obs))  # the numpy MLP's arithmetic


def test_modules_read_by_fx_compute_what_vmap_computes(rng):
    policy = torch_policy_for(ResidualActor(4, 2), BOX4, TWO)
    assert [op for op, *_ in policy._chain] == [
        "linear",
        "tanh",
        "linear",
        "relu",
        "add",
        "tanh",
        "linear",
    ]
    general = torch_policy_for(ResidualActor(4, 2), BOX4, TWO)
    general._chain = None  # the same module through vmap
    params = np.stack([policy.init(rng) for _ in range(70)])
    obs = rng.standard_normal((70, 4)).astype(np.float32)
    out, _, _ = policy.network(params, obs, policy.initial_state(70))
    expected, _, _ = general.network(params, obs, general.initial_state(70))
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_a_torch_policy_loaded_from_a_file_starts_every_pair_from_its_weights(tmp_path, rng):
    """`policy.file` is where training starts (every new pair or policy), not random weights;
    later weights loaded into the module do not move that start."""
    trained = Actor(4, 2)
    with torch.no_grad():
        for parameter in trained.parameters():
            parameter.add_(1.5)
    file = tmp_path / "actor.pt"
    torch.save(trained.state_dict(), file)
    policy = make_policy("torch", BOX4, TWO, {"module": f"{__name__}:Actor", "file": str(file)})
    start = policy.init(rng)
    assert np.array_equal(start, policy.flatten(trained))
    assert np.array_equal(policy.init(np.random.default_rng(99)), start)  # any generator
    policy.load_into_module(np.zeros_like(start))
    assert np.array_equal(policy.init(rng), start)
    fresh = make_policy("torch", BOX4, TWO, {"module": f"{__name__}:Actor"})
    assert not np.array_equal(fresh.init(np.random.default_rng(0)), start)  # no file: random


def test_a_torch_module_without_parameters_is_refused_by_name():
    with pytest.raises(ConfigError, match=r"policy.module: torch.nn:Identity has no parameters"):
        make_policy("torch", BOX4, TWO, {"module": "torch.nn:Identity"})
