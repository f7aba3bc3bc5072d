"""coevo's PPO beside Stable-Baselines3's PPO: same envs, budgets, seeds and hyperparameters.

    .venv/bin/python benchmarks/ppo_vs_sb3.py                 # the recorded tables (~15 min here)
    .venv/bin/python benchmarks/ppo_vs_sb3.py --quick         # a smoke run (~1 min)
    .venv/bin/python benchmarks/ppo_vs_sb3.py --only learner  # batched vs pair-by-pair update
    .venv/bin/python benchmarks/ppo_vs_sb3.py --only single --rows "Pendulum-v1 gSDE"

Hyperparameters: rl-baselines3-zoo's hyperparams/ppo.yml for CartPole-v1 and Pendulum-v1,
given to both libraries, stream shapes included (coevo's streams continue their episodes
across rollouts, as SB3's vectorised envs do). Pendulum's zoo entry uses gSDE (use_sde,
sde_sample_freq 4, SB3's default full_std / exp / log_std_init 0): the row "Pendulum-v1
gSDE" runs it in both libraries (coevo's gSDE: the actor-critic policy's use_sde /
sde_sample_freq); the row "Pendulum-v1" runs both with plain Gaussian exploration beside it.

Measured per (env, library, seed): the final evaluation (mean return of 10 deterministic
episodes on fixed seeds, the same episodes for both libraries, in gymnasium's own env), env
steps until an evaluation first reaches the solve threshold (evaluations every budget/20
steps), training wall time and CPU time (evaluations excluded) and env steps per second.
Then 8 CartPole pairs trained at once by coevo (one pool call collects every pair's rollout,
one batched learner call updates them all), on the local backend and on a Ray pool of 2
workers, against 8 separate SB3 runs of the same budget, one after another.

Wall times on this shared 2-core machine move with the other processes' load; CPU seconds
(this process and its workers) and the 1-minute load average are printed beside them.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import gymnasium as gym
import numpy as np
import torch

from coevo import tasks
from coevo.optimizers.ppo_config import PPOConfig

ZOO = {
    # rl-baselines3-zoo hyperparams/ppo.yml (fetched from DLR-RM/rl-baselines3-zoo).
    "CartPole-v1": dict(
        n_envs=8,
        n_steps=32,
        batch_size=256,
        gae_lambda=0.8,
        gamma=0.98,
        n_epochs=20,
        ent_coef=0.0,
        learning_rate=("lin", 0.001),
        clip_range=("lin", 0.2),
        n_timesteps=100_000,
    ),
    "Pendulum-v1": dict(
        n_envs=4,
        n_steps=1024,
        gae_lambda=0.95,
        gamma=0.9,
        n_epochs=10,
        ent_coef=0.0,
        learning_rate=1e-3,
        clip_range=0.2,
        n_timesteps=100_000,
    ),
}
# The zoo's Pendulum-v1 entry as it is: with gSDE (its plain row above has use_sde off).
ZOO["Pendulum-v1 gSDE"] = dict(ZOO["Pendulum-v1"], use_sde=True, sde_sample_freq=4)
SDE_SETTINGS = ("use_sde", "sde_sample_freq")
SPACES = {"CartPole-v1": "cartpole", "Pendulum-v1": "pendulum"}
THRESHOLDS = {"CartPole-v1": 475.0, "Pendulum-v1": -200.0}
EVAL_EPISODES = 10


def gym_id(row: str) -> str:
    """The gymnasium env of a table row ("Pendulum-v1 gSDE" -> "Pendulum-v1")."""
    return row.split()[0]


EVALUATIONS = 20


def cpu_seconds() -> float:
    """CPU time of this process (the driver; Ray workers' time comes from pool stats)."""
    return time.process_time()


def coevo_config(env_id: str, budget: int) -> PPOConfig:
    zoo = ZOO[env_id]
    n_envs, n_steps = zoo["n_envs"], zoo["n_steps"]
    linear = isinstance(zoo["learning_rate"], tuple)
    lr = zoo["learning_rate"][1] if linear else zoo["learning_rate"]
    clip = zoo["clip_range"][1] if isinstance(zoo["clip_range"], tuple) else zoo["clip_range"]
    return PPOConfig(
        n_envs=n_envs,
        n_steps=n_steps,
        batch_size=zoo.get("batch_size", 64),
        n_epochs=zoo["n_epochs"],
        gamma=zoo["gamma"],
        gae_lambda=zoo["gae_lambda"],
        clip_range=clip,
        ent_coef=zoo["ent_coef"],
        learning_rate=lr,
        schedule="linear" if linear else "constant",
        anneal_updates=max(1, budget // (n_envs * n_steps)) if linear else 0,
    )


def evaluate(act: Callable[[np.ndarray], np.ndarray], env_id: str) -> float:
    """Mean return of deterministic episodes on seeds 10_000.. in gymnasium's env."""
    env = gym.make(gym_id(env_id))
    total = 0.0
    for episode in range(EVAL_EPISODES):
        obs, _ = env.reset(seed=10_000 + episode)
        done = False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(act(obs))
            total += float(reward)
            done = terminated or truncated
    return total / EVAL_EPISODES


@dataclass
class Run:
    library: str
    env_id: str
    seed: int
    steps: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0
    startup_s: float = 0.0  # coevo: starting the pool (Ray and its workers), in wall_s
    learner_s: float = 0.0  # coevo: wall time in the learner (tell_many), in wall_s
    load: float = 0.0  # 1-minute load average at the end of the run
    curve: list[tuple[int, float]] = field(default_factory=list)

    @property
    def final(self) -> float:
        return self.curve[-1][1]

    def steps_to(self, threshold: float) -> int | None:
        return next((steps for steps, score in self.curve if score >= threshold), None)


class Clock:
    """Training time with the evaluations taken out."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0
        self._wall0 = self._cpu0 = 0.0

    def start(self) -> None:
        self._wall0, self._cpu0 = time.perf_counter(), cpu_seconds()

    def stop(self) -> None:
        self.wall += time.perf_counter() - self._wall0
        self.cpu += cpu_seconds() - self._cpu0


def run_sb3(env_id: str, seed: int, budget: int, evaluate_every: int | None) -> Run:
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.logger import Logger

    zoo = dict(ZOO[env_id])
    zoo.pop("n_timesteps")
    n_envs = zoo.pop("n_envs")
    for name in ("learning_rate", "clip_range"):
        if isinstance(zoo[name], tuple):
            start = zoo[name][1]
            zoo[name] = lambda progress, start=start: progress * start
    run = Run("sb3", env_id, seed)
    clock = Clock()

    class Evaluations(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.next = evaluate_every or budget

        def _on_step(self) -> bool:
            return True

        def _on_rollout_end(self) -> None:
            if evaluate_every and self.num_timesteps >= self.next:
                clock.stop()
                score = evaluate(lambda o: model.predict(o, deterministic=True)[0], env_id)
                run.curve.append((self.num_timesteps, score))
                self.next += evaluate_every
                clock.start()

    clock.start()
    env = make_vec_env(gym_id(env_id), n_envs=n_envs, seed=seed)
    model = PPO("MlpPolicy", env, seed=seed, device="cpu", verbose=0, **zoo)
    # No log files: SB3's default logger makes a /tmp/SB3-<time> directory per model.
    model.set_logger(Logger(folder=None, output_formats=[]))
    model.learn(budget, callback=Evaluations())
    clock.stop()
    run.steps = int(model.num_timesteps)
    run.wall_s, run.cpu_s = clock.wall, clock.cpu
    run.load = os.getloadavg()[0]
    if not run.curve or run.curve[-1][0] != run.steps:
        run.curve.append(
            (run.steps, evaluate(lambda o: model.predict(o, deterministic=True)[0], env_id))
        )
    return run


def run_coevo(
    env_id: str, seeds: list[int], budget: int, evaluate_every: int | None, backend: str
) -> list[Run]:
    """coevo's PPO on `len(seeds)` pairs at once (one pool call per step for all of them)."""
    from coevo.optimizers.ppo import PPO
    from coevo.policies.actor_critic import ActorCriticSpec
    from coevo.pool import EvaluationPool

    space = tasks.get(SPACES[gym_id(env_id)])
    env = space.make_env()
    sde = {name: ZOO[env_id][name] for name in SDE_SETTINGS if name in ZOO[env_id]}
    spec = ActorCriticSpec.for_spaces(env.observation_space, env.action_space, **sde)
    config = coevo_config(env_id, budget)
    runs = [Run("coevo", env_id, seed) for seed in seeds]
    clock = Clock()
    clock.start()
    workers = 1 if backend == "local" else 2
    started = time.perf_counter()
    with EvaluationPool(space, spec, backend, workers, envs_per_worker=64) as pool:
        # Until Ray's workers answer: a pool that starts Ray serves in-process meanwhile
        # and its constructor returns at once, which would time nothing.
        pool.wait_ready()
        startup = time.perf_counter() - started
        optimizer = PPO(config, spec.num_params, policy=spec)
        rngs = [np.random.default_rng(seed) for seed in seeds]
        thetas = [spec.init(rng) for rng in rngs]
        states = [optimizer.init_state(theta, rng) for theta, rng in zip(thetas, rngs, strict=True)]
        task = space.initial_task()
        steps, next_eval = 0, evaluate_every or budget
        learner_s = 0.0
        while steps < budget:
            asked = [
                optimizer.ask(theta, state, [task], rng, pool.register)
                for theta, state, rng in zip(thetas, states, rngs, strict=True)
            ]
            results = pool.dispatch([job for a in asked for job in a.jobs])
            items, offset = [], 0
            for index, a in enumerate(asked):
                own = results[offset : offset + len(a.jobs)]
                items.append((thetas[index], states[index], a, own))
                offset += len(a.jobs)
            learn_started = time.perf_counter()
            told = optimizer.tell_many(items)  # every pair's update in one batched call
            learner_s += time.perf_counter() - learn_started
            for index, step in enumerate(told):
                if not step.record.applied:  # a refused update (a rollout without an
                    # ended episode is no failure: the zoo's 8 x 32 has many)
                    print(f"  pair {index}: {step.record.reason}")
                thetas[index], states[index] = step.theta, step.state
            steps += config.n_envs * config.n_steps
            if evaluate_every and steps >= next_eval:
                clock.stop()
                for run, theta in zip(runs, thetas, strict=True):
                    run.curve.append((steps, evaluate(_coevo_actor(spec, theta), env_id)))
                next_eval += evaluate_every
                clock.start()
        clock.stop()
        # Ray workers are other processes: their CPU time as the pool counted it.
        worker_cpu = pool.stats_snapshot()["cpu_s"] if backend == "ray" else 0.0
    for run, theta in zip(runs, thetas, strict=True):
        run.steps = steps
        run.wall_s, run.cpu_s = clock.wall, clock.cpu + worker_cpu
        run.startup_s = startup
        run.learner_s = learner_s
        run.load = os.getloadavg()[0]
        if not run.curve or run.curve[-1][0] != steps:
            run.curve.append((steps, evaluate(_coevo_actor(spec, theta), env_id)))
    return runs


def _coevo_actor(spec, theta: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    params = theta[None]

    def act(obs: np.ndarray) -> np.ndarray:
        action = spec.act(params, np.asarray(obs, dtype=np.float32)[None])[0]
        return int(action) if spec.discrete else action

    return act


def learner_timing(pairs: int, repeats: int) -> None:
    """CPU seconds of one PPO update of `pairs` CartPole pairs (the zoo's settings, 256
    samples, 20 epochs of one 256-sample minibatch): one batched `update_many` call against
    one call per pair. Rollouts are the policies' own actions on random observations."""
    from coevo.optimizers.ppo_learner import PPOState, Rollout, update_many
    from coevo.policies.actor_critic import ActorCriticSpec

    env = gym.make("CartPole-v1")
    spec = ActorCriticSpec.for_spaces(env.observation_space, env.action_space)
    config = coevo_config("CartPole-v1", ZOO["CartPole-v1"]["n_timesteps"])
    steps, streams = config.n_steps, config.n_envs
    rng = np.random.default_rng(0)
    thetas = [spec.init(rng) for _ in range(pairs)]
    states = [PPOState.fresh(spec, seed) for seed in range(pairs)]
    rollouts = []
    for theta in thetas:
        obs = rng.standard_normal((steps * streams, spec.obs_dim)).astype(np.float32)
        actions, _, log_probs, values = spec.sample(
            np.tile(theta, (len(obs), 1)), obs, rng.random(len(obs))
        )
        shape = (steps, streams)
        rollouts.append(
            Rollout(
                obs=obs.reshape(*shape, -1),
                actions=actions.reshape(shape),
                log_probs=log_probs.reshape(shape),
                rewards=np.ones(shape, dtype=np.float32),
                terminated=rng.random(shape) < 0.02,
                truncated=np.zeros(shape, dtype=bool),
                values=values.reshape(shape),
                next_values=np.zeros(shape, dtype=np.float32),
            )
        )
    update_many(spec, config, thetas[:1], states[:1], rollouts[:1])  # warm-up
    batched, apart = [], []
    for _ in range(repeats):
        cpu0 = cpu_seconds()
        update_many(spec, config, thetas, states, rollouts)
        batched.append(cpu_seconds() - cpu0)
        cpu0 = cpu_seconds()
        for i in range(pairs):
            update_many(spec, config, thetas[i : i + 1], states[i : i + 1], rollouts[i : i + 1])
        apart.append(cpu_seconds() - cpu0)
    print(
        f"One update of {pairs} CartPole pairs ({steps * streams} samples, {config.n_epochs} "
        f"epochs), CPU s, best / median of {repeats}, load avg {os.getloadavg()[0]:.1f}:"
    )
    print(f"  batched (one update_many call): {min(batched):.3f} / {np.median(batched):.3f}")
    print(f"  pair by pair ({pairs} calls):       {min(apart):.3f} / {np.median(apart):.3f}")


def mean_std(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{np.mean(values):.1f} ± {np.std(values):.1f}"


def table(runs: list[Run]) -> str:
    lines = [
        "| env | library | seeds | final return | env steps to threshold (solved/seeds) "
        "| wall s / run | CPU s / run | env steps / wall s | env steps / CPU s | load avg |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for env_id in ZOO:
        for library in ("coevo", "sb3"):
            group = [r for r in runs if r.env_id == env_id and r.library == library]
            if not group:
                continue
            solved = [r.steps_to(THRESHOLDS[gym_id(env_id)]) for r in group]
            hits = [s for s in solved if s is not None]
            wall = float(np.mean([r.wall_s for r in group]))
            cpu = float(np.mean([r.cpu_s for r in group]))
            steps = float(np.mean([r.steps for r in group]))
            lines.append(
                f"| {env_id} | {library} | {len(group)} | {mean_std([r.final for r in group])} "
                f"| {mean_std([float(h) for h in hits])} ({len(hits)}/{len(group)}) "
                f"| {wall:.1f} | {cpu:.1f} | {steps / wall:.0f} | {steps / cpu:.0f} "
                f"| {np.mean([r.load for r in group]):.1f} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small budgets, 2 seeds")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--pairs-budget", type=int, default=20_000)
    parser.add_argument(
        "--rows", nargs="+", choices=tuple(ZOO), default=tuple(ZOO), help="single-run rows"
    )
    parser.add_argument(
        "--only",
        choices=("single", "pairs", "learner"),
        help="run only one of the comparisons (learner: batched vs pair-by-pair update)",
    )
    args = parser.parse_args()
    torch.set_num_threads(1)  # both libraries, one thread: the machine is shared
    # torch's first optimizer imports its compiler stack (~5 s here): once, before any timing.
    torch.optim.Adam([torch.zeros(1, requires_grad=True)])
    if args.only == "learner":
        learner_timing(args.pairs, repeats=3 if args.quick else 10)
        return
    seeds = list(range(2 if args.quick else args.seeds))
    runs: list[Run] = []
    for env_id in args.rows if args.only != "pairs" else ():
        budget = 10_000 if args.quick else ZOO[env_id]["n_timesteps"]
        every = budget // EVALUATIONS
        for seed in seeds:
            (coevo_run,) = run_coevo(env_id, [seed], budget, every, "local")
            sb3_run = run_sb3(env_id, seed, budget, every)
            runs += [coevo_run, sb3_run]
            print(
                f"{env_id} seed {seed}: coevo {coevo_run.final:.1f} in {coevo_run.wall_s:.1f}s, "
                f"sb3 {sb3_run.final:.1f} in {sb3_run.wall_s:.1f}s",
                flush=True,
            )
    if runs:
        print()
        print(table(runs))
    if args.only == "single":
        return

    pairs = 2 if args.quick else args.pairs
    budget = 5_000 if args.quick else args.pairs_budget
    pair_seeds = list(range(100, 100 + pairs))
    rows = []
    for backend, how in (
        ("local", "local backend (one in-process worker)"),
        ("ray", "ray pool of 2 workers"),
    ):
        started = time.perf_counter()
        together = run_coevo("CartPole-v1", pair_seeds, budget, None, backend)
        wall = time.perf_counter() - started
        first = together[0]
        detail = f"learner {first.learner_s:.1f} s"
        if backend == "ray":
            detail += f", pool start {first.startup_s:.1f} s"
        rows.append(
            f"| coevo | {pairs} pairs at once, {how} ({detail}) | {wall:.1f} | {first.cpu_s:.1f} "
            f"| {os.getloadavg()[0]:.1f} | {mean_std([r.final for r in together])} |"
        )
        print(f"coevo, {how}: done in {wall:.1f} s", flush=True)  # progress; table below
    started, cpu0 = time.perf_counter(), cpu_seconds()
    apart = [run_sb3("CartPole-v1", seed, budget, None) for seed in pair_seeds]
    sb3_wall, sb3_cpu = time.perf_counter() - started, cpu_seconds() - cpu0
    rows.append(
        f"| sb3 | {pairs} separate runs, one after another | {sb3_wall:.1f} | {sb3_cpu:.1f} "
        f"| {os.getloadavg()[0]:.1f} | {mean_std([r.final for r in apart])} |"
    )
    print()
    print(f"{pairs} CartPole-v1 pairs x {budget} env steps each:")
    print("| library | how | wall s | CPU s | load avg | final return |")
    print("| --- | --- | --- | --- | --- | --- |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
