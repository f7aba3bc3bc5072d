"""`CurriculumWrapper`: a gymnasium env whose every episode's task comes from a coevo
task sampler, for any trainer (SB3, CleanRL-style loops, one's own).

At each `reset` the wrapper takes the next task and gives it to the env's `set_task` (in
the form its task space declares, `TaskSpace.env_task`; the task applies at that reset);
when an episode ends it reports the return, the length and, when the env's `info` says
(`success` or SB3's `is_success`), success.

- One env, or envs stepping in one process (`SyncVectorEnv`, SB3's `DummyVecEnv`): pass
  the `TaskSampler` itself: each reset calls `sample()`, each episode end `update()`.
- Envs in other processes (`AsyncVectorEnv`, SB3's `SubprocVecEnv`): serve the sampler
  (`coevo.wrappers.serve(sampler, num_envs)`) and give env i `shared.proxy` and
  `env_index=i`; the order that makes such a run reproducible is in
  `coevo/wrappers/shared.py`. `autoreset` says when the vector env resets a finished
  env: `same_step` (SB3; gymnasium's `AutoresetMode.SAME_STEP`) or `next_step`
  (gymnasium 1.x's default), so that every env counts the same vector steps.

The current episode's task is `wrapper.task` and `info["task"]` at reset. A reset before
the episode ended (a trainer's own `reset()` mid-run) reports the episode as it stands, a
truncated one: every task drawn is reported once, which the shared order relies on.
"""

from __future__ import annotations

from typing import Any, cast

import gymnasium as gym

from coevo.tasks.protocol import TaskSettableEnv
from coevo.tasks.task import Task

AUTORESETS = ("same_step", "next_step")


class CurriculumWrapper(gym.Wrapper):
    """Sets each episode's task from `sampler` and reports each finished episode to it.

    At each reset the task goes to the env through `set_task(space.env_task(task))` and into
    `info["task"]`. When an episode ends, its return, length and success (`info["success"]`
    or `info["is_success"]`, when present) are reported; a reset mid-episode reports the
    episode as it stands.

    Args:
        env: an env whose unwrapped env has `set_task(task)` (coevo's task envs do).
        sampler: a `TaskSampler`, or, with `env_index`, a `VectorSampler` (or its proxy from
            `serve`) shared by several envs.
        env_index: this env's index in a vector env; None for one env with its own sampler.
        autoreset: the vector env's autoreset mode, `"same_step"` (SB3, gymnasium's
            SAME_STEP) or `"next_step"` (gymnasium 1.x's default); a wrong one gives other
            rows or a "no task queued" error.

    Raises:
        ValueError: an unknown `autoreset`.
        TypeError: the env has no `set_task`.
    """

    def __init__(
        self,
        env: gym.Env,
        sampler: Any,
        env_index: int | None = None,
        autoreset: str = "same_step",
    ):
        super().__init__(env)
        if autoreset not in AUTORESETS:
            raise ValueError(f"autoreset must be one of {AUTORESETS}, got {autoreset!r}")
        if not callable(getattr(env.unwrapped, "set_task", None)):
            raise TypeError(
                f"{type(env.unwrapped).__name__} has no set_task(task): the wrapper sets each "
                "episode's task through it (or build the env with CurriculumWrapper.for_space)"
            )
        self.sampler = sampler
        self.env_index = env_index
        self.autoreset = autoreset
        ordered = env_index is not None
        self.space = sampler.task_space() if ordered else sampler.space
        self.task: Task | None = None
        self.tick = 0  # vector steps seen (the shared order's clock)
        self._return = 0.0
        self._length = 0
        self._just_ended = False

    @classmethod
    def for_space(cls, sampler: Any, **kwargs: Any) -> CurriculumWrapper:
        """The wrapper around a new env of the sampler's own task space, truncated at the
        space's `max_episode_steps` (as coevo's pool truncates its episodes)."""
        space = sampler.task_space() if kwargs.get("env_index") is not None else sampler.space
        env = gym.wrappers.TimeLimit(space.make_env(), space.max_episode_steps)
        return cls(env, sampler, **kwargs)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> Any:
        if self._just_ended and self.autoreset == "next_step":
            self.tick += 1  # this vector step resets the env instead of stepping it
        self._just_ended = False
        if self.task is not None:  # reset mid-episode: reported as it stands (truncated)
            self._report({})
            self._just_ended = False
        if self.env_index is None:
            self.task = self.sampler.sample()
        else:
            self.task = self.sampler.next_task(self.env_index, self.tick)
        cast(TaskSettableEnv, self.env.unwrapped).set_task(self.space.env_task(self.task))
        self._return, self._length = 0.0, 0
        obs, info = self.env.reset(seed=seed, options=options)
        return obs, {**info, "task": self.task}

    def step(self, action: Any) -> Any:
        self.tick += 1
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._return += float(reward)
        self._length += 1
        if (terminated or truncated) and self.task is not None:
            self._report(info)
        return obs, reward, terminated, truncated, info

    def _report(self, info: dict[str, Any]) -> None:
        success = info.get("success", info.get("is_success"))
        report = {
            "episode_return": self._return,
            "episode_length": self._length,
            "success": None if success is None else bool(success),
        }
        if self.env_index is None:
            self.sampler.update(self.task, **report)
        else:
            self.sampler.episode_end(self.env_index, self.tick, self.task, **report)
        self.task = None  # reported once, even if the trainer steps on
        self._just_ended = True
