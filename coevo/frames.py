"""Typed lookups in pandas tables.

pandas types `frame[key]` and `row[key]` as any of DataFrame, Series, array or scalar (the key
may be a label, a list, a slice or a mask); these name what one kind of key returns, so the
type checker sees what the code relies on. A leaf module: the report, compare and runner use it.
"""

from __future__ import annotations

from typing import Protocol, cast

import pandas as pd

__all__ = ["Number", "column", "number", "rows"]


class Number(Protocol):
    """A numeric cell: a Python or NumPy int, float or bool."""

    def __int__(self) -> int: ...

    def __float__(self) -> float: ...


def column(frame: pd.DataFrame, name: str) -> pd.Series:
    """frame's column `name` (one label of a frame: a column)."""
    return cast(pd.Series, frame[name])


def rows(frame: pd.DataFrame, mask: pd.Series) -> pd.DataFrame:
    """frame's rows where the boolean Series `mask` (on frame's index) holds."""
    return cast(pd.DataFrame, frame[mask])


def number(row: pd.Series, name: str) -> Number:
    """row's numeric cell `name` (one label of a row: one value)."""
    return cast(Number, row[name])
