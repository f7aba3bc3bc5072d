"""Aggregate statistics over runs, to the definitions of rliable (Agarwal et al. 2021, "Deep
Reinforcement Learning at the Edge of the Statistical Precipice") and α-CVaR.

Written here rather than imported: rliable 1.2 pins `arch<8`, arch 7 fails at import under
pandas 3 and arch 8 no longer accepts rliable's `random_state` keyword. The definitions are
rliable's own, down to the random stream: rliable's stratified bootstrap draws each resample's
run indices with `np.random.choice(num_runs, scores.shape)`, once per replicate (and for
several score arrays, one draw per array in order), then takes numpy's percentiles of the
replicates. Given the same seed (rliable: `np.random.seed(seed)`; here `seed=`), the intervals
are the same numbers: tests/test_compare_stats.py checks them against figures rliable printed.

Scores are arrays of shape (runs, tasks); coevo's comparison has one "task" per group (the
held-out test set's mastery), so the bootstrap resamples seeds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

# rliable's defaults: 50,000 replicates, 95 % intervals.
DEFAULT_REPS = 50_000
DEFAULT_SIZE = 0.95
DEFAULT_SEED = 0


def as_scores(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """A (runs, tasks) float array: a 1-D sequence is one task's runs."""
    scores = np.asarray(values, dtype=float)
    if scores.ndim == 1:
        scores = scores[:, None]
    if scores.ndim != 2 or scores.shape[0] == 0:
        raise ValueError(f"scores must be (runs, tasks) with at least one run, got {scores.shape}")
    return scores


def _trimmed_mean(rows: np.ndarray) -> np.ndarray:
    """The 25 % trimmed mean of each row, computed as scipy's `trim_mean` computes it (which
    rliable calls): int(n / 4) values cut at each end after a partition, the rest averaged."""
    n = rows.shape[1]
    cut = int(0.25 * n)
    kept = np.partition(rows, (cut, n - cut - 1), axis=1)[:, cut : n - cut]
    return kept.mean(axis=1)


def iqm(scores: Sequence[float] | np.ndarray) -> float:
    """Interquartile mean over all runs and tasks: the 25 % trimmed mean of the flattened
    scores (rliable's `aggregate_iqm`)."""
    return float(_trimmed_mean(as_scores(scores).reshape(1, -1))[0])


def probability_of_improvement(
    scores_x: Sequence[float] | np.ndarray, scores_y: Sequence[float] | np.ndarray
) -> float:
    """P(X > Y): per task, the Mann-Whitney U of X over Y (pairs where X's run beats Y's, a tie
    a half) divided by runs_x * runs_y, averaged over tasks (rliable's
    `probability_of_improvement`)."""
    x, y = as_scores(scores_x), as_scores(scores_y)
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"X has {x.shape[1]} tasks and Y {y.shape[1]}")
    return float(_batched_improvement(x[None], y[None])[0])


def _percentile_interval(replicates: np.ndarray, size: float) -> tuple[float, float]:
    """arch's "percentile" interval, the one rliable asks for."""
    alpha = (1.0 - size) / 2
    lower, upper = np.percentile(replicates, [100 * alpha, 100 * (1.0 - alpha)])
    return float(lower), float(upper)


def _resampled(data: np.ndarray, runs: np.ndarray) -> np.ndarray:
    """(reps, runs, tasks) resamples of `data` from run indices of that shape."""
    return data[runs, np.arange(data.shape[1])[None, None, :]]


def batched_iqm(batch: np.ndarray) -> np.ndarray:
    """`iqm` of each resample in a (reps, runs, tasks) batch."""
    return _trimmed_mean(batch.reshape(batch.shape[0], -1))


def batched_mean(batch: np.ndarray) -> np.ndarray:
    """The mean over runs and tasks of each resample in a (reps, runs, tasks) batch."""
    return batch.reshape(batch.shape[0], -1).mean(axis=1)


def stratified_bootstrap_ci(
    scores: Sequence[float] | np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray] = batched_iqm,
    reps: int = DEFAULT_REPS,
    size: float = DEFAULT_SIZE,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float]:
    """The `size` percentile interval of `statistic` (batched: (reps, runs, tasks) -> (reps,))
    over stratified bootstrap resamples: runs drawn with replacement within each task, tasks
    kept (rliable's `StratifiedBootstrap` with task_bootstrap False, as
    `get_interval_estimates` calls it). One draw of reps x shape takes the same random numbers,
    in the same order, as rliable's draw of one shape per replicate."""
    data = as_scores(scores)
    runs = np.random.RandomState(seed).randint(0, data.shape[0], (reps, *data.shape))
    return _percentile_interval(statistic(_resampled(data, runs)), size)


def iqm_with_ci(
    scores: Sequence[float] | np.ndarray, reps: int = DEFAULT_REPS
) -> tuple[float, float, float]:
    """IQM and its 95 % stratified bootstrap interval: (iqm, low, high)."""
    low, high = stratified_bootstrap_ci(scores, reps=reps)
    return iqm(scores), low, high


def _batched_improvement(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """`probability_of_improvement` of each (x, y) resample pair: batches (reps, runs, tasks)."""
    greater = (x[:, :, None, :] > y[:, None, :, :]).sum(axis=(1, 2))
    ties = (x[:, :, None, :] == y[:, None, :, :]).sum(axis=(1, 2))
    per_task = (greater + 0.5 * ties) / (x.shape[1] * y.shape[1])
    return per_task.mean(axis=1)


def probability_of_improvement_ci(
    scores_x: Sequence[float] | np.ndarray,
    scores_y: Sequence[float] | np.ndarray,
    reps: int = DEFAULT_REPS,
    size: float = DEFAULT_SIZE,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float]:
    """The interval of P(X > Y), X and Y resampled independently, each stratified by task
    (rliable's `StratifiedIndependentBootstrap`: each replicate draws X's runs, then Y's)."""
    x, y = as_scores(scores_x), as_scores(scores_y)
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"X has {x.shape[1]} tasks and Y {y.shape[1]}")
    rng = np.random.RandomState(seed)
    runs_x = np.empty((reps, *x.shape), dtype=int)
    runs_y = np.empty((reps, *y.shape), dtype=int)
    for rep in range(reps):  # interleaved as rliable draws them; cheap next to the statistic
        runs_x[rep] = rng.randint(0, x.shape[0], x.shape)
        runs_y[rep] = rng.randint(0, y.shape[0], y.shape)
    # In blocks: the pairwise comparison holds reps x runs_x x runs_y booleans at once.
    improvement = np.concatenate(
        [
            _batched_improvement(
                _resampled(x, runs_x[start : start + 1000]),
                _resampled(y, runs_y[start : start + 1000]),
            )
            for start in range(0, reps, 1000)
        ]
    )
    return _percentile_interval(improvement, size)


def cvar(
    values: Sequence[float] | np.ndarray,
    alpha: float = 0.1,
    rescore: Sequence[float] | np.ndarray | None = None,
) -> float:
    """α-CVaR: the mean of the worst ceil(α·n) values (lowest first; n the values' count).

    With `rescore`, the worst are chosen by `values` and their mean is taken from `rescore`
    (the same items scored independently), as SFL's evaluation does (Rutherford et al. 2024:
    rank levels on one set of rollouts, report the selected levels' return on another), which
    removes the selection's downward bias.
    """
    ranked = np.asarray(values, dtype=float)
    if ranked.ndim != 1 or ranked.size == 0:
        raise ValueError("cvar needs a non-empty 1-D array of values")
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"alpha must lie in (0, 1], got {alpha}")
    reported = ranked if rescore is None else np.asarray(rescore, dtype=float)
    if reported.shape != ranked.shape:
        raise ValueError(f"rescore has shape {reported.shape}, values {ranked.shape}")
    worst = np.argsort(ranked, kind="stable")[: int(np.ceil(alpha * ranked.size - 1e-9))]
    return float(reported[worst].mean())
