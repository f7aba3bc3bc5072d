"""`LevelSpace`: the `TaskSpace` seat of a level kind without named numbers (mazes, CPPN
terrains): no `params` to override or set, the level itself given to the env's `set_task`,
two spaces alike when their `_shape_text()` (the kind's settings in words) is."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from coevo.errors import ConfigError
from coevo.tasks.task import TaskSpace


@dataclass(frozen=True)
class LevelSpace(TaskSpace):
    """A task space whose tasks are levels of a kind without named numbers."""

    # How the refusals name the kind ("a maze space").
    kind_words: ClassVar[str] = "this level kind"
    # No point of an encoding is a level: curricula that decode points (ALP-GMM) are refused
    # by name (coevo.tasks.level_kind.require).
    decode: ClassVar[None] = None  # pyright: ignore[reportIncompatibleMethodOverride]

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.params:
            raise ConfigError("task.params", f"{self.kind_words} has no numeric parameters")

    def task(self, **values: Any) -> Any:
        """The initial level (a level space has no numeric parameters).

        Raises:
            ConfigError: If any parameter value is given.
        """
        if values:
            raise ConfigError(
                f"task.{next(iter(values))}", f"{self.kind_words} has no numeric parameters"
            )
        return self.initial_task()

    def env_task(self, task: Any) -> Any:
        """The level itself: the env takes the level as its task."""
        return task

    def with_overrides(self, overrides: Mapping[str, Mapping[str, Any]] | None) -> LevelSpace:
        """This space: a level space has no parameters to override.

        Raises:
            ConfigError: If any override is given.
        """
        if overrides:
            raise ConfigError(
                f"task.params.{next(iter(overrides))}",
                f"{self.kind_words} has no numeric parameters",
            )
        return self

    def same_tasks_as(self, other: TaskSpace) -> bool:
        """Whether `other` is a space of this class with the same settings."""
        return self is other or (
            isinstance(other, type(self)) and self.difference_from(other) is None
        )

    def difference_from(self, other: TaskSpace) -> tuple[str, str] | None:
        """None if `other` has this space's settings, else both in words."""
        mine, theirs = self._shape_text(), getattr(other, "_shape_text", lambda: other.name)()
        return None if mine == theirs else (mine, theirs)

    def _shape_text(self) -> str:
        """The space's name and the settings that make its levels what they are."""
        return f"'{self.name}'"
