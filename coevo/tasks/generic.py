"""Task spaces defined in config alone: any gymnasium id, or any task-settable class.

- `env_id`: a gymnasium id. Each task parameter maps to a constructor keyword (`kwarg`) or
  to an attribute of the unwrapped env (`attr`, dotted paths allowed); both apply at the next
  reset (a changed keyword rebuilds the env).
- `entry_point`: `package.module:Class` of an env with `get_task()` / `set_task(task)`
  (RLlib's TaskSettableEnv protocol), used unchanged; `set_task` receives the parameters.

Both are checked when the space is built (before any worker starts): the id or import path
resolves, every mapping points at something that exists, and one env builds. Errors are
`ConfigError`s naming the field and what is allowed. The factories are small picklable
objects (Ray ships the space to its workers).
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import cloudpickle
import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import EnvSpec, load_env_creator

from coevo.errors import ConfigError
from coevo.plugins import resolve_entry_point
from coevo.tasks import registry
from coevo.tasks.protocol import TaskSettableEnv
from coevo.tasks.task import PARAM_FIELDS, Param, TaskSpace

MAPPING_FIELDS = ("kwarg", "attr")
_REQUIRED = ("low", "high", "init", "step")


# -- gymnasium ids -----------------------------------------------------------------------------
@dataclass(frozen=True)
class GymTaskEnvFactory:
    """Builds `GymTaskEnv`s: a gymnasium id, fixed keywords and the parameter mappings."""

    env_id: str
    env_kwargs: tuple[tuple[str, Any], ...]
    kwargs: tuple[tuple[str, str], ...]  # (parameter, constructor keyword)
    attrs: tuple[tuple[str, str], ...]  # (parameter, attribute path of the unwrapped env)
    initial: tuple[tuple[str, float], ...]

    def __call__(self) -> GymTaskEnv:
        return GymTaskEnv(self)


class GymTaskEnv(gym.Env):
    """A gymnasium env made task-settable by mapping parameters to keywords and attributes."""

    def __init__(self, factory: GymTaskEnvFactory):
        self.factory = factory
        self._render_mode: str | None = None
        self._task = dict(factory.initial)
        self._pending: dict[str, float] | None = None
        self._built_kwargs: dict[str, Any] | None = None  # None until the first env is built
        self.env: gym.Env
        self._apply(self._task)

    @property
    def render_mode(self) -> str | None:
        """The render mode, passed on to the env that renders."""
        return self._render_mode

    @render_mode.setter
    def render_mode(self, mode: str | None) -> None:
        """The render mode, passed on to the env that renders."""
        # Set after construction (e.g. to record a GIF): passed on to the env that renders.
        self._render_mode = mode
        if getattr(self, "env", None) is not None:
            self.env.unwrapped.render_mode = mode

    def get_task(self) -> dict[str, float]:
        """The pending task if one is set, else the current one."""
        return dict(self._pending if self._pending is not None else self._task)

    def set_task(self, task: Mapping[str, float]) -> None:
        """Store `task` to apply at the next reset."""
        self._pending = dict(task)  # int parameters stay ints

    def _apply(self, task: Mapping[str, float]) -> None:
        kwargs = dict(self.factory.env_kwargs)
        for name, keyword in self.factory.kwargs:
            kwargs[keyword] = task[name]
        if kwargs != self._built_kwargs:
            if self._built_kwargs is not None:
                self.env.close()
            # The worker truncates episodes itself; -1 leaves out gymnasium's TimeLimit.
            self.env = gym.make(self.factory.env_id, max_episode_steps=-1, **kwargs)
            self._built_kwargs = kwargs
            self.observation_space = self.env.observation_space
            self.action_space = self.env.action_space
            if self._render_mode is not None:
                self.env.unwrapped.render_mode = self._render_mode
        for name, path in self.factory.attrs:
            _set_path(self.env.unwrapped, path, task[name])

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Apply the pending task, then reset the env."""
        if self._pending is not None:
            self._task, self._pending = self._pending, None
            self._apply(self._task)
        reset = self.env.reset(seed=seed, options=options)
        # This episode's steps skip this class and the checking wrappers that gym.make adds
        # once their checks have run (the pool looks `step` up again per episode): on
        # CartPole they cost a quarter of the env's own step.
        self.step = without_done_checks(self.env).step
        return reset

    def step(self, action: Any):
        """Step the env."""
        return self.env.step(action)

    def render(self):
        """The env's rendering."""
        return self.env.render()

    def close(self) -> None:
        """Close the env."""
        self.env.close()


# gym.make's checking wrappers: after their first calls' checks they only pass calls on.
_CHECKING_WRAPPERS = (gym.wrappers.OrderEnforcing, gym.wrappers.PassiveEnvChecker)


def without_done_checks(env: gym.Env) -> gym.Env:
    """`env` below its outer checking wrappers (`OrderEnforcing`, `PassiveEnvChecker`) whose
    checks have all run; the same env's state, without their ~0.4 us per wrapper per step."""
    while isinstance(env, _CHECKING_WRAPPERS) and _checks_done(env):
        env = env.env
    return env


def _checks_done(wrapper: gym.wrappers.OrderEnforcing | gym.wrappers.PassiveEnvChecker) -> bool:
    if isinstance(wrapper, gym.wrappers.OrderEnforcing):
        return bool(wrapper.has_reset)
    # The data-reuse check (gymnasium >= 1.1) runs on the second step.
    return bool(
        wrapper.checked_reset
        and wrapper.checked_step
        and getattr(wrapper, "checked_data_reuse", True)
    )


def _get_path(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _set_path(obj: Any, path: str, value: float) -> None:
    *parents, last = path.split(".")
    for part in parents:
        obj = getattr(obj, part)
    current = getattr(obj, last)
    # Keep an integer attribute an integer when the value is whole (e.g. a step count).
    if isinstance(current, int) and not isinstance(current, bool) and float(value).is_integer():
        value = int(value)
    setattr(obj, last, value)


def gym_task_space(
    name: str,
    env_id: str,
    params: Mapping[str, Mapping[str, Any]],
    env_kwargs: Mapping[str, Any] | None = None,
    max_episode_steps: int | None = None,
) -> TaskSpace:
    """A task space over gymnasium id `env_id`; checks the id, the mappings and one build."""
    spec = _gym_spec(env_id)
    env_kwargs = dict(env_kwargs or {})
    schema, mappings = _split_params(name, params, MAPPING_FIELDS, required_mapping=True)
    kwargs, attrs = _checked_keywords(env_id, spec, mappings, env_kwargs)
    initial = {p.name: p.init for p in schema}
    init_kwargs = {**env_kwargs, **{keyword: initial[p] for p, keyword in kwargs}}
    env = _build_checked(lambda: gym.make(env_id, max_episode_steps=-1, **init_kwargs), f"{env_id}")
    try:
        _check_attrs(env, env_id, attrs)
    finally:
        env.close()
    factory = GymTaskEnvFactory(
        env_id, tuple(env_kwargs.items()), tuple(kwargs), tuple(attrs), tuple(initial.items())
    )
    steps = max_episode_steps or spec.max_episode_steps
    if steps is None:
        raise ConfigError(
            "task.max_episode_steps", f"required: gymnasium id {env_id} has no time limit"
        )
    return TaskSpace(name=name, params=schema, make_env=factory, max_episode_steps=int(steps))


def _gym_spec(env_id: str) -> EnvSpec:
    """The registered spec of `env_id`; an unknown id is refused with the nearest ids."""
    try:
        return gym.spec(env_id)
    except gym.error.Error as error:
        close = difflib.get_close_matches(env_id, list(gym.registry), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ConfigError(
            "task.env_id", f"'{env_id}' is not a registered gymnasium id ({error}){hint}"
        ) from None


def _checked_keywords(
    env_id: str,
    spec: EnvSpec,
    mappings: Mapping[str, tuple[str, str]],
    env_kwargs: Mapping[str, Any],
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The (parameter, keyword) and (parameter, attribute path) mappings; a keyword the
    constructor does not take, or one fixed in `env_kwargs`, is refused."""
    accepted = _constructor_keywords(spec)
    kwargs, attrs = [], []
    for pname, (field, target) in mappings.items():
        where = f"task.params.{pname}.{field}"
        if field == "kwarg":
            if accepted is not None and target not in accepted:
                raise ConfigError(
                    where,
                    f"'{target}' is not a constructor keyword of {env_id}; "
                    f"allowed: {', '.join(sorted(accepted)) or 'none'}",
                )
            if target in env_kwargs:
                raise ConfigError(where, f"'{target}' is also fixed in task.env_kwargs")
            kwargs.append((pname, target))
        else:
            attrs.append((pname, target))
    return kwargs, attrs


def _check_attrs(env: gym.Env, env_id: str, attrs: list[tuple[str, str]]) -> None:
    """Every mapped attribute path exists on the unwrapped env and holds a number."""
    for pname, path in attrs:
        try:
            current = _get_path(env.unwrapped, path)
        except AttributeError:
            raise ConfigError(
                f"task.params.{pname}.attr",
                f"{type(env.unwrapped).__name__} ({env_id}) has no attribute '{path}'",
            ) from None
        if isinstance(current, bool) or not isinstance(current, int | float):
            raise ConfigError(
                f"task.params.{pname}.attr",
                f"'{path}' of {env_id} is {type(current).__name__}, not a number",
            )


def _constructor_keywords(spec: EnvSpec) -> set[str] | None:
    """Keywords the env's constructor takes; None when it takes any (**kwargs)."""
    creator = spec.entry_point
    if isinstance(creator, str):
        creator = load_env_creator(creator)
    if creator is None:
        return None
    try:
        signature = inspect.signature(creator)
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values()):
        return None
    return {n for n, p in signature.parameters.items() if p.kind is not p.VAR_POSITIONAL}


def _build_checked(factory: Any, what: str | type) -> Any:
    try:
        return factory()
    except ConfigError:
        raise
    except Exception as error:  # the user's constructor: report what it said
        raise ConfigError(
            "task", f"building {what} at the parameters' init values failed: {error!r}"
        ) from None


# -- task-settable classes -------------------------------------------------------------------
@dataclass(frozen=True)
class ClassEnvFactory:
    """Builds a user's task-settable env from its import path (resolved where it runs)."""

    entry_point: str | type  # an import path, or the class itself (Python API)
    env_kwargs: tuple[tuple[str, Any], ...] = ()
    env_config: tuple[tuple[str, Any], ...] | None = None  # RLlib style: one dict argument

    def __call__(self) -> Any:
        cls = self.entry_point
        if isinstance(cls, str):
            cls = resolve_entry_point(cls)
        if self.env_config is not None:
            return cls(dict(self.env_config))
        return cls(**dict(self.env_kwargs))


def class_task_space(
    name: str,
    entry_point: str | type,
    params: Mapping[str, Mapping[str, Any]],
    env_kwargs: Mapping[str, Any] | None = None,
    env_config: Mapping[str, Any] | None = None,
    max_episode_steps: int | None = None,
    task_format: str = "dict",
    solved_score: float | None = None,
) -> TaskSpace:
    """A task space over a user's task-settable env class, given by import path (or, from
    Python, the class itself: Ray ships a class defined in a script or notebook by value).
    `solved_score`: the return that counts as solved (test sets, POET's scale warning), as
    `task.solved_score` in YAML.

    One env is built and given the initial task in the declared `task_format` (get_task,
    set_task, reset), so an env that does not take that form fails here, quoted, before
    any worker starts.
    """
    if env_kwargs and env_config is not None:
        raise ConfigError("task.env_config", "give env_config or env_kwargs, not both")
    target = entry_point  # what the factory builds from: an import path or the class
    entry_point = _check_env_class(target)  # from here on, what messages call it
    schema, _ = _split_params(name, params, (), required_mapping=False)
    factory = _class_factory(target, env_kwargs, env_config)
    env = _build_checked(factory, entry_point)
    try:
        current = _current_task(env, entry_point)
        as_dict = task_format == "dict" and isinstance(current, Mapping)
        if as_dict:
            _check_declared(name, schema, current, entry_point)
        steps = _episode_steps(env, max_episode_steps, entry_point)
        declared = {p.name for p in schema}
        fixed = _replaced_entries(env, current, declared, entry_point) if as_dict else ()
        space = TaskSpace(
            name=name,
            params=schema,
            make_env=factory,
            max_episode_steps=int(steps),
            task_format=task_format,
            fixed_task=fixed,
            solved_score=None if solved_score is None else float(solved_score),
        )
        _check_task_form(env, space, entry_point)
    finally:
        # An object without close() was refused above: let that error through.
        getattr(env, "close", lambda: None)()
    return space


def _class_factory(
    target: str | type, env_kwargs: Mapping[str, Any] | None, env_config: Mapping[str, Any] | None
) -> ClassEnvFactory:
    return ClassEnvFactory(
        target,
        tuple(dict(env_kwargs or {}).items()),
        None if env_config is None else tuple(dict(env_config).items()),
    )


def _check_env_class(entry_point: str | type) -> str | type:
    """What messages call the env class (its import path, or the class's name); a class
    without get_task / set_task is refused."""
    cls = resolve_entry_point(entry_point) if isinstance(entry_point, str) else entry_point
    if not isinstance(entry_point, str):
        entry_point = getattr(cls, "__qualname__", repr(cls))
    missing = [m for m in ("get_task", "set_task") if not callable(getattr(cls, m, None))]
    if missing:
        raise ConfigError(
            "task.entry_point",
            f"{entry_point} has no {' / '.join(missing)}: a task-settable env needs "
            "get_task() and set_task(task) (RLlib's TaskSettableEnv protocol)",
        )
    return entry_point


def _current_task(env: Any, entry_point: str | type) -> Any:
    """The built env's own task (`get_task()`); an object without reset/step is refused."""
    if not isinstance(env, TaskSettableEnv):
        raise ConfigError(
            "task.entry_point", f"{entry_point} does not build an env with reset/step"
        )
    try:
        return env.get_task()
    except Exception as error:
        raise ConfigError(
            "task.entry_point", f"{entry_point}.get_task() failed: {error!r}"
        ) from None


def _episode_steps(env: Any, max_episode_steps: int | None, entry_point: str | type) -> Any:
    """The episode length given, else the env spec's; one of them is required."""
    steps = max_episode_steps or getattr(getattr(env, "spec", None), "max_episode_steps", None)
    if steps is None:
        raise ConfigError("task.max_episode_steps", f"required for entry_point {entry_point}")
    return steps


def _check_declared(
    name: str, schema: tuple[Param, ...], current: Mapping[str, Any], entry_point: str | type
) -> None:
    """Every declared parameter is a key of the env's own dict task."""
    unknown = [p.name for p in schema if p.name not in current]
    if unknown:
        raise ConfigError(
            f"task.params.{unknown[0]}",
            f"unknown parameter of task space '{name}'; {entry_point}.get_task() has: "
            f"{', '.join(map(str, current)) or 'nothing'}",
        )


def _replaced_entries(
    env: Any, current: Mapping[str, Any], declared: set[str], entry_point: str | type
) -> tuple[tuple[str, Any], ...]:
    """The env's own task entries that a task of the declared parameters alone would lose:
    an env whose `set_task` replaces its whole task (RLlib's `self.task = task`) drops the
    keys it is not given; one that merges keeps them, and gets nothing extra. The entries
    travel in the task space to every worker, so one that does not pickle is refused,
    naming it."""
    current = dict(current)  # a copy: the probe may change the env's own mapping
    undeclared = {key: value for key, value in current.items() if key not in declared}
    if not undeclared:
        return ()
    try:
        env.set_task({key: current[key] for key in current if key in declared})
        after = env.get_task()
        kept = set(after) if isinstance(after, Mapping) else set()
    except Exception:  # noqa: BLE001 - an env that cannot do without them: it replaces
        kept = set()
    finally:
        try:
            env.set_task(dict(current))  # as it was: the form check comes next
        except Exception:  # noqa: BLE001 - the form check next says what set_task raises
            pass
    lost = {key: value for key, value in undeclared.items() if key not in kept}
    for key, value in lost.items():
        try:
            cloudpickle.dumps(value)
        except Exception as error:  # noqa: BLE001 - whatever pickling refuses
            raise ConfigError(
                "task.params",
                f"{entry_point}.set_task replaces its whole task, so coevo would pass "
                f"'{key}' of its get_task() along with every task, but its value "
                f"({type(value).__name__}) cannot be sent to the workers ({error}); declare "
                f"the parameters you vary only, and have set_task merge them into its task",
            ) from None
    return tuple(lost.items())


# What a task of the wrong form raises (a dict where an int is wanted, a missing key);
# anything else is taken for the env's own failure on the task.
_FORM_ERRORS = (TypeError, KeyError, IndexError, AttributeError, AssertionError)


def _check_task_form(env: Any, space: TaskSpace, entry_point: str | type) -> None:
    """Give the env its initial task in the declared form and reset it: the env's own
    exception, quoted, if it does not take that form."""
    value = space.env_task(space.initial_task())
    try:
        env.set_task(value)
        reset = env.reset(seed=0)
    except Exception as error:
        hints = (
            "; a one-parameter space can pass the bare value (task_format: scalar)"
            if space.task_format == "dict" and len(space.params) == 1
            else ""
        ) + _int_hint(space)
        if not isinstance(error, _FORM_ERRORS):  # the env's own failure, or the form's
            raise ConfigError(
                "task",
                f"{entry_point}: set_task({value!r}) then reset() on the initial task raised "
                f"{error!r}: the env's own failure, or a task in another form than it takes "
                f"(task.task_format: {space.task_format}){hints}",
            ) from None
        raise ConfigError(
            "task.task_format",
            f"{entry_point} does not take its task as {space.task_format}: "
            f"set_task({value!r}) then reset() raised {error!r}{hints}",
        ) from None
    _check_api(env, reset, entry_point)


def _int_hint(space: TaskSpace) -> str:
    """A hint when whole-number float parameters may be what the env refused: an env of int
    levels gets 0.0 unless the parameter says `type: int`."""
    floats = [
        p.name
        for p in space.params
        if getattr(p, "type", "float") != "int"
        and all(float(v).is_integer() for v in (p.low, p.high, p.init, p.step))
    ]
    if not floats:
        return ""
    return (
        f"; {', '.join(floats)} {'is a float' if len(floats) == 1 else 'are floats'} here: "
        "declare type: int in task.params for int levels"
    )


def _check_api(env: Any, reset: Any, entry_point: str | type) -> None:
    """An env on the old gym API (reset -> obs, step -> 4 values) would fail every episode
    in the workers; say so before any starts. (An exception inside step is the env's own
    business: its episodes fail with it, as in a run.)"""
    old = "an env on the old gym API: port it, or wrap it (e.g. shimmy's GymV21CompatibilityV0)"
    if not (isinstance(reset, tuple | list) and len(reset) == 2):  # the workers unpack it
        raise ConfigError(
            "task.entry_point",
            f"{entry_point}.reset() returned {type(reset).__name__}, not gymnasium's "
            f"(observation, info); {old}",
        )
    _check_observation(env, reset[0], f"{entry_point}.reset()")
    try:
        env.action_space.seed(0)
        result = env.step(env.action_space.sample())
    except Exception:  # noqa: BLE001 - see above
        return
    if not (isinstance(result, tuple | list) and len(result) == 5):
        count = len(result) if isinstance(result, tuple | list) else type(result).__name__
        raise ConfigError(
            "task.entry_point",
            f"{entry_point}.step() returned {count} values, not gymnasium's 5 (observation, "
            f"reward, terminated, truncated, info); {old}",
        )
    _check_observation(env, result[0], f"{entry_point}.step()")


def _check_observation(env: Any, observation: Any, call: str) -> None:
    """A Box observation of another size than the env's observation_space failed every
    episode with numpy's broadcast error; say which call returned what."""
    box = env.observation_space
    if not isinstance(box, gym.spaces.Box):
        return  # other spaces are flattened by gymnasium's own rules in the workers
    wanted = int(np.prod(box.shape))
    if np.size(observation) != wanted:
        raise ConfigError(
            "task.entry_point",
            f"{call} returned an observation of shape {np.shape(observation)}; its "
            f"observation_space {box} has {wanted} values",
        )


# -- shared --------------------------------------------------------------------------------
def _split_params(
    space: str,
    params: Mapping[str, Mapping[str, Any]],
    mapping_fields: tuple[str, ...],
    required_mapping: bool,
) -> tuple[tuple[Param, ...], dict[str, tuple[str, str]]]:
    """Param schemas and, per parameter, its (mapping field, target)."""
    if not params:
        raise ConfigError("task.params", f"task space '{space}' needs at least one parameter")
    schema, mappings = [], {}
    allowed = (*PARAM_FIELDS, *mapping_fields)
    for pname, fields in params.items():
        where = f"task.params.{pname}"
        if not isinstance(fields, Mapping):
            raise ConfigError(where, f"must be a mapping of {', '.join(allowed)}")
        unknown = [k for k in fields if k not in allowed]
        if unknown:
            raise ConfigError(
                f"{where}.{unknown[0]}", f"unknown field; allowed: {', '.join(allowed)}"
            )
        absent = [k for k in _REQUIRED if k not in fields]
        if absent:
            raise ConfigError(f"{where}.{absent[0]}", f"required ({', '.join(_REQUIRED)} are)")
        given = [k for k in mapping_fields if fields.get(k) is not None]
        if required_mapping and len(given) != 1:
            raise ConfigError(
                where,
                "needs exactly one of 'kwarg' (a constructor keyword) or 'attr' "
                f"(an attribute of the unwrapped env), got {len(given)}",
            )
        if given:
            target = fields[given[0]]
            if not isinstance(target, str) or not target:
                raise ConfigError(f"{where}.{given[0]}", f"must be a name, got {target!r}")
            mappings[pname] = (given[0], target)
        numbers: dict[str, Any] = {}
        for key in PARAM_FIELDS:
            if key not in fields or (key == "round_to" and fields[key] is None):
                continue
            value = fields[key]
            if key == "type":
                if not isinstance(value, str):
                    raise ConfigError(f"{where}.type", f"must be float or int, got {value!r}")
                numbers[key] = value
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigError(f"{where}.{key}", f"must be a number, got {value!r}")
            numbers[key] = float(value)
        param = Param(str(pname), **numbers)
        param.validate(space)
        schema.append(param)
    return tuple(schema), mappings


def space_from_config(config: Any) -> TaskSpace:
    """The task space a `TaskConfig` describes (fields name, params, max_episode_steps,
    env_id, entry_point, env_kwargs, env_config, solved_score): a registered space, or a
    generic one."""
    space = _space_of(config)
    solved = getattr(config, "solved_score", None)
    return space if solved is None else replace(space, solved_score=float(solved))


def _space_of(config: Any) -> TaskSpace:
    name, params = config.name, dict(config.params or {})
    steps = config.max_episode_steps
    task_format = getattr(config, "task_format", "dict")
    if task_format != "dict" and config.entry_point is None:
        raise ConfigError(
            "task.task_format",
            f"'{task_format}' is for task.entry_point spaces only (registered and env_id "
            "spaces take their task as a dict)",
        )
    if config.env_id is None and config.entry_point is None:
        for field in ("env_kwargs", "env_config"):
            if getattr(config, field):
                raise ConfigError(f"task.{field}", "only for task.env_id or task.entry_point")
        space = registry.get(name, params)
        return space if steps is None else replace(space, max_episode_steps=steps)
    if config.env_id is not None and config.entry_point is not None:
        raise ConfigError("task.entry_point", "give task.env_id or task.entry_point, not both")
    if name in registry.names():
        raise ConfigError(
            "task.name",
            f"'{name}' is a registered task space; give a space built from "
            f"{'env_id' if config.env_id else 'entry_point'} a name of its own",
        )
    if config.env_id is not None:
        if config.env_config is not None:
            raise ConfigError("task.env_config", "only for task.entry_point; use env_kwargs")
        return gym_task_space(name, config.env_id, params, config.env_kwargs, steps)
    assert config.entry_point is not None  # neither given: a registered space (above)
    return class_task_space(
        name, config.entry_point, params, config.env_kwargs, config.env_config, steps, task_format
    )
