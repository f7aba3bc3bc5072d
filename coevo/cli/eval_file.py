"""`coevo-eval FILE task=SPACE[,name=value,...]`: a policy file made outside coevo (an SB3
zip, a TorchScript module, an RLlib checkpoint directory) played on a task space named on the
command line, as a run's saved policy is played (`coevo.replay`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import yaml

from coevo import tasks
from coevo.cli.conf import CONF_DIR
from coevo.config import parse_config
from coevo.curricula.poet.population import Population
from coevo.errors import ConfigError, yaml_error_text
from coevo.policies.rllib_files import is_rllib_checkpoint
from coevo.replay import episode_returns, parse_task, record_gif
from coevo.tasks.level_kind import is_numeric
from coevo.tasks.task import Task, TaskSpace

# A file's kind by its suffix, as a pairs file reads `policy: FILE` (coevo.eligible).
POLICY_FILES = {".zip": "sb3", ".pt": "torchscript", ".pth": "torchscript"}
KIND_NAMES = {
    "sb3": "SB3 zip",
    "torchscript": "TorchScript module",
    "rllib": "RLlib checkpoint",
}
TASK_EXAMPLE = "e.g. task=pendulum or task=pendulum,gravity=12"


def policy_file_kind(path: Path) -> str | None:
    """'sb3' (.zip) or 'torchscript' (.pt, .pth) for a file coevo-eval plays without a run,
    'rllib' for a directory RLlib wrote (`coevo.policies.rllib_files`); None for anything
    else (a run directory, a checkpoint)."""
    if path.is_dir():
        return "rllib" if is_rllib_checkpoint(path) else None
    return POLICY_FILES.get(path.suffix.lower()) if path.is_file() else None


def named_space(name: str) -> TaskSpace:
    """The task space `task=NAME` names: a task YAML file, coevo's conf/task/NAME.yaml
    (what `coevo-run task=NAME` takes), a registered space or package.module:factory."""
    given_file = name.lower().endswith((".yaml", ".yml"))
    file = Path(name) if given_file else CONF_DIR / "task" / f"{name}.yaml"
    if given_file and not file.is_file():
        raise ConfigError("task", f"{name} not found")
    if file.is_file():
        try:
            raw = yaml.safe_load(file.read_text()) or {}
        except yaml.YAMLError as error:
            raise ConfigError("task", f"{file}: invalid YAML at {yaml_error_text(error)}") from None
        return tasks.space_from_config(parse_config({"task": raw}).task)
    try:
        return tasks.get(name)
    except ConfigError as error:
        if error.field != "task.name":
            raise
        raise ConfigError("task", f"{error.message}, or a task YAML file") from None


def space_and_task(
    text: str | None, warn: Callable[[str], None] | None = None
) -> tuple[TaskSpace, Task]:
    """`SPACE[,name=value,...]`: the space and its initial task with those values (a value
    outside the space's bounds is played as given, and `warn` says so); a one-parameter
    space also takes its value alone (`corridor,3`), a maze a level's JSON."""
    if not text or not text.strip():
        raise ConfigError(
            "task", f"required with a policy file: the task space to play it on, {TASK_EXAMPLE}"
        )
    name, _, values = text.partition(",")
    space = named_space(name.strip())
    values = values.strip()
    if not values:
        return space, space.initial_task()
    if is_numeric(space) and "=" not in values:
        if len(space.names) != 1:
            raise ConfigError(
                "task",
                f"after the space, give name=value,... (parameters of '{space.name}': "
                f"{', '.join(space.names)}); got '{values}'",
            )
        values = f"{space.names[0]}={values}"
    return parse_task(space, Population(), values, space.initial_task(), warn, "the space's")


def replay_policy_file(
    path: Path,
    kind: str,
    task_text: str | None,
    episodes: int,
    seed: int,
    video: Path | None = None,
    warn: Callable[[str], None] | None = None,
) -> tuple[Task, np.ndarray]:
    """(task, returns [episodes]) of the policy in `path` (of `kind`, `policy_file_kind`)
    on the task `task_text` names; a GIF of the first episode when `video` is given."""
    from coevo.eligible import check_policy_fits
    from coevo.policies import loaders

    space, task = space_and_task(task_text, warn)
    env = space.make_env()
    try:
        obs_space, act_space = env.observation_space, env.action_space
    finally:
        env.close()
    if kind == "sb3":
        loaded = loaders.load_sb3_policy(path, "policy")
    elif kind == "rllib":
        loaded = loaders.load_rllib_policy(path, "policy")
    else:
        loaded = loaders.load_torchscript_policy(path, obs_space, act_space, "policy")
    check_policy_fits(loaded.policy, obs_space, act_space, "policy")
    if video is not None:  # first: an env that cannot render stops before the episodes run
        record_gif(space, loaded.policy, loaded.theta, task, seed, video)
    return task, episode_returns(space, loaded.policy, loaded.theta, task, episodes, seed)
