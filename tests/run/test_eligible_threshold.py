"""mode=eligible_parents takes its threshold from the task space's solved score unless
`eligible.threshold` is set (it was CartPole's 200 on every space)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from coevo import runner
from coevo.config import parse_config
from coevo.errors import ConfigError

PAIRS = Path(__file__).resolve().parents[2] / "experiments" / "eligible_parents" / "pairs.yaml"


def _judge(run_dir: Path, task: str, **eligible) -> tuple[pd.DataFrame, list[str]]:
    raw = {
        "mode": "eligible_parents",
        "task": {"name": task},
        "pool": {"backend": "local", "num_workers": 1},
        "eligible": {"pairs_file": str(PAIRS), "episodes": 2, **eligible},
    }
    lines: list[str] = []
    frame = runner.run_eligible(parse_config(raw), run_dir, lines.append)
    return frame.set_index(frame["reason"].str.split(":").str[0]), lines


def test_the_threshold_is_the_space_solved_score_unless_set(tmp_path):
    scores, lines = _judge(tmp_path / "space", "user_tasks:cartpole_solved_at_20")
    assert (scores["threshold"] == 20.0).all()
    # The novice on a long pole (about 188) passes at 20, as it never did at CartPole's 200;
    # the random policy (about 10) does not.
    assert scores.loc["novice-long-pole", "outcome"] == "eligible"
    assert scores.loc["random-default", "outcome"] == "ineligible"
    assert ((scores["score"] >= 20.0) == (scores["outcome"] == "eligible")).all()
    assert scores.loc["random-default", "reason"].endswith("< eligible.threshold 20")
    assert any("(threshold 20, 2 episodes each)" in line for line in lines)

    set_here, _ = _judge(tmp_path / "set", "user_tasks:cartpole_solved_at_20", threshold=300)
    assert (set_here["threshold"] == 300.0).all()
    assert set_here.loc["novice-default", "outcome"] == "ineligible"  # about 211
    assert set_here.loc["balancer-default", "outcome"] == "eligible"  # 500
    # The same scores whichever threshold judged them.
    assert set_here["score"].tolist() == scores["score"].tolist()


def test_a_space_without_a_solved_score_needs_the_threshold(tmp_path):
    with pytest.raises(ConfigError, match=r"^eligible.threshold: .*declares no solved_score"):
        _judge(tmp_path / "run", "user_tasks:cartpole_never_solved")
    assert not (tmp_path / "run").exists()  # refused before anything is written
    scores, _ = _judge(tmp_path / "given", "user_tasks:cartpole_never_solved", threshold=100)
    assert (scores["threshold"] == 100.0).all()
