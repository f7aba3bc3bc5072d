"""The run configuration: typed sections, validated before any worker or Ray starts.

Every error names the dotted field and what is allowed, e.g.
`pool.num_workers: must be an integer >= 1, got 0`.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from coevo import curricula, optimizers
from coevo.curricula.base import CurriculumConfig
from coevo.curricula.poet import PoetConfig
from coevo.errors import ConfigError
from coevo.optimizers.base import OptimizerConfig
from coevo.optimizers.es import ESConfig
from coevo.policies.config import PolicyConfig
from coevo.pool.limits import WorkerLimits, limit_setting
from coevo.pool.pool import Backend
from coevo.settings import Checked, Rule, checked_value, rule_of, setting
from coevo.tasks.test_sets import TestSetConfig


@dataclass(frozen=True)
class TaskConfig(Checked):
    """The `task` section: which task space, and overrides of its parameters."""

    section = "task"

    name: str = setting("cartpole", doc="a registered task space (coevo/tasks/registry.py)")
    # A registered space: per-parameter overrides of low/high/init/step/round_to. A generic
    # space (env_id or entry_point): each parameter's full schema, plus `kwarg` or `attr`
    # for env_id (see coevo/tasks/generic.py).
    params: dict = setting(factory=dict)
    max_episode_steps: int | None = setting(None, low=1, doc="null: the space's own limit")
    env_id: str | None = setting(None, doc="any gymnasium id")
    entry_point: str | None = setting(None, doc='"package.module:Class" with get_task/set_task')
    env_kwargs: dict = setting(factory=dict, doc="fixed constructor keywords")
    env_config: dict | None = setting(
        None, doc="entry_point only: one dict argument, as RLlib passes it"
    )
    # entry_point only: how a task reaches set_task: dict, scalar (a one-parameter space's
    # bare value, e.g. an int level), or "package.module:function" (called with the dict).
    task_format: str = setting("dict")
    solved_score: float | None = setting(
        None, doc="a return that counts as solved (test sets, warnings); null: the space's own"
    )


# pool.address: "auto" (the cluster `ray start` last started here) or a head's HOST:PORT.
_ADDRESS = re.compile(r"^(auto|(\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):\d{1,5})$")


@dataclass(frozen=True)
class PoolConfig(Checked):
    """The `pool` section: the evaluation backend, its workers and envs per worker."""

    section = "pool"

    backend: str = setting("ray", choices=tuple(b.value for b in Backend))
    num_workers: int = setting(2, low=1)
    envs_per_worker: int = setting(64, low=1)
    address: str | None = setting(
        None, doc='an existing Ray cluster ("auto" or host:port); null: an embedded Ray'
    )
    # Ray backend only (coevo/pool/limits.py); null: no limit.
    episode_timeout_s: float | None = limit_setting("an env call longer than this: worker replaced")
    worker_memory_mb: float | None = limit_setting("a worker above this after a chunk: recycled")
    wait_for_workers: bool = setting(
        False,
        doc="ray: start the first generation once Ray's workers answer (else calls run in "
        "this process while Ray starts: a short run may never reach Ray)",
    )

    def check(self) -> None:
        """Refuse a malformed Ray address.

        Raises:
            ConfigError: If `address` is neither "auto" nor HOST:PORT.
        """
        address = self.address
        if address is not None and not _ADDRESS.match(address):
            raise ConfigError(
                "pool.address",
                f"must be 'auto' or HOST:PORT of a Ray cluster's head (null: an embedded Ray), "
                f"got {address!r}",
            )
        WorkerLimits(self.episode_timeout_s, self.worker_memory_mb).check_backend(self.backend)
        if self.wait_for_workers and self.backend != Backend.RAY.value:
            raise ConfigError(
                "pool.wait_for_workers",
                f"only for backend=ray (backend={self.backend}'s workers are this process; "
                "a run resumed on the local backend: add pool.wait_for_workers=false)",
            )


@dataclass(frozen=True)
class EligibleConfig(Checked):
    """mode=eligible_parents: evaluate the pairs of a file, K episodes each."""

    section = "eligible"

    pairs_file: str | None = setting(None, doc="YAML or CSV of tasks and policy paths")
    episodes: int = setting(5, low=1)
    threshold: float | None = setting(
        None, doc="a pair is eligible when its score reaches this; null: the space's solved_score"
    )


@dataclass(frozen=True)
class RunConfig(Checked):
    """A whole run's configuration: mode, seed and every section."""

    mode: str = setting("coevolve", choices=("coevolve", "eligible_parents"))
    logger: str = setting("none", choices=("none", "tensorboard"), doc="summary.csv scalars")
    seed: int = setting(0, low=0)
    task: TaskConfig = field(default_factory=TaskConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    pool: PoolConfig = field(default_factory=PoolConfig)
    # Plug-in sections: `name` picks the class, whose own config dataclass types the rest.
    optimizer: OptimizerConfig = field(default_factory=ESConfig)
    curriculum: CurriculumConfig = field(default_factory=PoetConfig)
    eligible: EligibleConfig = field(default_factory=EligibleConfig)
    test_set: TestSetConfig = field(default_factory=TestSetConfig)  # held-out "% mastered"
    resume: str | None = None
    checkpoints_kept: int = setting(3, low=1)
    # Rebuild report.html at most this often (0: every generation).
    report_every_s: float = setting(30.0, low=0.0)

    def check(self) -> None:
        """Refuse settings that contradict each other across sections.

        Raises:
            ConfigError: If the mode lacks a setting it needs or has one it cannot use, or two
                sections disagree.
        """
        if self.mode == "eligible_parents" and not self.eligible.pairs_file:
            raise ConfigError(
                "eligible.pairs_file", "required with mode=eligible_parents (a YAML or CSV file)"
            )
        if self.mode == "eligible_parents" and self.policy.start_from:
            raise ConfigError(
                "policy.start_from",
                "not used by mode=eligible_parents (it trains nothing: each pair of "
                "eligible.pairs_file names its own policy); leave it out",
            )


def parse_config(raw: Mapping[str, Any]) -> RunConfig:
    """Build a validated `RunConfig` from a plain mapping (e.g. a resolved Hydra config)."""
    config = _build(RunConfig, _policy_for_optimizer(raw), "")
    for section in (config.optimizer, config.curriculum):
        check = getattr(section, "check", None)
        # A plug-in's checks across its fields (a `Checked` config ran them when built).
        if check is not None and not isinstance(section, Checked):
            check()
    return config


def _policy_for_optimizer(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """What coevo-run's config groups pick and a plain mapping may leave out: optimizer=ppo
    trains the actor-critic (conf/optimizer/ppo.yaml), whose layers default to its own
    (64, 64), not the mlp's `policy.hidden` (the conv actor-critic's to its (64,))."""
    policy, optimizer = raw.get("policy"), raw.get("optimizer")
    if not isinstance(policy, Mapping | None) or not isinstance(optimizer, Mapping | None):
        return raw  # _build names the section that is not a mapping
    policy = dict(policy or {})
    if "name" not in policy and _trains_with_ppo((optimizer or {}).get("name")):
        policy["name"] = "actor_critic"
    if policy.get("name") == "actor_critic" and "hidden" not in policy:
        # Loaded only for an actor-critic config: importing coevo.config stays light.
        from coevo.policies.actor_critic import DEFAULT_HIDDEN

        policy["hidden"] = list(DEFAULT_HIDDEN)
    if policy.get("name") == "conv_actor_critic" and "hidden" not in policy:
        from coevo.policies.conv_actor_critic import DEFAULT_HIDDEN as CONV_HIDDEN

        policy["hidden"] = list(CONV_HIDDEN)
    return {**raw, "policy": policy} if policy else raw


def _trains_with_ppo(name: Any) -> bool:
    """Is optimizer `name` PPO or a plug-in subclassing it? (An unknown name: False here,
    refused by name when its section is built.)"""
    if not isinstance(name, str):
        return False
    try:
        return optimizers.is_ppo(optimizers.get(name))
    except (ConfigError, TypeError):
        return False


# Sections whose `name` picks a plug-in class; the class's `config_class` types the section.
_PLUGINS = (
    ("optimizer", "optimizer", optimizers.get),
    ("curriculum", "curriculum", curricula.get),
)


# Each plug-in section's base config class: what a plug-in's config_class must subclass, and
# its config_class when it sets none of its own.
_BASE_CONFIGS = {"optimizer": optimizers.OptimizerConfig, "curriculum": curricula.CurriculumConfig}


def _plugin_config(raw: Any, kind: str, get: Any) -> type:
    section = {f.name: f for f in dataclasses.fields(RunConfig)}[kind]
    assert section.default_factory is not dataclasses.MISSING  # every plug-in section has one
    default = section.default_factory().name
    name = raw.get("name", default) if isinstance(raw, Mapping) else default
    plugin = get(name)
    config_class: type = plugin.config_class
    if not (dataclasses.is_dataclass(config_class) and "name" in config_class.__dataclass_fields__):
        raise ConfigError(f"{kind}.name", f"{name}'s config_class must be a dataclass with `name`")
    base = _BASE_CONFIGS[kind]
    if not issubclass(config_class, base):  # its settings would go unchecked (ranges, keys)
        raise ConfigError(
            f"{kind}.name",
            f"{name}'s config_class {config_class.__name__} must subclass {base.__name__}",
        )
    fields = set(config_class.__dataclass_fields__)
    undeclared = [  # the class's own annotations (get_annotations: not its bases')
        key
        for key, hint in inspect.get_annotations(config_class).items()
        if key not in fields and "ClassVar" not in str(hint)  # ClassVars are never fields
    ]
    if undeclared:  # a subclass of a dataclass, itself undecorated: its fields are not fields
        raise ConfigError(
            f"{kind}.name",
            f"{name}'s config_class {config_class.__name__} declares {', '.join(undeclared)} "
            "but is not a dataclass itself: decorate it with @dataclass(frozen=True)",
        )
    extra = [key for key in raw if key not in fields] if isinstance(raw, Mapping) else []
    if extra and config_class is base:
        # The base class's config: the plug-in has no config_class of its own (yet).
        raise ConfigError(
            f"{kind}.{extra[0]}",
            f"unknown key: {plugin.__name__}.config_class is {config_class.__name__}, the base "
            f"config ({', '.join(sorted(fields))} only); give {plugin.__name__} a "
            "config_class, a frozen dataclass subclassing it with your settings",
        )
    return config_class


def plugin_config_class(section: str, name: str) -> type:
    """The config dataclass of plug-in `name` (registered, or an import path) in `section`
    ("optimizer" or "curriculum"): the fields that section takes."""
    for kind, _, get in _PLUGINS:
        if kind == section:
            return _plugin_config({"name": name}, kind, get)
    raise ValueError(f"no plug-in section {section!r}; allowed: {[k for k, _, _ in _PLUGINS]}")


@dataclass(frozen=True)
class FieldInfo:
    """One leaf field of the run config, for tests and docs: its dotted path, type hint and
    rule, and `plugin`: ("optimizer", "ars") when it belongs to a plug-in's own config."""

    path: str
    hint: Any
    rule: Rule
    plugin: tuple[str, str] | None = None


def describe_fields() -> list[FieldInfo]:
    """Every field of `RunConfig`, with each registered plug-in's fields under its section."""
    out: list[FieldInfo] = []

    def walk(cls: type, prefix: str, plugin: tuple[str, str] | None) -> None:
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            path = f"{prefix}{f.name}"
            if cls is RunConfig and f.name in {name for name, _, _ in _PLUGINS}:
                continue
            if dataclasses.is_dataclass(hints[f.name]):
                walk(hints[f.name], f"{path}.", plugin)
            else:
                out.append(FieldInfo(path, hints[f.name], rule_of(f), plugin))

    walk(RunConfig, "", None)
    for section, _, get in _PLUGINS:
        registry = optimizers if section == "optimizer" else curricula
        for name in registry.names():
            walk(get(name).config_class, f"{section}.", (section, name))
    return out


def _build(cls: type, raw: Any, prefix: str) -> Any:
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigError(prefix.rstrip(".") or "config", f"must be a mapping, got {raw!r}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for name, kind, registry in _PLUGINS:
        if cls is RunConfig and name in raw and raw[name] is not None:
            hints[name] = _plugin_config(raw[name], kind, registry)
    unknown = [key for key in raw if key not in fields]
    if unknown:
        raise ConfigError(f"{prefix}{unknown[0]}", f"unknown key; allowed: {', '.join(fields)}")
    values = {}
    for name, value in raw.items():
        path = f"{prefix}{name}"
        hint = hints[name]
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            values[name] = _build(hint, value, f"{path}.")
        else:
            values[name] = checked_value(path, value, hint, rule_of(fields[name]))
    return cls(**values)
