"""coevo's PLR level buffer beside Syllabus's PLR `TaskSampler` (a port of dcd's level
sampler), fed the same sequences of (level, score) updates.

    .venv/bin/python benchmarks/plr_vs_syllabus.py      # needs syllabus-rl (the test extra)

Both keep a buffer of `buffer_size` levels in Syllabus's `sample_full_distribution` mode
(dcd's `level_replay_seed_buffer_size`), with rank prioritisation at `temperature` β,
staleness weight ρ, α = 1 (the latest score replaces) and an eviction rule. A sequence is a
list of events, applied to both:

- ("new", level, score): a level never seen is offered with its score (Syllabus: staged by
  `observe_external_unseen_sample`, then `update_task_score`; coevo: `LevelBuffer.offer`);
- ("replay", score): a replay draw, Syllabus's `_sample_replay_level` from its weights,
  coevo drawing the same level (`LevelBuffer.sample` given that pick), then the level is
  rescored with `score`.

After every event the replay distributions (the sample weight of each level in the buffer)
are compared. Where the rules match, they agree to 1e-9: Syllabus keeps scores and staleness
in float32, so for that comparison its two arrays are widened to float64 (its rules, coevo's
precision); the row "Syllabus's own float32 arrays" measures what float32 alone changes.
The table after that lists each case where they differ and why.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coevo.curricula.level_buffer import LevelBuffer  # noqa: E402
from coevo.tasks.task import Task  # noqa: E402

MATCH = 1e-9


def load_syllabus_sampler():
    """Syllabus's TaskSampler class. Importing it sets numpy's error mode to 'raise' for the
    whole process (`np.seterr(all='raise')` at module level): the mode is put back."""
    before = np.geterr()
    try:
        from syllabus.curricula.plr.task_sampler import TaskSampler
    finally:
        np.seterr(**before)
    return TaskSampler


@dataclass(frozen=True)
class Case:
    """One comparison: the shared settings and how the event sequence is made."""

    name: str
    buffer_size: int = 8
    temperature: float = 0.3
    staleness_coef: float = 0.3
    eviction: str = "replay_support"  # Syllabus task_buffer_priority
    staleness_clock: str = "replays"  # coevo's; dcd and Syllabus age by replays only
    score_levels: int = 0  # >0: scores drawn from this many values (ties); 0: distinct
    float32: bool = False  # keep Syllabus's own float32 arrays
    compare_from_full: bool = True  # compare only once the buffer is full
    events: int = 300
    seed: int = 0
    expect_match: bool = True
    why: str = ""


def make_events(case: Case) -> list[tuple]:
    """New levels until the buffer is full, then replays and new levels mixed half and half
    (PLR⊥'s replay_prob 0.5), scores uniform in [0, 1)."""
    rng = np.random.default_rng(case.seed)

    def score() -> float:
        if case.score_levels:
            return float(rng.integers(case.score_levels)) / case.score_levels
        return float(rng.random())

    events, next_level = [], 1
    for step in range(case.events):
        if step < case.buffer_size or rng.random() >= 0.5:
            events.append(("new", next_level, score()))
            next_level += 1
        else:
            events.append(("replay", score()))
    return events


class _Pick:
    """A generator stand-in for `LevelBuffer.sample`: it draws the index given."""

    def __init__(self, index: int):
        self.index = index

    def choice(self, n: int, p=None) -> int:
        return self.index


def _task(level: int) -> Task:
    return Task("syllabus", (("level", level),))


def build_pair(case: Case):
    TaskSampler = load_syllabus_sampler()
    syllabus = TaskSampler(
        [],
        num_steps=1,
        strategy="positive_value_loss",  # scores come from outside; the name is unused
        replay_schedule="fixed",
        score_transform="rank",
        temperature=case.temperature,
        rho=1.0,
        replay_prob=0.5,
        alpha=1.0,
        staleness_coef=case.staleness_coef,
        staleness_transform="power",
        staleness_temperature=1.0,
        sample_full_distribution=True,
        task_buffer_size=case.buffer_size,
        task_buffer_priority=case.eviction,
    )
    if not case.float32:
        syllabus.task_scores = syllabus.task_scores.astype(np.float64)
        syllabus.task_staleness = syllabus.task_staleness.astype(np.float64)
    coevo = LevelBuffer(
        case.buffer_size,
        case.temperature,
        case.staleness_coef,
        replay_prob=0.5,
        min_fill=1.0,
        eviction=case.eviction,
        staleness_clock=case.staleness_clock,
    )
    return syllabus, coevo


def syllabus_weights(sampler) -> dict[int, float]:
    weights = sampler.sample_weights()
    seen = sampler.unseen_task_weights == 0
    return {int(t): float(w) for t, w, s in zip(sampler.tasks, weights, seen, strict=True) if s}


def coevo_weights(buffer: LevelBuffer) -> dict[int, float]:
    probabilities = buffer.distribution()
    return {
        dict(lv.task.params)["level"]: float(p)
        for lv, p in zip(buffer.levels, probabilities, strict=True)
    }


def run_case(case: Case) -> dict:
    """Apply the case's events to both: the largest weight difference over the events
    compared, and the event after which the buffers first held different levels (0: never;
    the comparison stops there)."""
    syllabus, coevo = build_pair(case)
    np.random.seed(case.seed)  # Syllabus draws replays from numpy's global generator
    worst, compared, other_levels = 0.0, 0, 0
    for number, event in enumerate(make_events(case), start=1):
        if event[0] == "new":
            _, level, score = event
            syllabus.observe_external_unseen_sample([level])
            syllabus.update_task_score(0, level, score, score, 1)
            coevo.offer(_task(level), score, 0)
        else:
            level = syllabus._sample_replay_level()
            index = next(i for i, lv in enumerate(coevo.levels) if lv.task == _task(level))
            (pick,) = coevo.sample(_Pick(index))
            syllabus.update_task_score(0, level, event[1], event[1], 1)
            coevo.rescore(pick.level, event[1])
        if case.compare_from_full and len(coevo) < case.buffer_size:
            continue
        ours, theirs = coevo_weights(coevo), syllabus_weights(syllabus)
        if set(ours) != set(theirs):  # the buffers hold other levels: no lockstep after it
            other_levels = number
            break
        compared += 1
        worst = max(worst, max(abs(ours[k] - theirs[k]) for k in ours))
    return {"max_diff": worst, "compared": compared, "other_levels": other_levels}


CASES = (
    Case("rank + staleness, replay_support, distinct scores"),
    Case("rank only (staleness_coef 0)", staleness_coef=0.0),
    Case("β 1.0, ρ 0.5, buffer 32", temperature=1.0, staleness_coef=0.5, buffer_size=32),
    Case("score eviction, distinct scores", eviction="score"),
    Case("before the buffer is full, rank only", staleness_coef=0.0, compare_from_full=False),
    Case(
        "Syllabus's own float32 arrays",
        float32=True,
        expect_match=False,
        why="Syllabus keeps scores and staleness in float32: its staleness weights are "
        "rounded to ~1e-8 (coevo computes in float64)",
    ),
    Case(
        "tied scores (5 values, as learnability over few episodes)",
        score_levels=5,
        expect_match=False,
        why="ties: coevo gives tied scores the best rank of their group (equal priority); "
        "Syllabus, as dcd, breaks them by argsort position, so order in the buffer counts",
    ),
    Case(
        "before the buffer is full (no replay yet)",
        compare_from_full=False,
        events=8,
        expect_match=False,
        why="all staleness 0 with empty slots: Syllabus's uniform staleness part sums to "
        "fill/size, not 1 (then renormalised), so it weighs score more than (1 - ρ); coevo "
        "uses a uniform P_C",
    ),
    Case(
        "coevo's default staleness_clock=draws",
        staleness_clock="draws",
        expect_match=False,
        why="coevo's default (minimax 0.2) ages the buffer by every level offered; dcd and "
        "Syllabus by replay draws only (curriculum.staleness_clock=replays matches them)",
    ),
    Case(
        "score eviction with tied scores",
        eviction="score",
        score_levels=5,
        expect_match=False,
        why="a new level tying the lowest score: Syllabus admits it (<=), coevo's `score` "
        "eviction needs a strictly higher score (its replay_support admits ties, as dcd)",
    ),
)

# Rules that differ but move no weight in these sequences.
OTHER_DIFFERENCES = (
    (
        "replay decision",
        "Syllabus's default replay_schedule=proportionate replays with P = min(fill, "
        "replay_prob); coevo (and dcd's PLR⊥ configs) a fixed replay_prob once min_fill is "
        "reached: Syllabus's `fixed` is used here",
    ),
    (
        "eviction order",
        "Syllabus overwrites the evicted slot; coevo appends the new level: the same set, "
        "another order (only tie-breaking could tell)",
    ),
)


def main() -> int:
    print(f"{'case':<58} {'compared':>8} {'diverged':>8} {'max |Δw|':>10}  verdict")
    failed = False
    rows = []
    for case in CASES:
        result = run_case(case)
        matched = result["max_diff"] <= MATCH and not result["other_levels"]
        verdict = "match" if matched else "differ"
        failed |= matched != case.expect_match
        print(
            f"{case.name:<58} {result['compared']:>8} {result['other_levels'] or '-':>8} "
            f"{result['max_diff']:>10.2e}  {verdict}"
        )
        if not case.expect_match:
            rows.append((case.name, case.why))
    print("\nWhere they differ, and why:")
    for name, why in (*rows, *OTHER_DIFFERENCES):
        print(f"- {name}: {why}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
