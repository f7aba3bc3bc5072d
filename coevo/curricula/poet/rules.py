"""The rules of a generation as pure functions: each returns its outcome and the reason.

Reasons are written for the eligibility report: they name the number the rule looked at
and the threshold it was compared with.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _fmt(value: float, against: float | None = None) -> str:
    """One decimal (three significant digits below 1), more where rounding would make the
    shown value contradict the comparison with `against` (not "score 100.0 < 100"); in
    the end every digit (a mean like 0.6999999999999998 against 0.7)."""
    small = abs(value) < 1
    candidates = [f"{value:.{3 + e}g}" if small else f"{value:.{1 + e}f}" for e in range(7)]
    for text in [*candidates, repr(float(value))]:
        shown = float(text)
        if against is None or (
            (shown < against) == (value < against) and (shown > against) == (value > against)
        ):
            return text
    return repr(float(value))


def _limit(value: float) -> str:
    """A threshold as short as it reads back exactly (200, 0.975, -133.7397242)."""
    text = f"{value:g}"
    return text if float(text) == value else repr(float(value))


def eligibility(
    score: float, threshold: float, setting: str = "repro_threshold"
) -> tuple[bool, str]:
    """May this pair reproduce? Its score must reach the threshold; the reason names the
    setting it came from (`repro_threshold`, or `eligible.threshold` in eligible mode)."""
    if not np.isfinite(score):
        return False, f"evaluation failed (score {score}); not eligible"
    if score >= threshold:
        return True, f"score {_fmt(score, threshold)} ≥ {setting} {_limit(threshold)}"
    return False, f"score {_fmt(score, threshold)} < {setting} {_limit(threshold)}"


def minimal_criterion(score: float, lower: float, upper: float) -> tuple[bool, str]:
    """Is a child task neither too hard nor too easy for its parent's policy?"""
    if not np.isfinite(score):
        return False, f"child rejected: evaluation failed (score {score})"
    if score < lower:
        return False, f"child rejected: score {_fmt(score, lower)} < mc_lower {_limit(lower)}"
    if score > upper:
        return False, f"child rejected: score {_fmt(score, upper)} > mc_upper {_limit(upper)}"
    return (
        True,
        f"passes minimal criterion: {_limit(lower)} ≤ score {_fmt(score)} ≤ {_limit(upper)}",
    )


def admission_order(novelty: Sequence[float]) -> list[int]:
    """Indices of candidates by novelty, most novel first (ties: earlier candidate first)."""
    return sorted(range(len(novelty)), key=lambda i: (-novelty[i], i))


def admission(rank: int, max_admitted: int, novelty: float) -> tuple[bool, str]:
    """Whether a child of novelty rank `rank` is admitted, and why.

    Args:
        rank: The child's rank by novelty (1: most novel).
        max_admitted: The most children admitted per generation.
        novelty: The child's novelty, for the reason.

    Returns:
        Whether it is admitted, and the reason in words.
    """
    if rank <= max_admitted:
        return True, f"admitted: novelty rank {rank} ≤ max_admitted {max_admitted} " + (
            f"(novelty {novelty:.3f})"
        )
    return False, f"not admitted: novelty rank {rank} > max_admitted {max_admitted}"


def transfer(
    best_score: float,
    source: str,
    recent_best: float,
    history: int,
    own_score: float = float("nan"),
) -> tuple[bool, str]:
    """Does the best transferred policy beat the best of the task's last `history` scores?

    A task with no score of its own yet (a child admitted this generation, evaluated before
    it existed) compares with `own_score`: its own policy's score in the same transfer
    evaluation, so a tie or a worse policy is no transfer.
    """
    if not np.isfinite(recent_best):
        if np.isfinite(best_score) and not np.isfinite(own_score):
            return True, (
                f"transferred: {source} scores {_fmt(best_score)}; the task has no score "
                "of its own yet and its own policy's evaluation failed"
            )
        if np.isfinite(best_score) and best_score > own_score:
            return True, (
                f"transferred: {source} scores {_fmt(best_score)} > its own policy's "
                f"{_fmt(own_score, best_score)} in this evaluation (no score of its own yet)"
            )
        return False, (
            f"kept: best transfer ({source}) {_fmt(best_score)} ≤ its own policy's "
            f"{_fmt(own_score)} in this evaluation (no score of its own yet)"
        )
    if np.isfinite(best_score) and best_score > recent_best:
        return True, (
            f"transferred: {source} scores {_fmt(best_score)} > best of last {history} "
            f"scores {_fmt(recent_best)}"
        )
    return False, (
        f"kept: best transfer ({source}) {_fmt(best_score)} ≤ best of last {history} "
        f"scores {_fmt(recent_best)}"
    )


def capacity(num_active: int, max_active: int) -> int:
    """How many of the oldest active pairs must move to the archive."""
    return max(0, num_active - max_active)
