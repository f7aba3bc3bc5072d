"""Evaluate a saved policy from a run directory or checkpoint, optionally recording a GIF."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from coevo import checkpoint
from coevo.config import RunConfig
from coevo.curricula.poet.population import Pair, Population
from coevo.errors import ConfigError
from coevo.policies.noise import seed_key, uniforms
from coevo.pool import EvaluationPool
from coevo.pool.slots import observation_flattener
from coevo.run_files import CONFIG_FILE
from coevo.run_setup import load_run_config, prepare
from coevo.tasks.level_kind import is_numeric
from coevo.tasks.task import Task, TaskSpace

# An env that renders at most this many frames per second (gymnasium's `render_fps`) moves in
# whole steps (a maze): its GIF keeps every step's frame, at that rate. Faster envs keep every
# other frame, at 25 frames per second.
STEPWISE_FPS = 10


@dataclass
class SavedRun:
    """A run read back from its newest checkpoint: its directory, config and generation,
    POET's population (None for single-policy curricula) and every policy's parameters by name.
    """

    run_dir: Path
    config: RunConfig
    generation: int
    population: Population | None  # POET's pairs; None for single-policy curricula
    policies: dict[str, np.ndarray]  # every curriculum's policies, by name (checkpoint key)


@dataclass(frozen=True)
class SavedPolicy:
    """A policy of a single-policy curriculum, shaped like a pair for the caller."""

    pair_id: int  # its index among the run's policies
    name: str
    theta: np.ndarray
    task: Task


def load_saved_run(path: Path, on_skip: Callable[[str], None] | None = None) -> SavedRun:
    """A run directory (its newest readable checkpoint; a damaged newer one is reported to
    `on_skip`) or one checkpoint file."""
    path = Path(path)
    config = None
    if path.is_dir() and (path / CONFIG_FILE).is_file():
        config = load_run_config(path)
        if config.mode == "eligible_parents":  # it trains nothing, so it saves no policy
            raise ConfigError(
                "run",
                f"{path} is an eligible_parents run: it evaluates the pairs of "
                f"{config.eligible.pairs_file} and writes no checkpoints; coevo-eval takes "
                "the run directory or checkpoint those pairs come from",
            )
    file, state = checkpoint.load_run_or_file(path, on_skip)
    if path.is_dir():
        run_dir, generation = path, checkpoint.generation_of(file)
    else:
        run_dir = path.parent.parent  # RUN_DIR/checkpoints/gen_N.pkl
        generation = state["curriculum"]["generation"]
    population = state["curriculum"].get("population")
    policies = dict(state.get("policies") or {})
    if population is None and not policies:
        raise ConfigError(
            "checkpoint",
            f"{path} holds no policies coevo-eval can read (a single-policy run's checkpoint "
            "from before policies were saved under 'policies')",
        )
    if config is None:  # a checkpoint file: its run's config, two folders up
        config = load_run_config(run_dir)
    return SavedRun(run_dir, config, generation, population, policies)


def pick_policy(saved: SavedRun, index: int | None, space: TaskSpace) -> SavedPolicy:
    """A single-policy curriculum's policy by index (default 0), on the space's first task."""
    names = list(saved.policies)
    index = 0 if index is None else index
    if not 0 <= index < len(names):
        known = ", ".join(f"{i} ({name})" for i, name in enumerate(names))
        raise ConfigError("pair", f"no policy {index} in this run; known: {known}")
    name = names[index]
    return SavedPolicy(index, name, saved.policies[name], space.initial_task())


def pick_pair(population: Population, pair_id: int | None) -> Pair:
    """The pair asked for, or the active pair with the best last score."""
    if pair_id is not None:
        try:
            return population.get(pair_id)
        except KeyError:
            known = ", ".join(str(i) for i in sorted(p.pair_id for p in population.all_pairs()))
            raise ConfigError("pair", f"no pair {pair_id} in this run; known: {known}") from None
    scored = [p for p in population.active if np.isfinite(p.score)] or population.active
    return max(scored, key=lambda p: p.score if np.isfinite(p.score) else -np.inf)


def parse_task(
    space: TaskSpace,
    population: Population,
    text: str | None,
    default: Task,
    warn: Callable[[str], None] | None = None,
    bounds_of: str = "the run's",
) -> tuple[TaskSpace, Task]:
    """`None`: the pair's own task; a pair id: that pair's task; or `name=value,...`. With
    the space to evaluate it on: a value outside the run's bounds (out of distribution, as
    a test of generalisation asks) widens that parameter's bounds, and `warn` says so
    (`bounds_of` names whose bounds: the run's, or a space's without a run)."""
    if text is None:
        return space, default
    if text.strip().isdigit():
        return space, pick_pair(population, int(text)).task
    if not is_numeric(space):
        return space, _level_from_text(space, text)
    values = {}
    for item in text.split(","):
        name, sep, value = item.partition("=")
        if not sep:
            raise ConfigError("task", f"expected a pair id or name=value,...; got '{text}'")
        try:
            values[name.strip()] = float(value)
        except ValueError:
            raise ConfigError(f"task.{name.strip()}", f"must be a number, got '{value}'") from None
        if not np.isfinite(values[name.strip()]):
            raise ConfigError(f"task.{name.strip()}", f"must be a finite number, got '{value}'")
    wider = {}
    for name, value in values.items():
        p = space.param(name)  # an unknown name: refused here, naming the known ones
        if not p.low <= value <= p.high:
            wider[name] = {"low": min(p.low, value), "high": max(p.high, value)}
            if warn is not None:
                warn(
                    f"task.{name} {value:g} is outside {bounds_of} bounds [{p.low:g}, "
                    f"{p.high:g}]: evaluated as given (out of distribution)"
                )
    space = space.with_overrides(wider)
    return space, space.task(**{**default.as_dict(), **values})


def _level_from_text(space: TaskSpace, text: str) -> Any:
    """A level of a kind without named numbers (a maze) from its JSON, as the tables'
    `task` column holds it (test_set.csv, eligibility.csv), or by name where the space
    names some of its levels (`named_levels()`: mazes' labyrinth, four_rooms, ...)."""
    named = getattr(space, "named_levels", dict)()
    if text.strip() in named:
        return named[text.strip()]
    try:
        level = space.level_from_json(text)
        space.check(level)
    except (ValueError, KeyError, TypeError, ConfigError) as error:
        names = f", a level's name ({', '.join(named)})" if named else ""
        raise ConfigError(
            "task",
            f"task space '{space.name}' holds {space.level_type.__name__} levels: give a pair "
            f"id{names} or a level's JSON, as the `task` column of test_set.csv or "
            f"eligibility.csv holds it ({error})",
        ) from None
    return level


def episode_returns(
    space: TaskSpace, policy_spec, theta: np.ndarray, task: Task, episodes: int, seed: int
) -> np.ndarray:
    """The returns of `theta` on `task`, played locally in this process.

    Args:
        space: The task space.
        policy_spec: The policy's spec.
        theta: The policy's parameters.
        task: The task to play.
        episodes: How many episodes.
        seed: The first episode's seed.

    Returns:
        One return per episode.
    """
    with EvaluationPool(space, policy_spec, "local", 1) as pool:
        return pool.evaluate([(theta, task)], episodes, seed)[0]


def record_gif(
    space: TaskSpace, policy_spec, theta: np.ndarray, task: Task, seed: int, path: Path
) -> Path:
    """One episode rendered frame by frame into an animated GIF."""
    import os

    from PIL import Image

    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # render off-screen, no display needed
    env = space.make_env()
    env.render_mode = "rgb_array"  # classic-control and Box2D envs read this at render()
    env.set_task(space.env_task(task))
    obs, _ = env.reset(seed=seed)
    frames = [_first_frame(env, space)]
    frames += _episode_frames(env, policy_spec, theta, obs, seed, space.max_episode_steps)
    env.close()
    fps = env.metadata.get("render_fps")
    if fps is not None and fps <= STEPWISE_FPS:
        kept, duration = frames, round(1000 / fps)
    else:
        kept, duration = frames[::2], 40  # 25 fps of 50
    images = [Image.fromarray(np.asarray(frame)) for frame in kept]
    path = Path(path)
    images[0].save(path, save_all=True, append_images=images[1:], duration=duration, loop=0)
    return path


def _first_frame(env: Any, space: TaskSpace) -> Any:
    """The reset env's first frame; a ConfigError (the env closed) when it renders none."""
    try:
        first = env.render()
    except Exception as error:  # noqa: BLE001 - NotImplementedError, a missing display, ...
        env.close()
        raise ConfigError(
            "video", f"the env of task space '{space.name}' cannot render a frame ({error!r})"
        ) from None
    if first is None or np.asarray(first).ndim != 3:
        env.close()
        raise ConfigError(
            "video",
            f"the env of task space '{space.name}' renders no RGB frame with "
            f"render_mode='rgb_array' (render() gave {type(first).__name__})",
        )
    return first


def _episode_frames(
    env: Any, policy_spec, theta: np.ndarray, obs: Any, seed: int, max_steps: int
) -> Iterator[Any]:
    """The episode from `obs` on, one frame after each step, as the policy plays it."""
    flatten = observation_flattener(env.observation_space)
    # The worker's own step: recurrent state and action noise as in evaluation.
    state = policy_spec.initial_state(1)
    key = np.array([seed_key(seed)])
    for step in range(max_steps):
        noise = (
            uniforms(key, np.array([step]), policy_spec.noise_dim)
            if policy_spec.noise_dim
            else None
        )
        if flatten is not None:
            obs = flatten(obs)
        obs_row = np.asarray(obs, np.float32).reshape(1, -1)
        output = policy_spec.step(theta[None], obs_row, state, noise)
        state, action = output.state, output.actions[0]
        obs, _, terminated, truncated, _ = env.step(int(action) if policy_spec.discrete else action)
        yield env.render()
        if terminated or truncated:
            break


def replay(
    path: Path,
    pair_id: int | None = None,
    task_text: str | None = None,
    episodes: int = 5,
    seed: int = 0,
    video: Path | None = None,
    on_skip: Callable[[str], None] | None = None,
) -> tuple[Pair | SavedPolicy, Task, np.ndarray, int]:
    """(pair or policy, task, returns [episodes], the checkpoint's generation). `on_skip`
    gets the warnings: a damaged checkpoint skipped, a task outside the run's bounds."""
    saved = load_saved_run(path, on_skip)
    space, policy_spec = prepare(saved.config)
    if saved.population is not None:
        pair = pick_pair(saved.population, pair_id)
        space, task = parse_task(space, saved.population, task_text, pair.task, on_skip)
    else:
        pair = pick_policy(saved, pair_id, space)
        if task_text is not None and "=" not in task_text and is_numeric(space):
            if len(space.names) != 1:
                raise ConfigError(
                    "task",
                    "this run has no pairs to take a task from; give name=value,... instead",
                )
            try:
                float(task_text)
            except ValueError:
                raise ConfigError(
                    "task", f"expected a value of {space.names[0]} or name=value; got '{task_text}'"
                ) from None
            task_text = f"{space.names[0]}={task_text}"  # one parameter: its value alone
        space, task = parse_task(space, Population(), task_text, pair.task, on_skip)
    if video is not None:  # first: an env that cannot render stops before the episodes run
        record_gif(space, policy_spec, pair.theta, task, seed, video)
    returns = episode_returns(space, policy_spec, pair.theta, task, episodes, seed)
    return pair, task, returns, saved.generation
