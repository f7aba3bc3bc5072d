"""Soak: a long co-evolution run, watching the memory of the driver and of each worker.

`coevo.runner.run` (what `coevo-run` does: ES, evaluation, reproduction, transfers,
checkpoints, report.html at most every 30 s and at the end) for 100 generations of a small
population on the ray backend with 2 workers. Memory is PSS
(`psutil.Process.memory_full_info().pss`: shared pages split between the processes sharing
them) of this process (the driver) and of each worker actor, sampled after generation 1
(start), after `--warmup` generations (imports done and the bounded caches filled: the
driver's weight store and the workers' weight blocks fill over the first ~50 generations at
this size), every `--every` generations, and after the last one (end). Drift =
(end - warm) / warm per process, shown from generation 1 too; the target is under 5%.

    .venv/bin/python benchmarks/soak.py                 # 100 generations, ~20 s here
    .venv/bin/python benchmarks/soak.py --generations 20 --json
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import psutil

from coevo import hydra_configs, runner
from coevo.config import parse_config

ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.05
_GENERATION = re.compile(r"^gen\s+(\d+)/(\d+)")


def workers() -> list[psutil.Process]:
    """The pool's worker actors: processes under this one titled ray::RayWorker."""
    found = []
    for process in psutil.Process().children(recursive=True):
        try:
            if process.cmdline()[:1] and process.cmdline()[0].startswith("ray::RayWorker"):
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return sorted(found, key=lambda p: p.pid)


def pss_mb(process: psutil.Process) -> float:
    return process.memory_full_info().pss / 2**20


def sample() -> dict[str, float]:
    """PSS in MB of the driver and each worker, keyed 'driver' and 'worker PID'."""
    gc.collect()  # what the driver still holds, not garbage awaiting a collection
    out = {"driver": pss_mb(psutil.Process())}
    for process in workers():
        try:
            out[f"worker {process.pid}"] = pss_mb(process)
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--generations", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--every", type=int, default=10, help="sample every N generations")
    parser.add_argument(
        "--warmup", type=int, default=50, help="the drift is measured from this generation"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--report-every-s",
        type=float,
        default=30.0,
        help="report_every_s of the run (0: rebuild report.html after every generation)",
    )
    parser.add_argument(
        "--policy", default="mlp", help="policy config (conf/policy): mlp, or gru/lstm (torch)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the run directory")
    parser.add_argument("--json", action="store_true", help="also print the samples as JSON")
    args = parser.parse_args()
    overrides = [
        f"policy={args.policy}",
        f"curriculum.generations={args.generations}",
        f"pool.num_workers={args.workers}",
        "optimizer.population=8",
        "curriculum.optimizer_steps=1",
        "curriculum.max_active=4",
        "curriculum.max_children=4",
        "curriculum.repro_threshold=100",
        "curriculum.reproduce_every=2",
        "curriculum.transfer_every=4",
        "task.max_episode_steps=200",
        f"report_every_s={args.report_every_s}",
        f"seed={args.seed}",
    ]
    raw = hydra_configs.compose(ROOT / "conf", overrides)
    config = parse_config(raw)
    run_dir = Path(tempfile.mkdtemp(prefix="coevo-soak-"))
    samples: dict[int, dict[str, float]] = {}
    started = time.perf_counter()
    checkpoints = {1, args.warmup, args.generations}

    def on_line(line: str) -> None:
        match = _GENERATION.match(line)
        if not match:
            return
        generation, total = int(match.group(1)), int(match.group(2))
        if generation in checkpoints or generation % args.every == 0:
            samples[generation] = sample()
            print(
                f"gen {generation:>4}/{total}  {time.perf_counter() - started:7.1f}s  "
                + "  ".join(f"{k} {v:6.1f} MB" for k, v in samples[generation].items()),
                flush=True,
            )

    print(
        f"soak: {args.generations} generations, {args.workers} Ray workers, "
        f"{os.cpu_count()} CPUs, policy {args.policy}, report.html every {args.report_every_s:g} s"
        f", run directory {run_dir}",
        flush=True,
    )
    try:
        runner.run(config, run_dir, echo=on_line)
    finally:
        if not args.keep:
            shutil.rmtree(run_dir, ignore_errors=True)
    elapsed = time.perf_counter() - started
    first, warm, last = 1, min(args.warmup, args.generations), args.generations
    print(f"\nPSS in MB after generations {first}, {warm} (warm) and {last} (end); {elapsed:.0f} s")
    widths = (14, 7, 7, 7, 9, 12)
    header = ("process", "gen 1", "warm", "end", "1 -> end", "warm -> end")
    print(
        " ".join(
            f"{h:<{w}}" if i == 0 else f"{h:>{w}}"
            for i, (h, w) in enumerate(zip(header, widths, strict=True))
        )
    )
    worst = 0.0
    # Workers may be missing at generation 1: a pool that starts Ray answers its first
    # calls in this process until Ray's workers are ready (coevo/pool/handover.py).
    for key in dict.fromkeys([*samples[first], *samples[warm]]):
        values = [samples[g].get(key) for g in (first, warm, last)]
        if None in values[1:]:
            print(f"{key:<14} (restarted: not in every sample)")
            continue
        drift = (values[2] - values[1]) / values[1]
        worst = max(worst, drift)
        if values[0] is None:
            start, from_start = f"{'-':>7}", f"{'-':>9}"
        else:
            start, from_start = f"{values[0]:7.1f}", f"{(values[2] - values[0]) / values[0]:+9.1%}"
        print(f"{key:<14} {start} {values[1]:7.1f} {values[2]:7.1f} {from_start} {drift:+12.1%}")
    verdict = "met" if worst < TARGET else "NOT met"
    print(f"largest drift after warm-up {worst:+.1%}; target under {TARGET:.0%}: {verdict}")
    if args.json:
        print(json.dumps({"samples": samples, "largest_drift": worst}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
