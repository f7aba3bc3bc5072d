"""Name -> class registries for the plug-in seams (optimizers, curricula).

A name is a registered one ("es", "poet") or an import path "package.module:Class", so a
user's class outside coevo works without registering it. `resolve_entry_point` resolves
the other import paths a config names (`task.entry_point`, `task.task_format`,
`policy.module`); this module imports nothing of coevo but its errors, so any layer may use it.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import traceback
import types
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from coevo.errors import ConfigError, missing_package_hint

T = TypeVar("T")


class Registry(Generic[T]):
    """Named plug-in classes of one kind, each a class or a "package.module:Class" path."""

    def __init__(self, kind: str, base: type, builtins: dict[str, str]):
        self.kind = kind  # "optimizer": the config section and the word in messages
        self.base = base
        self._entries: dict[str, type | str] = dict(builtins)

    def register(self, name: str, target: type | str) -> None:
        """Register `target` (a class or its import path) under `name`."""
        self._entries[name] = target

    def names(self) -> list[str]:
        """The registered names, sorted."""
        return sorted(self._entries)

    def get(self, name: str) -> type[T]:
        """The class registered as `name`, or imported from a "package.module:Class" name.

        Args:
            name: A registered name or an import path.

        Returns:
            The class.

        Raises:
            ConfigError: If `name` is not a non-empty string, is unknown, cannot be imported, or is
                not a subclass of the registry's base.
        """
        field = f"{self.kind}.name"
        allowed = f"allowed: {', '.join(self.names())}, or package.module:Class"
        if not isinstance(name, str) or not name:
            raise ConfigError(
                field, f"must be a string naming a {self.kind}; {allowed}, got {name!r}"
            )
        target = self._entries.get(name, name if ":" in name else None)
        if target is None:
            raise ConfigError(field, f"unknown {self.kind} '{name}'; {allowed}")
        if isinstance(target, str):
            target = _import(field, target)
        if not (isinstance(target, type) and issubclass(target, self.base)):
            raise ConfigError(
                field,
                f"'{name}' is not a {self.base.__module__}.{self.base.__qualname__} subclass",
            )
        return target


def require_config(owner: type, config: object) -> None:
    """TypeError unless `config` is an instance of `owner.config_class` (or a subclass): a
    plug-in's settings are read as attributes of that class, and another object (a dict,
    another plug-in's config) would fail later with an AttributeError far from the cause."""
    expected = owner.config_class  # type: ignore[attr-defined]
    if isinstance(config, expected):
        return
    wanted = expected.__name__
    article = "an" if wanted[:1] in "AEIOU" else "a"
    hint = f"; from a mapping: {wanted}(**values)" if isinstance(config, Mapping) else ""
    raise TypeError(
        f"{owner.__name__} needs {article} {wanted} (or a subclass), got "
        f"{type(config).__name__}{hint}"
    )


def import_failure(field: str, module_name: str, path: str, error: Exception) -> ConfigError:
    """A module whose own code raised while imported (not an ImportError): the error and
    the module's line that raised it, in one line."""
    frames = traceback.extract_tb(error.__traceback__)
    tail = module_name.replace(".", os.sep)
    where = next(
        (
            f" ({f.filename}, line {f.lineno})"
            for f in reversed(frames)
            if f.filename.endswith((tail + ".py", os.path.join(tail, "__init__.py")))
        ),
        "",
    )
    return ConfigError(field, f"importing '{module_name}' of '{path}' raised {error!r}{where}")


def import_object(field: str, path: str) -> Any:
    """The object at `package.module:attribute`, or a ConfigError naming `field`."""
    return _import(field, path)


def _import_module(field: str, module_name: str, path: str, what: str = "") -> types.ModuleType:
    """The module `module_name` of `path`, or a ConfigError naming `field`: why it could not
    be imported (with a hint for a missing package), or the line of its own code that
    raised. `what` names the thing in the message ("module ")."""
    try:
        return importlib.import_module(module_name)
    except ImportError as error:
        hint = missing_package_hint(module_name, error)
        raise ConfigError(
            field, f"cannot import {what}'{module_name}' of '{path}': {error}{hint}"
        ) from None
    except Exception as error:  # the module's own code raised (a bug at its top level)
        raise import_failure(field, module_name, path, error) from None


def _import(field: str, path: str) -> type:
    module_name, _, attribute = path.partition(":")
    module = _import_module(field, module_name, path)
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise ConfigError(field, f"module '{module_name}' has no '{attribute}'") from None


def resolve_entry_point(path: str, field: str = "task.entry_point") -> Any:
    """`package.module:Name` (or `package.module.Name`) to the object it names; errors name
    `field`."""
    module_name, sep, attr = path.partition(":")
    if not sep:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise ConfigError(field, f"'{path}' is not an import path; expected 'package.module:Name'")
    module = _import_module(field, module_name, path, "module ")
    try:
        found = _attribute_path(module, attr)
    except AttributeError:
        found = None
    if found is None or isinstance(found, types.ModuleType):
        if isinstance(found, types.ModuleType) or _is_module(path):
            dotted = path.replace(":", ".")
            raise ConfigError(
                field, f"'{path}' is a module; name what in it to use: '{dotted}:ClassName'"
            )
        raise ConfigError(field, f"module '{module_name}' has no attribute '{attr}'")
    return found


def _is_module(path: str) -> bool:
    """Can `path` (dotted, no colon) be imported as a module?"""
    try:
        return ":" not in path and importlib.util.find_spec(path) is not None
    except (ImportError, ValueError):
        return False


def _attribute_path(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj
