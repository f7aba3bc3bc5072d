"""coevo.compare.stats on hand-made numbers and against rliable 1.2.

rliable cannot be installed beside pandas 3 (its arch<8 fails at import; arch 8 refuses its
keywords), so its figures below were printed by rliable 1.2.0 itself, in a separate venv
(pandas 2.3.3, arch 7.2.0, numpy 2.4), from this script:

    import numpy as np
    from rliable import library as rly, metrics
    x = np.array(X); y = np.array(Y); m = np.array(M)        # the arrays below
    metrics.aggregate_iqm(x[:, None]); metrics.aggregate_iqm(m)
    metrics.probability_of_improvement(x[:, None], y[:, None])
    for data in (x[:, None], m):
        np.random.seed(7)
        rly.get_interval_estimates({"a": data}, lambda s: np.array([metrics.aggregate_iqm(s)]),
                                   reps=2000)
    np.random.seed(7)
    rly.get_interval_estimates({"p": [x[:, None], y[:, None]]},
        lambda a, b: np.array([metrics.probability_of_improvement(a, b)]), reps=2000)

Where rliable imports (a future pandas-2 environment), the live comparison runs too.
"""

from __future__ import annotations

import numpy as np
import pytest

from coevo.compare import stats

X = [0.82, 0.33, 0.75, 0.09, 0.57, 0.61, 0.12, 0.95, 0.40, 0.70]
Y = [0.10, 0.42, 0.05, 0.30, 0.22, 0.18, 0.51, 0.08, 0.27, 0.35, 0.0, 0.9]
M = [[0.1, 0.5], [0.3, 0.2], [0.9, 0.7], [0.4, 0.4], [0.6, 0.8]]

RLIABLE = {
    "iqm_x": 0.5599999999999999,
    "iqm_m": 0.4833333333333334,
    "poi_xy": 0.7583333333333333,
    "iqm_ci_x": (0.30666666666666664, 0.7517083333333331),
    "iqm_ci_m": (0.31666666666666665, 0.6666666666666666),
    "poi_ci_xy": (0.5333333333333333, 0.9416666666666667),
}


def test_iqm_is_the_mean_of_the_middle_half():
    # 8 values: the 2 lowest and 2 highest are cut, the middle 4 averaged.
    assert stats.iqm([100, 0, 1, 2, 3, 4, -50, 5]) == pytest.approx((1 + 2 + 3 + 4) / 4)
    assert stats.iqm(X) == pytest.approx(RLIABLE["iqm_x"], abs=1e-15)
    assert stats.iqm(M) == pytest.approx(RLIABLE["iqm_m"], abs=1e-15)


def test_probability_of_improvement_counts_pairs_and_half_ties():
    # Pairs (2,1) win, (2,3) loss, (1,1) tie, (1,3) loss: (1 + 0.5) / 4.
    assert stats.probability_of_improvement([2, 1], [1, 3]) == pytest.approx((1 + 0.5) / 4)
    assert stats.probability_of_improvement([5, 6], [1, 2]) == 1.0
    assert stats.probability_of_improvement([1, 2], [1, 2]) == 0.5
    assert stats.probability_of_improvement(X, Y) == pytest.approx(RLIABLE["poi_xy"], abs=1e-15)


def test_bootstrap_intervals_are_rliables_to_the_last_digit():
    assert stats.stratified_bootstrap_ci(X, reps=2000, seed=7) == pytest.approx(
        RLIABLE["iqm_ci_x"], abs=1e-12
    )
    assert stats.stratified_bootstrap_ci(M, reps=2000, seed=7) == pytest.approx(
        RLIABLE["iqm_ci_m"], abs=1e-12
    )
    assert stats.probability_of_improvement_ci(X, Y, reps=2000, seed=7) == pytest.approx(
        RLIABLE["poi_ci_xy"], abs=1e-12
    )


def test_bootstrap_interval_brackets_the_estimate_and_narrows_with_runs():
    rng = np.random.default_rng(3)
    few, many = rng.normal(0.5, 0.2, 5), rng.normal(0.5, 0.2, 200)
    low, high = stats.stratified_bootstrap_ci(few, reps=3000)
    assert low <= stats.iqm(few) <= high
    low_many, high_many = stats.stratified_bootstrap_ci(many, reps=3000)
    assert high_many - low_many < (high - low) / 2
    # A constant has no spread; one run has nothing to resample.
    assert stats.stratified_bootstrap_ci([0.3] * 6, reps=100) == (0.3, 0.3)


def test_cvar_is_the_mean_of_the_worst_alpha_share():
    values = np.arange(20.0)  # worst 10 %: 0 and 1
    assert stats.cvar(values, 0.1) == 0.5
    assert stats.cvar(values, 0.25) == pytest.approx(np.mean([0, 1, 2, 3, 4]))
    assert stats.cvar([7.0], 0.1) == 7.0  # ceil: at least one value
    # Ranked on one scoring, reported from another (SFL's evaluation).
    rescored = values + 100
    assert stats.cvar(values, 0.1, rescore=rescored) == 100.5
    with pytest.raises(ValueError, match="alpha"):
        stats.cvar(values, 0.0)
    with pytest.raises(ValueError, match="shape"):
        stats.cvar(values, 0.1, rescore=[1.0])


def test_against_rliable_live_where_it_imports():
    library = pytest.importorskip("rliable.library", exc_type=ImportError)
    from rliable import metrics

    data = np.array(X)[:, None]
    np.random.seed(11)
    _, ci = library.get_interval_estimates(
        {"a": data}, lambda s: np.array([metrics.aggregate_iqm(s)]), reps=500
    )
    assert stats.stratified_bootstrap_ci(X, reps=500, seed=11) == pytest.approx(
        tuple(ci["a"].ravel()), abs=1e-12
    )


def test_iqm_and_improvement_are_scipys_trim_mean_and_mann_whitney_u():
    """rliable computes them with scipy: the same figures on random data, ties included."""
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(5)
    for runs_x, runs_y in ((3, 4), (10, 10), (17, 6)):
        x = rng.integers(0, 5, (runs_x, 2)) / 4  # few values: many ties
        y = rng.integers(0, 5, (runs_y, 2)) / 4
        assert stats.iqm(x) == pytest.approx(scipy_stats.trim_mean(x, 0.25, axis=None), abs=1e-15)
        u = [scipy_stats.mannwhitneyu(x[:, t], y[:, t], alternative="greater")[0] for t in (0, 1)]
        expected = np.mean(u) / (runs_x * runs_y)
        assert stats.probability_of_improvement(x, y) == pytest.approx(expected, abs=1e-15)


def test_iqm_with_ci_is_the_iqm_inside_its_bootstrap_interval():
    value, low, high = stats.iqm_with_ci(X, reps=500)
    assert value == pytest.approx(RLIABLE["iqm_x"])
    assert (low, high) == stats.stratified_bootstrap_ci(X, reps=500)
    assert low <= value <= high
