"""The README's and the user guide's Python examples run as written."""

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from cli_support import cli_in_process

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "guide"
COEVO_PROGRAMS = ("coevo-run", "coevo-report", "coevo-eval", "coevo-compare")


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
    assert len(blocks) == 6
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
    # coevo.Run: a Python-built DR run stepped to its end, recorded in its directory
    assert namespace["run"].done and namespace["run"].generation == 2


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


def _commands(section: str) -> list[list[str]]:
    """The command lines of a section's ```bash blocks, each split as the shell splits it."""
    text = README.read_text()
    start = text.index(f"## {section}\n")
    end = text.find("\n## ", start + 1)
    blocks = re.findall(r"```bash\n(.*?)```", text[start:end], flags=re.S)
    lines = [shlex.split(line, comments=True) for block in blocks for line in block.splitlines()]
    return [words for words in lines if words]


def test_the_readme_command_lines_run(tmp_path):
    """Every command of the command-line quick start: `make` targets exist, each override set
    composes (`--cfg job`), and the commands that read a run work on a small real one (its
    DATE_TIME placeholders filled in)."""
    commands = _commands("Install") + _commands("Quick start: the command line")
    assert ["make", "install"] in commands
    assert ["make", "run"] in commands and ["make", "test"] in commands
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def run(words: list[str]) -> subprocess.CompletedProcess:
        if words[0] in COEVO_PROGRAMS:  # coevo's own commands: in process, as tested elsewhere
            done = cli_in_process(words[0], *words[1:], cwd=tmp_path)
        else:
            done = subprocess.run(words, cwd=tmp_path, env=env, capture_output=True, text=True)
        assert done.returncode == 0, (words, done.stdout[-2000:], done.stderr[-2000:])
        return done

    sweep = tmp_path / "runs" / "multirun" / "sweep"
    run_dir = sweep / "0"
    coevo_run = ["coevo-run"]
    small = ["pool=local", "curriculum.generations=2", "test_set.every=1", "test_set.size=10"]
    small += ["curriculum.optimizer_steps=1", "optimizer.population=4"]  # a run to read
    run([*coevo_run, *small, f"hydra.run.dir={run_dir}"])
    reads_a_run = 0
    for words in commands:
        if words[0] == "make":
            run(["make", "-n", "-C", str(ROOT), words[1]])  # the target exists
            overrides = [a for w in words[2:] if w.startswith("ARGS=") for a in w[5:].split()]
            if overrides:
                run([*coevo_run, *overrides, "--cfg", "job"])
            continue
        program, args = Path(words[0]).name, words[1:]
        if any("DATE_TIME" in arg for arg in args):
            args = [
                a.replace("runs/multirun/DATE_TIME", str(sweep)).replace(
                    "runs/DATE_TIME", str(run_dir)
                )
                for a in args
            ]
            run([program, *args])
            reads_a_run += 1
        elif args[0] == "-m":  # a sweep: the first and the last value of each list compose
            for pick in (0, -1):
                one = [a.split("=")[0] + "=" + a.split("=")[1].split(",")[pick] for a in args[1:]]
                run([*coevo_run, *one, "--cfg", "job"])
        else:
            assert program == "coevo-run", words
            run([*coevo_run, *args, "--cfg", "job"])
    assert reads_a_run == 4  # compare, resume, report, eval


def test_the_readme_stays_short_and_its_links_resolve():
    text = README.read_text()
    assert len(text.encode()) <= 12_800  # a newcomer's first page: the docs site holds the rest
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if not t.startswith(("http://", "https://"))]
    assert local, "the README links into the docs"
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, missing
