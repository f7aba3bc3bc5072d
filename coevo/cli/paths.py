"""File settings of a composed config: a relative path written in a config file is made
relative to that file (a preset travels with its files)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from hydra.core.hydra_config import HydraConfig

from coevo.cli.parse import override_key

# Settings that name files, as (config group, key inside it). A relative path written in a
# config file is relative to that file (a preset travels with its files); one given on the
# command line stays relative to the working directory.
PATH_SETTINGS = (("eligible", "pairs_file"), ("policy", "file"), ("policy", "start_from"))


def config_file(group: str, choice: str) -> Path | None:
    """The file Hydra composed for `group=choice`: the first source on the search path."""
    for source in HydraConfig.get().runtime.config_sources:
        if source.schema == "file":
            candidate = Path(source.path) / group / f"{choice}.yaml"
            if candidate.is_file():
                return candidate
    return None


def _written_in(path: Path, keys: tuple[str, ...]) -> Any:
    data = yaml.safe_load(path.read_text()) or {}
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def resolve_config_paths(raw: dict[str, Any]) -> None:
    """Rewrite relative file settings that come from a config file against that file."""
    hydra_config = HydraConfig.get()
    given = {override_key(override) for override in hydra_config.overrides.task}
    choices = hydra_config.runtime.choices
    for section, key in PATH_SETTINGS:
        settings = raw.get(section)
        value = settings.get(key) if isinstance(settings, dict) else None  # else: parse_config
        if not isinstance(value, str) or Path(value).is_absolute():
            continue
        if f"{section}.{key}" in given:
            continue  # typed by the user: relative to where they typed it
        # The experiment preset (global package) wins over the section's own group file.
        places = [("experiment", (section, key)), (section, (key,))]
        for group, keys in places:
            choice = choices.get(group)
            source = config_file(group, choice) if choice else None
            if source is not None and _written_in(source, keys) == value:
                raw[section][key] = str((source.parent / value).resolve())
                break
