"""What a pool's start costs: worker processes import little and run one BLAS thread."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import ROOT

from coevo.pool import EvaluationPool

# One worker under xdist: the fresh process (`fresh_process`) runs once for the module.
pytestmark = pytest.mark.xdist_group("test_pool_startup")


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
    # Every registered curriculum's class is importable by name from coevo.curricula.
    import coevo.curricula as curricula

    exported = {getattr(curricula, name) for name in curricula.__all__}
    assert {curricula.get(name) for name in curricula.names()} <= exported


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
print("handover:", served, len(set(nodes)), [np.array_equal(r, returns[-1]) for r in returns[:2]],
      restarts)
"""

# Then, in the same process, `coevo-run` (its entry function, as a user's console script
# calls it) with pool.wait_for_workers=true: the handover's pool closed, and with it the Ray
# it started, so Ray is not running and this run's pool starts one of its own as well.
WAIT_FOR_WORKERS = """
import contextlib, io, json, sys
from coevo import cli
sys.argv = ["coevo-run", "pool=ray", "pool.wait_for_workers=true", "curriculum.generations=1",
            "test_set.every=0", "hydra.run.dir=" + sys.argv[1]]
out, err, code = io.StringIO(), io.StringIO(), 0
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    try:
        cli.run_main()
    except SystemExit as exit:
        code = exit.code
print("wait_for_workers:", json.dumps([code, out.getvalue(), err.getvalue()]))
"""


@pytest.fixture(scope="module")
def fresh_process(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    """One new Python process, Ray not running in it: the handover script, then the
    wait_for_workers run (two Ray starts, one interpreter's start and imports); the process
    and the run's directory."""
    run_dir = tmp_path_factory.mktemp("wait_for_workers")
    done = subprocess.run(
        [sys.executable, "-c", HANDOVER + WAIT_FOR_WORKERS, str(run_dir)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    return done, run_dir


def _line(done: subprocess.CompletedProcess, prefix: str) -> str:
    """The process's stdout line that starts with `prefix`, without it."""
    assert done.returncode == 0, done.stderr[-3000:]
    (line,) = [line for line in done.stdout.splitlines() if line.startswith(prefix)]
    return line.removeprefix(prefix)


def test_a_pool_answers_while_ray_starts_and_a_call_across_the_handover_is_no_restart(
    fresh_process,
):
    # A fresh process: Ray not running, so the pool starts it (in the background). Its
    # first call starts here and ends after Ray got ready: that is no worker restart.
    done, _ = fresh_process
    assert _line(done, "handover: ") == "['local (ray starting)', 'ray'] 1 [True, True] 0"
    assert "SIGTERM handler" not in done.stderr


def test_wait_for_workers_runs_even_a_short_run_on_rays_workers(fresh_process):
    """A one-generation run ends before Ray's workers answer, in this process (same results);
    pool.wait_for_workers=true starts it on them: both workers busy, the pool line says so."""
    import pandas as pd

    done, run_dir = fresh_process
    code, out, err = json.loads(_line(done, "wait_for_workers: "))
    assert code in (0, None), err[-3000:]
    assert "pool: 2 Ray worker(s) on 1 node(s), 64 envs each" in out
    summary = pd.read_csv(run_dir / "summary.csv")
    assert (summary["busy_s_worker_0"] > 0).all() and (summary["busy_s_worker_1"] > 0).all()


def test_wait_for_workers_is_refused_where_there_is_no_ray():
    import pytest

    from coevo.config import parse_config
    from coevo.errors import ConfigError

    with pytest.raises(ConfigError, match="pool.wait_for_workers: only for backend=ray"):
        parse_config({"pool": {"backend": "local", "wait_for_workers": True}})
