"""Config fields that carry their own rules: the default, the allowed range or choices.

Every config dataclass (the run's sections and each plug-in's own config) declares its
fields with `setting(...)`, so a default and what is allowed are stated once, beside the
field; `coevo.config` validates any such dataclass by reading this metadata.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


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
        if dataclasses.is_dataclass(value):
            value = defaults_of(type(value)) | _plain(dataclasses.asdict(value))
        out[field.name] = _plain(value)
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
