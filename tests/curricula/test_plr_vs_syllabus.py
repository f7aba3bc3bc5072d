"""coevo's PLR level buffer beside Syllabus's PLR TaskSampler (a port of dcd's) on the same
sequences of (level, score) updates: the same replay distributions to 1e-9 where the rules
match, and the cases where they differ do differ (benchmarks/plr_vs_syllabus.py prints the
table)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import script_module

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip(
    "syllabus",
    reason="syllabus-rl is not installed (it is in the test extra: pip install -e '.[test]')",
)


def _benchmark():
    return script_module(ROOT / "benchmarks" / "plr_vs_syllabus.py", "plr_vs_syllabus")


BENCH = _benchmark()
MATCHING = [case for case in BENCH.CASES if case.expect_match]
DIFFERING = [case for case in BENCH.CASES if not case.expect_match]


@pytest.mark.parametrize("case", MATCHING, ids=[c.name for c in MATCHING])
def test_replay_distributions_match_where_the_rules_do(case):
    result = BENCH.run_case(case)
    assert result["other_levels"] == 0  # the same levels in both buffers after every event
    assert result["compared"] >= min(case.events, 8)
    assert result["max_diff"] <= 1e-9


@pytest.mark.parametrize("case", DIFFERING, ids=[c.name for c in DIFFERING])
def test_the_listed_differences_do_change_the_distributions(case):
    result = BENCH.run_case(case)
    assert result["other_levels"] or result["max_diff"] > 1e-9
    assert case.why  # the printed table says why


def test_syllabus_import_leaves_numpy_error_mode_alone():
    import numpy as np

    before = np.geterr()
    BENCH.load_syllabus_sampler()
    assert np.geterr() == before
