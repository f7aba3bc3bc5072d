"""Registry of task spaces by name: `register` a factory, `get` a (possibly overridden) space."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from gymnasium.error import DependencyNotInstalled

from coevo.errors import ConfigError
from coevo.plugins import import_object
from coevo.tasks.task import TaskSpace

_FACTORIES: dict[str, Callable[[], TaskSpace]] = {}
# Modules that register the built-in spaces; imported on first lookup.
_BUILTIN_MODULES = (
    "coevo.tasks.cartpole",
    "coevo.tasks.pendulum",
    "coevo.tasks.mountain_car",
    "coevo.tasks.mountain_car_reach",
    "coevo.tasks.acrobot",
    "coevo.tasks.acrobot_reach",
    "coevo.tasks.point_mass_gate",
    "coevo.tasks.lunar_lander",
    "coevo.tasks.bipedal_terrain",
    "coevo.tasks.masked",
    "coevo.tasks.maze.space",
    "coevo.tasks.cppn.space",
)
# Built-in modules whose optional dependency is missing (Box2D: `pip install gymnasium[box2d]`;
# neat-python for CPPN terrains: `pip install 'coevo[cppn]'`).
_UNAVAILABLE: dict[str, str] = {}


def register(name: str) -> Callable[[Callable[[], TaskSpace]], Callable[[], TaskSpace]]:
    """Decorator: `@register("cartpole") def cartpole() -> TaskSpace: ...`."""

    def wrap(factory: Callable[[], TaskSpace]) -> Callable[[], TaskSpace]:
        _FACTORIES[name] = factory
        return factory

    return wrap


def _load_builtins() -> None:
    for module in _BUILTIN_MODULES:
        if module in _UNAVAILABLE:
            continue
        try:
            importlib.import_module(module)
        except (ImportError, DependencyNotInstalled) as error:  # `get` tells the user why
            _UNAVAILABLE[module] = str(error)


def names() -> list[str]:
    """The registered task spaces' names, sorted."""
    _load_builtins()
    return sorted(_FACTORIES)


def get(name: str, params: Mapping[str, Mapping[str, Any]] | None = None) -> TaskSpace:
    """The registered task space `name`, or the one `package.module:factory` gives (a
    function returning a TaskSpace, e.g. one a user registers, or a TaskSpace), with
    per-parameter overrides of bounds/init/step."""
    _load_builtins()
    if name in _FACTORIES:
        return _FACTORIES[name]().with_overrides(params)
    if isinstance(name, str) and ":" in name:
        return _imported(name).with_overrides(params)
    missing = "".join(f"; {m} not loaded ({why})" for m, why in _UNAVAILABLE.items())
    raise ConfigError(
        "task.name",
        f"unknown task space '{name}'; known: {', '.join(names())}, or "
        f"package.module:factory (a function returning a TaskSpace){missing}",
    )


def _imported(path: str) -> TaskSpace:
    """The task space at import path `path`: a TaskSpace, or a function returning one."""
    target = import_object("task.name", path)
    if isinstance(target, type):  # a class (a TaskSpace subclass, say): not a space yet
        raise ConfigError(
            "task.name",
            f"'{path}' is a class; name a TaskSpace, or a function returning one (e.g. the "
            "function you registered with @coevo.tasks.register)",
        )
    space = target
    if callable(target) and not isinstance(target, TaskSpace):
        try:
            space = target()
        except ConfigError:
            raise
        except Exception as error:  # noqa: BLE001 - the user's factory, whatever it raised
            raise ConfigError("task.name", f"{path}() failed: {error!r}") from None
    if not isinstance(space, TaskSpace):
        raise ConfigError(
            "task.name",
            f"'{path}' gives a {type(space).__name__}, not a TaskSpace (a TaskSpace, or a "
            "function returning one)",
        )
    return space
