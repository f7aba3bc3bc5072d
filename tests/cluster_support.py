"""Real Ray clusters on this machine for tests, and a co-evolution driver to run on them.

`LocalCluster` starts one `ray start --block` process per node (so several raylets on one
machine), isolated from any other Ray instance here: its own RAY_TMPDIR (Ray writes the
"current cluster" address there, where no other `ray.init()` looks) and its own auth token.
`shutdown()` stops only the processes it started, by pid. A node runs what a pool needs:
no log monitor (it streams workers' prints to drivers) and no autoscaler monitor (`ray
status`), two Python processes fewer per node, about 2 CPU-s less per cluster start.

`python tests/cluster_support.py CONFIG_JSON RUN_DIR` is the driver: a co-evolution through
the public API (what `coevo-run` does, minus report and checkpoints), writing summary.csv and
eligibility.csv with the runner's recorder and pool.json with the pool's view of the nodes.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

RAY = str(Path(sys.executable).parent / "ray")
# GCS declares a node dead after ~2 s instead of Ray's default ~15-30 s: tests stay short.
_FAST_HEALTH_CHECKS = json.dumps(
    {
        "health_check_initial_delay_ms": 0,
        "health_check_period_ms": 500,
        "health_check_timeout_ms": 1000,
        "health_check_failure_threshold": 3,
    }
)
_STARTED = "Ray runtime started."


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def isolated_env(tmp_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a process that must not see any other Ray instance here."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(RAY_TMPDIR=str(tmp_dir), PYTHONUNBUFFERED="1", **extra)
    return env


@dataclass
class Node:
    process: subprocess.Popen
    log: Path
    id: str = ""  # the Ray node id, known once it started

    def raylet(self) -> psutil.Process:
        for child in psutil.Process(self.process.pid).children(recursive=True):
            if child.name() == "raylet":
                return child
        raise RuntimeError(f"no raylet under `ray start` pid {self.process.pid}")

    def _read_id(self) -> str:
        for arg in self.raylet().cmdline():
            if arg.startswith("--node_id="):
                return arg.split("=", 1)[1]
        raise RuntimeError("raylet without --node_id")


class LocalCluster:
    """A head node and worker nodes, each its own raylet, on 127.0.0.1."""

    def __init__(self) -> None:
        # Short: Ray's unix socket paths live under it.
        self.tmp = Path(tempfile.mkdtemp(prefix="cvc", dir="/tmp"))
        # Head, nodes and drivers alike need token mode and the same token (Ray 2.60 refuses
        # a node or driver otherwise with InvalidAuthToken); this token is ours alone.
        self.env = isolated_env(
            self.tmp, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32)
        )
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.nodes: list[Node] = []

    def _start(self, args: list[str], num_cpus: int) -> Node:
        log = self.tmp / f"node{len(self.nodes)}.log"
        with open(log, "w") as out:
            process = subprocess.Popen(
                [
                    RAY,
                    "start",
                    "--block",
                    f"--num-cpus={num_cpus}",
                    "--object-store-memory=100000000",
                    "--disable-usage-stats",
                    f"--dashboard-agent-listen-port={_free_port()}",
                    "--include-log-monitor=false",
                    *args,
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,  # a Ctrl-C of pytest reaches it only through us
            )
        node = Node(process, log)
        self.nodes.append(node)
        return node

    def _wait_started(self, node: Node, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while _STARTED not in node.log.read_text():
            if node.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ray start failed:\n{node.log.read_text()[-3000:]}")
            time.sleep(0.2)
        node.id = node._read_id()

    def start(
        self,
        head_cpus: int = 1,
        node_cpus: tuple[int, ...] = (1,),
        fast_health_checks: bool = True,
    ) -> LocalCluster:
        """Start the head, then the other nodes; `fast_health_checks=False` keeps Ray's
        defaults (a dead node is declared dead after tens of seconds)."""
        head = self._start(
            [
                "--head",
                f"--port={self.port}",
                f"--ray-client-server-port={_free_port()}",
                "--include-dashboard=false",
                "--no-monitor",
                *([f"--system-config={_FAST_HEALTH_CHECKS}"] if fast_health_checks else []),
            ],
            head_cpus,
        )
        self._wait_started(head, 120)
        added = [self._start([f"--address={self.address}"], cpus) for cpus in node_cpus]
        for node in added:
            self._wait_started(node, 120)
        return self

    def kill_raylet(self, node: Node) -> None:
        """SIGKILL a node's raylet, as when a machine dies; `ray start --block` then takes
        the node's other processes down with it."""
        node.raylet().kill()

    def shutdown(self) -> None:
        """Stop every process of every node (by pid) and remove the temp dir."""
        tree: list[psutil.Process] = []
        for node in reversed(self.nodes):  # worker nodes first, the head last
            try:
                tree += psutil.Process(node.process.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                pass
            if node.process.poll() is None:
                node.process.send_signal(signal.SIGTERM)
            try:
                node.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                node.process.kill()
                node.process.wait()
        for process in tree:  # whatever the graceful stop left behind
            try:
                process.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(tree, timeout=10)
        shutil.rmtree(self.tmp, ignore_errors=True)


def alive(processes: list[psutil.Process]) -> list[psutil.Process]:
    return [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def drive(raw_config: dict, run_dir: Path) -> None:
    """Run the co-evolution of `raw_config` and write its tables and pool.json."""
    import ray

    from coevo.config import parse_config
    from coevo.pool import EvaluationPool
    from coevo.report import RunRecorder
    from coevo.run_setup import build, prepare, run_test_set
    from coevo.tasks.test_sets import measure, no_test

    config = parse_config(raw_config)
    space, policy = prepare(config)
    run_dir.mkdir(parents=True, exist_ok=True)
    recorder = RunRecorder(run_dir)
    with EvaluationPool(
        space,
        policy,
        backend="ray",
        num_workers=config.pool.num_workers,
        envs_per_worker=config.pool.envs_per_worker,
        address=config.pool.address,
    ) as pool:
        pool.wait_ready()  # an embedded Ray starts in the background (coevo/pool/handover.py)
        nodes_at_start = sorted(n["NodeID"] for n in ray.nodes() if n["Alive"])
        print("pool ready", json.dumps(pool.worker_nodes()), flush=True)
        curriculum = build(config, space, pool)
        test_set = run_test_set(  # as a Run does
            config.test_set, config.curriculum.generations, space, lambda line: None
        )
        while curriculum.generation < config.curriculum.generations:
            result = curriculum.step()
            if test_set is not None:  # as runner.run: no test set, no test columns
                due = config.test_set.due(curriculum.generation)
                result.summary.update(
                    measure(curriculum, test_set, config.test_set) if due else no_test()
                )
            recorder.record(result, curriculum.population_frame())
            print(f"generation {result.generation} done", flush=True)
        report = {
            "cluster_nodes_at_start": nodes_at_start,
            "cluster_nodes_at_end": sorted(n["NodeID"] for n in ray.nodes() if n["Alive"]),
            "worker_nodes": pool.worker_nodes(),
            "node_stats": pool.node_stats(),
            "stats": pool.stats_snapshot(),
        }
    (run_dir / "pool.json").write_text(json.dumps(report))


if __name__ == "__main__":
    drive(json.loads(sys.argv[1]), Path(sys.argv[2]))
