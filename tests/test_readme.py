"""The README's and the user guide's Python examples run as written."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "guide"


def _blocks(section: str | None, page: Path = README) -> list[str]:
    """The ```python blocks of one `## section` of a page (None: the whole page)."""
    text = page.read_text()
    if section is not None:
        start = text.index(f"## {section}\n")
        end = text.find("\n## ", start + 1)
        text = text[start : end if end > 0 else None]
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def _run(blocks: list[str], page: Path = README) -> dict:
    namespace: dict = {}
    for block in blocks:  # a later example may reuse an earlier one's names
        exec(compile(block, str(page), "exec"), namespace)
    return namespace


def test_the_readme_python_quick_start_runs(capsys):
    blocks = _blocks("Quick start: Python")
    assert len(blocks) == 1
    namespace = _run(blocks)
    out = [line.split(" ", 2) for line in capsys.readouterr().out.splitlines()]
    assert [generation for generation, _, _ in out] == ["1", "2", "3", "4"]
    assert all(int(active) >= 1 for _, active, _ in out)
    assert all("repro_threshold" in reason for _, _, reason in out)  # POET's eligibility rule
    assert namespace["poet"].generation == 4


def test_the_python_guide_examples_run(ray_session, capsys):
    page = GUIDE / "python.md"
    blocks = _blocks(None, page)
    assert len(blocks) == 5
    namespace = _run(blocks, page)
    out = capsys.readouterr().out.splitlines()
    # The last example: a run directory's policy, evaluated past the run's bounds.
    assert out.pop() == "(1, 3)"
    assert namespace["saved"].generation == 2
    assert namespace["theta"].shape == (namespace["policy"].num_params,)
    assert out[0] == "eligible to reproduce: [2, 3, 5]"  # as the example's comment says
    assert namespace["scores"].round(1).tolist() == [38.2, 10.0, 63.4, 62.2, 8.2, 82.6, 10.2, 9.2]
    assert len(out) == 10  # one line per generation of the second to fourth examples
    assert namespace["returns"].shape == (8, 5)
    # PLR: replays, buffer size and one decision's reason per generation; it replays (trains)
    plr_lines = [line.split(" ", 2) for line in out[4:7]]
    assert all(reason.startswith(("new level", "replay")) for _, _, reason in plr_lines)
    assert sum(int(replays) for replays, _, _ in plr_lines) > 0
    assert namespace["plr"].generation == 3
    # PPO under DR: a return and an update's KL per generation, one update each
    ppo_lines = [[float(x) for x in line.split()] for line in out[7:]]
    assert all(score > 0 and kl >= 0 for score, kl in ppo_lines)
    assert namespace["dr"].students[0].steps == 3


def test_the_bring_your_own_policy_example_runs(tmp_path, monkeypatch, capsys):
    pytest.importorskip("stable_baselines3")
    monkeypatch.chdir(tmp_path)  # the example saves its SB3 zip in the working directory
    page = GUIDE / "policies.md"
    namespace = _run(_blocks("Your own module or file", page), page)
    out = capsys.readouterr().out.splitlines()
    assert [line.split(" ")[0] for line in out[-2:]] == ["module", "ppo_cartpole.zip"]
    assert namespace["ppo"].policy.action.mode == "argmax"


def test_the_bring_your_own_environment_example_runs(capsys):
    namespace = _run(_blocks("Quick start: your own environment"))
    assert namespace["levels"].task(level=3)["level"] == 3
    assert capsys.readouterr().out.strip().startswith("[[")
