"""Level kinds: what a family of levels gives the curricula, the pool, the tables and the report.

A *level* is an immutable, picklable value with a content `id` and a JSON form: a numeric
`Task` (named numbers) or a `Maze`. A *level kind* is the object that knows one family of
levels: a numeric `TaskSpace` is one kind, `MazeSpace` another (both are `TaskSpace`s, which
the pool and the runner build on). What every kind provides (`LevelKind`):

- `name`, `level_type` (the class of its levels), `max_episode_steps`, `make_env()`;
- `sample(rng)`: a level from the kind's generator (DR, PLR's new levels, SFL);
- `mutate(level, rng)`: a child level (ACCEL's edits, POET's children);
- `initial_task()` (the first level of POET and ACCEL), `check(level)` (refuse a foreign one);
- `level_from_json(text)`: the level whose `to_json()` gave `text` (tables, checkpoints);
- `distance(a, b)`: POET's novelty hook (the nearest neighbours in this metric).

Optional hooks (`OPTIONAL_HOOKS`), which a curriculum that needs one asks for by `require`
before the run starts:

- `encode(level)`: a fixed-length vector in [0, 1];
- `decode(point)`: its inverse, the level at a point of that cube (ALP-GMM samples points);
- `render_png`: a picture of a level for the report, as `metadata["render_png"]`
  (`(level's dict or JSON dict, path) -> path`).

A kind that subclasses `TaskSpace` inherits the numeric hooks; it states that it lacks one by
setting it to None (`MazeSpace.decode = None`: no point of a maze's encoding is a maze).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from coevo.errors import ConfigError
from coevo.tasks.task import Task


@runtime_checkable
class Level(Protocol):
    """An immutable, picklable level: equal levels share `id` (a content hash) everywhere."""

    @property
    def id(self) -> str: ...

    def to_json(self) -> str: ...


@runtime_checkable
class LevelKind(Protocol):
    """The hooks every level kind provides (see the module doc)."""

    name: str
    max_episode_steps: int

    @property
    def level_type(self) -> type: ...

    def make_env(self) -> Any: ...

    def sample(self, rng: np.random.Generator) -> Any: ...

    def mutate(self, level: Any, rng: np.random.Generator) -> Any: ...

    def initial_task(self) -> Any: ...

    def check(self, level: Any) -> None: ...

    def level_from_json(self, text: str) -> Any: ...

    def distance(self, a: Any, b: Any) -> float: ...


# Optional hook -> what it is, for the refusal's message.
OPTIONAL_HOOKS = {
    "encode": "a fixed-length encoding of its levels",
    "decode": "levels decoded from points of that encoding",
    "render_png": "pictures of its levels",
}


def provides(kind: Any, hook: str) -> bool:
    """Does `kind` provide the optional `hook` (a name of `OPTIONAL_HOOKS`)?"""
    if hook not in OPTIONAL_HOOKS:
        raise ValueError(f"unknown hook '{hook}'; optional hooks: {', '.join(OPTIONAL_HOOKS)}")
    if hook == "render_png":
        return renderer(kind) is not None
    return callable(getattr(kind, hook, None))


def require(kind: Any, hooks: tuple[str, ...], curriculum: str, because: str) -> None:
    """Refuse (ConfigError on `curriculum.name`) a curriculum that needs hooks `kind` lacks:
    called from a curriculum's `check_space`, before any worker starts."""
    missing = [hook for hook in hooks if not provides(kind, hook)]
    if missing:
        lacks = "; ".join(f"{hook} ({OPTIONAL_HOOKS[hook]})" for hook in missing)
        raise ConfigError(
            "curriculum.name",
            f"{curriculum} {because}; task space '{kind.name}' holds "
            f"{level_type(kind).__name__} levels and has no {lacks} (dr, plr, accel, sfl and "
            "poet take any level kind)",
        )


def level_type(kind: Any) -> type:
    """The class of `kind`'s levels (a numeric space's: `Task`)."""
    return getattr(kind, "level_type", Task)


def is_numeric(kind: Any) -> bool:
    """Are `kind`'s levels `Task`s of named numbers (bounds, steps, a unit-cube encoding)?"""
    return issubclass(level_type(kind), Task)


def renderer(kind: Any) -> Callable[..., Any] | None:
    """`kind`'s picture hook for the report, or None."""
    return getattr(kind, "metadata", {}).get("render_png")
