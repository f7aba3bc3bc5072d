"""Held-out test sets: fixed, seeded tasks of a space from easy to hard, and "% mastered".

The metric curriculum papers compare on (TeachMyAgent, Romac et al. 2021): the share of a
fixed set of test tasks on which the trained agent's return reaches a mastery threshold. A
test set here is `size` tasks drawn uniformly from the task space's bounds with a fixed seed,
sorted from easy to hard by their distance (in the space's [0, 1]-scaled encoding) from the
space's initial task: every curriculum starts there, so distance from it is the one
difficulty order that means the same in every space. The mastery threshold is the task
space's `solved_score` (its one source of truth), unless a run overrides it.

Scoring goes through the evaluation pool like every other evaluation. With a population
(POET's active pairs, `best_of=True`) each test task is scored by the best of its policies,
as transfer would pick; a single-policy curriculum's policy is scored alone, and with a few
seeds side by side (`best_of=False`) the share is their mean. Test episodes are counted
apart: the result carries its own episode and env-step counts, which never enter the
training counters (the runner measures after the generation's own figures are taken).
With two or more episodes per task, test_scores.csv also keeps the returns of the even- and
of the odd-numbered episodes apart: two independent scorings, so coevo-compare can pick a
run's worst tasks on one and report their return from the other (its α-CVaR).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from coevo.errors import ConfigError
from coevo.settings import Checked, setting
from coevo.tasks.task import Task, TaskSpace

DEFAULT_SIZE = 100
DEFAULT_SEED = 0
DEFAULT_EPISODES = 1  # TeachMyAgent scores each test task on one episode
# summary.csv's columns of a test (NaN in generations without one).
SUMMARY_COLUMNS = ("test_mastered", "test_mean_return", "test_episodes", "test_env_steps")


@dataclass(frozen=True)
class TestSetConfig(Checked):
    """The run's held-out test set and how often the curriculum's policies are scored on it."""

    section = "test_set"

    # Only multiples of N: a run extended on resume must keep the tables of one run straight
    # through, so the last generation gets no extra test.
    every: int = setting(5, low=0, doc="score every N generations (0: never)")
    size: int = setting(DEFAULT_SIZE, low=1, doc="test tasks")
    seed: int = setting(DEFAULT_SEED, low=0, doc="seed of the test tasks and episodes")
    episodes: int = setting(
        DEFAULT_EPISODES,
        low=1,
        doc="episodes per policy and test task (2 or more: coevo-compare's α-CVaR ranks "
        "tasks on the even-numbered episodes and reports the odd)",
    )
    threshold: float | None = setting(None, doc="mastery threshold (None: solved_score)")
    params: dict = setting(
        factory=dict,
        doc="{parameter: {low, high}}: the test tasks' own bounds, e.g. levels past the "
        "training ones (held out); {}: the task space's",
    )

    __test__ = False

    def due(self, generation: int) -> bool:
        """Is `generation` a test generation?"""
        return self.every > 0 and generation % self.every == 0


@dataclass(frozen=True)
class TestSet:
    """Test tasks of one space, easiest first, and the return that counts as mastered."""

    space: str
    tasks: tuple[Task, ...]
    threshold: float
    seed: int
    # Each task's distance from the initial task, the order (empty: measured in the space
    # `rows` is given).
    distances: tuple[float, ...] = ()

    __test__ = False  # not a pytest test class, whatever its name

    def __len__(self) -> int:
        return len(self.tasks)

    def rows(self, space: TaskSpace, episodes: int) -> list[dict[str, object]]:
        """test_set.csv's rows: each test task with its parameters and its distance from the
        initial task (the order), the mastery threshold and the episodes per task."""
        start = space.initial_task()
        distances = self.distances or [round(space.distance(start, t), 12) for t in self.tasks]
        return [
            {
                "test_task": index,
                "task_id": task.id,
                **{f"task.{name}": value for name, value in task.params},
                # A level without named numbers (a maze) is written whole, as JSON.
                **({} if task.params else {"task": task.to_json()}),
                "distance": distances[index],
                "threshold": self.threshold,
                "episodes": episodes,
            }
            for index, task in enumerate(self.tasks)
        ]


@dataclass(frozen=True)
class TestScore:
    """Per test task: the best policy's mean return and whether it reached the threshold."""

    scores: np.ndarray  # [policies, tasks]: mean return over episodes (NaN: failed)
    returns: np.ndarray  # [tasks]: best over policies (NaN: all failed)
    best_policy: np.ndarray  # [tasks]: index of the policy that scored it (-1: all failed)
    mastered: np.ndarray  # [policies, tasks] bool: each policy's own mastery
    # [policies, tasks]: mean return over the even-numbered episodes (reset seeds seed,
    # seed + 2, ...) and over the odd-numbered ones (NaN: none, or one failed): two
    # independent scorings of each policy on each task (coevo-compare's α-CVaR ranks tasks
    # on one and reports the other).
    even: np.ndarray
    odd: np.ndarray
    best_of: bool  # a task counts as mastered when any policy masters it
    episodes: int  # test episodes run (counted apart from training)
    env_steps: float  # env steps of those episodes
    # policy index * tasks + task -> the last line of its first failed episode's error
    errors: Mapping[int, str] = field(default_factory=dict)

    __test__ = False

    @property
    def share_mastered(self) -> float:
        """Share of test tasks mastered, 0 to 1: by the best policy on each task
        (`best_of`), else each policy's own share, averaged over the policies."""
        if not self.mastered.size:
            return 0.0
        if self.best_of:
            return float(self.mastered.any(axis=0).mean())
        return float(self.mastered.mean(axis=1).mean())

    def rows(self, names: Sequence[str]) -> list[dict[str, object]]:
        """test_scores.csv's rows: the returns the share counts, on each test task
        (`test_task`: its index in the test set, easiest first), and whether each reached
        the threshold. A population's task has one row, its best policy's (empty `policy`
        when every policy failed there); policies that each count have a row per task.

        `return_even` and `return_odd`: the row's mean return over the even-numbered and
        over the odd-numbered episodes (NaN with one episode per task). A population's
        halves are those of the policy the even episodes pick, which may differ from
        `policy` (picked on all of them): so both the pick and the task's rank can come
        from the even episodes and the return reported from the odd, unbiased by either."""
        rows: list[dict[str, object]] = []
        tasks = self.scores.shape[1]
        if self.best_of:
            picked = np.argmax(np.where(np.isfinite(self.even), self.even, -np.inf), axis=0)
            for task in range(tasks):
                best = int(self.best_policy[task])
                # Every policy failed there: the first one's error says why.
                failed = self.errors.get(task, "") if best < 0 else ""
                rows.append(
                    {
                        "test_task": task,
                        "policy": names[best] if best >= 0 else "",
                        "return": float(self.returns[task]),
                        "mastered": bool(best >= 0 and self.mastered[best, task]),
                        "error": failed,
                        **self._halves(int(picked[task]), task),
                    }
                )
            return rows
        for index, name in enumerate(names):
            for task in range(tasks):
                rows.append(
                    {
                        "test_task": task,
                        "policy": name,
                        "return": float(self.scores[index, task]),
                        "mastered": bool(self.mastered[index, task]),
                        "error": self.errors.get(index * tasks + task, ""),
                        **self._halves(index, task),
                    }
                )
        return rows

    def _halves(self, policy: int, task: int) -> dict[str, float]:
        even = float(self.even[policy, task])
        odd = float(self.odd[policy, task]) if np.isfinite(even) else float("nan")
        return {"return_even": even, "return_odd": odd}

    def summary(self) -> dict[str, float]:
        """summary.csv's test columns."""
        finite = self.scores[np.isfinite(self.scores)]
        mean = float(finite.mean()) if finite.size else float("nan")
        if self.best_of:
            best = self.returns[np.isfinite(self.returns)]
            mean = float(best.mean()) if best.size else float("nan")
        return dict(
            zip(
                SUMMARY_COLUMNS,
                (self.share_mastered, mean, float(self.episodes), self.env_steps),
                strict=True,
            )
        )


def no_test() -> dict[str, float]:
    """summary.csv's test columns in a generation without a test."""
    return dict.fromkeys(SUMMARY_COLUMNS, float("nan"))


def mastery_threshold(space: TaskSpace, threshold: float | None = None) -> float:
    """`threshold` when given, else the space's solved score; an error naming both if none."""
    if threshold is not None:
        return float(threshold)
    if space.solved_score is None:
        raise ConfigError(
            "test_set.threshold",
            f"task space '{space.name}' declares no solved_score: give the mastery threshold",
        )
    return float(space.solved_score)


def test_space_of(space: TaskSpace, bounds: Mapping[str, Mapping[str, Any]] | None) -> TaskSpace:
    """The space the test tasks are drawn from: `space`, with the parameters' bounds that
    `test_set.params` gives instead ({name: {low, high}}, either or both; outside the
    training bounds is allowed: that is what holds tasks out)."""
    if not bounds:
        return space
    if not isinstance(bounds, Mapping):
        raise ConfigError(
            "test_set.params", f"expected {{parameter: {{low, high}}}}, got {bounds!r}"
        )
    for name, fields in bounds.items():
        where = f"test_set.params.{name}"
        if name not in space.names:
            raise ConfigError(
                where,
                f"not a parameter of task space '{space.name}'; allowed: {', '.join(space.names)}",
            )
        if not isinstance(fields, Mapping) or not fields or set(fields) - {"low", "high"}:
            raise ConfigError(
                where, f"expected {{low: .., high: ..}} (either or both), got {fields!r}"
            )
    # Each parameter's init moves inside its test bounds (a space checks that); the test
    # set's order still counts from the training space's initial task.
    overrides = {}
    for name, fields in bounds.items():
        base = space.param(name)
        low, high = fields.get("low", base.low), fields.get("high", base.high)
        try:
            init = min(max(base.init, float(low)), float(high))
        except (TypeError, ValueError):
            init = base.init  # not numbers: with_overrides names the field
        overrides[name] = {**fields, "init": init}
    try:
        test_space = space.with_overrides(overrides)
    except ConfigError as error:  # it names task.params.*: here they are the test set's
        field = error.field.replace("task.params.", "test_set.params.", 1)
        raise ConfigError(field, error.message) from None
    return test_space


def bounds_text(space: TaskSpace, bounds: Mapping[str, Mapping[str, Any]]) -> str:
    """test_set.params' bounds as the test set draws within them, e.g. "level 15 to 19"."""
    drawn_from = test_space_of(space, bounds)
    return ", ".join(
        f"{name} {drawn_from.param(name).low:g} to {drawn_from.param(name).high:g}"
        for name in bounds
    )


def make_test_set(
    space: TaskSpace,
    size: int = DEFAULT_SIZE,
    seed: int = DEFAULT_SEED,
    threshold: float | None = None,
    bounds: Mapping[str, Mapping[str, Any]] | None = None,
) -> TestSet:
    """`size` distinct tasks drawn uniformly within the space's bounds (or `bounds`', see
    `test_space_of`) from a generator seeded by (seed, space name), rounded like mutations,
    sorted by distance from the space's initial task (ties by task id, so the order never
    depends on the draw order). Bounds with fewer distinct tasks give all they have."""
    if not isinstance(size, int) or size <= 0:
        raise ConfigError("test_set.size", f"must be a positive integer, got {size!r}")
    drawn_from = test_space_of(space, bounds)
    rng = np.random.default_rng([seed, zlib.crc32(space.name.encode())])
    start = space.initial_task()
    tasks: dict[Task, None] = {}
    # A space with held-out levels of its own (mazes: the papers' named families, then
    # seeded random ones; the gate: the papers' target) is tested on those, unless
    # test_set.params asks for uniform draws within bounds of the user's.
    held_out = None if bounds else getattr(space, "test_tasks", None)
    if held_out is not None:
        tasks = dict.fromkeys(held_out(size, seed))
    # Rounding can make draws collide (a narrow parameter with a coarse round_to): keep drawing,
    # but stop if the space has fewer distinct tasks than asked for.
    for _ in range(0 if held_out is not None else 100 * size):
        if len(tasks) == size:
            break
        tasks.setdefault(_uniform_task(drawn_from, rng), None)
    # A space with fewer distinct tasks than asked for (e.g. a few int levels) is tested on
    # all of them.
    # Distances on the bounds of training and test together: a parameter training keeps
    # fixed (span 0, so no distance in the training space) counts where the test varies it.
    measured_on = space.with_overrides(
        {
            p.name: {"low": min(p.low, t.low), "high": max(p.high, t.high)}
            for p, t in zip(space.params, drawn_from.params, strict=True)
            if (p.low, p.high) != (t.low, t.high)
        }
    )
    distance = {task: round(measured_on.distance(start, task), 12) for task in tasks}
    ordered = sorted(tasks, key=lambda task: (distance[task], task.id))
    return TestSet(
        space.name,
        tuple(ordered),
        mastery_threshold(space, threshold),
        seed,
        tuple(distance[task] for task in ordered),
    )


def _uniform_task(space: TaskSpace, rng: np.random.Generator) -> Task:
    values = {p.name: p.clip(rng.uniform(p.low, p.high)) for p in space.params}
    for low_name, high_name in space.ordered:
        if values[low_name] > values[high_name]:
            values[low_name], values[high_name] = values[high_name], values[low_name]
    return space.task(**values)


def score_test_set(
    pool,
    policies: Sequence[np.ndarray],
    test_set: TestSet,
    episodes: int = DEFAULT_EPISODES,
    seed: int = 0,
    best_of: bool = True,
) -> TestScore:
    """Every policy on every test task through the pool (one call). Deterministic for given
    policies, test set, episodes and seed. A failed episode makes its score NaN, which never
    counts as mastered."""
    if not len(policies):
        raise ValueError("score_test_set needs at least one policy")
    if not isinstance(episodes, int) or episodes <= 0:
        raise ConfigError("test_set.episodes", f"must be a positive integer, got {episodes!r}")
    before = pool.stats_snapshot()
    pairs = [(theta, task) for theta in policies for task in test_set.tasks]
    returns, errors = pool.evaluate_detailed(pairs, episodes, seed)
    after = pool.stats_snapshot()
    shape = (len(policies), len(test_set))
    matrix = returns.mean(axis=1).reshape(shape)
    finite = np.where(np.isfinite(matrix), matrix, -np.inf)
    best_policy = np.argmax(finite, axis=0)
    best = finite[best_policy, np.arange(len(test_set))]
    failed = ~np.isfinite(best)
    mastered = np.isfinite(matrix) & (np.nan_to_num(matrix, nan=-np.inf) >= test_set.threshold)
    return TestScore(
        scores=matrix,
        returns=np.where(failed, np.nan, best),
        best_policy=np.where(failed, -1, best_policy),
        mastered=mastered,
        even=_mean_of(returns[:, 0::2], shape),
        odd=_mean_of(returns[:, 1::2], shape),
        best_of=best_of,
        episodes=len(pairs) * episodes,
        env_steps=float(after["env_steps"] - before["env_steps"]),
        errors=errors,
    )


def _mean_of(returns: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Each pair's mean over some of its episodes ([pairs, episodes]), as [policies, tasks];
    all NaN when there are none (one episode per task has no odd-numbered one)."""
    if not returns.shape[1]:
        return np.full(shape, np.nan)
    return returns.mean(axis=1).reshape(shape)


def measure(curriculum, test_set: TestSet, config: TestSetConfig) -> dict[str, float]:
    """summary.csv's test columns for a curriculum's policies now (any `Curriculum`: it says
    which policies and whether a task takes the best of them)."""
    return measure_detailed(curriculum, test_set, config)[0]


def measure_detailed(
    curriculum, test_set: TestSet, config: TestSetConfig
) -> tuple[dict[str, float], list[dict[str, object]]]:
    """`measure`'s columns, and test_scores.csv's rows of every policy on every test task."""
    chosen = curriculum.policies_for_testing()
    score = score_test_set(
        curriculum.pool,
        list(chosen.policies.values()),
        test_set,
        config.episodes,
        config.seed,
        best_of=chosen.best_of,
    )
    return score.summary(), score.rows(list(chosen.policies))
