"""The task-settable environment protocol (that of RLlib's former `TaskSettableEnv`)."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from coevo.tasks.task import canonical_number


@runtime_checkable
class TaskSettableEnv(Protocol):
    """A gymnasium env whose task can be read and changed in place.

    `set_task` takes effect at the next `reset`, so an episode never changes task midway.
    """

    def get_task(self) -> dict[str, int | float]:
        """The task the env plays, or will play from its next reset."""
        ...

    def set_task(self, task: dict[str, int | float]) -> None:
        """Set the task the env plays from its next reset.

        Args:
            task: Parameter name to value.
        """
        ...

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> Any:
        """Start a new episode, on the task last set.

        Args:
            seed: The episode's seed, if any.
            options: Gymnasium reset options.

        Returns:
            Gymnasium's `(observation, info)`.
        """
        ...

    def step(self, action: Any) -> Any:
        """Take one step.

        Args:
            action: The action.

        Returns:
            Gymnasium's `(observation, reward, terminated, truncated, info)`.
        """
        ...


class PendingTaskMixin:
    """Keeps a task given by `set_task` until the next reset, then applies it.

    List it before the gymnasium env class (`class TaskCartPole(PendingTaskMixin,
    CartPoleEnv)`) and implement `_apply_task(task)`; its `reset` applies the pending task
    and then calls the env's own reset. Values keep their kind: ints (a `type: int`
    parameter) stay ints, anything else becomes a float.
    """

    _task: dict[str, int | float]
    _pending_task: dict[str, int | float] | None = None

    def get_task(self) -> dict[str, int | float]:
        """The pending task if one is set, else the current one."""
        return dict(self._pending_task if self._pending_task is not None else self._task)

    def set_task(self, task: dict[str, int | float]) -> None:
        """Store `task` to apply at the next reset (int values stay ints, others become floats).

        Args:
            task: Parameter name to value.
        """
        # A `type: int` parameter's value stays an int (an env may index or range() with
        # it), every other value becomes a float, as in `Task`.
        self._pending_task = {k: canonical_number(v) for k, v in task.items()}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> Any:
        """Apply the pending task, then reset the wrapped env."""
        self._apply_pending_task()
        return super().reset(seed=seed, options=options)  # type: ignore[misc]

    def _apply_pending_task(self) -> None:
        if self._pending_task is not None:
            self._task = self._pending_task
            self._pending_task = None
            self._apply_task(self._task)

    def _apply_task(self, task: dict[str, int | float]) -> None:
        raise NotImplementedError
