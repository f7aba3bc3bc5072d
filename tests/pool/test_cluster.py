"""coevo on a real two-node Ray cluster on this machine: two raylets, started with `ray start`.

The pool spreads its workers over the nodes, both nodes do work, and the results equal those
of a one-node run; a node killed mid-run loses its worker, whose work the rest of the
cluster takes over, and the results still equal the one-node run.

The one-node run every cluster run is compared with is `coevo-run` without pool.address
beside the running cluster (RAY_ADDRESS set, as on a cluster's nodes): it must start a Ray
of its own, one node. One Ray start fewer than a separate reference run.

The last test's cluster (Ray's default health checks) starts in the background while the
one-node run runs: a cluster's start is mostly seconds of waiting on Ray's processes.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import psutil
import pytest
from cli_support import COEVO_RUN, ROOT, run_tables
from cluster_support import LocalCluster, alive

from coevo import hydra_configs

# One worker under xdist: the one-node run and the cluster made once for the module.
pytestmark = pytest.mark.xdist_group("test_cluster")
DRIVER = str(Path(__file__).resolve().parents[1] / "cluster_support.py")
GENERATIONS = 6
# Small and quick (CartPole's batched physics), with reproduction and transfers every
# generation, so every kind of pool call runs on the cluster.
OVERRIDES = [
    "seed=5",
    "pool.num_workers=2",
    "pool.envs_per_worker=8",
    "optimizer.population=8",
    f"curriculum.generations={GENERATIONS}",
    "curriculum.optimizer_steps=2",
    "curriculum.repro_threshold=100",
    "curriculum.reproduce_every=1",
    "curriculum.max_children=4",
    "curriculum.transfer_every=1",
    "test_set.every=0",  # the driver script records no held-out test columns
]

TABLES = ("summary.csv", "eligibility.csv")


@functools.cache
def _composed() -> dict:
    """The config coevo-run composes from these overrides, for the driver script."""
    return hydra_configs.compose(ROOT / "conf", OVERRIDES)


def _with_address(address: str | None) -> dict:
    config = _composed()
    return {**config, "pool": {**config["pool"], "address": address}}


def _driver(config: dict, run_dir: Path, env: dict[str, str]) -> subprocess.Popen:
    """The driver script in a subprocess; stderr (Ray's logs) to a file, never a full pipe."""
    run_dir.mkdir(parents=True, exist_ok=True)
    with open(run_dir / "stderr.txt", "w") as stderr:
        return subprocess.Popen(
            [sys.executable, DRIVER, json.dumps(config), str(run_dir)],
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )


def _finish(process: subprocess.Popen, run_dir: Path) -> str:
    """Wait for a driver; its stdout. Killed if the test gives up on it."""
    try:
        out, _ = process.communicate(timeout=300)
    finally:
        process.kill()
    assert process.returncode == 0, (run_dir / "stderr.txt").read_text()[-3000:]
    return out


def _coevo_run(
    extra: list[str], run_dir: Path, env: dict, tmp_path: Path
) -> tuple[subprocess.Popen, str]:
    """`coevo-run` with OVERRIDES and `extra` to its end (stderr in tmp_path/stderr.txt);
    the process and its stdout."""
    with open(tmp_path / "stderr.txt", "w") as stderr:
        process = subprocess.Popen(
            [COEVO_RUN, *OVERRIDES, *extra, f"hydra.run.dir={run_dir}"],
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    return process, _finish(process, tmp_path)


def _assert_same_tables(got: Path, expected: Path) -> None:
    want = run_tables(expected, TABLES)
    assert want["summary.csv"]["generation"].tolist() == list(range(1, GENERATIONS + 1))
    for name, table in run_tables(got, TABLES).items():
        pd.testing.assert_frame_equal(table, want[name], obj=name)


@pytest.fixture(scope="module")
def cluster():
    cluster = LocalCluster()
    processes: list[psutil.Process] = []
    try:
        processes = _started(cluster, head_cpus=1, node_cpus=(1,))
        yield cluster
    finally:
        cluster.shutdown()
    assert not alive(processes), "cluster processes left running"


def _started(cluster: LocalCluster, **settings) -> list[psutil.Process]:
    """Start `cluster`; the processes of its nodes."""
    cluster.start(**settings)
    return [
        p for n in cluster.nodes for p in psutil.Process(n.process.pid).children(recursive=True)
    ]


@pytest.fixture(scope="module")
def default_checks_cluster():
    """A second cluster, with Ray's default health checks (the last test's), starting in the
    background: a function that waits for it and returns it. Shut down, and its processes
    checked gone, at the module's end."""
    cluster = LocalCluster()
    with ThreadPoolExecutor(1) as starter:
        started = starter.submit(
            _started, cluster, head_cpus=1, node_cpus=(1,), fast_health_checks=False
        )
        try:
            yield lambda: (started.result(), cluster)[1]
        finally:
            try:
                processes = started.result()  # a start still going would leave some behind
            finally:
                cluster.shutdown()
    assert not alive(processes), "cluster processes left running"


@dataclass
class _EmbeddedRun:
    run_dir: Path
    out: str


@pytest.fixture(scope="module")
def one_node(cluster, default_checks_cluster, tmp_path_factory):
    """`coevo-run` without pool.address, RAY_ADDRESS naming the running cluster: the
    reference one-node run (its own embedded Ray, as the first test checks). The last
    test's cluster starts meanwhile."""
    tmp = tmp_path_factory.mktemp("one_node")
    run_dir = tmp / "run"
    env = {**cluster.env, "RAY_ADDRESS": cluster.address}
    _, out = _coevo_run([], run_dir, env, tmp)
    return _EmbeddedRun(run_dir, out)


def test_an_embedded_run_beside_a_running_cluster_starts_a_ray_of_its_own(one_node):
    # RAY_ADDRESS set (as on a cluster's nodes) and `ray start` running on this machine: a
    # run without pool.address still starts its own Ray (it used to join the cluster at the
    # handover, generations in, and die there: num_cpus is refused on an existing cluster).
    assert f"gen   {GENERATIONS}/{GENERATIONS}" in one_node.out
    assert "2 Ray worker(s) starting" in one_node.out  # its own, embedded
    summary = run_tables(one_node.run_dir, ("summary.csv",))["summary.csv"]
    assert summary["generation"].tolist() == list(range(1, GENERATIONS + 1))


def test_coevo_run_with_pool_address_spreads_its_workers_over_both_nodes_with_the_same_results(
    cluster, one_node, tmp_path
):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    process, out = _coevo_run([f"pool.address={cluster.address}"], run_dir, cluster.env, tmp_path)
    assert f"gen   {GENERATIONS}/{GENERATIONS}" in out
    # Its 2 workers on 2 distinct nodes: one per node, as the run says.
    assert "pool: 2 Ray worker(s) on 2 node(s)" in out
    # The cluster, not an embedded instance, served it: its logs hold this driver's log.
    logs = cluster.tmp / "ray" / "session_latest" / "logs"
    assert list(logs.glob(f"python-core-driver-*_{process.pid}.log")), sorted(logs.iterdir())
    # Both workers, so both nodes, worked; none was restarted.
    summary = pd.read_csv(run_dir / "summary.csv")
    busy = summary[["busy_s_worker_0", "busy_s_worker_1"]].to_numpy().sum(axis=0)
    assert (busy > 0).all(), busy
    assert summary["worker_restarts"].to_numpy().sum() == 0
    _assert_same_tables(run_dir, one_node.run_dir)


def _kill_the_second_node_mid_run(cluster: LocalCluster, run_dir: Path) -> tuple[dict, str]:
    """Run the driver, SIGKILL the second node's raylet after generation 2; the pool's view
    and the driver's stderr. The run must finish."""
    head, second = cluster.nodes
    driver = _driver(_with_address(cluster.address), run_dir, cluster.env)
    lines = []
    try:
        for line in driver.stdout:
            lines.append(line)
            if line.startswith("generation 2 done"):
                cluster.kill_raylet(second)  # the node dies with generations still to run
    finally:
        _finish(driver, run_dir)
    assert f"generation {GENERATIONS} done\n" in lines
    assert second.process.wait(timeout=30) is not None  # the node is gone for good
    pool = json.loads((run_dir / "pool.json").read_text())
    head_id, second_id = head.id, second.id
    assert pool["cluster_nodes_at_start"] == sorted([head_id, second_id])
    # The lost node worked before it died, the head did the rest.
    assert 0 < pool["node_stats"][second_id]["episodes"] < pool["stats"]["episodes"]
    assert pool["node_stats"][head_id]["episodes"] > 0
    assert pool["stats"]["worker_restarts"] >= 1
    lost = pool["worker_nodes"].index(second_id)  # its replacement found no room
    err = (run_dir / "stderr.txt").read_text()
    assert f"pool: worker {lost} replaced" in err, err[-3000:]  # the pool said what it did
    return pool, err


def test_a_node_killed_mid_run_leaves_the_run_to_the_rest_with_the_same_results(
    cluster, one_node, tmp_path
):
    # Last to use this module's cluster: it keeps only its head afterwards. Ray declares the
    # node dead within ~2 s here: the pool sees it among the dead nodes.
    pool, err = _kill_the_second_node_mid_run(cluster, tmp_path)
    assert pool["cluster_nodes_at_end"] == [cluster.nodes[0].id]
    assert "is gone" in err
    _assert_same_tables(tmp_path, one_node.run_dir)


def test_a_node_killed_with_rays_default_health_checks(
    one_node, default_checks_cluster: Callable[[], LocalCluster], tmp_path
):
    # Ray's defaults: the node is declared dead only after tens of seconds, but the dead
    # worker's chunks fail sooner (its address refuses connections); the pool replaces it then.
    pool, err = _kill_the_second_node_mid_run(default_checks_cluster(), tmp_path)
    _assert_same_tables(tmp_path, one_node.run_dir)
