"""coevo's curricula in RLlib (new API stack) through a callback (`pip install 'coevo[rllib]'`).

    config = (
        PPOConfig()
        .environment(CurriculumEnv, env_config={"space": "cartpole"})
        .callbacks(curriculum_callback("plr", "cartpole", seed=0, buffer_size=64))
    )
    algo = config.build_algo()
    algo.train()
    curriculum_of(algo).decisions()      # eligibility.csv's rows: which rule picked each task

The driver's callback starts one sampler in a Ray actor when the algorithm is set up and
attaches it to every training env runner's envs (again when RLlib recreates a runner).
Each env asks it for the next episode's task at reset and reports the episode's return and
length when it ends; at the end of each `sample()` an env runner waits until its reports
are applied, so after `algo.train()` the sampler has seen every finished episode.
RLlib's own curriculum example sets a task on all env runners once per iteration; here a
task is drawn per episode, as coevo's curricula (PLR⊥, ACCEL, ALP-GMM) expect.

Every draw is reported once: a recreated env runner's lost episodes are handed to the next
envs that ask. RLlib does not save callbacks in its checkpoints: `save_state(algo, dir)`
writes the sampler's state beside them, `load_state(algo, dir)` continues from it (the
episodes running at the save played again first). Envs must be vectorised in the env
runner's process (`gym_env_vectorize_mode="sync"`, RLlib's default).
"""

from __future__ import annotations

import functools
import pickle
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
import ray

from coevo.curricula.base import Decision
from coevo.curricula.sampler import TaskSampler, sampler
from coevo.errors import ConfigError
from coevo.integrations.ray_sampler import CurriculumEnv, serve_on_ray
from coevo.tasks.task import TaskSpace

try:
    from ray.rllib.callbacks.callbacks import RLlibCallback
except ImportError as error:  # ray without its rllib extra (dm_tree, its gymnasium pin)
    raise ImportError(
        f"coevo.integrations.rllib needs RLlib ({error}): pip install 'coevo[rllib]' "
        "(ray[rllib] pins its own gymnasium: give it a virtual environment of its own)"
    ) from error

STATE_FILE = "coevo_curriculum.pkl"  # save_state's file in a checkpoint directory

__all__ = [
    "STATE_FILE",
    "CurriculumCallback",
    "CurriculumEnv",
    "curriculum_callback",
    "curriculum_of",
    "load_state",
    "save_state",
]


def curriculum_callback(
    name: str, space: TaskSpace | str, seed: int = 0, **settings: Any
) -> type[CurriculumCallback]:
    """What `config.callbacks(...)` takes: a `CurriculumCallback` class whose sampler is
    `sampler(name, space, seed, **settings)` (built now, so a wrong setting fails here).

    Raises:
        ConfigError: an unknown curriculum or setting (as `coevo.curricula.sampler`).
    """
    return CurriculumCallback.serving(sampler(name, space, seed, **settings))


def _attach(env_runner: Any, actor: Any, space_name: str) -> None:
    """Give every env of `env_runner` (an RLlib EnvRunner) the sampler `actor`."""
    if env_runner.env is None:  # a local runner beside remote ones has no env
        return
    try:
        env_runner.env.unwrapped.call(
            "attach_sampler", actor, space_name, env_runner.worker_index or 0
        )
    except AttributeError as error:
        raise ConfigError(
            "config.environment",
            f"the env has no attach_sampler ({error}): give "
            "config.environment(CurriculumEnv, env_config={'space': ...})",
        ) from error


def _flush(env_runner: Any) -> None:
    """Wait until the reports of `env_runner`'s envs reached the sampler."""
    if env_runner is not None and env_runner.env is not None:
        env_runner.env.unwrapped.call("flush_reports")


class CurriculumCallback(RLlibCallback):
    """An RLlib callback running one coevo task sampler for all training env runners.

    On the driver it starts the sampler's actor (`on_algorithm_init`) and answers for it:
    `state_dict`, `load_state_dict`, `decisions`, `summary` (also in each `train()` result
    under "coevo"). On env runners it waits for their reports at the end of each sample.

    RLlib builds its callbacks from a class with no arguments: `serving(sampler)` (or
    `curriculum_callback`) gives that class, its sampler a class attribute.
    """

    task_sampler: ClassVar[TaskSampler | None] = None  # the sampler a serving() class serves

    def __init__(self) -> None:
        super().__init__()
        if self.task_sampler is None:
            raise TypeError(
                "CurriculumCallback serves a sampler: give config.callbacks "
                "curriculum_callback(name, space, ...) or CurriculumCallback.serving(sampler)"
            )
        self.actor: Any = None  # the sampler's actor, on the driver once the algorithm is set up

    @classmethod
    def serving(cls, task_sampler: TaskSampler) -> type[CurriculumCallback]:
        """A subclass whose instances serve `task_sampler` (a copy of it goes to the actor)."""
        attributes = {"task_sampler": task_sampler, "__module__": cls.__module__}
        return type(f"{cls.__name__}_{task_sampler.name}", (cls,), attributes)

    def on_algorithm_init(self, *, algorithm: Any, **kwargs: Any) -> None:
        """Start the sampler's actor and attach it to the training env runners' envs."""
        mode = gym.VectorizeMode(algorithm.config.gym_env_vectorize_mode)
        if mode != gym.VectorizeMode.SYNC:
            raise ConfigError(
                "env_runners.gym_env_vectorize_mode",
                f"must be 'sync' (the envs reach the sampler's actor from the env runner's "
                f"process), got '{mode.value}'",
            )
        self.actor = serve_on_ray(self._sampler())
        self._attach(algorithm.env_runner_group, None)

    def on_env_runners_recreated(
        self,
        *,
        algorithm: Any,
        env_runner_group: Any,
        env_runner_indices: list[int],
        is_evaluation: bool,
        **kwargs: Any,
    ) -> None:
        """Attach the sampler to recreated training env runners; the draws of the episodes
        they lost are handed out again."""
        if not is_evaluation and self.actor is not None:
            ray.get(self.actor.lost.remote(list(env_runner_indices)))
            self._attach(env_runner_group, env_runner_indices)

    def on_sample_end(self, *, env_runner: Any = None, **kwargs: Any) -> None:
        """Wait until this env runner's finished episodes reached the sampler."""
        _flush(env_runner)

    def on_train_result(self, *, algorithm: Any, result: dict, **kwargs: Any) -> None:
        """Add the sampler's counts to the iteration's result under "coevo"."""
        result["coevo"] = self.summary()

    def _attach(self, env_runner_group: Any, indices: list[int] | None) -> None:
        attach = functools.partial(_attach, actor=self.actor, space_name=self._sampler().space.name)
        env_runner_group.foreach_env_runner(
            attach, remote_worker_ids=indices, local_env_runner=indices is None
        )

    def _sampler(self) -> TaskSampler:
        assert self.task_sampler is not None  # __init__ refused a class without one
        return self.task_sampler

    def _served(self) -> Any:
        if self.actor is None:
            raise RuntimeError(
                "the curriculum's sampler starts with the algorithm: call this on the "
                "driver's callback (curriculum_of(algo)) after config.build_algo()"
            )
        return self.actor

    def state_dict(self) -> dict[str, Any]:
        """The sampler's `state_dict()` (a `TaskSampler` of the same curriculum loads it)."""
        return ray.get(self._served().state_dict.remote())

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from a sampler's `state_dict()`: the episodes running when it was saved
        are played again first, and the envs' running episodes are not reported to it."""
        ray.get(self._served().load_state_dict.remote(state))

    def decisions(self) -> list[Decision]:
        """The sampler's decision rows so far (eligibility.csv's rows of a run)."""
        return ray.get(self._served().decisions.remote())

    def summary(self) -> dict[str, Any]:
        """The sampler's name, episodes reported, draws pending and owed, reports dropped."""
        return ray.get(self._served().summary.remote())


def curriculum_of(algorithm: Any) -> CurriculumCallback:
    """The driver's `CurriculumCallback` of an RLlib algorithm.

    Raises:
        ValueError: the algorithm has none in `config.callbacks`.
    """
    callbacks = algorithm.callbacks
    for callback in callbacks if isinstance(callbacks, list) else [callbacks]:
        if isinstance(callback, CurriculumCallback):
            return callback
    raise ValueError(
        "the algorithm has no CurriculumCallback: add curriculum_callback(...) to config.callbacks"
    )


def save_state(algorithm: Any, directory: str | Path) -> Path:
    """Write the algorithm's sampler state to `directory`/coevo_curriculum.pkl (beside an
    RLlib checkpoint saved there by `algo.save_to_path(directory)`); returns the file."""
    path = Path(directory) / STATE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(curriculum_of(algorithm).state_dict()))
    return path


def load_state(algorithm: Any, directory: str | Path) -> None:
    """Continue the algorithm's sampler from `directory`/coevo_curriculum.pkl.

    Raises:
        FileNotFoundError: no such file.
        ConfigError: the file holds another curriculum's state.
    """
    state = pickle.loads((Path(directory) / STATE_FILE).read_bytes())
    curriculum_of(algorithm).load_state_dict(state)
