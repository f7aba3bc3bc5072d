import numpy as np
import pytest

from coevo.curricula.poet import rules
from coevo.curricula.poet.novelty import knn_novelty


def test_eligibility_outcome_and_reason():
    assert rules.eligibility(212.4, 200) == (True, "score 212.4 ≥ repro_threshold 200")
    assert rules.eligibility(200.0, 200) == (True, "score 200.0 ≥ repro_threshold 200")
    assert rules.eligibility(12.0, 200) == (False, "score 12.0 < repro_threshold 200")
    ok, reason = rules.eligibility(float("nan"), 200)
    assert not ok and "evaluation failed" in reason


@pytest.mark.parametrize(
    ("score", "threshold", "reason"),
    [
        (199.96, 200, "score 199.96 < repro_threshold 200"),  # not "200.0 < 200"
        (0.97, 0.975, "score 0.97 < repro_threshold 0.975"),  # rewards in [0, 1]
        (0.9751, 0.975, "score 0.9751 ≥ repro_threshold 0.975"),
        (sum([0.6, 0.7, 0.8]) / 3, 0.7, "score 0.6999999999999998 < repro_threshold 0.7"),
        (-133.74, -133.7397242, "score -133.74 < repro_threshold -133.7397242"),
    ],
)
def test_a_reason_never_shows_a_score_that_contradicts_its_comparison(score, threshold, reason):
    assert rules.eligibility(score, threshold)[1] == reason


@pytest.mark.parametrize(
    ("score", "passed", "reason"),
    [
        (12.0, False, "child rejected: score 12.0 < mc_lower 25"),
        (25.0, True, "passes minimal criterion: 25 ≤ score 25.0 ≤ 300"),
        (300.0, True, "passes minimal criterion: 25 ≤ score 300.0 ≤ 300"),
        (300.5, False, "child rejected: score 300.5 > mc_upper 300"),
    ],
)
def test_minimal_criterion_bounds_are_inclusive(score, passed, reason):
    assert rules.minimal_criterion(score, 25, 300) == (passed, reason)


def test_minimal_criterion_rejects_failed_evaluations():
    ok, reason = rules.minimal_criterion(float("inf"), 25, 300)
    assert not ok and "evaluation failed" in reason


def test_knn_novelty_hand_computed():
    reference = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    candidates = np.array([[0.0, 0.0], [3.0, 4.0]])
    # Candidate 0: distances 0, 1, 2 -> k=2 nearest mean 0.5.
    # Candidate 1: distances 5, sqrt(20), sqrt(13) -> nearest two: sqrt(13), sqrt(20).
    novelty = knn_novelty(candidates, reference, k=2)
    np.testing.assert_allclose(novelty, [0.5, (np.sqrt(13) + np.sqrt(20)) / 2])
    # k larger than the reference uses all of it.
    np.testing.assert_allclose(knn_novelty(candidates[:1], reference, k=10), [1.0])


def test_admission_order_and_reasons():
    assert rules.admission_order([0.2, 0.9, 0.2, 0.5]) == [1, 3, 0, 2]
    assert rules.admission(1, 1, 0.9) == (
        True,
        "admitted: novelty rank 1 ≤ max_admitted 1 (novelty 0.900)",
    )
    assert rules.admission(4, 1, 0.1) == (False, "not admitted: novelty rank 4 > max_admitted 1")


def test_capacity_counts_the_excess():
    assert rules.capacity(7, 5) == 2
    assert rules.capacity(5, 5) == 0
    assert rules.capacity(3, 5) == 0
