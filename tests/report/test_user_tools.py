"""The user's side: eligible-parents mode, coevo-report, coevo-eval, TensorBoard, the page."""

import os
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
from cli_support import BIN, ROOT, SMALL_POET, cli_in_process, page_result_in_chromium
from phrases import assert_says

from coevo import run_setup
from coevo.errors import ConfigError

# One worker under xdist: the run (`run_dir`) made once for the module.
pytestmark = pytest.mark.xdist_group("test_user_tools")
SMALL = SMALL_POET


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("run") / "r"
    done = cli_in_process("coevo-run", *SMALL, "logger=tensorboard", f"hydra.run.dir={path}")
    assert done.returncode == 0, done.stderr[-3000:]
    return path


def test_eligible_parents_mode_reports_who_passes(tmp_path):
    done = cli_in_process(
        "coevo-run", "experiment=eligible_parents", "pool=local", f"hydra.run.dir={tmp_path}"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = pd.read_csv(tmp_path / "eligibility.csv")
    assert len(rows) == 8 and set(rows["kind"]) == {"pair"}
    by_name = {r.split(":")[0]: o for r, o in zip(rows["reason"], rows["outcome"], strict=True)}
    assert by_name["balancer-default"] == "eligible"
    assert by_name["random-default"] == "ineligible"
    assert (rows["threshold"] == 475).all()  # CartPole's solved_score: the preset sets none
    assert ((rows["score"] >= 475) == (rows["outcome"] == "eligible")).all()
    returns = pd.read_csv(tmp_path / "returns.csv")
    assert list(returns.columns) == ["name", "policy", *[f"episode_{k}" for k in range(5)]]
    count = int((rows["outcome"] == "eligible").sum())
    assert f"{count} of 8 pairs eligible to reproduce" in done.stdout
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert summary["pairs"].tolist() == [8] and summary["eligible"].tolist() == [count]
    assert "active" not in summary  # nothing is active or archived in this mode
    page = (tmp_path / "report.html").read_text()
    assert f"one evaluation of the pairs file; {count} of 8 pairs eligible" in page
    # Its figure: each pair's mean and episodes against the threshold.
    assert 'src="plots/eligible.png"' in page and "over its 5 episodes" in page
    assert (tmp_path / "plots" / "eligible.png").stat().st_size > 1000
    # It trains nothing and saves no policy: coevo-eval says so, not "no usable checkpoint".
    evaluated = cli_in_process("coevo-eval", tmp_path)
    assert evaluated.returncode == 2
    assert evaluated.stderr.startswith(f"coevo-eval: error: run: {tmp_path} ")
    assert_says(
        evaluated.stderr,
        "is an eligible_parents run",
        f"{ROOT}/experiments/eligible_parents/pairs.yaml",
        "writes no checkpoints",
    )


def test_eligible_parents_bad_pairs_file_names_the_field(tmp_path):
    bad = tmp_path / "pairs.yaml"
    bad.write_text("pairs:\n  - task: {gravty: 3}\n    policy: x.npy\n")
    done = cli_in_process(
        "coevo-run",
        "experiment=eligible_parents",
        f"eligible.pairs_file={bad}",
        f"hydra.run.dir={tmp_path / 'out'}",
    )
    assert done.returncode == 2
    assert "pairs[0].task.gravty: unknown parameter of task space 'cartpole'" in done.stderr


@pytest.mark.parametrize(
    ("pairs", "npy", "message"),
    [
        ("pairs: [1, 2\n", None, "invalid YAML at line 2, column 1: expected ',' or ']'"),
        (
            "pairs:\n  - {name: x, policy: bad.npy}\n",
            b"garbage\n",
            "pairs[0].policy: bad.npy: not a numeric .npy array",
        ),
        (  # pickled objects are never loaded from a policy file
            "pairs:\n  - {name: x, policy: bad.npy}\n",
            "pickled",
            "pairs[0].policy: bad.npy: not a numeric .npy array",
        ),
    ],
)
def test_a_broken_pairs_file_or_policy_is_refused_by_name(tmp_path, pairs, npy, message):
    from coevo import tasks
    from coevo.eligible import load_pairs
    from coevo.errors import ConfigError
    from coevo.policies import MLPPolicy

    space = tasks.get("cartpole")
    env = space.make_env()
    policy = MLPPolicy.for_spaces(env.observation_space, env.action_space, (4,))
    if npy == "pickled":
        np.save(tmp_path / "bad.npy", np.array([{"w": 1}], dtype=object), allow_pickle=True)
    elif npy is not None:
        (tmp_path / "bad.npy").write_bytes(npy)
    (tmp_path / "pairs.yaml").write_text(pairs)
    with pytest.raises(ConfigError) as info:
        load_pairs(tmp_path / "pairs.yaml", space, policy)
    assert message in str(info.value), str(info.value)


def test_coevo_report_rebuilds_the_page_from_files(run_dir):
    (run_dir / "report.html").unlink()
    shutil.rmtree(run_dir / "plots")
    done = cli_in_process("coevo-report", run_dir)
    assert done.returncode == 0, done.stderr
    page = (run_dir / "report.html").read_text()
    for image in ("plots/curves.png", "plots/lineage.png", "plots/heatmap.png"):
        assert f'src="{image}"' in page and (run_dir / image).stat().st_size > 2000
    assert 'id="eligibility"' in page and "filterRows" in page
    assert cli_in_process("coevo-report", run_dir / "nope").returncode == 2


@pytest.mark.parametrize("program", ["coevo-report", "coevo-eval"])
def test_help_is_printed_on_stdout_and_exits_0(program):
    for flag in ("-h", "--help"):
        done = cli_in_process(program, flag)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"usage: {program} RUN_DIR")
    assert "video=FILE.gif film the first episode" in cli_in_process("coevo-eval", "--help").stdout
    done = cli_in_process(program)  # no run directory: the usage, as an error
    assert done.returncode == 2 and done.stderr.startswith(f"usage: {program} RUN_DIR")


def test_coevo_report_works_on_a_crashed_run_with_a_torn_line(run_dir, tmp_path):
    crashed = tmp_path / "crashed"
    shutil.copytree(run_dir, crashed)
    with open(crashed / "eligibility.csv", "a") as handle:
        handle.write("5,parent,eligibility,eligi")  # killed mid-append
    done = cli_in_process("coevo-report", crashed)
    assert done.returncode == 0, done.stderr
    rows = pd.read_csv(run_dir / "eligibility.csv")
    page = (crashed / "report.html").read_text()
    table = page.split('id="eligibility"')[1]
    assert table.count("<tr class=") == len(rows)  # every whole row, not the torn one
    assert 'data-generation="5"' not in table


def test_coevo_report_names_a_table_it_cannot_read(run_dir, tmp_path):
    damaged = tmp_path / "damaged"
    shutil.copytree(run_dir, damaged)
    with open(damaged / "summary.csv", "a") as handle:
        handle.write('garbage,"\n')  # an unterminated quote, edited in by hand
    done = cli_in_process("coevo-report", damaged)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith(
        f"coevo-report: error: {damaged / 'summary.csv'}: cannot be read as a table (Error "
    )


def test_coevo_eval_prints_episode_returns_and_writes_a_gif(run_dir, tmp_path):
    gif = tmp_path / "episode.gif"
    # A short pole under high gravity: the run's policy keeps it up for tens of steps, not
    # CartPole's 500 (a GIF's frames cost ~30 ms each to encode).
    short = "task=gravity=30,pole_length=0.1"
    done = cli_in_process("coevo-eval", run_dir, "pair=0", short, "episodes=3", f"video={gif}")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("pair 0 policy on Task(cartpole")
    assert [line.split(":")[0] for line in lines[1:4]] == ["episode 0", "episode 1", "episode 2"]
    from PIL import Image

    with Image.open(gif) as image:
        assert image.n_frames > 5 and image.size[0] >= 300


def test_coevo_eval_says_which_checkpoint_it_read_and_why_not_the_newest(run_dir, tmp_path):
    damaged = tmp_path / "damaged"
    shutil.copytree(run_dir, damaged)
    saved = sorted((damaged / "checkpoints").glob("gen_*.pkl"))
    newest = saved[-1]
    data = bytearray(newest.read_bytes())
    data[len(data) // 2] ^= 1  # one flipped bit
    newest.write_bytes(data)
    done = cli_in_process("coevo-eval", damaged, "pair=0", "episodes=1")
    assert done.returncode == 0, done.stderr
    previous = int(saved[-2].stem.split("_")[1])
    assert f"(checkpoint of generation {previous})" in done.stdout.splitlines()[0]
    assert done.stderr.startswith(f"coevo-eval: warning: checkpoint {newest} is unreadable")
    assert "trying the previous checkpoint" in done.stderr


def test_coevo_eval_on_another_task_and_bad_arguments(run_dir):
    checkpoint = sorted((run_dir / "checkpoints").glob("gen_*.pkl"))[-1]
    done = cli_in_process(
        "coevo-eval", checkpoint, "pair=0", "task=gravity=25,force_mag=4", "episodes=2"
    )
    assert done.returncode == 0, done.stderr
    assert "force_mag=4, gravity=25" in done.stdout
    other = cli_in_process("coevo-eval", run_dir, "pair=0", "task=1", "episodes=1")
    assert other.returncode == 0, other.stderr
    assert other.stdout.startswith("pair 0 policy on pair 1's task Task(cartpole: ")
    # A reader that has gone (`| head -1` after its line; here before the first one, so
    # every print meets the broken pipe) costs no traceback.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        gone = subprocess.run(
            [str(BIN / "coevo-eval"), run_dir, "pair=0", "episodes=3"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            timeout=120,
        )
    finally:
        os.close(write_end)
    stderr = gone.stderr.decode()
    assert gone.returncode == 0 and "BrokenPipeError" not in stderr, stderr
    bad = cli_in_process("coevo-eval", run_dir, "pair=999")
    assert bad.returncode == 2 and "no pair 999 in this run; known: 0" in bad.stderr
    # Out of distribution (a test of generalisation): evaluated as given, and said so.
    far = cli_in_process("coevo-eval", run_dir, "pair=0", "task=gravity=99", "episodes=2")
    assert far.returncode == 0, far.stderr
    assert "gravity=99" in far.stdout and "mean " in far.stdout
    assert far.stderr.startswith("coevo-eval: warning: task.gravity 99 ")
    assert_says(far.stderr, "outside the run's bounds [2, 30]", "out of distribution")
    bad = cli_in_process("coevo-eval", run_dir, "task=gravty=9")
    assert bad.returncode == 2 and "task.params.gravty: unknown parameter" in bad.stderr
    bad = cli_in_process("coevo-eval", run_dir, "task=gravity=inf")
    assert bad.returncode == 2 and "task.gravity: must be a finite number, got 'inf'" in bad.stderr
    bad = cli_in_process("coevo-eval", run_dir, "colour=red")
    assert bad.returncode == 2 and "unknown argument 'colour=red'" in bad.stderr
    bad = cli_in_process(
        "coevo-eval", run_dir, "episodes=0", "episodes=1"
    )  # the last one was taken
    assert bad.returncode == 2
    assert "episodes given twice (episodes=0, episodes=1); give it once" in bad.stderr
    for argument, message in [
        ("episodes=0", "episodes: must be an integer >= 1, got 0"),
        ("episodes=abc", "episodes: must be an integer >= 1, got 'abc'"),
        ("pair=x", "pair: must be an integer >= 0, got 'x'"),
        ("seed=-1", "seed: must be an integer >= 0, got -1"),
        ("video=out.mp4", "video: 'out.mp4': only .gif is written; e.g. video=out.gif"),
        ("video=/no/dir/a.gif", "video: '/no/dir/a.gif': directory /no/dir does not exist"),
    ]:
        bad = cli_in_process("coevo-eval", run_dir, argument)
        assert bad.returncode == 2, argument
        assert bad.stderr.strip() == f"coevo-eval: error: {message}", bad.stderr


def test_tensorboard_scalars_match_the_summary(run_dir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir / "tensorboard"))
    events.Reload()
    active = [(e.step, e.value) for e in events.Scalars("coevo/active")]
    summary = pd.read_csv(run_dir / "summary.csv")
    assert active == list(zip(summary["generation"], summary["active"].astype(float), strict=True))
    assert "coevo/annecs" in events.Tags()["scalars"]


def test_the_page_loads_in_headless_chromium_and_shows_its_images(run_dir, tmp_path):
    # Image sizes, and the eligibility table's filter at work.
    fields = page_result_in_chromium(
        run_dir,
        tmp_path,
        """window.addEventListener('load', () => {
  const imgs = [...document.images];
  const broken = imgs.filter(i => !(i.complete && i.naturalWidth > 0)).length;
  document.getElementById('f-kind').value = 'parent'; filterRows();
  const shown = [...document.querySelectorAll('#eligibility tbody tr')]
    .filter(r => r.style.display !== 'none');
  const onlyParents = shown.every(r => r.dataset.kind === 'parent');
  document.body.setAttribute('data-result',
    `images=${imgs.length} broken=${broken} shown=${shown.length} parents=${onlyParents}`);
});""",
    )
    assert int(fields["images"]) >= 3 and fields["broken"] == "0"
    assert int(fields["shown"]) > 0 and fields["parents"] == "true"


def test_hydra_multirun_sweeps_a_rule_parameter(tmp_path):
    done = cli_in_process(
        "coevo-run",
        "-m",
        "pool=local",
        "curriculum.generations=2",
        "curriculum.optimizer_steps=1",  # small jobs: what the sweep wrote is what is read
        "optimizer.population=4",
        "curriculum.mc_lower=25,50",
        f"hydra.sweep.dir={tmp_path}",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    import yaml

    for job, value in ((0, 25.0), (1, 50.0)):
        config = yaml.safe_load((tmp_path / str(job) / "config.yaml").read_text())
        assert config["curriculum"]["mc_lower"] == value
        assert len(pd.read_csv(tmp_path / str(job) / "summary.csv")) == 2


def test_coevo_eval_replays_a_single_policy_curriculum(tmp_path):
    """coevo-eval reads any curriculum's policies, not only POET's pairs; so does a pairs
    file's checkpoint entry (pair: the policy's index)."""
    run = tmp_path / "dr"
    done = cli_in_process(
        "coevo-run",
        "pool=local",
        "curriculum=dr",
        "curriculum.generations=2",
        "test_set.every=0",
        f"hydra.run.dir={run}",
    )
    assert done.returncode == 0, done.stderr
    import numpy as np
    import yaml

    from coevo import checkpoint
    from coevo.eligible import load_pairs

    space, policy = run_setup.prepare(run_setup.load_run_config(run))
    saved = run / "checkpoints" / "gen_000002.pkl"
    pairs = tmp_path / "pairs.yaml"
    pairs.write_text(yaml.safe_dump({"pairs": [{"policy": {"checkpoint": str(saved), "pair": 0}}]}))
    (pair,) = load_pairs(pairs, space, policy)
    (theta,) = checkpoint.load(saved)["policies"].values()
    np.testing.assert_array_equal(pair.theta, theta)
    pairs.write_text(yaml.safe_dump({"pairs": [{"policy": {"checkpoint": str(saved), "pair": 3}}]}))
    with pytest.raises(ConfigError, match=r"pairs\[0\].policy.pair: no policy 3 in gen_000002"):
        load_pairs(pairs, space, policy)
    # The run directory itself: its newest checkpoint, as resume= and coevo-eval read it.
    pairs.write_text(yaml.safe_dump({"pairs": [{"policy": {"checkpoint": str(run), "pair": 0}}]}))
    (from_run,) = load_pairs(pairs, space, policy)
    np.testing.assert_array_equal(from_run.theta, theta)
    assert from_run.source.startswith(f"{run}/checkpoints/gen_000002.pkl#")
    empty = tmp_path / "empty"
    empty.mkdir()
    pairs.write_text(yaml.safe_dump({"pairs": [{"policy": {"checkpoint": str(empty), "pair": 0}}]}))
    with pytest.raises(ConfigError, match=r"pairs\[0\].policy.checkpoint: no usable checkpoint"):
        load_pairs(pairs, space, policy)
    done = cli_in_process("coevo-eval", run, "episodes=2", "task=gravity=12")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("policy 0 (") and "gravity=12" in lines[0]
    assert [line.split(":")[0] for line in lines[1:3]] == ["episode 0", "episode 1"]
    bad = cli_in_process("coevo-eval", run, "pair=3")
    assert bad.returncode == 2 and "no policy 3 in this run; known: 0 (" in bad.stderr


def test_a_relative_path_in_a_users_preset_is_relative_to_the_preset(tmp_path):
    """A preset travels with its files; a path typed on the command line stays cwd-relative."""
    presets = tmp_path / "my_conf" / "experiment"
    shutil.copytree(ROOT / "experiments" / "eligible_parents" / "policies", presets / "policies")
    shutil.copy(ROOT / "experiments" / "eligible_parents" / "pairs.yaml", presets)
    (presets / "mine.yaml").write_text(
        "# @package _global_\nmode: eligible_parents\neligible:\n  pairs_file: pairs.yaml\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    common = (f"hydra.searchpath=[file://{tmp_path / 'my_conf'}]", "experiment=mine", "pool=local")
    done = cli_in_process("coevo-run", *common, f"hydra.run.dir={tmp_path / 'run'}", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    assert "pairs eligible to reproduce" in done.stdout
    typed = cli_in_process("coevo-run", *common, "eligible.pairs_file=pairs.yaml", cwd=elsewhere)
    assert typed.returncode == 2 and "eligible.pairs_file: pairs.yaml not found" in typed.stderr


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("task: [1, \n", "invalid YAML at line 2, column 1: expected the node content"),
        ("", "empty or not a mapping: the run's settings are lost"),
    ],
)
def test_a_damaged_or_empty_run_config_is_refused_by_name(tmp_path, text, message):
    from coevo.run_setup import load_run_config

    (tmp_path / "config.yaml").write_text(text)
    with pytest.raises(ConfigError) as info:
        load_run_config(tmp_path)
    assert str(info.value).startswith(f"{tmp_path / 'config.yaml'}: {message}")


def test_a_scalar_for_a_task_parameter_and_a_torch_file_as_sb3_are_refused_by_name(tmp_path):
    import torch

    from coevo import tasks
    from coevo.policies.loaders import load_sb3_policy

    with pytest.raises(ConfigError, match=r"task.params.gravity: expected a mapping of low"):
        tasks.get("cartpole").with_overrides({"gravity": 5})
    torch.save(torch.nn.Linear(4, 2).state_dict(), tmp_path / "actor.pt")
    with pytest.raises(ConfigError, match=r"actor.pt is not an SB3 zip \(no SB3 model data"):
        load_sb3_policy(tmp_path / "actor.pt")
