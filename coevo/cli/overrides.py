"""Checks of coevo-run's overrides before Hydra composes the run, where coevo's answer is
better than Hydra's: an unknown key named with the closest valid keys, a group choice that
does not exist with the closest and the allowed ones (exit 2, where Hydra exits 1 with a
traceback-like message). Also what Hydra needs passed otherwise: `++` for a dataclass field
a group file leaves out, or for a key added to a mapping."""

from __future__ import annotations

import dataclasses
import difflib
import re
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf

from coevo import hydra_configs
from coevo.cli.conf import CONF_DIR
from coevo.cli.console import fail
from coevo.cli.parse import (
    INSPECT_FLAGS,
    each_choice,
    groups_in,
    hydra_flags,
    is_multirun,
    leaf_keys,
    named_plugins,
    value_at,
)
from coevo.cli.plugins import PRESET_NAMES, plugin_fields
from coevo.config import TaskConfig
from coevo.errors import yaml_error_text
from coevo.policies.config import PolicyConfig

# Settings of the sections whose group files (conf/task/*.yaml, conf/policy/*.yaml, a
# user's own) state only some of their dataclass's fields.
DECLARED_FIELDS = frozenset(
    f"{section}.{f.name}"
    for section, config_class in (("task", TaskConfig), ("policy", PolicyConfig))
    for f in dataclasses.fields(config_class)
)


# What the composed configs of a command have, for the `++` Hydra needs (`_for_hydra`).
@dataclasses.dataclass
class _Seen:
    mappings: set[str] = dataclasses.field(default_factory=set)  # keys whose value is a mapping
    # A section's dataclass fields that its group file leaves out (task.solved_score with
    # conf/task/cartpole.yaml, a user's task file): settings all the same, passed as `++`.
    unstated: set[str] = dataclasses.field(default_factory=set)
    existing: set[str] = dataclasses.field(default_factory=set)  # every key (values, not groups)


def check_overrides(args: list[str]) -> tuple[list[str], DictConfig | None]:
    """Refuse an unknown key (exit 2, naming the closest valid keys) before Hydra would
    answer with its own message and exit 1; a group choice that does not exist likewise.
    A multirun sweep over groups is checked option by option.

    Returns the arguments for Hydra: a value given to a whole mapping (e.g.
    `policy.kwargs={width: 8}`, an empty `{}` in the preset) is passed as `++key=...`, since
    Hydra's struct mode refuses keys the mapping does not have yet otherwise; and Hydra's
    own settings as composed (for the run directory), None when not checked here."""
    hydra_configs.register()
    flags = hydra_flags(args)
    if flags is None:  # a primary config of the user's own (--config-path): Hydra checks
        return args, None
    config_name, extra_dirs = flags
    overrides = [a for a in args if "=" in a and not a.startswith("-")]
    search, groups = _search_path(overrides, extra_dirs)
    choices, values, settings = _sorted_overrides(overrides, groups)
    multirun = is_multirun(args)
    if multirun and any("(" in arg.split("=", 1)[1] for arg in choices):
        # A sweep function over groups (choice, glob): Hydra expands and checks it. The
        # sections' dataclass fields a group file may leave out go as `++` all the same.
        fields = [a for a in values if a.split("=", 1)[0] in DECLARED_FIELDS]
        return [f"++{a}" if a in fields else a for a in args], None
    runs = each_choice(choices) if multirun else [choices]
    seen = _Seen()
    hydra_settings = None
    for index, picked in enumerate(runs):
        swept = [pick for pick in picked if pick not in choices]  # this run's swept options
        # The first (a single run's only) composition also gives Hydra's own settings.
        if index == 0:
            composed, hydra_settings = _composed(config_name, [*search, *picked], settings)
        else:
            composed = _composed(config_name, [*search, *picked])[0]
        _check_keys(composed, values, overrides, swept, multirun, seen)
    passed = _for_hydra(args, values, seen, groups)
    if any(arg.split("=", 1)[0] in INSPECT_FLAGS for arg in args):
        return passed, None
    if multirun or hydra_settings is None or not _names_config_values(hydra_settings):
        # A multirun's swept values cannot compose as one config: its first choices.
        return passed, hydra_settings
    # A single run whose directory names a setting of the config (`runs/${seed}`).
    return passed, _settings_again(config_name, search, passed)


def _sorted_overrides(
    overrides: list[str], groups: set[str]
) -> tuple[list[str], list[str], list[str]]:
    """(group choices, values, Hydra's own settings) among the `key=value` overrides;
    `+key` and `~key` ones are in none (Hydra checks them), nor hydra.searchpath."""
    choices, values, settings = [], [], []
    for arg in overrides:
        key = arg.split("=", 1)[0]
        if key.lstrip("+").startswith(("hydra.", "hydra/")) or key == "hydra":
            if key != "hydra.searchpath":  # already in the search path
                settings.append(arg)
        elif not key.startswith(("+", "~")):
            (choices if key.split("@")[0] in groups else values).append(arg)
    return choices, values, settings


def _settings_again(config_name: str, search: list[str], passed: list[str]) -> DictConfig | None:
    """Hydra's settings composed again with every override passed on, as Hydra will; None
    when that fails (only the early run directory check is then skipped)."""
    given = [a for a in passed if "=" in a and not a.startswith(("-", "hydra.searchpath="))]
    try:
        return compose(config_name, [*search, *given], hydra_config=True)["hydra"]
    except Exception:  # noqa: BLE001 - only the early directory check is skipped
        return None


def _names_config_values(hydra_settings: DictConfig) -> bool:
    """Whether the run directory Hydra's settings write (`hydra.run.dir`) interpolates more
    than the time (`${now:...}`) or Hydra's own settings: a key of the config, which the
    command's values may change."""
    written: Any = OmegaConf.to_container(hydra_settings["run"], resolve=False)
    inner = re.findall(r"\$\{([^}]*)", str(written["dir"]))
    return any(not part.startswith(("now:", "hydra")) for part in inner)


def _search_path(overrides: list[str], extra_dirs: list[Path]) -> tuple[list[str], set[str]]:
    """The `hydra.searchpath` override to compose with (--config-dir's directories first,
    then the command's own), and the config groups found along it."""
    paths = [f"file://{d}" for d in extra_dirs]  # --config-dir: first on the search path
    for arg in overrides:
        if arg.startswith("hydra.searchpath="):
            text = arg.split("=", 1)[1].strip("[]")
            paths += [p.strip() for p in text.split(",") if p.strip()]
    search = [f"hydra.searchpath=[{', '.join(paths)}]"] if paths else []
    search_dirs = [CONF_DIR, *(Path(p.removeprefix("file://")) for p in paths)]
    return search, groups_in(search_dirs)


def _composed(
    config_name: str, overrides: list[str], settings: list[str] | None = None
) -> tuple[dict, DictConfig | None]:
    """The config the group choices compose (without Hydra's section), or the reason they
    do not (exit 2); and, given `settings` (Hydra's own overrides), Hydra's section composed
    with them in the same composition (None where they do not compose: Hydra says why when
    it runs)."""
    if settings is not None:
        try:
            with_hydra = compose(config_name, [*overrides, *settings], hydra_config=True)
        except Exception:  # noqa: BLE001 - the choices alone: whether they compose, and why
            return _composed(config_name, overrides)
        composed: Any = OmegaConf.to_container(with_hydra, resolve=False)
        del composed["hydra"]
        return _preset_names(composed), with_hydra["hydra"]
    from hydra.errors import HydraException

    try:
        return _preset_names(compose(config_name, overrides)), None
    except HydraException as error:
        fail(choice_error(str(error)))
    except yaml.YAMLError as error:  # a config file of the user's own (hydra.searchpath)
        mark = getattr(error, "problem_mark", None)
        where = f"{mark.name}: " if mark is not None else ""
        fail(f"{where}invalid YAML at {yaml_error_text(error)}")


def _preset_names(composed: dict) -> dict:
    """Note the optimizer's and curriculum's preset class names (`PRESET_NAMES`)."""
    for section in ("optimizer", "curriculum"):
        preset = composed.get(section)
        if isinstance(preset, dict) and isinstance(preset.get("name"), str):
            PRESET_NAMES[section] = preset["name"]
    return composed


def _check_keys(
    composed: dict,
    values: list[str],
    overrides: list[str],
    swept: list[str],
    multirun: bool,
    seen: _Seen,
) -> None:
    """Refuse a key that `composed` (one composition of a multirun: `swept`) does not have
    and no dataclass of its sections declares; note what `_for_hydra` needs in `seen`."""
    known = leaf_keys(composed)
    seen.existing |= known
    seen.mappings |= {k for k in known if isinstance(value_at(composed, k), dict)}
    declared = DECLARED_FIELDS | plugin_fields(composed, overrides, multirun)
    for arg in values:
        key = arg.split("=", 1)[0]
        if key not in known and key in declared:
            seen.unstated.add(key)
        elif key not in known:
            fail(_unknown_key(key, known, declared, overrides, swept, multirun, seen.mappings))


def _unknown_key(
    key: str,
    known: set[str],
    declared: frozenset[str],
    overrides: list[str],
    swept: list[str],
    multirun: bool,
    mappings: set[str],
) -> str:
    """An unknown key's error: the closest valid keys, and Hydra's `+` where the key lies
    in an open mapping."""
    candidates = sorted(set(known) | declared)
    section = key.split(".", 1)[0]
    plugin = section in ("optimizer", "curriculum")
    if plugin and named_plugins(overrides, section, multirun):
        # A plug-in named here: its own settings, not the preset's it replaces.
        candidates = [
            c
            for c in candidates
            if c != section and (not c.startswith(f"{section}.") or c in declared)
        ]
    close = difflib.get_close_matches(key, candidates, n=3, cutoff=0.6)
    hint = f"; did you mean: {', '.join(close)}" if close else ""
    where = f" with {', '.join(swept)}" if swept else ""
    # Only an open mapping below a section (task.params, policy.kwargs) takes keys of the
    # user's own; a section's settings are a fixed set.
    parents = {key.rsplit(".", n)[0] for n in range(1, key.count(".") + 1)}
    opened = any(p in mappings and "." in p for p in parents)
    plus = f" (a key the config does not have needs Hydra's '+' prefix: +{key}=...)"
    return f"{key}: unknown key{where}{hint}{plus if opened else ''}"


def _for_hydra(args: list[str], values: list[str], seen: _Seen, groups: set[str]) -> list[str]:
    """The arguments as Hydra must get them: `++` for a key added to a mapping or a field
    its group file leaves out, and for `+key` on a key the config already has."""
    add = seen.mappings | seen.unstated
    passed = [f"++{a}" if a in values and a.split("=", 1)[0] in add else a for a in args]

    # `+key=...` (the README's way to add a task parameter) on a key the config already has
    # is Hydra's error (exit 1); `++` adds or overrides, so `+` never fails for that reason.
    # Only for a key the composed config already has as a value: never a config group
    # (`+group=option` adds it to the defaults; Hydra refuses `++` there, nested groups and
    # pkg:// search paths included), nor Hydra's own settings.
    def already_there(arg: str) -> bool:
        key = arg.split("=", 1)[0].lstrip("+")
        return "/" not in key and "@" not in key and key in seen.existing and key not in groups

    return [
        f"+{a}" if a.startswith("+") and not a.startswith("++") and already_there(a) else a
        for a in passed
    ]


def choice_error(text: str) -> str:
    """Hydra's answer to a group choice it cannot find, as one line naming the group, the
    closest choices and the allowed ones (not the `*_defaults` nodes the presets build on)."""

    text = text.split("\nConfig search path")[0]
    missing = re.search(r"Could not find '([^'/]+)/([^']+)'", text)
    listed = re.search(r"Available options in '[^']+':\s*(.*)", text, re.S)
    if not (missing and listed):
        return text.replace(":\n\t", ": ").replace("\n\t", ", ").replace("\n", " ")
    group, name = missing.groups()
    options = [o.strip() for o in re.split(r"[\n\t,]+", listed.group(1)) if o.strip()]
    allowed = [o for o in options if not o.endswith("_defaults")]
    close = difflib.get_close_matches(name, allowed, n=3, cutoff=0.6)
    hint = f"; did you mean: {', '.join(close)}" if close else ""
    return f"{group}: unknown choice '{name}'{hint}; allowed: {', '.join(allowed)}"


def compose(config_name: str, overrides: list[str], hydra_config: bool = False) -> Any:
    """Compose a Hydra config from coevo's config directory and overrides.

    Args:
        config_name: The primary config's name.
        overrides: Hydra overrides.
        hydra_config: Also return Hydra's own section, as an unresolved DictConfig.

    Returns:
        The config as a plain dict (unresolved), or the DictConfig when `hydra_config` is set.
    """
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name, overrides=overrides, return_hydra_config=hydra_config)
    return cfg if hydra_config else OmegaConf.to_container(cfg, resolve=False)
