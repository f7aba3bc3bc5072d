"""Transfer: which policy does best on a task, tried directly and after one optimizer step
there (the proposal step, taken by the run's own optimizer)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from coevo.batches import Work
from coevo.curricula.training import evaluate_work, optimize_work
from coevo.optimizers.base import Optimizer, Register
from coevo.tasks.task import Task


@dataclass(frozen=True)
class TransferCandidate:
    """The best policy found for one task, and where it came from."""

    source: int  # index of the source policy
    via: str  # "direct" or "proposal"
    score: float
    theta: np.ndarray


def best_policies_work(
    register: Register,
    optimizer: Optimizer | None,
    thetas: Sequence[np.ndarray],
    targets: Sequence[Task],
    target_states: Sequence[Any] | None,
    episodes: int,
    rng: np.random.Generator,
) -> Work[list[list[TransferCandidate]]]:
    """For each target task, every source policy tried directly and (when `optimizer` is
    given) after one proposal step of `optimizer` on that task; one list of candidates per
    target.

    The proposal step starts from the target pair's optimizer state, which it leaves
    unchanged (optimizer states are values). Work in job batches (`coevo.batches`): the
    proposal steps' jobs in one batch, then every evaluation of all targets in one.
    """
    n_sources = len(thetas)
    combos = [(s, t) for t in range(len(targets)) for s in range(n_sources)]
    proposals: list[np.ndarray] = []
    if optimizer is not None and target_states is not None:
        steps = yield from optimize_work(
            optimizer,
            [(thetas[s], target_states[t], [targets[t]]) for s, t in combos],
            rng,
            register,
        )
        proposals = [step.theta for step in steps]
    seed = int(rng.integers(0, 2**31 - 1))
    pairs = [(thetas[s], targets[t]) for s, t in combos]
    pairs += [(theta, targets[t]) for theta, (_, t) in zip(proposals, combos, strict=False)]
    returns, _ = yield from evaluate_work(register, pairs, episodes, seed)  # failed: NaN
    scores = returns.mean(axis=1)
    out: list[list[TransferCandidate]] = [[] for _ in targets]
    for index, (s, t) in enumerate(combos):
        out[t].append(TransferCandidate(s, "direct", float(scores[index]), thetas[s]))
        if proposals:
            score = float(scores[len(combos) + index])
            out[t].append(TransferCandidate(s, "proposal", score, proposals[index]))
    return out


def pick_best(candidates: Sequence[TransferCandidate]) -> TransferCandidate:
    """Highest finite score; ties go to the earlier candidate (direct before proposal)."""
    finite = [c for c in candidates if np.isfinite(c.score)]
    if not finite:
        return candidates[0]
    return max(finite, key=lambda c: c.score)  # max keeps the first of equal scores
