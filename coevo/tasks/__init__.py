"""Tasks, task spaces, the registry of spaces and the task-settable env protocol."""

from coevo.tasks.generic import space_from_config
from coevo.tasks.protocol import TaskSettableEnv
from coevo.tasks.registry import get, names, register
from coevo.tasks.task import Param, Task, TaskSpace

__all__ = [
    "Param",
    "Task",
    "TaskSpace",
    "TaskSettableEnv",
    "get",
    "names",
    "register",
    "space_from_config",
]
