"""Registry of task spaces by name: `register` a factory, `get` a (possibly overridden) space."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from coevo.errors import ConfigError
from coevo.tasks.task import TaskSpace

_FACTORIES: dict[str, Callable[[], TaskSpace]] = {}
# Modules that register the built-in spaces; imported on first lookup.
_BUILTIN_MODULES = ("coevo.tasks.cartpole", "coevo.tasks.pendulum")


def register(name: str) -> Callable[[Callable[[], TaskSpace]], Callable[[], TaskSpace]]:
    """Decorator: `@register("cartpole") def cartpole() -> TaskSpace: ...`."""

    def wrap(factory: Callable[[], TaskSpace]) -> Callable[[], TaskSpace]:
        _FACTORIES[name] = factory
        return factory

    return wrap


def _load_builtins() -> None:
    for module in _BUILTIN_MODULES:
        importlib.import_module(module)


def names() -> list[str]:
    _load_builtins()
    return sorted(_FACTORIES)


def get(name: str, params: Mapping[str, Mapping[str, Any]] | None = None) -> TaskSpace:
    """The registered task space `name`, with per-parameter overrides of bounds/init/step."""
    _load_builtins()
    if name not in _FACTORIES:
        raise ConfigError("task.name", f"unknown task space '{name}'; known: {', '.join(names())}")
    return _FACTORIES[name]().with_overrides(params)
