"""The config dataclasses as Hydra structured configs: the one source of every default.

`register()` stores, in Hydra's ConfigStore, the defaults of the run (`run_defaults`), of
the pool (`pool/pool_defaults`) and of every registered optimizer and curriculum
(`optimizer/es_defaults`, `curriculum/poet_defaults`, ...), taken from their dataclasses.
A YAML file in conf/ then only picks one (`defaults: [es_defaults, _self_]`) and states
what it changes. The nodes are plain data: values are validated by `coevo.config`, whose
messages name the field and what is allowed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from hydra.core.config_store import ConfigStore

from coevo import curricula, optimizers
from coevo.config import PoolConfig, RunConfig
from coevo.errors import ConfigError
from coevo.settings import defaults_of

# RunConfig sections that come from config groups, not from `run_defaults`.
_GROUPS = ("task", "policy", "pool", "optimizer", "curriculum")


def register() -> None:
    """Store the run's defaults and every plug-in's config defaults in Hydra's ConfigStore."""
    store = ConfigStore.instance()
    run = {k: v for k, v in defaults_of(RunConfig).items() if k not in _GROUPS}
    store.store(name="run_defaults", node=run)
    store.store(group="pool", name="pool_defaults", node=defaults_of(PoolConfig))
    for section, registry in (("optimizer", optimizers), ("curriculum", curricula)):
        for name in registry.names():
            try:
                config_class = registry.get(name).config_class
            except ConfigError:  # e.g. an optional dependency is missing
                continue
            store.store(group=section, name=f"{name}_defaults", node=defaults_of(config_class))


def compose(conf_dir: Path, overrides: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """The config `coevo-run` composes from `overrides`, as plain data (resolved)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    register()
    with initialize_config_dir(config_dir=str(conf_dir), version_base="1.3"):
        cfg = hydra_compose("config", overrides=list(overrides))
    # A composed config is a mapping with string keys; to_container is typed for any node.
    return cast(dict[str, Any], OmegaConf.to_container(cfg, resolve=True))
