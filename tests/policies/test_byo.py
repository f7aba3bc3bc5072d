"""Bring your own policy and environment: torch state_dicts, TorchScript, SB3 zips, an
RLlib-style env whose task is an int level; from Python and through `coevo-run`."""

from __future__ import annotations

import os

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from cli_support import ROOT, cli, cli_in_process

from coevo import checkpoint, tasks
from coevo.eligible import GivenPair, judge_groups, load_pairs
from coevo.errors import ConfigError
from coevo.policies import make_policy
from coevo.policies.loaders import from_module, load_sb3_policy
from coevo.pool import EvaluationPool
from coevo.tasks.generic import class_task_space

sb3 = pytest.importorskip("stable_baselines3")
from stable_baselines3.common.evaluation import evaluate_policy  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize  # noqa: E402

# One worker under xdist: the trained models (`files`) made once for the module.
pytestmark = pytest.mark.xdist_group("test_byo")
# A user's modules on PYTHONPATH: tests/ (rllib_style_env) and this folder (test_byo:Actor).
USER_PATH = os.pathsep.join([str(ROOT / "tests"), os.path.dirname(os.path.abspath(__file__))])
CORRIDOR = "rllib_style_env:CorridorLevelsEnv"
LEVEL = {"level": {"low": 1, "high": 5, "init": 1, "step": 1, "type": "int"}}
SEEDS = range(4)


class Actor(torch.nn.Module):
    """A user's torch actor (imported by path from a pairs file: test_byo:Actor)."""

    def __init__(self, obs_dim: int = 4, act_dim: int = 2, width: int = 32):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(obs_dim, width), torch.nn.ReLU(), torch.nn.Linear(width, act_dim)
        )

    def forward(self, obs):
        return self.net(obs)


def _train(env_id: str, normalize: bool, path, algo: str = "PPO"):
    venv = DummyVecEnv([lambda: gym.make(env_id)])
    if normalize:
        venv = VecNormalize(venv, norm_reward=False)
    if algo == "PPO":
        model = sb3.PPO(
            "MlpPolicy", venv, n_steps=512, batch_size=64, n_epochs=2, seed=0, device="cpu"
        )
        model.learn(512)  # one rollout, one update: the point is score equality, not quality
    else:
        model = sb3.DQN("MlpPolicy", venv, learning_starts=200, seed=0, device="cpu")
        model.learn(500)  # 75 updates
    model.save(path / f"{algo}_{env_id}.zip")
    if normalize:
        venv.save(path / f"{env_id}_vecnormalize.pkl")
        venv.training = False
    return model, venv


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A saved torch actor (state_dict and TorchScript) and SB3 zips, as a user has them."""
    path = tmp_path_factory.mktemp("byo")
    torch.manual_seed(0)
    actor = Actor()
    torch.save(actor.state_dict(), path / "actor.pt")
    torch.jit.script(actor).save(str(path / "actor_scripted.pt"))
    cartpole = _train("CartPole-v1", False, path)
    pendulum = _train("Pendulum-v1", True, path)
    dqn = _train("CartPole-v1", False, path, "DQN")
    sac = sb3.SAC("MlpPolicy", "Pendulum-v1", use_sde=True, seed=0, device="cpu")
    sac.save(path / "sac_gsde.zip")  # gSDE: refused
    return {
        "path": path,
        "actor": actor,
        "PPO_CartPole-v1": cartpole,
        "PPO_Pendulum-v1": pendulum,
        "DQN_CartPole-v1": dqn,
    }


@pytest.mark.parametrize(
    "algo, env_id, space_name, normalize",
    [
        ("PPO", "CartPole-v1", "cartpole", False),
        ("PPO", "Pendulum-v1", "pendulum", True),
        ("DQN", "CartPole-v1", "cartpole", False),
    ],
)
def test_sb3_policy_scores_what_evaluate_policy_scores(files, algo, env_id, space_name, normalize):
    model, venv = files[f"{algo}_{env_id}"]
    expected = []
    for seed in SEEDS:  # one seeded episode per call: the same reset seeds coevo uses
        venv.seed(seed)
        episode, _ = evaluate_policy(model, venv, n_eval_episodes=1, return_episode_rewards=True)
        expected.append(episode[0])
    vecnormalize = files["path"] / f"{env_id}_vecnormalize.pkl" if normalize else None
    loaded = load_sb3_policy(files["path"] / f"{algo}_{env_id}.zip", "sb3", vecnormalize)
    assert (loaded.policy.obs_norm is not None) == normalize
    space = tasks.get(space_name)
    with EvaluationPool(space, loaded.policy, "local", 1, 8) as pool:
        got = pool.evaluate([(loaded.theta, space.initial_task())], len(SEEDS), seed=0)[0]
    np.testing.assert_allclose(got, expected, rtol=1e-4)
    assert len(set(np.round(expected, 3))) > 1  # distinct episodes, not one number repeated


def test_module_instance_from_the_python_api(files):
    space = tasks.get("cartpole")
    env = space.make_env()
    loaded = from_module(files["actor"], env.observation_space, env.action_space)
    obs = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    expected = files["actor"](torch.from_numpy(obs)).argmax(dim=1).numpy()
    assert np.array_equal(loaded.policy.act(np.stack([loaded.theta] * 5), obs), expected)
    mlp = make_policy("mlp", env.observation_space, env.action_space, {})
    pairs = [
        GivenPair("actor", space.initial_task(), loaded.theta, "module", loaded.policy),
        GivenPair("mlp", space.initial_task(), mlp.init(np.random.default_rng(0)), "init"),
    ]
    decisions, returns, stats = judge_groups(
        lambda policy: EvaluationPool(space, policy, "local", 1, 4), mlp, pairs, 3, 0.0
    )
    assert [d.pair_id for d in decisions] == [0, 1] and returns.shape == (2, 3)
    assert stats["episodes"] == 6 and np.isfinite(returns).all()


def test_int_task_env_runs_unchanged_from_python():
    space = class_task_space(
        "corridor",
        CORRIDOR,
        LEVEL,
        env_config={"start_level": 1},
        max_episode_steps=30,
        task_format="scalar",
    )
    task = space.task(level=3)
    assert task["level"] == 3 and isinstance(task["level"], int)
    assert task.to_json() == '{"params": {"level": 3}, "space": "corridor"}'
    rng = np.random.default_rng(0)
    mutated = [space.mutate(task, rng) for _ in range(20)]
    assert all(isinstance(t["level"], int) for t in mutated) and len(set(mutated)) > 1
    env = space.make_env()
    policy = make_policy("mlp", env.observation_space, env.action_space, {})
    right = np.zeros(policy.num_params, np.float32)
    right[-2] = 1.0  # output bias: always "right"; level 1 has no pit, levels above do
    with EvaluationPool(space, policy, "local", 1, 4) as pool:
        result = pool.evaluate_detailed([(right, space.task(level=1)), (right, task)], 1)
    returns, errors = result
    assert not errors
    # level 1: 4 steps then the goal; level 3: 4 steps then the first pit
    np.testing.assert_allclose(returns[:, 0], [1.0 - 0.04, -1.0 - 0.04])


def test_task_format_function_and_refused_forms():
    space = class_task_space(
        "corridor",
        CORRIDOR,
        LEVEL,
        env_config={},
        max_episode_steps=30,
        task_format="rllib_style_env:level_as_dict_value",
    )
    assert space.env_task(space.task(level=2)) == 2
    with pytest.raises(ConfigError) as info:  # the env gets a dict where it wants an int
        class_task_space("corridor", CORRIDOR, LEVEL, env_config={}, max_episode_steps=30)
    message = str(info.value)
    assert message.startswith("task.task_format: rllib_style_env:CorridorLevelsEnv does not")
    assert "set_task({'level': 1})" in message and "TypeError" in message
    assert "task_format: scalar" in message
    assert "type: int" not in message  # its level is declared int
    float_level = {"level": {k: v for k, v in LEVEL["level"].items() if k != "type"}}
    with pytest.raises(ConfigError) as info:  # set_task(1.0): range(1.0) raises
        class_task_space(
            "corridor",
            CORRIDOR,
            float_level,
            env_config={},
            max_episode_steps=30,
            task_format="scalar",
        )
    assert "set_task(1.0)" in str(info.value)
    assert str(info.value).endswith(
        "; level is a float here: declare type: int in task.params for int levels"
    )
    two = {**LEVEL, "other": {"low": 0, "high": 1, "init": 0, "step": 0}}
    with pytest.raises(ConfigError, match="task.task_format: scalar passes one parameter"):
        class_task_space(
            "c", CORRIDOR, two, env_config={}, max_episode_steps=30, task_format="scalar"
        )
    with pytest.raises(ConfigError, match="task.params.level.init: must be a whole number"):
        class_task_space(
            "c",
            CORRIDOR,
            {"level": {**LEVEL["level"], "init": 1.5}},
            env_config={},
            max_episode_steps=30,
            task_format="scalar",
        )


def _write_pairs(path, pairs) -> str:
    file = path / "pairs.yaml"
    file.write_text(yaml.safe_dump({"pairs": pairs}))
    return str(file)


def _run(*args, tmp_path, own_process=False):
    """`coevo-run mode=eligible_parents ARGS`, in this process (tests/ and this folder are on
    sys.path here, as USER_PATH puts them on a subprocess's PYTHONPATH) or, with
    `own_process`, as the console script in a process of its own."""
    flags = [a for a in args if str(a).startswith("--config-dir=")]  # before overrides
    command = [
        *flags,
        "mode=eligible_parents",
        "pool=local",
        "pool.num_workers=1",
        "eligible.episodes=3",
        f"hydra.run.dir={tmp_path / 'run'}",
        *(a for a in args if a not in flags),
    ]
    if not own_process:
        return cli_in_process("coevo-run", *command)
    return cli("coevo-run", *command, env=_USER_ENV)


# A subprocess finds the user's modules (test_byo:Actor, rllib_style_env) on PYTHONPATH.
_USER_ENV = {"PYTHONPATH": os.pathsep.join([USER_PATH, os.environ.get("PYTHONPATH", "")])}


def test_eligible_parents_on_a_file_naming_torch_torchscript_and_sb3(files, tmp_path):
    path = files["path"]
    mlp = np.random.default_rng(0).standard_normal(114).astype(np.float32)
    np.save(path / "mlp.npy", mlp)
    pairs_file = _write_pairs(
        path,
        [
            {
                "name": "state-dict",
                "task": {"gravity": 9.8},
                "policy": {
                    "torch": "actor.pt",
                    "module": "test_byo:Actor",
                    "kwargs": {"width": 32},
                },
            },
            {
                "name": "scripted",
                "task": {"gravity": 12.0},
                "policy": {"torchscript": "actor_scripted.pt"},
            },
            {"name": "sb3-ppo", "task": {"gravity": 9.8}, "policy": {"sb3": "PPO_CartPole-v1.zip"}},
            {"name": "numpy", "task": {"pole_length": 1.0}, "policy": "mlp.npy"},
        ],
    )
    done = _run(f"eligible.pairs_file={pairs_file}", "eligible.threshold=40", tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(tmp_path / "run" / "eligibility.csv")
    assert list(table["pair_id"]) == [0, 1, 2, 3]
    assert table["reason"].str.startswith(("state-dict:", "scripted:", "sb3-ppo:", "numpy:")).all()
    # The reason names the setting the threshold came from in this mode.
    assert table["reason"].str.contains(" eligible.threshold 40").all()
    assert not table["reason"].str.contains("repro_threshold").any()
    assert set(table["outcome"]) <= {"eligible", "ineligible"} and table["score"].notna().all()
    assert table["error"].isna().all()  # no evaluation failed
    # The state_dict and the TorchScript copy of one actor score alike on the same task.
    returns = pd.read_csv(tmp_path / "run" / "returns.csv")
    model, venv = files["PPO_CartPole-v1"]
    expected = []
    for seed in range(3):
        venv.seed(seed)
        expected.append(evaluate_policy(model, venv, 1, return_episode_rewards=True)[0][0])
    np.testing.assert_allclose(
        returns.loc[2, ["episode_0", "episode_1", "episode_2"]], expected, rtol=1e-4
    )
    for line in done.stdout.splitlines()[-6:-2]:
        assert "eligible" in line


def _corridor_config(tmp_path):
    """A --config-dir with task=corridor: the int-level env from a user's YAML."""
    config_dir = tmp_path / "conf"
    (config_dir / "task").mkdir(parents=True)
    (config_dir / "task" / "corridor.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "corridor",
                "entry_point": CORRIDOR,
                "env_config": {"start_level": 1},
                "task_format": "scalar",
                "params": LEVEL,
                "max_episode_steps": 30,
            }
        )
    )
    return config_dir


def test_eligible_parents_on_the_int_task_env_from_yaml(tmp_path):
    config_dir = _corridor_config(tmp_path)
    # obs one-hot of 14 cells (Discrete, flattened as SB3 does) -> 16 -> 3 actions: "right"
    right = np.zeros(14 * 16 + 16 + 16 * 3 + 3, np.float32)
    right[-2] = 1.0
    np.save(tmp_path / "right.npy", right)
    pairs_file = _write_pairs(
        tmp_path,
        [
            {"name": f"level-{level}", "task": {"level": level}, "policy": "right.npy"}
            for level in (1, 2)
        ],
    )
    done = _run(
        f"--config-dir={config_dir}",
        "task=corridor",
        f"eligible.pairs_file={pairs_file}",
        "eligible.threshold=0.5",
        tmp_path=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(tmp_path / "run" / "eligibility.csv")
    assert list(table["outcome"]) == ["eligible", "ineligible"]
    assert '"level": 2' in table.loc[1, "task"]  # an int in the tables


def test_sb3_and_torchscript_policies_on_discrete_observations(tmp_path):
    """The corridor's observation is a Discrete cell: SB3 one-hots it for its MlpPolicy, as
    coevo flattens it, so a zip trained there scores as `evaluate_policy` says, and a scripted
    module taking the one-hot fits the env."""
    from rllib_style_env import CorridorLevelsEnv

    venv = DummyVecEnv([lambda: CorridorLevelsEnv({"start_level": 2})])
    model = sb3.PPO("MlpPolicy", venv, n_steps=256, batch_size=64, n_epochs=2, seed=0)
    model.learn(512)
    model.save(tmp_path / "corridor_ppo.zip")
    loaded = load_sb3_policy(tmp_path / "corridor_ppo.zip", "sb3")
    cells = np.arange(14)
    one_hot = np.eye(14, dtype=np.float32)
    theta = np.stack([loaded.theta] * 14)
    sb3_actions = model.predict(cells, deterministic=True)[0]
    assert np.array_equal(loaded.policy.act(theta, one_hot), sb3_actions)
    assert len(set(sb3_actions)) > 1  # not one action everywhere
    torch.manual_seed(0)
    torch.jit.script(torch.nn.Linear(14, 3)).save(str(tmp_path / "linear.pt"))
    pairs_file = _write_pairs(
        tmp_path,
        [
            {"name": "sb3", "task": {"level": 2}, "policy": "corridor_ppo.zip"},
            {"name": "scripted", "task": {"level": 2}, "policy": {"torchscript": "linear.pt"}},
        ],
    )
    done = _run(
        f"--config-dir={_corridor_config(tmp_path)}",
        "task=corridor",
        f"eligible.pairs_file={pairs_file}",
        "eligible.threshold=0.5",
        tmp_path=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    returns = pd.read_csv(tmp_path / "run" / "returns.csv")
    venv.seed(0)
    expected, _ = evaluate_policy(model, venv, 3, return_episode_rewards=True)
    np.testing.assert_allclose(
        returns.loc[0, ["episode_0", "episode_1", "episode_2"]], expected, rtol=1e-5
    )
    assert returns.loc[1, ["episode_0", "episode_1", "episode_2"]].notna().all()


@pytest.mark.parametrize(
    "case",
    ["module", "state_dict", "sb3_class", "task_form", "pair_task_param", "pair_task_not_mapping"],
)
def test_bad_input_stops_with_the_field_and_exit_code_2(files, tmp_path, case):
    path = files["path"]
    if case == "module":
        args = ["mode=coevolve", "policy=torch", "policy.module=no_such_pkg.nets:Actor"]
        expected = "policy.module: cannot import module 'no_such_pkg.nets'"
    elif case == "state_dict":
        pairs = [
            {
                "policy": {
                    "torch": str(path / "actor.pt"),
                    "module": "test_byo:Actor",
                    "kwargs": {"width": 8},
                }
            }
        ]
        args = [f"eligible.pairs_file={_write_pairs(tmp_path, pairs)}"]
        expected = (
            "pairs[0].policy.torch: " + str(path / "actor.pt") + " does not fit Actor: key "
            "'net.0.weight' has shape (32, 4) in the file, (8, 4) in the module"
        )
    elif case == "sb3_class":
        pairs = [{"policy": {"sb3": str(path / "sac_gsde.zip")}}]
        args = ["task=pendulum", f"eligible.pairs_file={_write_pairs(tmp_path, pairs)}"]
        expected = "pairs[0].policy.sb3: " + str(path / "sac_gsde.zip") + ": SACPolicy with gSDE"
    elif case == "pair_task_param":
        np.save(tmp_path / "mlp.npy", np.zeros(114, dtype=np.float32))  # the default MLP's
        pairs = [{"policy": "mlp.npy"}, {"policy": "mlp.npy", "task": {"gravty": 9.8}}]
        args = [f"eligible.pairs_file={_write_pairs(tmp_path, pairs)}"]
        expected = (
            "coevo-run: error: pairs.yaml: pairs[1].task.gravty: unknown parameter of "
            "task space 'cartpole'"
        )
    elif case == "pair_task_not_mapping":
        np.save(tmp_path / "mlp.npy", np.zeros(114, dtype=np.float32))
        pairs = [{"policy": "mlp.npy", "task": "cartpole"}]
        args = [f"eligible.pairs_file={_write_pairs(tmp_path, pairs)}"]
        expected = (
            "coevo-run: error: pairs.yaml: pairs[0].task: expected a mapping of parameter values "
            "(parameters of task space 'cartpole': "
        )
    else:
        config_dir = tmp_path / "conf"
        (config_dir / "task").mkdir(parents=True)
        (config_dir / "task" / "corridor.yaml").write_text(
            yaml.safe_dump(
                {
                    "name": "corridor",
                    "entry_point": CORRIDOR,
                    "env_config": {},
                    "params": LEVEL,
                    "max_episode_steps": 30,
                }
            )
        )
        args = [f"--config-dir={config_dir}", "task=corridor", "mode=coevolve"]
        expected = "task.task_format: rllib_style_env:CorridorLevelsEnv does not take its task"
    # The console script's own exit code once (a user module that is not there), the
    # entry function's in this process for the other cases: the same code answers.
    done = _run(*args, tmp_path=tmp_path, own_process=case == "module")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert expected in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_pairs_file_policy_that_does_not_fit_the_env(files, tmp_path):
    space = tasks.get("pendulum")
    pairs = tmp_path / "pairs.yaml"
    pairs.write_text(
        yaml.safe_dump({"pairs": [{"policy": {"sb3": str(files["path"] / "PPO_CartPole-v1.zip")}}]})
    )
    env = space.make_env()
    default = make_policy("mlp", env.observation_space, env.action_space, {})
    with pytest.raises(
        ConfigError,
        match=r"pairs\[0\].policy.sb3: the policy takes observations of size 4; the task "
        r"space's env gives 3",
    ):
        load_pairs(pairs, space, default)


def test_a_pairs_file_gives_a_one_parameter_task_as_its_value_and_errors_name_its_places(
    tmp_path,
):
    import dataclasses

    cartpole = tasks.get("cartpole")
    space = dataclasses.replace(cartpole, params=(cartpole.param("gravity"),))
    np.save(tmp_path / "mlp.npy", np.zeros(114, dtype=np.float32))
    pairs = tmp_path / "pairs.yaml"
    pairs.write_text(yaml.safe_dump({"pairs": [{"policy": "mlp.npy", "task": 12.5}]}))
    env = space.make_env()
    default = make_policy("mlp", env.observation_space, env.action_space, {})
    (pair,) = load_pairs(pairs, space, default)
    assert pair.task.as_dict() == {"gravity": 12.5}
    # 0 is a value like any other (not "no task given"); the bounds say it is out
    pairs.write_text(yaml.safe_dump({"pairs": [{"policy": "mlp.npy", "task": 0}]}))
    with pytest.raises(ConfigError, match=r"pairs.yaml: pairs\[0\].task.gravity: "):
        load_pairs(pairs, space, default)
    # A CSV's errors name its line and column.
    table = tmp_path / "pairs.csv"
    table.write_text("policy,gravity\nmlp.npy,9.8\n\nmlp.npy,0\n")  # a blank line counts
    with pytest.raises(ConfigError, match=r"pairs.csv: line 4, column gravity: "):
        load_pairs(table, space, default)
    table.write_text("policy,gravity\nmlp.npy,9.8\n")  # no name column: named by position
    assert [p.name for p in load_pairs(table, space, default)] == ["pair0"]
    table.write_text("policy,pair\nrun/checkpoints/gen_000001.pkl,abc\n")
    with pytest.raises(ConfigError, match=r"line 2, column policy.pair: must be a whole number"):
        load_pairs(table, space, default)


def test_policy_kwargs_as_the_readme_writes_them_reach_the_users_module(tmp_path):
    """`policy.kwargs={width: 8}` (an empty mapping in the preset) is taken as written, not
    refused by Hydra's struct mode: the run's policy is the module built with width 8."""
    run = tmp_path / "run"
    done = cli_in_process(
        "coevo-run",
        "pool=local",
        "policy=torch",
        "policy.module=test_byo:Actor",
        "policy.kwargs={width: 8}",
        "curriculum.generations=1",
        "optimizer.population=4",
        f"hydra.run.dir={run}",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    config = yaml.safe_load((run / "config.yaml").read_text())
    assert config["policy"]["kwargs"] == {"width": 8}
    # Actor(4, 2, width=8): 4*8 + 8 + 8*2 + 2 = 58 parameters in the saved policies.
    _, state = checkpoint.load_latest(run / "checkpoints")
    assert {len(theta) for theta in state["policies"].values()} == {58}


def test_coevo_eval_on_an_int_task_env_takes_the_level_alone_and_refuses_video(tmp_path):
    """A one-parameter space's task is given as its value (`task=3`); an env without
    `render` is refused by name for `video=` (before any episode runs), not a traceback."""
    config_dir = tmp_path / "conf"
    (config_dir / "task").mkdir(parents=True)
    corridor = {
        "name": "corridor",
        "entry_point": CORRIDOR,
        "env_config": {},
        "params": LEVEL,
        "max_episode_steps": 30,
        "task_format": "scalar",
    }
    (config_dir / "task" / "corridor.yaml").write_text(yaml.safe_dump(corridor))
    run = tmp_path / "run"
    done = cli_in_process(
        "coevo-run",
        f"--config-dir={config_dir}",
        "task=corridor",
        "pool=local",
        "curriculum=dr",
        "curriculum.generations=1",
        "optimizer.population=4",
        "test_set.every=0",
        f"hydra.run.dir={run}",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # A space of the user's own declares what counts as solved: the test set's threshold.
    from coevo.config import parse_config
    from coevo.tasks.generic import space_from_config

    config = parse_config({"task": {**corridor, "solved_score": 0.9}})
    assert space_from_config(config.task).solved_score == 0.9
    assert space_from_config(parse_config({"task": corridor}).task).solved_score is None
    shown = cli_in_process("coevo-eval", run, "task=3", "episodes=2")
    assert shown.returncode == 0, shown.stderr
    header = shown.stdout.splitlines()[0]
    assert " on Task(corridor: level=3) (checkpoint of generation " in header  # a value, no pair
    video = tmp_path / "ep.gif"
    refused = cli_in_process("coevo-eval", run, "task=3", f"video={video}")
    assert refused.returncode == 2
    assert refused.stderr.startswith(
        "coevo-eval: error: video: the env of task space 'corridor' cannot render a frame"
    )
    assert "Traceback" not in refused.stderr and not video.exists()


def test_a_module_that_ends_in_tanh_is_warned_of_a_second_squash(caplog):
    # A deterministic actor that already returns actions: tanh bounds squash it again, so
    # its largest action is tanh(1) = 0.76 of the range; clip bounds pass it through.
    observation = gym.spaces.Box(-5, 5, (2,), np.float32)
    action = gym.spaces.Box(-1, 1, (1,), np.float32)
    actor = torch.nn.Sequential(torch.nn.Linear(2, 1), torch.nn.Tanh())
    with torch.no_grad():
        actor[0].weight.fill_(0.0)
        actor[0].bias.fill_(10.0)  # the module's own output: 1.0
    obs = np.zeros((1, 2), np.float32)
    with caplog.at_level("WARNING", logger="coevo.policies"):
        squashed = from_module(actor, observation, action)
    assert "ends in Tanh and policy.bounds=tanh squashes its output again" in caplog.text
    assert squashed.policy.act(squashed.theta[None], obs)[0, 0] == pytest.approx(np.tanh(1.0))
    caplog.clear()
    with caplog.at_level("WARNING", logger="coevo.policies"):
        clipped = from_module(actor, observation, action, {"bounds": "clip"})
    assert caplog.text == ""
    assert clipped.policy.act(clipped.theta[None], obs)[0, 0] == pytest.approx(1.0)
