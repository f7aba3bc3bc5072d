"""Throughput of the evaluation pool, next to the reference figures of the same run.

For each job it prints, measured in this run:
  coevo        env steps/s of `EvaluationPool` (whatever slots the task space provides)
  coevo gym    the same with one gymnasium env per slot (`GymSlots`), when the space has
               batched physics: the like-for-like comparison with the raw reference
  raw x W      gymnasium's single env stepped with a fixed action in this process, x workers
               (built by `space.make_env()`, exactly what GymSlots builds for each slot)
  raw par      the same env stepped in W processes at once (what W cores give right now;
               lower than raw x W when other processes compete for the cores); its per
               CPU second figure (mean of the W processes) is the raw reference under the
               pool's own conditions: W busy processes sharing the caches and memory
  baseline     one plain Ray task per episode that builds the env and the policy (a torch
               module, batch-1 inference): what users hand-roll

  replay       per CPU second: the same episodes as the pool's (task, seed and the actions
               the policy took, recorded on a local worker for the first `--replay-episodes`)
               stepped in a plain loop in this process: the like-for-like reference where an
               env's step costs depend on the actions (LunarLander's engines, the walker's
               falls); `per CPU s / replay` is what the rollout loop and the policy cost

Jobs: pendulum_16x4, pendulum_256x5 (pairs x episodes, task = gravity), pendulum_es (one
ES step of 256 mirrored pairs, 512 episodes) and cartpole_256x5 by default; also
lunar_lander_64x2 and bipedal_terrain_16x2 (tasks spread over roughness). Each job is
repeated (`--repeats`) with fresh policies; every figure is the best of its repeats and the
raw reference is re-measured before each repeat. The policy is an MLP (`--hidden`, numpy)
or the same layers as a torch module with a forward of its own (`--policy torch`: read by
torch.fx into numpy; `--policy torch_norm`: with a LayerNorm, run by vmap; see policy_for).

    .venv/bin/python benchmarks/pool_throughput.py [--json] [--workers 2] [--repeats 2]
        [--hidden 64 64] [--policy mlp|torch] [--jobs cartpole_256x5 lunar_lander_64x2]

Your own env: a job names its task space as `task.name` does, by import path of a function
returning the TaskSpace (its module on PYTHONPATH, for Ray's workers too), e.g.
`PYTHONPATH=. .venv/bin/python benchmarks/pool_throughput.py --jobs mypkg.spaces:mine_64x5`
(`rollout_overheads.py --task mypkg.spaces:mine` splits one worker's time the same way).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from typing import Any

import numpy as np
import ray
import torch

from coevo import tasks
from coevo.errors import ConfigError
from coevo.optimizers.es import ESConfig, EvolutionStrategy
from coevo.policies import MLPPolicy, Policy, torch_policy_for
from coevo.pool import EvaluationPool, perturbation_noise
from coevo.pool.jobs import EpisodeJob, Stored
from coevo.pool.worker import Worker
from coevo.tasks.task import Task, TaskSpace

HIDDEN = (64, 64)  # the target policy; the figures before 2026-11-22 used (16,)
JOBS = ("pendulum_16x4", "pendulum_256x5", "pendulum_es", "cartpole_256x5")
MORE_JOBS = ("lunar_lander_64x2", "bipedal_terrain_16x2")
ES_PAIRS = 256
ES_SIGMA = 0.1


@dataclasses.dataclass(frozen=True)
class Job:
    name: str
    space: str
    pairs: int
    episodes: int
    es: bool = False

    @property
    def num_episodes(self) -> int:
        return 2 * self.pairs if self.es else self.pairs * self.episodes


def job_of(name: str) -> Job:
    space, kind = name.rsplit("_", 1)
    if kind == "es":
        return Job(name, space, ES_PAIRS, 1, es=True)
    pairs, episodes = kind.split("x")
    return Job(name, space, int(pairs), int(episodes))


def job_name(name: str) -> str:
    """A --jobs entry checked: a task space (registered, or `package.module:function` of
    your own, as `task.name` takes it), then `<pairs>x<episodes>` or `es`."""
    space, _, kind = name.rpartition("_")
    if space not in tasks.names() and ":" not in space:
        raise argparse.ArgumentTypeError(
            f"'{name}': unknown task '{space}'; registered: {', '.join(tasks.names())}, or "
            "package.module:function returning a TaskSpace"
        )
    if ":" in space:  # a user's space: found here, before Ray starts
        try:
            tasks.get(space)
        except ConfigError as error:
            raise argparse.ArgumentTypeError(f"'{name}': {error}") from None
    pairs, _, episodes = kind.partition("x")
    if kind != "es" and not (pairs.isdigit() and episodes.isdigit() and int(pairs) > 0):
        raise argparse.ArgumentTypeError(f"'{name}': want <task>_<pairs>x<episodes> or <task>_es")
    return name


def policy_for(space: TaskSpace, kind: str, hidden: tuple[int, ...]) -> Policy:
    """The MLP of `hidden` layers: in numpy (`mlp`), or as a torch module of the user's own
    (`torch`: `UserActor`, a forward of its own that TorchPolicy reads with torch.fx into
    numpy; `torch_norm`: the same with a LayerNorm after the first layer, which only the
    general vmap path runs)."""
    env = space.make_env()
    mlp = MLPPolicy.for_spaces(env.observation_space, env.action_space, hidden=hidden)
    if kind == "mlp":
        return mlp
    module = UserActor(mlp.layer_sizes, norm=kind == "torch_norm")
    return torch_policy_for(module, env.observation_space, env.action_space)


class UserActor(torch.nn.Module):
    """What a torch user writes: Linear layers and tanh in a forward of its own."""

    def __init__(self, sizes: tuple[int, ...], norm: bool = False):
        super().__init__()
        self.layers = torch.nn.ModuleList(
            torch.nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:], strict=True)
        )
        self.norm = torch.nn.LayerNorm(sizes[1]) if norm else None

    def forward(self, obs):
        h = self.layers[0](obs)
        if self.norm is not None:
            h = self.norm(h)
        for layer in self.layers[1:]:
            h = layer(torch.tanh(h))
        return h


def spread_param(space: TaskSpace) -> str:
    names = [p.name for p in space.params]
    return "gravity" if "gravity" in names else names[0]


def gravity_tasks(space: TaskSpace, count: int) -> list[Task]:
    """Tasks that differ in gravity only (else the first parameter), spread over its bounds."""
    p = space.param(spread_param(space))
    return [space.task(**{p.name: p.clip(g)}) for g in np.linspace(p.low, p.high, count)]


def fixed_action(space: TaskSpace) -> Any:
    """A constant action of the env's own type: a numpy integer for a discrete space (what
    `action_space.sample()` and gymnasium's vector envs pass, and what the pool passes; a
    Python int costs CartPole's action check ~0.5 us more), else a zero vector."""
    env = space.make_env()
    if hasattr(env.action_space, "n"):
        return env.action_space.dtype.type(0)
    return np.zeros(env.action_space.shape, dtype=env.action_space.dtype)


def raw_rates(space_name: str, seconds: float) -> tuple[float, float]:
    """gymnasium's env alone, one process, a fixed action; reset when an episode ends.

    Returns steps per wall second and per CPU second of this process.
    """
    space = tasks.get(space_name)
    env = space.make_env()
    env.set_task(space.initial_task().as_dict())
    action = fixed_action(space)
    limit = space.max_episode_steps
    env.reset(seed=0)
    steps, episode_steps = 0, 0
    started, cpu_started = time.perf_counter(), time.process_time()
    deadline = started + seconds
    while True:
        for _ in range(200):
            _, _, terminated, truncated, _ = env.step(action)
            steps += 1
            episode_steps += 1
            if terminated or truncated or episode_steps >= limit:
                env.reset()
                episode_steps = 0
        if time.perf_counter() >= deadline:
            cpu = time.process_time() - cpu_started
            return steps / (time.perf_counter() - started), steps / cpu


@ray.remote(num_cpus=0)
def _raw_remote(space_name: str, seconds: float) -> tuple[float, float]:
    return raw_rates(space_name, seconds)


def raw_parallel_rates(space_name: str, workers: int, seconds: float) -> tuple[float, float]:
    """The raw loop in `workers` processes at once: (steps per wall second summed, steps
    per CPU second averaged over the processes)."""
    # num_cpus=0: runs beside the pool's idle actors, which hold the CPU resources.
    rates = ray.get([_raw_remote.remote(space_name, seconds) for _ in range(workers)])
    return float(sum(r[0] for r in rates)), float(np.mean([r[1] for r in rates]))


class _RecordingEnv:
    """Passes calls to an env and records each episode's task, reset seed and actions."""

    def __init__(self, env: Any, log: list):
        self.env, self.log = env, log
        self.observation_space, self.action_space = env.observation_space, env.action_space

    def set_task(self, task: dict) -> None:
        self.task = dict(task)
        self.env.set_task(task)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self.actions: list = []
        self.log.append((self.task, seed, self.actions))
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any):
        self.actions.append(np.array(action, copy=True) if hasattr(action, "shape") else action)
        return self.env.step(action)


def replay_steps_per_cpu_s(
    space: TaskSpace, policy: Policy, pairs: list[tuple[np.ndarray, Task]], seeds: list[int]
) -> float:
    """The pool's episodes (first pairs x seeds given) replayed in a plain loop, per CPU s.

    A local worker with one env per slot runs them once while recording each episode's task,
    seed and actions; a fresh env then replays the recordings, timed: the env's own work for
    exactly those episodes, without the policy or the rollout loop.
    """
    log: list = []
    recording = dataclasses.replace(
        space, make_slots=None, make_env=lambda: _RecordingEnv(space.make_env(), log)
    )
    worker = Worker(recording, policy, 16)
    sources = {f"p{i}": theta for i, (theta, _) in enumerate(pairs)}
    jobs = [
        EpisodeJob(Stored(f"p{i}"), task, seed)
        for i, (_, task) in enumerate(pairs)
        for seed in seeds
    ]
    worker.run(jobs, sources)
    env = space.make_env()
    steps = 0
    started = time.process_time()
    for task, seed, actions in log:
        env.set_task(task)
        env.reset(seed=seed)
        for action in actions:
            env.step(action)
        steps += len(actions)
    return steps / (time.process_time() - started)


@ray.remote(num_cpus=1)
def baseline_episode(
    space_name: str, hidden: tuple[int, ...], theta: np.ndarray, task: dict, seed: int
) -> tuple[float, int]:
    """What users hand-roll: build the env and a torch policy, run one episode, batch 1."""
    import torch

    space = tasks.get(space_name)
    env = space.make_env()
    env.set_task(task)
    spec = MLPPolicy.for_spaces(env.observation_space, env.action_space, hidden=hidden)
    module = spec.to_torch(theta)
    low = np.asarray(spec.act_low, dtype=np.float32)
    high = np.asarray(spec.act_high, dtype=np.float32)
    obs, _ = env.reset(seed=seed)
    total, length = 0.0, 0
    with torch.no_grad():
        for _ in range(space.max_episode_steps):
            out = module(torch.as_tensor(obs, dtype=torch.float32)[None]).numpy()[0]
            if spec.discrete:
                action: Any = int(out.argmax())
            else:
                action = low + (np.tanh(out) + 1.0) * 0.5 * (high - low)
            obs, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            length += 1
            if terminated or truncated:
                break
    return total, length


def es_centre(space: TaskSpace, policy: MLPPolicy, repeat: int) -> tuple[np.ndarray, Task]:
    rng = np.random.default_rng(1000 + repeat)
    return policy.init(rng), gravity_tasks(space, 1)[0]


def job_inputs(
    job: Job, space: TaskSpace, policy: MLPPolicy, repeat: int
) -> tuple[list[tuple[np.ndarray, Task]], list[int]]:
    """Fresh policies per repeat: (parameters, task) per pair, and the episode seeds.

    For the ES job: the 2 x 256 perturbed vectors around a centre, built here as a
    hand-rolled loop would build them (coevo's workers rebuild them from seeds instead).
    """
    if job.es:
        theta, task = es_centre(space, policy, repeat)
        rng = np.random.default_rng(3000 + repeat)
        vectors = []
        for seed in rng.integers(0, 2**31 - 1, size=job.pairs):
            noise = np.float32(ES_SIGMA) * perturbation_noise(int(seed), theta.size)
            vectors += [theta + noise, theta - noise]
        return [(v, task) for v in vectors], [0]
    rng = np.random.default_rng(1000 + repeat)
    pairs = [(policy.init(rng), task) for task in gravity_tasks(space, job.pairs)]
    return pairs, list(range(job.episodes))


def run_coevo(pool: EvaluationPool, job: Job, repeat: int) -> dict[str, float]:
    """Steps per second (wall and workers' CPU), mean return, busy fraction of one repeat."""
    if job.es:
        theta, task = es_centre(pool.space, pool.policy, repeat)
        config = ESConfig(population=job.pairs, episodes=1, sigma=ES_SIGMA)
        es = EvolutionStrategy(config, pool.policy.num_params)
        state = es.init_state(theta, np.random.default_rng(0))
    else:
        pairs, seeds = job_inputs(job, pool.space, pool.policy, repeat)
    before = pool.stats_snapshot()
    started = time.perf_counter()
    if job.es:
        # The whole ES step: noise seeds out, returns back, gradient and Adam update.
        step = es.step(pool, theta, state, [task], np.random.default_rng(2000 + repeat))
        mean_return = step.record.mean_return
    else:
        mean_return = float(pool.evaluate(pairs, episodes=len(seeds), seed=0).mean())
    wall = time.perf_counter() - started
    after = pool.stats_snapshot()
    steps = after["env_steps"] - before["env_steps"]
    return {
        "steps_per_s": steps / wall,
        "steps_per_cpu_s": steps / (after["cpu_s"] - before["cpu_s"]),
        "busy_fraction": (after["busy_s"] - before["busy_s"]) / (wall * pool.num_workers),
        "mean_return": mean_return,
    }


def run_baseline(
    space: TaskSpace, policy: MLPPolicy, job: Job, repeat: int, args
) -> tuple[float, float]:
    pairs, seeds = job_inputs(job, space, policy, repeat)
    started = time.perf_counter()
    refs = [
        baseline_episode.remote(job.space, args.hidden, theta, task.as_dict(), seed)
        for theta, task in pairs
        for seed in seeds
    ]
    results = ray.get(refs)
    wall = time.perf_counter() - started
    steps = sum(length for _, length in results)
    return steps / wall, float(np.mean([r for r, _ in results]))


def best(values: list[float]) -> float:
    return float(max(values))


class Figures:
    """Every repeat's value of every figure, by job."""

    def __init__(self) -> None:
        self.values: dict[str, dict[str, list[float]]] = {}
        self.meta: dict[str, dict[str, Any]] = {}

    def add(self, job: Job, key: str, value: float) -> None:
        self.values.setdefault(job.name, {}).setdefault(key, []).append(value)

    def note(self, job: Job, key: str, value: Any) -> None:
        self.meta.setdefault(job.name, {})[key] = value


def measure_pool(
    label: str, space: TaskSpace, policy: MLPPolicy, jobs: list[Job], args, figures: Figures
) -> None:
    """Each job's repeats on one pool, the raw references re-measured before each repeat."""
    with EvaluationPool(space, policy, "ray", args.workers, args.envs_per_worker) as pool:
        slots = pool.worker_info()[0]["slots"]
        pool.evaluate(job_inputs(jobs[0], space, policy, -1)[0][:4], 1)  # warm-up
        for job in jobs:
            figures.note(job, f"{label}_slots", slots)
            figures.note(job, "chunk_sizes", pool.chunk_sizes(job.num_episodes))
            for repeat in range(args.repeats):
                # By the job's name for the space (an import path is looked up in Ray's
                # processes too; the space's own name may be registered nowhere).
                raw, raw_cpu = raw_rates(job.space, args.raw_seconds)
                figures.add(job, "raw_single_steps_per_s", raw)
                figures.add(job, "raw_single_steps_per_cpu_s", raw_cpu)
                if label == "coevo":
                    parallel, parallel_cpu = raw_parallel_rates(
                        job.space, args.workers, args.raw_seconds
                    )
                    figures.add(job, "raw_parallel_steps_per_s", parallel)
                    figures.add(job, "raw_parallel_steps_per_cpu_s", parallel_cpu)
                    if args.replay_episodes:
                        figures.add(
                            job,
                            "replay_steps_per_cpu_s",
                            replay_for(job, space, policy, repeat, args),
                        )
                got = run_coevo(pool, job, repeat)
                for key, value in got.items():
                    figures.add(job, f"{label}_{key}", value)
                progress(f"{job.name} {label} repeat {repeat}: {got['steps_per_s']:,.0f} steps/s")


def replay_for(job: Job, space: TaskSpace, policy: Policy, repeat: int, args) -> float:
    """The replay reference for the first `--replay-episodes` episodes of this repeat."""
    pairs, seeds = job_inputs(job, space, policy, repeat)
    count = max(1, args.replay_episodes // len(seeds))
    return replay_steps_per_cpu_s(space, policy, pairs[:count], seeds)


def measure_baseline(
    space: TaskSpace, policy: MLPPolicy, jobs: list[Job], args, figures: Figures
) -> None:
    if not args.baseline_repeats:
        return
    # Warm-up: the task workers import torch and coevo once, before any timing.
    theta, task = es_centre(space, policy, -1)
    warm = baseline_episode.remote
    ray.get([warm(jobs[0].space, args.hidden, theta, task.as_dict(), 0) for _ in range(4)])
    for job in jobs:
        for repeat in range(args.baseline_repeats):
            rate, mean_return = run_baseline(space, policy, job, repeat, args)
            figures.add(job, "baseline_steps_per_s", rate)
            figures.add(job, "baseline_mean_return", mean_return)
            progress(f"{job.name} baseline repeat {repeat}: {rate:,.0f} steps/s")


def summarize(job: Job, figures: Figures, args: argparse.Namespace) -> dict[str, Any]:
    f = figures.values[job.name]
    raw_single = best(f["raw_single_steps_per_s"])
    nan = float("nan")
    row: dict[str, Any] = {
        "coevo_steps_per_s": best(f["coevo_steps_per_s"]),
        "raw_x_workers_steps_per_s": raw_single * args.workers,
        "baseline_steps_per_s": best(f.get("baseline_steps_per_s", [nan])),
        "raw_single_steps_per_s": raw_single,
        "raw_parallel_steps_per_s": best(f["raw_parallel_steps_per_s"]),
        "raw_steps_per_cpu_s": best(f["raw_single_steps_per_cpu_s"]),
        "raw_parallel_steps_per_cpu_s": best(f["raw_parallel_steps_per_cpu_s"]),
        "replay_steps_per_cpu_s": best(f.get("replay_steps_per_cpu_s", [nan])),
    }
    for label in ("coevo", "coevo_gym_slots"):
        if f"{label}_steps_per_s" not in f:
            continue
        rate = best(f[f"{label}_steps_per_s"])
        row[f"{label}_steps_per_s"] = rate
        row[f"{label}_over_raw_x_workers"] = rate / row["raw_x_workers_steps_per_s"]
        row[f"{label}_over_baseline"] = rate / row["baseline_steps_per_s"]
        per_cpu = best(f[f"{label}_steps_per_cpu_s"])
        row[f"{label}_steps_per_cpu_s"] = per_cpu
        row[f"{label}_per_cpu_over_raw"] = per_cpu / row["raw_steps_per_cpu_s"]
        row[f"{label}_per_cpu_over_replay"] = per_cpu / row["replay_steps_per_cpu_s"]
        row[f"{label}_per_cpu_over_raw_parallel"] = per_cpu / row["raw_parallel_steps_per_cpu_s"]
        row[f"{label}_busy_fraction"] = best(f[f"{label}_busy_fraction"])
    row.update(
        workers=args.workers,
        envs_per_worker=args.envs_per_worker,
        policy=f"{args.policy} {list(args.hidden)}",
        episodes=job.num_episodes,
        repeats=args.repeats,
        baseline_repeats=args.baseline_repeats,
        **figures.meta[job.name],
        all_repeats={k: [round(v, 3) for v in vals] for k, vals in f.items()},
    )
    return row


def measure(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    jobs = [job_of(name) for name in args.jobs]
    figures = Figures()
    for space_name in dict.fromkeys(job.space for job in jobs):
        space_jobs = [job for job in jobs if job.space == space_name]
        space = tasks.get(space_name)
        policy = policy_for(space, args.policy, tuple(args.hidden))
        # Pools one after the other: each pool's actors hold the CPUs while it lives.
        measure_pool("coevo", space, policy, space_jobs, args, figures)
        if space.make_slots is not None:
            gym_space = dataclasses.replace(space, make_slots=None)
            measure_pool("coevo_gym_slots", gym_space, policy, space_jobs, args, figures)
        measure_baseline(space, policy, space_jobs, args, figures)
    return {job.name: summarize(job, figures, args) for job in jobs}


def progress(message: str) -> None:
    print(f"  .. {message}", file=sys.stderr, flush=True)


def print_table(results: dict[str, dict[str, Any]], conditions: dict[str, Any]) -> None:
    first = next(iter(results.values()))
    print(
        f"{first['policy']} policy, workers {first['workers']}, "
        f"envs per worker {first['envs_per_worker']}, "
        f"best of {first['repeats']} repeats (baseline: {first['baseline_repeats']}); "
        f"load average before {conditions['loadavg_before']}, after {conditions['loadavg_after']}"
    )
    width = max(21, *(len(name) + 1 for name in results))  # a user's module:function name
    print(
        f"{'job':<{width}}{'slots':<14}{'coevo':>10}{'raw x W':>10}{'/raw':>6}{'baseline':>10}"
        f"{'/base':>7}{'raw par':>10}{'| per CPU s':>12}{'raw':>9}{'/raw':>6}"
        f"{'replay':>9}{'/replay':>8}{'par':>9}{'/par':>6}{'busy':>6}"
    )
    for name, row in results.items():
        for label in ("coevo", "coevo_gym_slots"):
            if f"{label}_steps_per_s" not in row:
                continue
            slots = row[f"{label}_slots"].rsplit(".", 1)[-1]
            print(
                f"{name:<{width}}{slots:<14}{row[f'{label}_steps_per_s']:>10,.0f}"
                f"{row['raw_x_workers_steps_per_s']:>10,.0f}"
                f"{row[f'{label}_over_raw_x_workers']:>6.2f}"
                f"{row['baseline_steps_per_s']:>10,.0f}{row[f'{label}_over_baseline']:>7.1f}"
                f"{row['raw_parallel_steps_per_s']:>10,.0f}"
                f"{row[f'{label}_steps_per_cpu_s']:>12,.0f}{row['raw_steps_per_cpu_s']:>9,.0f}"
                f"{row[f'{label}_per_cpu_over_raw']:>6.2f}{row['replay_steps_per_cpu_s']:>9,.0f}"
                f"{row[f'{label}_per_cpu_over_replay']:>8.2f}"
                f"{row['raw_parallel_steps_per_cpu_s']:>9,.0f}"
                f"{row[f'{label}_per_cpu_over_raw_parallel']:>6.2f}"
                f"{row[f'{label}_busy_fraction']:>6.2f}"
            )
    print(
        "env steps/s. coevo: EvaluationPool with the named slots (GymSlots: one gymnasium env\n"
        "per slot); raw x W: the env alone, one process, fixed action, x workers; /raw, /base:\n"
        "coevo over raw x W and over baseline (one Ray task per episode, torch batch 1);\n"
        "raw par: the env alone in W processes at once (what the cores give right now).\n"
        "per CPU s: env steps per CPU second of the workers' processes vs the raw env's\n"
        "(fixed action), vs replay (the same episodes' actions, plain loop) and vs par\n"
        "(the raw loop in W processes at once, mean per process: the pool's conditions);\n"
        "busy: workers' time in Worker.run / (wall x workers)."
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--envs-per-worker", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--baseline-repeats", type=int, default=1)
    parser.add_argument("--raw-seconds", type=float, default=0.5)
    parser.add_argument(
        "--jobs",
        nargs="+",
        default=list(JOBS),
        type=job_name,
        help=f"<task>_<pairs>x<episodes> or <task>_es; e.g. {', '.join(JOBS + MORE_JOBS)}",
    )
    parser.add_argument("--hidden", type=int, nargs="+", default=list(HIDDEN))
    parser.add_argument("--policy", choices=("mlp", "torch", "torch_norm"), default="mlp")
    parser.add_argument("--replay-episodes", type=int, default=128, help="0: no replay")
    args = parser.parse_args(argv)
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    conditions = {"loadavg_before": loadavg()}
    try:
        results = measure(args)
    finally:
        ray.shutdown()
    conditions["loadavg_after"] = loadavg()
    for row in results.values():
        row.update(conditions)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print_table(results, conditions)


def loadavg() -> str:
    # The cores are shared: other processes running meanwhile lower every figure.
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
