"""Reading a coevo-run command line: Hydra's flags, an override's key and values, a
multirun's sweeps. Nothing here refuses anything (overrides.py checks)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any


def hydra_flags(args: list[str]) -> tuple[str, list[Path]] | None:
    """(--config-name, --config-dir dirs) of Hydra's own flags; None with --config-path."""
    name, dirs = "config", []
    pending = None
    for arg in args:
        if pending is not None:
            if pending == "name":
                name = arg
            else:
                dirs.append(Path(arg).resolve())
            pending = None
        elif arg in ("--config-path", "-cp") or arg.startswith("--config-path="):
            return None
        elif arg in ("--config-name", "-cn"):
            pending = "name"
        elif arg.startswith("--config-name="):
            name = arg.split("=", 1)[1]
        elif arg in ("--config-dir", "-cd"):
            pending = "dir"
        elif arg.startswith("--config-dir="):
            dirs.append(Path(arg.split("=", 1)[1]).resolve())
    return name, dirs


# Hydra's flags that print something and run nothing (no run directory is written).
INSPECT_FLAGS = ("--cfg", "-c", "--info", "-i", "--help", "-h", "--hydra-help", "--resolve")


def is_multirun(args: list[str]) -> bool:
    return any(arg in ("-m", "--multirun") or arg == "hydra.mode=MULTIRUN" for arg in args)


def override_key(arg: str) -> str:
    """The dotted key an override sets, without Hydra's +, ++ or ~ prefix."""
    return arg.split("=", 1)[0].lstrip("+~")


def override_values(arg: str, sweep: bool) -> list[Any]:
    """An override's value as Hydra reads it (unquoted, unescaped; `7` an int, which no
    plug-in name is: parse_config says what it must be); with `sweep` (a multirun), each
    value of a sweep (`a,b`, `choice(a,b)`)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        override = OverridesParser.create().parse_overrides([arg.lstrip("+~")])[0]
    except Exception:  # noqa: BLE001 - Hydra refuses it later, with its own message
        return [arg.split("=", 1)[1] if "=" in arg else ""]
    if override.is_sweep_override():
        values = list(override.sweep_string_iterator()) if sweep else []
        # Sweep strings keep Hydra's escapes (`pkg\\:Class`).
        return [re.sub(r"\\(.)", r"\1", value) for value in values]
    return [override.value()]


def named_plugins(overrides: list[str], section: str, sweep: bool) -> list[Any]:
    """The plug-in names `section.name=...` on the command line gives (several in a sweep)."""
    named = [a for a in overrides if "=" in a and override_key(a) == f"{section}.name"]
    return override_values(named[-1], sweep) if named else []


def each_choice(choices: list[str]) -> list[list[str]]:
    """The group choices of a multirun, one list per composition to check: the first
    options, then each further option of each swept group (`curriculum=poet,enhanced_poet`)
    with the other groups at their first."""
    options = []
    for arg in choices:
        key, _, value = arg.partition("=")
        sweep = "," in value and not value.startswith("[")  # [a,b]: one choice of a list
        options.append([f"{key}={v.strip()}" for v in value.split(",")] if sweep else [arg])
    first = [picks[0] for picks in options]
    runs = [first]
    for index, picks in enumerate(options):
        runs += [[*first[:index], pick, *first[index + 1 :]] for pick in picks[1:]]
    return runs


def value_at(node: Any, key: str) -> Any:
    for part in key.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def sweep_jobs(args: list[str]) -> int | None:
    """How many jobs a multirun's comma sweeps make; None with a sweep function."""
    jobs = 1
    for arg in args:
        key, sep, value = arg.partition("=")
        if not sep or arg.startswith("-") or key.lstrip("+").startswith("hydra"):
            continue
        if "(" in value:
            return None
        if "," in value and not value.startswith(("[", "{")):
            jobs *= len(value.split(","))
    return jobs


def groups_in(search_dirs: list[Path]) -> set[str]:
    return {d.name for base in search_dirs if base.is_dir() for d in base.iterdir() if d.is_dir()}


def leaf_keys(node: Any, prefix: str = "") -> set[str]:
    keys = set()
    if isinstance(node, dict):
        for key, value in node.items():
            path = f"{prefix}{key}"
            keys.add(path)
            keys |= leaf_keys(value, f"{path}.")
    return keys
