"""One SB3 PPO job with three task sources: Syllabus's PLR, coevo's PLR sampler, and no
curriculum. It measures what the curriculum costs per episode and the final return on
held-out tasks.

    .venv/bin/python benchmarks/sb3_curriculum_peer.py          # 3 arms x 4 seeds, ~7 min
    .venv/bin/python benchmarks/sb3_curriculum_peer.py --quick  # a smoke run (tests), < 30 s

The job: Stable-Baselines3's PPO ("MlpPolicy", n_steps 256, otherwise SB3's defaults, torch
on 1 thread) on 4 envs of `SubprocVecEnv`, which both libraries support. The envs' processes
are forked (`start_method="fork"`) for every arm, because Syllabus's queues belong to the fork
context and SB3's default (forkserver) refuses them. The tasks are the physics of coevo's
`cartpole` space (pole length and mass, cart mass, force, gravity). Each library is set up the
way its own users set it up:

- syllabus: `PrioritizedLevelReplay`. Syllabus needs a discrete task space, so task i is the
  i-th of a catalogue of 64 tasks drawn once from the space. The curriculum is served by
  `make_multiprocessing_curriculum` and its update thread in the trainer process, and each env
  is wrapped in `GymnasiumSyncWrapper` over a `TaskWrapper`. Levels are scored by positive value
  loss from step updates, with values from an `Evaluator` over the SB3 policy. The evaluator
  reads the live policy (`copy_agent=False`; see SB3Values for why). Syllabus's defaults are
  kept otherwise: steps are sent in batches of 100, and 2 tasks are queued per env.
- coevo: `sampler("plr", space)` over the continuous space, with a buffer of 64 levels. It is
  served by `coevo.wrappers.serve` (a manager process) to a `CurriculumWrapper` per env.
  Without a critic it scores levels by learnability, coevo's default.
- uniform: no curriculum. Each env draws its task uniformly from the space at every reset.

Both PLRs use the same β 0.3 (rank temperature) and staleness weight 0.3. Their replay rules
differ, as each library allows. coevo (PLR⊥) replays with probability 0.5 once its buffer is
half full and keeps trying new levels. Syllabus 0.7 runs on a catalogue only with
`replay_schedule="fixed"`: it plays each task once, then replays only (see SYLLABUS_PLR).

What "curriculum µs per episode" counts. Every env is wrapped the same way:
outer clock > the arm's wrappers > inner clock > TimeLimit(the env). The outer clock's time
minus the inner clock's, summed over the envs, is the "env side" column. It is the time the
envs spent in the curriculum's code: drawing or receiving tasks, setting them, reporting steps
and episodes, and waiting for the curriculum's answer. The "server" column is the CPU time of
the curriculum's server: Syllabus's update thread (its thread CPU clock) and coevo's manager
process (psutil). Both sample and update there. "µs/episode" is the two added, the same way for
both libraries. Server work that an env waits for therefore counts on both sides: always for
coevo, whose envs wait for each answer, and for Syllabus when its queue of tasks runs dry. The
uniform arm has no curriculum; its row is the floor that a plain task-setting wrapper and the
clocks cost. "learn s" is the wall time of `model.learn`.

Final return: the deterministic policy on 20 held-out tasks drawn once from the space (seeded
apart from the catalogue), one episode each. A run's figure is their mean. Each arm's figure is
the mean over seeds with a 95% percentile-bootstrap interval (`coevo.compare.stats`). The two
curricula's returns are "within seed noise" when the 95% interval of P(coevo > syllabus) (as
in rliable) contains 0.5.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import psutil
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coevo.compare.stats import (  # noqa: E402
    batched_mean,
    probability_of_improvement,
    probability_of_improvement_ci,
    stratified_bootstrap_ci,
)
from coevo.curricula.plr import PLRConfig  # noqa: E402
from coevo.curricula.sampler import sampler  # noqa: E402
from coevo.tasks.registry import get as get_space  # noqa: E402
from coevo.tasks.task import Task, TaskSpace  # noqa: E402
from coevo.wrappers import CurriculumWrapper, serve  # noqa: E402

# Importing Syllabus's PLR sets numpy's error mode to 'raise' for the whole process: put back.
_NUMPY_ERRORS = np.geterr()
from syllabus.core import (  # noqa: E402
    GymnasiumSyncWrapper,
    TaskWrapper,
    make_multiprocessing_curriculum,
)
from syllabus.core.evaluator import Evaluator  # noqa: E402
from syllabus.curricula import PrioritizedLevelReplay  # noqa: E402
from syllabus.task_space import DiscreteTaskSpace  # noqa: E402

np.seterr(**_NUMPY_ERRORS)

SPACE = "cartpole"
ARMS = ("syllabus", "coevo", "uniform")
COEVO_PLR = PLRConfig(name="plr")  # coevo's PLR as its defaults make it
# Syllabus 0.7 on a task catalogue: its default `proportionate` schedule (and any `rho` < 1)
# sends the draws that are not replays to a robust-PLR evaluator that PrioritizedLevelReplay
# does not give it (AttributeError: 'TaskSampler' object has no attribute 'evaluator'), once
# `rho` of the catalogue is seen. `fixed` with `rho` 1 is the schedule that runs: every task
# once, then replays only.
# The settings both PLRs have take coevo's defaults (dcd's PLR⊥ MiniGrid values).
SYLLABUS_PLR = {
    "strategy": "positive_value_loss",
    "replay_schedule": "fixed",
    "temperature": COEVO_PLR.temperature,
    "staleness_coef": COEVO_PLR.staleness_coef,
}
CATALOGUE_SEED, HELD_OUT_SEED = 10_001, 20_002


@dataclass(frozen=True)
class Setting:
    """One mode's budget: PPO steps per run, seeds, envs, the Syllabus catalogue's size, the
    held-out tasks and coevo's PLR buffer."""

    timesteps: int
    seeds: int
    envs: int = 4
    n_steps: int = 256
    n_epochs: int = 10
    levels: int = 64  # coevo's PLR buffer and Syllabus's catalogue
    held_out: int = 20


FULL = Setting(timesteps=16_384, seeds=4)
QUICK = Setting(timesteps=512, seeds=1, n_steps=64, n_epochs=1, levels=8, held_out=2)


# -- the clocks around the curriculum ----------------------------------------------------
class EnvClock(gym.Wrapper):
    """The innermost layer: the time of the env's own reset and step calls."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.seconds = 0.0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> Any:
        """The env's reset, timed."""
        start = time.perf_counter()
        out = self.env.reset(seed=seed, options=options)
        self.seconds += time.perf_counter() - start
        return out

    def step(self, action: Any) -> Any:
        """The env's step, timed."""
        start = time.perf_counter()
        out = self.env.step(action)
        self.seconds += time.perf_counter() - start
        return out


class CurriculumClock(EnvClock):
    """The outermost layer: its time less the `EnvClock`'s is the curriculum's time."""

    def __init__(self, env: gym.Env, inner: EnvClock):
        super().__init__(env)
        self.inner = inner
        self.episodes = 0

    def step(self, action: Any) -> Any:
        """Step through the curriculum's wrappers, timed; episodes counted."""
        out = super().step(action)
        self.episodes += bool(out[2] or out[3])
        return out

    @property
    def peer_clock(self) -> tuple[float, int]:
        """(seconds in the curriculum's code, finished episodes) of this env."""
        return self.seconds - self.inner.seconds, self.episodes


def make_env(space: TaskSpace, layer: Callable[[gym.Env], gym.Env]) -> gym.Env:
    """One env of the job: the space's env, truncated at its `max_episode_steps`, under the
    arm's layer, between the two clocks."""
    inner = EnvClock(gym.wrappers.TimeLimit(space.make_env(), space.max_episode_steps))
    return CurriculumClock(layer(inner), inner)


# -- the arms -----------------------------------------------------------------------------
class CatalogueTasks(TaskWrapper):
    """Syllabus's task interface over a coevo env: task i is the catalogue's i-th task."""

    def __init__(self, env: gym.Env, space: TaskSpace, catalogue: list[Task]):
        super().__init__(env)
        self.space = space
        self.catalogue = catalogue
        self.task = 0

    def change_task(self, new_task: int) -> None:
        """Set the catalogue's task `new_task` (applies at the reset that follows)."""
        self.task = int(new_task)
        self.env.unwrapped.set_task(self.space.env_task(self.catalogue[self.task]))  # type: ignore[attr-defined]


class SB3Values(Evaluator):
    """Syllabus's `Evaluator` over an SB3 `ActorCriticPolicy`: the critic's values.

    Built with `copy_agent=False`. Syllabus 0.7's default, True, drops the copy it makes (its
    `__init__` ends with `self.agent = self._agent_reference`), so every value call loads the
    live policy's state dict into the live policy itself. From the update thread, that bumps
    the parameters' versions during the trainer's backward pass, and PPO fails with "one of the
    variables needed for gradient computation has been modified by an inplace operation".
    """

    def _get_value(self, state: Any, recurrent_state: Any = None, done: Any = None) -> Any:
        return self.agent.predict_values(state), None, {}

    def _set_eval_mode(self) -> None:
        self.agent.set_training_mode(False)

    def _set_train_mode(self) -> None:
        self.agent.set_training_mode(True)


def syllabus_layer(components: Any, space: TaskSpace, catalogue: list[Task], env: gym.Env):
    """Syllabus's env side: its sync wrapper over the catalogue's task wrapper."""
    tasks = DiscreteTaskSpace(len(catalogue))
    return GymnasiumSyncWrapper(CatalogueTasks(env, space, catalogue), tasks, components)


def coevo_layer(proxy: Any, index: int, env: gym.Env) -> gym.Env:
    """coevo's env side: the wrapper asking the served sampler (SB3 resets in the same step)."""
    return CurriculumWrapper(env, proxy, env_index=index, autoreset="same_step")


class UniformTasks(gym.Wrapper):
    """No curriculum: each reset sets a task drawn uniformly from the space."""

    def __init__(self, env: gym.Env, space: TaskSpace, seed: int):
        super().__init__(env)
        self.space = space
        self.rng = np.random.default_rng(seed)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> Any:
        """Set a uniform task, then reset."""
        task = self.space.sample(self.rng)
        self.env.unwrapped.set_task(self.space.env_task(task))  # type: ignore[attr-defined]
        return self.env.reset(seed=seed, options=options)


class SyllabusArm:
    """Syllabus's PLR behind `make_multiprocessing_curriculum` (its update thread)."""

    server_kind = "update thread"

    def __init__(self, model: PPO, space: TaskSpace, seed: int, setting: Setting):
        self.space = space
        rng = np.random.default_rng(CATALOGUE_SEED)
        self.catalogue = [space.sample(rng) for _ in range(setting.levels)]
        probe = model.get_env()
        assert probe is not None
        plr = PrioritizedLevelReplay(
            DiscreteTaskSpace(setting.levels),
            probe.observation_space,
            task_sampler_kwargs_dict=dict(SYLLABUS_PLR),
            num_steps=setting.n_steps,
            num_processes=setting.envs,
            gamma=model.gamma,
            gae_lambda=model.gae_lambda,
            evaluator=SB3Values(model.policy, device=torch.device("cpu"), copy_agent=False),
        )
        self._sigint = signal.getsignal(signal.SIGINT)  # start() installs its own handler
        self.sync = make_multiprocessing_curriculum(plr)
        thread = self.sync.update_thread
        assert thread is not None and thread.ident is not None
        self._clock = time.pthread_getcpuclockid(thread.ident)

    def layer(self, index: int) -> Callable[[gym.Env], gym.Env]:
        """Env `index`'s wrappers."""
        return partial(syllabus_layer, self.sync.components, self.space, self.catalogue)

    def server_cpu_s(self) -> float:
        """CPU seconds of the update thread so far."""
        return time.clock_gettime(self._clock)

    def close(self) -> None:
        """Stop the update thread and free the queues."""
        self.sync.stop()
        signal.signal(signal.SIGINT, self._sigint)


class CoevoArm:
    """coevo's PLR sampler served to the envs by a manager process (`serve`)."""

    server_kind = "manager"

    def __init__(self, model: PPO, space: TaskSpace, seed: int, setting: Setting):
        plr = sampler("plr", space, seed=seed, buffer_size=setting.levels)
        children = {p.pid for p in psutil.Process().children()}
        self.shared = serve(plr, setting.envs)
        (self.server,) = [p for p in psutil.Process().children() if p.pid not in children]

    def layer(self, index: int) -> Callable[[gym.Env], gym.Env]:
        """Env `index`'s wrapper."""
        return partial(coevo_layer, self.shared.proxy, index)

    def server_cpu_s(self) -> float:
        """CPU seconds of the manager process so far."""
        times = self.server.cpu_times()
        return times.user + times.system

    def close(self) -> None:
        """Stop the manager."""
        self.shared.close()


class UniformArm:
    """No curriculum: no server; each env draws its own tasks."""

    server_kind = "-"

    def __init__(self, model: PPO, space: TaskSpace, seed: int, setting: Setting):
        self.space = space
        self.seed = seed

    def layer(self, index: int) -> Callable[[gym.Env], gym.Env]:
        """Env `index`'s wrapper, its generator seeded by the run's seed and the index."""
        return partial(UniformTasks, space=self.space, seed=1000 * self.seed + index)

    def server_cpu_s(self) -> float:
        """No server."""
        return 0.0

    def close(self) -> None:
        """Nothing to stop."""


ARM_CLASSES = {"syllabus": SyllabusArm, "coevo": CoevoArm, "uniform": UniformArm}


# -- one run ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Run:
    """One arm's run on one seed: its episodes, the curriculum's seconds, its returns."""

    arm: str
    seed: int
    episodes: int
    env_side_s: float  # summed over the envs
    server_s: float  # the curriculum server's CPU seconds
    learn_s: float
    held_out: float

    @property
    def curriculum_s(self) -> float:
        """The curriculum's seconds: the envs' side and its server's CPU."""
        return self.env_side_s + self.server_s


def plain_env(space: TaskSpace) -> gym.Env:
    """The space's env, truncated at its `max_episode_steps`."""
    return gym.wrappers.TimeLimit(space.make_env(), space.max_episode_steps)


def held_out_return(model: PPO, space: TaskSpace, tasks: list[Task]) -> float:
    """The deterministic policy's mean return over one episode of each task (reset seed: the
    task's index), all tasks stepped together."""
    envs = [plain_env(space) for _ in tasks]
    for env, task in zip(envs, tasks, strict=True):
        env.unwrapped.set_task(space.env_task(task))  # type: ignore[attr-defined]
    obs = np.stack([env.reset(seed=i)[0] for i, env in enumerate(envs)])
    returns = np.zeros(len(envs))
    running = np.ones(len(envs), dtype=bool)
    while running.any():
        actions, _ = model.predict(obs, deterministic=True)
        for i in np.flatnonzero(running):
            obs[i], reward, terminated, truncated, _ = envs[i].step(int(actions[i]))
            returns[i] += float(reward)
            running[i] = not (terminated or truncated)
    return float(returns.mean())


def run_arm(arm: str, seed: int, setting: Setting, held_out: list[Task]) -> Run:
    """Train PPO on `arm`'s tasks for `setting.timesteps` steps; time it; score it."""
    torch.set_num_threads(1)  # 2 threads on 2 loaded cores spin: many times slower
    space = get_space(SPACE)
    # The model is built on plain envs first: Syllabus's evaluator needs its policy before
    # the curriculum's envs exist. Every arm is built the same way.
    probe = DummyVecEnv([partial(plain_env, space)] * setting.envs)
    model = PPO(
        "MlpPolicy",
        probe,
        n_steps=setting.n_steps,
        n_epochs=setting.n_epochs,
        seed=seed,
        device="cpu",
    )
    # No log files: SB3's default logger makes a /tmp/SB3-<time> directory per model.
    model.set_logger(Logger(folder=None, output_formats=[]))
    curriculum = ARM_CLASSES[arm](model, space, seed, setting)
    layers = [curriculum.layer(i) for i in range(setting.envs)]
    # Syllabus's queues belong to the fork context: SB3's default (forkserver) refuses them.
    envs = SubprocVecEnv([partial(make_env, space, layer) for layer in layers], "fork")
    try:
        envs.seed(seed)
        model.set_env(envs)
        server_start = curriculum.server_cpu_s()
        start = time.perf_counter()
        model.learn(total_timesteps=setting.timesteps)
        learn_s = time.perf_counter() - start
        server_s = curriculum.server_cpu_s() - server_start
        clocks = envs.get_attr("peer_clock")
    finally:
        envs.close()
        curriculum.close()
        probe.close()
    return Run(
        arm=arm,
        seed=seed,
        episodes=sum(episodes for _, episodes in clocks),
        env_side_s=sum(seconds for seconds, _ in clocks),
        server_s=server_s,
        learn_s=learn_s,
        held_out=held_out_return(model, space, held_out),
    )


# -- the table ----------------------------------------------------------------------------
def _us(seconds: float, episodes: int) -> float:
    return 1e6 * seconds / max(episodes, 1)


def arm_row(arm: str, runs: list[Run]) -> str:
    """One arm's line: µs per episode over all its seeds' episodes, the mean learn time and
    the mean held-out return with its 95% interval."""
    episodes = sum(r.episodes for r in runs)
    total = _us(sum(r.curriculum_s for r in runs), episodes)
    env_side = _us(sum(r.env_side_s for r in runs), episodes)
    server = _us(sum(r.server_s for r in runs), episodes)
    how = ARM_CLASSES[arm].server_kind
    returns = [r.held_out for r in runs]
    low, high = stratified_bootstrap_ci(returns, statistic=batched_mean)
    learn = np.mean([r.learn_s for r in runs])
    return (
        f"{arm:9s} | {episodes:8d} | {total:10.1f} | {env_side:11.1f} | "
        f"{server:8.1f} {how:13s} | {learn:7.1f} | "
        f"{np.mean(returns):6.1f} [{low:.1f}, {high:.1f}]"
    )


def comparison(runs: list[Run]) -> list[str]:
    """The ratio of the curricula's µs per episode and whether their returns differ by more
    than the seeds' noise."""
    by_arm = {arm: [r for r in runs if r.arm == arm] for arm in ARMS}

    def per_episode(arm: str) -> float:
        rows = by_arm[arm]
        return _us(sum(r.curriculum_s for r in rows), sum(r.episodes for r in rows))

    ours = [r.held_out for r in by_arm["coevo"]]
    theirs = [r.held_out for r in by_arm["syllabus"]]
    p_low, p_high = probability_of_improvement_ci(ours, theirs)
    verdict = "within seed noise" if p_low <= 0.5 <= p_high else "beyond seed noise"
    return [
        f"curriculum µs per episode, coevo / syllabus: "
        f"{per_episode('coevo') / per_episode('syllabus'):.2f}",
        f"held-out return, coevo - syllabus: {np.mean(ours) - np.mean(theirs):+.1f}; "
        f"P(coevo > syllabus) {probability_of_improvement(ours, theirs):.2f} "
        f"[{p_low:.2f}, {p_high:.2f}]: {verdict}",
    ]


def report(runs: list[Run], setting: Setting) -> list[str]:
    """The table's lines."""
    lines = [
        f"SB3 PPO on {SPACE} tasks: {setting.envs} envs (SubprocVecEnv), "
        f"{setting.timesteps} steps per run, {setting.seeds} seed(s) per arm, "
        f"{setting.held_out} held-out tasks; {setting.levels} levels (coevo's buffer, "
        f"Syllabus's catalogue), β {COEVO_PLR.temperature:g}, staleness "
        f"{COEVO_PLR.staleness_coef:g}",
        "arm       | episodes | µs/episode | env side µs | server CPU µs          | learn s | "
        "held-out return [95% CI]",
    ]
    lines += [arm_row(arm, [r for r in runs if r.arm == arm]) for arm in ARMS]
    return lines + comparison(runs)


def main(argv: list[str] | None = None) -> list[Run]:
    """Run every arm on every seed, print each run and the table; return the runs."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run (< 30 s)")
    parser.add_argument("--seeds", type=int, help="seeds per arm")
    parser.add_argument("--timesteps", type=int, help="PPO steps per run")
    args = parser.parse_args(argv)
    setting = QUICK if args.quick else FULL
    overrides = {k: v for k, v in (("seeds", args.seeds), ("timesteps", args.timesteps)) if v}
    setting = Setting(**{**setting.__dict__, **overrides})
    rng = np.random.default_rng(HELD_OUT_SEED)
    held_out = [get_space(SPACE).sample(rng) for _ in range(setting.held_out)]
    runs, start = [], time.perf_counter()
    for seed in range(setting.seeds):  # arms interleaved: a load change hits them alike
        for arm in ARMS:
            run = run_arm(arm, seed, setting, held_out)
            runs.append(run)
            print(
                f"run {arm} seed {seed}: {run.episodes} episodes, "
                f"{_us(run.curriculum_s, run.episodes):.1f} µs/episode, "
                f"learn {run.learn_s:.1f} s, held-out return {run.held_out:.1f}",
                flush=True,
            )
    print("\n".join(report(runs, setting)))
    print(f"total wall time: {time.perf_counter() - start:.0f} s")
    return runs


if __name__ == "__main__":
    main()
