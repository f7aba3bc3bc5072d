"""Config fields that carry their own rules: the default, the allowed range or choices.

Every config dataclass (the run's sections and each plug-in's own config) declares its
fields with `setting(...)`, so a default and what is allowed are stated once, beside the
field; `coevo.config` validates any such dataclass by reading this metadata.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import inspect
import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from coevo.errors import ConfigError


@dataclass(frozen=True)
class Rule:
    """What a field allows: a range (ends open or closed) and/or a set of choices."""

    low: float | None = None
    high: float | None = None
    open_low: bool = False  # the value must not reach `low`
    open_high: bool = False
    choices: tuple[str, ...] | None = None
    doc: str = ""

    def range_text(self) -> str:
        """The allowed range in words, e.g. " in [0, 1)" (empty when unbounded)."""
        low, high = self.low, self.high
        if low is not None and high is not None:
            left, right = "(" if self.open_low else "[", ")" if self.open_high else "]"
            return f" in {left}{low:g}, {high:g}{right}"
        if low is not None:
            return f" {'>' if self.open_low else '>='} {low:g}"
        if high is not None:
            return f" {'<' if self.open_high else '<='} {high:g}"
        return ""

    def in_range(self, value: float) -> bool:
        """Whether `value` lies in the allowed range."""
        below = self.low is not None and (value <= self.low if self.open_low else value < self.low)
        above = self.high is not None and (
            value >= self.high if self.open_high else value > self.high
        )
        return not (below or above)


_KEY = "coevo"


def setting(
    default: Any = dataclasses.MISSING,
    *,
    low: float | None = None,
    high: float | None = None,
    open_low: bool = False,
    open_high: bool = False,
    choices: tuple[str, ...] | None = None,
    factory: Callable[[], Any] | None = None,
    doc: str = "",
) -> Any:
    """A dataclass field with its default and rule, e.g. `sigma: float = setting(0.1,
    low=0, open_low=True)`."""
    rule = Rule(low, high, open_low, open_high, choices, doc)
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata={_KEY: rule})
    return dataclasses.field(default=default, metadata={_KEY: rule})


def rule_of(field: dataclasses.Field) -> Rule:
    """The rule stored on a dataclass field (an empty one if none)."""
    return field.metadata.get(_KEY, Rule())


def defaults_of(cls: type) -> dict[str, Any]:
    """The defaults of a config dataclass as plain data (nested sections included)."""
    out = {}
    for field in dataclasses.fields(cls):
        if field.default is not dataclasses.MISSING:
            value = field.default
        elif field.default_factory is not dataclasses.MISSING:
            value = field.default_factory()
        else:
            continue
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            value = defaults_of(type(value)) | _plain(dataclasses.asdict(value))
        out[field.name] = _plain(value)
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


_NO_RULE = Rule()


def is_count(value: object, minimum: int) -> bool:
    """An integer (a numpy one too, never a bool) of at least `minimum`: what a seed,
    an episode count or a parameter count given from Python must be (no float, unlike a
    config value read from YAML)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        return False
    return bool(value >= minimum)


def checked_value(path: str, value: Any, hint: Any, rule: Rule = _NO_RULE) -> Any:
    """`value` for a field of type `hint` at dotted `path`, as its rule allows: numbers of
    an int field as int, lists as tuples; a ConfigError naming `path` and what is allowed
    otherwise."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return checked_value(path, value, inner[0], rule)
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(path, f"must be true or false, got {value!r}")
        return value
    if hint is int:
        return _checked_int(path, value, rule)
    if hint is float:
        return _checked_float(path, value, rule)
    if hint is str:
        return _checked_str(path, value, rule)
    if origin is tuple:
        return _checked_counts(path, value)
    if hint is dict or origin is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(path, f"must be a mapping, got {value!r}")
        return {str(k): (dict(v) if isinstance(v, Mapping) else v) for k, v in value.items()}
    return value


def _checked_int(path: str, value: Any, rule: Rule) -> int:
    """An int field's value: an integer, or a float with an integer value, in range."""
    if isinstance(value, bool) or not isinstance(value, int):
        if not (isinstance(value, float) and value.is_integer()):
            raise ConfigError(path, f"must be an integer{rule.range_text()}, got {value!r}")
        value = int(value)
    _check_range(path, value, rule)
    return value


def _checked_float(path: str, value: Any, rule: Rule) -> float:
    """A float field's value: a finite number (an int too, never a bool), in range."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(path, f"must be a number{rule.range_text()}, got {value!r}")
    if not math.isfinite(value):  # NaN would pass every comparison below
        raise ConfigError(path, f"must be a finite number{rule.range_text()}, got {value!r}")
    _check_range(path, float(value), rule)
    return float(value)


def _checked_str(path: str, value: Any, rule: Rule) -> str:
    """A str field's value, one of the rule's choices when it has them."""
    if not isinstance(value, str):
        quote = (  # Hydra reads nan and inf as floats: a word that is not one
            f" (the command line reads {value} as a number: quote it, {path}=\"'{value}'\")"
            if isinstance(value, float) and not math.isfinite(value)
            else ""
        )
        if quote and rule.choices is not None:  # quoted, it would be refused next
            quote = f"; allowed: {', '.join(rule.choices)}"
        raise ConfigError(path, f"must be a string, got {value!r}{quote}")
    if rule.choices is not None and value not in rule.choices:
        raise ConfigError(path, f"unknown value '{value}'; allowed: {', '.join(rule.choices)}")
    return value


def _checked_counts(path: str, value: Any) -> tuple[int, ...]:
    """A tuple field's value: a list of positive integers, as a tuple."""
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
        raise ConfigError(path, f"must be a list of positive integers, got {value!r}")
    items = []
    for index, item in enumerate(value):
        if isinstance(item, bool) or not isinstance(item, int) or item < 1:
            raise ConfigError(f"{path}[{index}]", f"must be a positive integer, got {item!r}")
        items.append(item)
    return tuple(items)


def _check_range(path: str, value: float, rule: Rule) -> None:
    if not rule.in_range(value):
        kind = "an integer" if isinstance(value, int) else "a number"
        raise ConfigError(path, f"must be {kind}{rule.range_text()}, got {value!r}")


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls)
    except NameError:  # an annotation only a type checker can resolve: nothing to check
        return {}


def check_fields(config: Any, section: str = "") -> None:
    """Check every field of a config dataclass instance against its `setting` rule (values
    put in their field's type: 3 for an int field given 3.0); nested config sections check
    themselves when built. Errors name `section.field`."""
    hints = _hints(type(config))
    for item in dataclasses.fields(config):
        value = getattr(config, item.name)
        path = f"{section}.{item.name}" if section else item.name
        hint = hints.get(item.name)
        if hint is None:
            continue
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            # A nested section: it checked itself when built.
            if not dataclasses.is_dataclass(value) or isinstance(value, type):
                # RunConfig(pool={...}) would otherwise pass unchecked and fail later
                raise ConfigError(
                    path, f"must be a config section such as {hint.__name__}(...), got {value!r}"
                )
            continue
        checked = checked_value(path, value, hint, rule_of(item))
        if checked is not value:
            object.__setattr__(config, item.name, checked)  # frozen dataclasses too


@functools.cache
def _keywords(cls: type) -> tuple[str, ...] | None:
    """The keywords `cls(...)` takes (its __init__'s: fields, InitVars, a subclass's own);
    None when it takes any (**kwargs)."""
    try:
        parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return tuple(p.name for p in parameters if p.kind is not inspect.Parameter.VAR_POSITIONAL)


class Checked:
    """Base of config dataclasses: fields are checked against their rules when an instance
    is built, from Python (`ESConfig(population=-3)`) as from Hydra's config, and then the
    checks across fields (`check()`, when the class has one). `section` names the config
    section in errors (optimizer.population)."""

    section = ""

    def __new__(cls, *args: Any, **kwargs: Any) -> Checked:
        # Before the dataclass's __init__, whose bare TypeError ("unexpected keyword
        # argument") says neither the section nor the keys it takes.
        names = _keywords(cls) if kwargs else None
        if names is not None:
            unknown = [key for key in kwargs if key not in names]
            if unknown:
                close = difflib.get_close_matches(unknown[0], names, n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                where = f"{cls.section}." if cls.section else ""
                raise ConfigError(
                    f"{where}{unknown[0]}",
                    f"unknown key of {cls.__name__}{hint}; allowed: {', '.join(names)}",
                )
        return super().__new__(cls)

    def __post_init__(self) -> None:
        check_fields(self, self.section)
        check = getattr(self, "check", None)
        if check is not None:
            check()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # A subclass's own __post_init__ (a user's plug-in config) would replace the one
        # above and skip the checks: run them first, so it sees checked values.
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("__post_init__")
        if own is None or getattr(own, "_runs_checks", False):
            return

        @functools.wraps(own)
        def __post_init__(self: Checked, *init_vars: Any) -> None:
            Checked.__post_init__(self)
            own(self, *init_vars)

        __post_init__._runs_checks = True  # type: ignore[attr-defined]
        cls.__post_init__ = __post_init__  # type: ignore[method-assign]
