"""Plug-ins named on the command line (`optimizer.name=`, `curriculum.name=`,
`policy.name=`): which settings they have, and which of the preset's they take over."""

from __future__ import annotations

import dataclasses
from typing import Any

import yaml
from hydra.core.hydra_config import HydraConfig

from coevo.cli.console import fail
from coevo.cli.parse import named_plugins, override_key
from coevo.cli.paths import config_file
from coevo.config import plugin_config_class
from coevo.errors import ConfigError
from coevo.settings import defaults_of


def _fields_of(section: str, name: str) -> set[str] | None:
    """The config fields of plug-in `name`, or None when it does not resolve (a bad name is
    parse_config's error, named there)."""
    try:
        return {f.name for f in dataclasses.fields(plugin_config_class(section, name))}
    except Exception:  # noqa: BLE001 - an import error, an unknown name, ...
        return None


def plugin_fields(composed: dict, overrides: list[str], sweep: bool = False) -> set[str]:
    """The settings of the optimizer and curriculum plug-ins this run names (`section.field`):
    a plug-in's group file may leave out fields its config dataclass has, as task and policy
    files may. Every plug-in of a sweep over `section.name` counts."""
    fields: set[str] = set()
    for section in ("optimizer", "curriculum"):
        preset = composed.get(section)
        preset = preset if isinstance(preset, dict) else {}
        named = named_plugins(overrides, section, sweep)
        for name in named or [preset.get("name")]:
            if not isinstance(name, str):
                continue
            found = _fields_of(section, name)
            if found is None and named:
                # The cause, not its effect: a plug-in that does not import would make
                # each of its settings an "unknown key".
                try:
                    plugin_config_class(section, name)
                except ConfigError as error:
                    fail(str(error))
            fields |= {f"{section}.{f}" for f in found or ()}
    return fields


# The optimizer's and curriculum's class names as the presets compose them, before the
# command line's `section.name=` (recorded by `overrides.check_overrides`).
PRESET_NAMES: dict[str, str] = {}


def _carried_fields(section: str, named: str, preset: str | None) -> dict[str, Any] | None:
    """The preset's settings a plug-in named on the command line takes over: of the fields
    of the nearest config class both derive from, those the preset set to other than its
    class's defaults (poet_bipedal's thresholds for Enhanced POET; not POET's own defaults,
    which Enhanced POET sets otherwise; a user's optimizer from ES: nothing, so ES's
    `sigma` does not become its `sigma`). Field -> the preset class's default; None when
    the named class does not resolve."""
    try:
        mine = plugin_config_class(section, named)
    except Exception:  # noqa: BLE001 - parse_config names the error
        return None
    try:
        theirs = plugin_config_class(section, preset) if preset else None
    except Exception:  # noqa: BLE001 - a preset that does not resolve: nothing carries
        theirs = None
    if theirs is None:
        return {}
    common = next(c for c in mine.__mro__ if c in theirs.__mro__)
    if not dataclasses.is_dataclass(common):  # object: no config class in common
        return {}
    defaults = defaults_of(theirs)
    return {f.name: defaults.get(f.name) for f in dataclasses.fields(common) if f.name != "name"}


def named_on_command_line(raw: dict, overrides: list[str]) -> None:
    """A plug-in named by `section.name=...` on the command line replaces the preset's class:
    it takes over the preset's settings of the config class both derive from
    (`_carried_fields`) and those the command line states; the rest are dropped (ES's
    `optimizer.population` is none of a user's optimizer) and take its own defaults."""
    stated = {override_key(o) for o in overrides if "=" in o}
    for section in ("optimizer", "curriculum"):
        names = named_plugins(overrides, section, sweep=False)
        settings = raw.get(section)
        if not names or not isinstance(names[-1], str) or not isinstance(settings, dict):
            continue
        carried = _carried_fields(section, names[-1], PRESET_NAMES.get(section))
        if carried is None:
            continue
        raw[section] = {
            key: value
            for key, value in settings.items()
            if key == "name"
            or (key in carried and value != carried[key])  # set by the preset, not a default
            or _stated(f"{section}.{key}", stated)
        }


def policy_named_on_command_line(raw: dict, overrides: list[str]) -> None:
    """`policy.name=KIND` beside another policy group (mlp by default): the group file's
    settings were for its own kind (mlp's hidden [16]), so they are dropped and KIND's own
    defaults apply (the actor-critic's [64, 64]), as for a plug-in named by optimizer.name.
    What the command line or an experiment preset states is kept."""
    stated = {override_key(o) for o in overrides if "=" in o}
    policy = raw.get("policy")
    choice = HydraConfig.get().runtime.choices.get("policy")
    if "policy.name" not in stated or not isinstance(policy, dict) or policy.get("name") == choice:
        return
    source = config_file("policy", choice) if choice else None
    written = (yaml.safe_load(source.read_text()) or {}) if source is not None else {}
    raw["policy"] = {
        key: value
        for key, value in policy.items()
        if key == "name"
        or key not in written
        or value != written[key]  # an experiment preset's own value
        or _stated(f"policy.{key}", stated)
    }


def _stated(key: str, stated: set[str]) -> bool:
    """Does the command line set `key`, or a key inside it (policy.kwargs.shared)?"""
    return any(k == key or k.startswith(f"{key}.") for k in stated)
