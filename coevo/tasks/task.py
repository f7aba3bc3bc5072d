"""Tasks (immutable parameter sets) and task spaces (their schema, mutation and distance).

A task space also says how a `Task` reaches its env's `set_task` (`task_format`): the
parameters as a dict (the default), the single parameter's value (`scalar`, e.g. RLlib's
curriculum example takes an int level), or whatever a user function
(`package.module:function`) makes of the dict. A parameter declared `type: int` stays an
int everywhere: in the task, the env, mutation and the tables.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, ClassVar

import numpy as np

from coevo.errors import ConfigError
from coevo.plugins import resolve_entry_point


def canonical_number(value: Any) -> int | float:
    """Ints (Python or numpy) stay ints, anything else becomes a float: a task value as
    tasks and envs hold it (`type: int` parameters stay ints everywhere)."""
    if isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_):
        return int(value)
    return float(value)


@dataclass(frozen=True)
class Task:
    """One environment configuration: a task space name and named number parameters.

    Immutable and hashable; `id` is a content hash so equal tasks share an id everywhere.
    Values are floats, or ints for parameters of `type: int` (the space casts them).
    """

    space: str
    params: tuple[tuple[str, int | float], ...]

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "params", tuple(sorted((str(k), canonical_number(v)) for k, v in self.params))
        )

    def __getitem__(self, name: str) -> int | float:
        for key, value in self.params:
            if key == name:
                return value
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return (key for key, _ in self.params)

    def as_dict(self) -> dict[str, int | float]:
        return dict(self.params)

    @property
    def id(self) -> str:
        return hashlib.blake2b(self.to_json().encode(), digest_size=6).hexdigest()

    def to_json(self) -> str:
        return json.dumps({"space": self.space, "params": self.as_dict()}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Task:
        data = json.loads(text)
        return cls(data["space"], tuple(data["params"].items()))

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v:g}" for k, v in self.params)
        return f"Task({self.space}: {inner})"


PARAM_TYPES = ("float", "int")
TASK_FORMATS = ("dict", "scalar")  # or "package.module:function"


def _decimals(step: float) -> int:
    """Decimal places of a rounding step as written (0.1 -> 1, 0.25 -> 2, 5 -> 0)."""
    return max(0, -int(Decimal(repr(float(step))).normalize().as_tuple().exponent))


@dataclass(frozen=True)
class Param:
    """Schema of one task parameter: bounds, initial value, mutation step, rounding, type.

    An `int` parameter's values are Python ints: mutation rounds to the nearest int.
    """

    name: str
    low: float
    high: float
    init: float
    step: float
    round_to: float | None = None
    type: str = "float"

    def validate(self, space: str) -> None:
        where = f"task.params.{self.name}"
        for key in ("low", "high", "init", "step"):
            value = getattr(self, key)
            if not math.isfinite(value):  # a draw between bounds needs finite ones
                raise ConfigError(f"{where}.{key}", f"must be a finite number, got {value!r}")
        if self.type not in PARAM_TYPES:
            raise ConfigError(
                f"{where}.type", f"unknown type '{self.type}'; allowed: {', '.join(PARAM_TYPES)}"
            )
        if self.type == "int":
            for key in ("low", "high", "init"):
                value = getattr(self, key)
                if not float(value).is_integer():
                    raise ConfigError(
                        f"{where}.{key}", f"must be a whole number for type int, got {value:g}"
                    )
        if not self.low <= self.high:
            raise ConfigError(
                where, f"lower bound {self.low:g} > upper bound {self.high:g} in '{space}'"
            )
        if not self.low <= self.init <= self.high:
            raise ConfigError(
                where,
                f"init {self.init:g} outside bounds [{self.low:g}, {self.high:g}] in '{space}'",
            )
        if self.step < 0:
            raise ConfigError(where, f"mutation step must be >= 0 in '{space}', got {self.step:g}")

    def clip(self, value: float) -> int | float:
        if self.round_to:
            # round() again to round_to's decimals: 111 * 0.1 is 11.100000000000001, and such
            # digits would reach task ids, tables and reports.
            value = round(round(value / self.round_to) * self.round_to, _decimals(self.round_to))
        if self.type == "int":
            return int(min(max(round(value), round(self.low)), round(self.high)))
        return float(min(max(value, self.low), self.high))

    def cast(self, value: Any, where: str) -> int | float:
        """A given value as this parameter's type (a non-whole value for an int is refused)."""
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ConfigError(where, f"must be a number, got {value!r}") from None
        if self.type == "int":
            if not number.is_integer():
                raise ConfigError(where, f"must be a whole number (type int), got {value!r}")
            return int(number)
        return number


PARAM_FIELDS = ("low", "high", "init", "step", "round_to", "type")
# Draws a mutation takes to move away from its parent before it gives the parent back (a
# space whose every parameter has step 0, or one task wide, has no other child).
MUTATION_TRIES = 64


@dataclass(frozen=True)
class TaskSpace:
    """The parameter schema of a family of tasks and how to build its environment.

    `make_env()` returns a gymnasium env with `get_task()` / `set_task(task_dict)`.
    `max_episode_steps` bounds every rollout (the worker truncates there).
    `ordered` lists (low_name, high_name) pairs that form an interval, e.g. a pit gap drawn
    from [pit_gap_low, pit_gap_high]: tasks must keep low <= high, and mutation keeps it so.
    """

    name: str
    params: tuple[Param, ...]
    make_env: Callable[[], Any]
    max_episode_steps: int
    solved_score: float | None = None
    # Optional batched physics: make_slots(n) -> an EnvSlots stepping n episodes at once.
    make_slots: Callable[[int], Any] | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    ordered: tuple[tuple[str, str], ...] = ()
    task_format: str = "dict"  # dict, scalar, or "package.module:function" (see module doc)
    # Entries of the env's own task that the space does not vary and that its `set_task`
    # would lose (an RLlib-style env replacing its whole task, with get_task() keys left out
    # of task.params), as (key, value) of plain data: a dict task carries them too.
    fixed_task: tuple[tuple[str, Any], ...] = ()
    # The level kind's hooks (coevo.tasks.level_kind): its levels are `Task`s.
    level_type: ClassVar[type] = Task

    def __post_init__(self) -> None:
        for p in self.params:
            p.validate(self.name)
        if self.task_format == "scalar" and len(self.params) != 1:
            raise ConfigError(
                "task.task_format",
                f"scalar passes one parameter's value; '{self.name}' has {len(self.params)} "
                f"({', '.join(self.names)})",
            )
        if self.task_format not in TASK_FORMATS and ":" not in self.task_format:
            raise ConfigError(
                "task.task_format",
                f"unknown value '{self.task_format}'; allowed: dict, scalar, or "
                "'package.module:function' (called with the task's dict)",
            )
        for low_name, high_name in self.ordered:
            lo, hi = self.param(low_name), self.param(high_name)
            # Mutation swaps a crossed pair and clips each to its own bounds; that keeps
            # low <= high only if the low parameter's range does not reach above the high one's.
            if lo.low > hi.low or lo.high > hi.high:
                raise ConfigError(
                    f"task.params.{low_name}",
                    f"bounds [{lo.low:g}, {lo.high:g}] must not exceed those of {high_name} "
                    f"[{hi.low:g}, {hi.high:g}] in '{self.name}' (they form an interval)",
                )
            if lo.init > hi.init:
                raise ConfigError(
                    f"task.params.{low_name}",
                    f"init {lo.init:g} > init of {high_name} {hi.init:g} in '{self.name}' "
                    "(they form an interval)",
                )

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise ConfigError(
            f"task.params.{name}",
            f"unknown parameter of task space '{self.name}'; known: {', '.join(self.names)}",
        )

    def env_task(self, task: Task) -> Any:
        """What the env's `set_task` receives for `task` (see `task_format`)."""
        if self.task_format == "dict":
            if self.fixed_task:  # a copy each: an env may change what it is given
                return {**copy.deepcopy(dict(self.fixed_task)), **task.as_dict()}
            return task.as_dict()
        if self.task_format == "scalar":
            return task.params[0][1]
        return _task_function(self.task_format)(task.as_dict())

    def with_overrides(self, overrides: Mapping[str, Mapping[str, Any]] | None) -> TaskSpace:
        """A copy with some parameters' bounds/init/step replaced (as given in config)."""
        if not overrides:
            return self
        params = {p.name: p for p in self.params}
        for name, fields in overrides.items():
            base = self.param(name)
            if not isinstance(fields, Mapping):
                raise ConfigError(
                    f"task.params.{name}",
                    f"expected a mapping of {', '.join(PARAM_FIELDS)}, got {fields!r} (e.g. "
                    f"task.params.{name}.init={fields!r}, or task.params.{name}={{low: .., "
                    "high: ..})",
                )
            unknown = set(fields) - set(PARAM_FIELDS)
            if unknown:
                raise ConfigError(
                    f"task.params.{name}.{sorted(unknown)[0]}",
                    f"unknown field; allowed: {', '.join(PARAM_FIELDS)}",
                )
            values = {k: v if k == "type" else _as_float(name, k, v) for k, v in fields.items()}
            params[name] = replace(base, **values)
        return replace(self, params=tuple(params[p.name] for p in self.params))

    def task(self, **values: float) -> Task:
        """A task with the given values; parameters not named take their initial value."""
        for name, value in values.items():
            p = self.param(name)
            value = p.cast(value, f"task.{name}")
            if not p.low <= value <= p.high:
                end = "high" if value > p.high else "low"
                raise ConfigError(
                    f"task.{name}",
                    f"{value:g} outside bounds [{p.low:g}, {p.high:g}] of '{self.name}' (for "
                    f"a task beyond them, widen them: task.params.{name}.{end}={value:g}, or "
                    f"in Python space.with_overrides({{'{name}': {{'{end}': {value:g}}}}}))",
                )
        full = {p.name: p.cast(values.get(p.name, p.init), f"task.{p.name}") for p in self.params}
        for low_name, high_name in self.ordered:
            if full[low_name] > full[high_name]:
                raise ConfigError(
                    f"task.{low_name}",
                    f"{full[low_name]:g} > {high_name} {full[high_name]:g} in '{self.name}': "
                    "an interval's lower end must not exceed its upper end",
                )
        return Task(self.name, tuple(full.items()))

    def initial_task(self) -> Task:
        return self.task()

    def solved(self, episode_return: float) -> bool:
        """Did an episode with this return solve its task (return >= `solved_score`)?

        What success-based level scores (learnability) count. A space without a
        `solved_score` cannot say: the error names the setting to add.
        """
        if self.solved_score is None:
            raise ConfigError(
                "task.solved_score",
                f"task space '{self.name}' declares no solved_score, and a success-based "
                "score (e.g. curriculum.score=learnability) needs to know which returns count "
                "as solved: set task.solved_score (YAML) or TaskSpace(solved_score=...), or "
                "choose a score that needs none (positive_value_loss, max_mc, return_regret)",
            )
        return bool(np.isfinite(episode_return) and episode_return >= self.solved_score)

    def check(self, task: Task) -> None:
        if task.space != self.name:
            raise ConfigError("task.space", f"task of '{task.space}' given to '{self.name}'")
        if set(task) != set(self.names):
            raise ConfigError(
                "task.params", f"expected parameters {', '.join(self.names)}, got {', '.join(task)}"
            )
        self.task(**task.as_dict())

    def mutate(self, task: Task, rng: np.random.Generator) -> Task:
        """Each parameter moves by a uniform draw in ±step, then is rounded and clipped.

        An interval whose ends crossed is swapped back (each end clipped to its own bounds).
        A draw that comes back as the parent itself (an int with step 1 rounds half of its
        draws to no move; a bound clips the moves past it) is drawn again, up to
        `MUTATION_TRIES` times: a child equal to its parent is a wasted evaluation (POET drops
        it as a duplicate, ACCEL re-scores the same level).
        """
        if not any(p.step > 0 and p.low < p.high for p in self.params):
            return self._mutated(task, rng)  # no other child: one draw, as before
        for _ in range(MUTATION_TRIES):
            child = self._mutated(task, rng)
            if child != task:
                return child
        return child

    def _mutated(self, task: Task, rng: np.random.Generator) -> Task:
        values = {}
        for p in self.params:
            delta = rng.uniform(-p.step, p.step) if p.step > 0 else 0.0
            values[p.name] = p.clip(task[p.name] + delta)
        for low_name, high_name in self.ordered:
            low, high = values[low_name], values[high_name]
            if low > high:
                values[low_name] = self.param(low_name).clip(high)
                values[high_name] = self.param(high_name).clip(low)
        return Task(self.name, tuple(values.items()))

    def sample(self, rng: np.random.Generator) -> Task:
        """A task with every parameter uniform in its bounds, one draw per parameter in
        order (domain randomisation). Values keep the space's rules: on their `round_to` grid
        (each grid point equally likely), ints for `type: int`, intervals low <= high."""
        values = {p.name: _uniform_value(p, rng) for p in self.params}
        return Task(self.name, tuple(self._fix_intervals(values).items()))

    def decode(self, point: np.ndarray) -> Task:
        """The task at a point of the unit cube (the inverse of `encode`), clipped to the
        bounds and rounded to each parameter's grid."""
        clipped = np.clip(np.asarray(point, dtype=float), 0.0, 1.0)
        values = {
            p.name: p.clip(p.low + float(x) * (p.high - p.low))
            for p, x in zip(self.params, clipped, strict=True)
        }
        return Task(self.name, tuple(self._fix_intervals(values).items()))

    def _fix_intervals(self, values: dict[str, Any]) -> dict[str, Any]:
        for low_name, high_name in self.ordered:
            if values[low_name] > values[high_name]:
                values[low_name], values[high_name] = (
                    self.param(low_name).clip(values[high_name]),
                    self.param(high_name).clip(values[low_name]),
                )
        return values

    def level_from_json(self, text: str) -> Task:
        """The task whose `to_json()` gave `text` (tables and checkpoints hold that form)."""
        return Task.from_json(text)

    def encode(self, task: Task) -> np.ndarray:
        """Parameters scaled to [0, 1] by their bounds: the POET characterization."""
        out = np.zeros(len(self.params))
        for i, p in enumerate(self.params):
            span = p.high - p.low
            out[i] = (task[p.name] - p.low) / span if span > 0 else 0.0
        return out

    def distance(self, a: Task, b: Task) -> float:
        return float(np.linalg.norm(self.encode(a) - self.encode(b)))

    def same_tasks_as(self, other: TaskSpace) -> bool:
        """Do both spaces describe the same tasks: one name, the same parameters (bounds,
        init, step, rounding, type) and intervals? Not `==`: `tasks.get` builds a new space
        per call, and a config-built space's env factory may compare by identity only."""
        return self is other or (
            self.name == other.name
            and self.params == other.params
            and self.ordered == other.ordered
        )

    def difference_from(self, other: TaskSpace) -> tuple[str, str] | None:
        """What `same_tasks_as` found different, as (this space's side, the other's), for
        messages; None when nothing."""
        if self.name != other.name:
            return (
                f"'{self.name}' ({', '.join(self.names)})",
                f"'{other.name}' ({', '.join(other.names)})",
            )
        if self.names != other.names:
            return f"parameters {', '.join(self.names)}", f"{', '.join(other.names)}"
        for mine, theirs in zip(self.params, other.params, strict=True):
            if mine != theirs:
                return _param_text(mine), _param_text(theirs)
        if self.ordered != other.ordered:
            return f"intervals {self.ordered}", f"{other.ordered}"
        return None


def _uniform_value(param: Param, rng: np.random.Generator) -> int | float:
    if param.high <= param.low:
        return param.clip(param.low)
    grid = param.round_to or (1.0 if param.type == "int" else None)
    if grid:
        # Uniform over the grid points inside the bounds, so each value is equally likely
        # (rounding a continuous draw would halve the chance of the two end points).
        first = np.ceil(param.low / grid - 1e-9)
        last = np.floor(param.high / grid + 1e-9)
        if last >= first:
            return param.clip(float(rng.integers(int(first), int(last) + 1)) * grid)
    return param.clip(float(rng.uniform(param.low, param.high)))


def _param_text(p: Param) -> str:
    rounding = f" round_to {p.round_to:g}" if p.round_to else ""
    return f"{p.name} [{p.low:g}, {p.high:g}] init {p.init:g} step {p.step:g}{rounding} {p.type}"


def _as_float(name: str, key: str, value: Any) -> float | None:
    if key == "round_to" and value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"task.params.{name}.{key}", f"must be a number, got {value!r}") from None


_TASK_FUNCTIONS: dict[str, Callable[[dict], Any]] = {}


def _task_function(path: str) -> Callable[[dict], Any]:
    """The user function of a `task_format` import path, resolved once per process."""
    if path not in _TASK_FUNCTIONS:
        function = resolve_entry_point(path, "task.task_format")
        if not callable(function):
            raise ConfigError("task.task_format", f"{path} is not callable")
        _TASK_FUNCTIONS[path] = function
    return _TASK_FUNCTIONS[path]
