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
