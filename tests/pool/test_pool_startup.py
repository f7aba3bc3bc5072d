"""What a pool's start costs: worker processes import little and run one BLAS thread."""

from __future__ import annotations

import os
import subprocess
import sys

from coevo.pool import EvaluationPool


def test_worker_side_imports_leave_out_curricula_pandas_and_torch():
    # What a Ray worker imports to unpickle its space and policy and run Worker.run.
    code = (
        "import sys, coevo.pool.worker, coevo.pool.pool, coevo.tasks.pendulum, coevo.policies\n"
        "print(sorted(m for m in ('pandas', 'torch', 'coevo.curricula', 'coevo.optimizers')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_public_names_still_import_from_the_package():
    import coevo

    assert coevo.EvaluationPool is EvaluationPool
    assert set(coevo.__all__) <= set(dir(coevo))
    for name in coevo.__all__:
        assert getattr(coevo, name) is not None


def test_ray_workers_run_one_blas_thread(ray_session, cartpole, cartpole_policy):
    with EvaluationPool(cartpole, cartpole_policy, "ray", 2, envs_per_worker=2) as pool:
        info = pool.worker_info()
    # Ray's own default for an actor of at most one CPU, unless the user set it.
    expected = os.environ.get("OMP_NUM_THREADS", "1")
    assert [i["omp_num_threads"] for i in info] == [expected, expected]


HANDOVER = """
import numpy as np
import torch
from coevo import tasks
from coevo.policies import make_policy
from coevo.pool import EvaluationPool

space = tasks.get("cartpole")
env = space.make_env()
# A torch module on vmap, which swaps the module's parameters while it runs here: Ray's
# start must pickle a copy of its own.
policy = make_policy("gru", env.observation_space, env.action_space, {"hidden": (8,)})
rng = np.random.default_rng(3)
pairs = [(policy.init(rng), space.mutate(space.initial_task(), rng)) for _ in range(5)]
served, returns = [], []
torch.set_num_threads(2)
with EvaluationPool(space, policy, "ray", 2, envs_per_worker=3) as pool:
    # The first call runs here (Ray takes seconds to start): its first episodes while Ray's
    # start pickles the policy, the others once Ray got ready, so the call ends after the
    # handover. Its answers carry this process's pid: once counted as a restart of every
    # worker.
    local = pool._backend.local.workers[0]
    reset_slot = local.slots.reset_slot
    resets = []

    def reset_when_ray_is_ready(*args):
        resets.append(args)
        if len(resets) > 3:  # one episode per slot first, then Ray becomes ready
            pool._backend.wait_ready()
        return reset_slot(*args)

    local.slots.reset_slot = reset_when_ray_is_ready
    served.append(pool.serving)
    returns.append(pool.evaluate(pairs, 3, seed=7))
    local.slots.reset_slot = reset_slot
    assert len(resets) > 3  # the call went on after Ray got ready
    assert torch.get_num_threads() == 2  # the local worker's one thread is not the driver's
    assert pool.wait_ready()
    served.append(pool.serving)
    returns.append(pool.evaluate(pairs, 3, seed=7))  # on Ray's workers
    restarts = pool.stats_snapshot()["worker_restarts"]
    nodes = pool.worker_nodes()
    assert pool._backend.ray.policy is not policy
with EvaluationPool(space, policy, "local", 1, envs_per_worker=4) as pool:
    returns.append(pool.evaluate(pairs, 3, seed=7))
print(served, len(set(nodes)), [np.array_equal(r, returns[-1]) for r in returns[:2]], restarts)
"""


def test_a_pool_answers_while_ray_starts_and_a_call_across_the_handover_is_no_restart():
    # A fresh process: Ray not running, so the pool starts it (in the background). Its
    # first call starts here and ends after Ray got ready: that is no worker restart.
    out = subprocess.run(
        [sys.executable, "-c", HANDOVER], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    last = out.stdout.strip().splitlines()[-1]
    assert last == "['local (ray starting)', 'ray'] 1 [True, True] 0"
    assert "SIGTERM handler" not in out.stderr


def test_wait_for_workers_runs_even_a_short_run_on_rays_workers(tmp_path):
    """A one-generation run ends before Ray's workers answer, in this process (same results);
    pool.wait_for_workers=true starts it on them: both workers busy, the pool line says so."""
    import pandas as pd
    from cli_support import cli

    done = cli(
        "coevo-run",
        "pool=ray",
        "pool.wait_for_workers=true",
        "curriculum.generations=1",
        "test_set.every=0",
        f"hydra.run.dir={tmp_path}",
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "pool: 2 Ray worker(s) on 1 node(s), 64 envs each" in done.stdout
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert (summary["busy_s_worker_0"] > 0).all() and (summary["busy_s_worker_1"] > 0).all()


def test_wait_for_workers_is_refused_where_there_is_no_ray():
    import pytest

    from coevo.config import parse_config
    from coevo.errors import ConfigError

    with pytest.raises(ConfigError, match="pool.wait_for_workers: only for backend=ray"):
        parse_config({"pool": {"backend": "local", "wait_for_workers": True}})
