"""UED on mazes (issue 31, claim 3): PPO on `task=maze` with domain randomisation, PLR⊥
(Jiang et al. 2021), ACCEL (Parker-Holder et al. 2022) and SFL (Rutherford et al. 2024);
the named held-out mazes' solved rate and the α-CVaR of the solved rate on random mazes.

    python experiments/mazes_ued/run.py --quick            # a smoke test, seconds
    python experiments/mazes_ued/run.py --full --jobs 2    # 10 confirmation seeds x 4 arms
    python experiments/mazes_ued/run.py --full --jobs 2 --stop-after-min 60   # go on later
    python experiments/mazes_ued/run.py --probe --jobs 1   # a probe seed per arm, the budget
    python experiments/mazes_ued/run.py --probe --arms dr --budget 500000   # sizing

Every arm is the config `coevo-run` composes from its overrides (conf/, Hydra), run in this
process for `budget` training env steps (every episode a curriculum plays, levels scored
without training included: PLR⊥'s and ACCEL's new levels, SFL's samples; test episodes
counted apart). At `scorings` marks the policy is scored (ued_scoring.py) on the named
held-out mazes (coevo's labyrinth, four rooms, long corridor and three perfect mazes) and
on a seeded set of random solvable mazes; a run's figures are the mean of its last 3
scorings. Per arm: IQM with a 95 % stratified bootstrap interval over seeds and the
probability of improvement over DR (coevo.compare.stats).

Writes under --out (full: results/claim; probes: results/probes, or results/probes_<budget>
for a sizing budget; quick: a temp dir): runs/<arm>_seed<seed>_<key>.json (each finished
run: rerun the same command to resume a stopped study; a run in flight saves its state in
runs/partial/ every SNAPSHOT_EVERY_S and goes on from it), configs/<arm>.yaml (each arm's
resolved config), runs.csv, curves.csv, table.md (ued_table.py) and curves.png.
"""

from __future__ import annotations

import os

# One BLAS / torch thread per process: the machine is shared, and runs go side by side.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import pickle  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import asdict, dataclass, field, replace  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pandas as pd  # noqa: E402
import yaml  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # claim_runs, shared by the claims

from claim_runs import cached, commit, finished  # noqa: E402
from ued_scoring import Scorer, late_figures  # noqa: E402
from ued_table import Header, figure, table  # noqa: E402

from coevo import hydra_configs, run_setup  # noqa: E402
from coevo.config import RunConfig, parse_config  # noqa: E402
from coevo.pool import EvaluationPool  # noqa: E402

CONF_DIR = ROOT / "conf"
# The papers' budgets, from their code: dcd's MiniGrid PLR⊥ and ACCEL configs
# (train_scripts/grid_configs/minigrid/60_blocks_uniform/*.json) num_env_steps 250,000,000
# (32 processes x 256 steps per PPO update, LSTM 256); minimax's maze configs
# (config/configs/maze/*.json) 30,000 updates x 32 x 256 = 245,760,000; SFL's reference
# (sfl/train/config/learning/ippo-minigrid.yaml) TOTAL_TIMESTEPS 3e8 (256 envs x 256 steps),
# its learnability rollouts (25,000 levels x 2,000 steps every 100 updates) not counted in it.
PAPER_BUDGETS = "dcd 250 M (PLR⊥, ACCEL), minimax 245.8 M, SFL's reference 300 M"
# Sized so that one arm's 10 seeds take about 2 hours on 2 free cores (14,400 CPU s, so
# about 1,440 CPU s a run): sizing probes at 1 M steps (results/probes_1000000) cost DR, the
# dearest arm (every step trains), about 40 CPU s per M training steps beside ~1.3 CPU s a
# scoring; 30 M steps is ~1,200-1,300 CPU s. See experiments/README.md, claim 3.
BUDGET = 30_000_000
SCORINGS = 10  # test scorings inside the budget
# Seeds: probes (and --quick) from 1000 up; the confirming --full run 10..19, never probed.
# (0..9 were declared first; seed 0's DR and PLR⊥ ran before 25550c4 changed how PLR⊥ and
# ACCEL score an evaluation's cut episode, so the confirmation takes seeds none has run.)
PROBE_SEED_START = 1000
CONFIRM_SEEDS = tuple(range(10, 20))
SNAPSHOT_EVERY_S = 300.0  # a run stopped without warning loses at most this much work
CACHE_FORMAT = 3  # what a cached run records; a new one makes runs recorded before run again
# (3: PPO streams take a new level at every reset, e13ac73; runs cached before are stale)

# The expectation, committed before any confirmation seed ran.
EXPECTATION = (
    "The published pattern (the three papers, at 250-300 M steps with an LSTM agent): DR ties "
    "with the curricula on the mean (here: the named mazes' solved rate) and the curricula "
    "lead in the worst 10 % (here: the 0.1-CVaR of the solved rate on random solvable "
    "mazes). Checked per curriculum (PLR⊥, ACCEL, SFL) against DR on the 10 confirmation "
    "seeds: a tie on the mean when the 95 % interval of P(curriculum > DR) on the named "
    "mazes' solved rate contains 0.5; a lead in the worst 10 % when the 95 % interval of "
    "P(curriculum > DR) on the 0.1-CVaR lies above 0.5. The pattern holds for a curriculum "
    "when both do. Our prior at this budget (30 M steps, an eighth of the papers', with a "
    "memoryless conv actor-critic where they have an LSTM): the pattern does not hold for "
    "any curriculum. Probes rerun at HEAD (seed 1000, results/probes_rerun; named solved "
    "and 0.1-CVaR, the mean of the last 3 scorings): DR 17.2 and 24.7, SFL 13.3 and 19.3, "
    "ACCEL 6.7 and 4.7, PLR⊥ 0.0 and 0.0 (17 on the named mazes at the first scorings, 0 "
    "from the fourth on); random mazes solved DR 88.5, SFL 88.4, ACCEL 64.0, PLR⊥ 62.4. "
    "We expect SFL to tie with DR on both figures, PLR⊥ and ACCEL to tie or fall below DR "
    "on both (they train on about half DR's updates at equal steps), and no curriculum's "
    "P(> DR) interval on the 0.1-CVaR entirely above 0.5."
)


@dataclass(frozen=True)
class Mode:
    """A scale: budget, scorings, seeds, the scoring sets' sizes and overrides that shrink
    the arms (quick only)."""

    budget: int
    scorings: int
    seeds: tuple[int, ...]
    random_mazes: int = 100
    named_episodes: int = 10
    random_episodes: int = 10
    reps: int = 50_000  # bootstrap replicates
    shrink: tuple[str, ...] = ()


# PPO as experiments/mazes_ppo ran it (PPO learns mazes there: 46 % of 100 held-out mazes at
# 2 M steps), with the conv actor-critic (the UED papers' 16 filters of 3 x 3; it tied with
# the MLP there). One maze per stream and update. Evaluation episodes sample from the policy
# (`policy.kwargs.evaluation=sample`), as SFL's level scoring and the papers' test rollouts
# do: on a maze every deterministic episode is the same, so SFL's learnability p(1 - p) would
# be 0 for every level.
PPO = (
    "optimizer=ppo",
    "policy=conv_actor_critic",
    "policy.kwargs.evaluation=sample",
    "optimizer.n_envs=16",
    "optimizer.n_steps=256",
    "optimizer.batch_size=1024",
    "optimizer.n_epochs=4",
    "optimizer.learning_rate=0.0005",
    "optimizer.gamma=0.99",
    "optimizer.gae_lambda=0.95",
    "optimizer.ent_coef=0.01",
    "curriculum.tasks_per_step=16",
)
COMMON = ("task=maze", "pool=local", "curriculum.generations=1000000", *PPO)
ARMS: dict[str, tuple[str, ...]] = {
    "dr": ("curriculum=dr",),
    # PLR⊥ as conf/curriculum/plr.yaml (dcd's MiniGrid robust PLR: positive value loss,
    # replay 0.5, temperature 0.3, staleness 0.3, min fill 0.5); dcd's buffer of 4000 levels
    # scaled to this budget (4000 x 30 M / 250 M = 480).
    "plr": ("curriculum=plr", "curriculum.buffer_size=480"),
    # ACCEL as conf/curriculum/accel.yaml (dcd's MiniGrid ACCEL: replay 0.8, empty rooms as
    # new levels), dcd's 5 edits per replayed level, the buffer as PLR⊥'s.
    "accel": ("curriculum=accel", "curriculum.buffer_size=480", "curriculum.num_edits=5"),
    # SFL: 200 fresh mazes x 5 sampled episodes scored every 100 updates (the reference's
    # EVAL_FREQ), the 20 most learnable kept (the reference keeps 1000 of 25000) and half of
    # each update's mazes drawn from them (the reference's 128 of 256).
    "sfl": (
        "curriculum=sfl",
        "curriculum.levels_sampled=200",
        "curriculum.eval_episodes=5",
        "curriculum.buffer_size=20",
        "curriculum.refresh_every=100",
    ),
}
QUICK_SHRINK = (
    "optimizer.n_envs=4",
    "optimizer.n_steps=64",
    "optimizer.batch_size=128",
    "optimizer.n_epochs=1",
    "curriculum.tasks_per_step=4",
)
QUICK_ARM_SHRINK = {
    "plr": ("curriculum.buffer_size=8",),
    "accel": ("curriculum.buffer_size=8",),
    "sfl": (
        "curriculum.levels_sampled=4",
        "curriculum.eval_episodes=2",
        "curriculum.buffer_size=2",
        "curriculum.refresh_every=2",
    ),
}
MODES = {
    "quick": Mode(1024, 2, (PROBE_SEED_START,), 10, 2, 4, 2_000, QUICK_SHRINK),
    "full": Mode(BUDGET, SCORINGS, CONFIRM_SEEDS),
    "probe": Mode(BUDGET, SCORINGS, (PROBE_SEED_START,)),
}


def overrides(arm: str, mode: Mode) -> list[str]:
    """The Hydra overrides of an arm at a scale (the seed apart)."""
    shrink = [*mode.shrink, *QUICK_ARM_SHRINK.get(arm, ())] if mode.shrink else []
    return [*COMMON, *ARMS[arm], *shrink]


def arm_config(arm: str, seed: int, mode: Mode) -> RunConfig:
    """The config coevo-run composes for the arm, checked."""
    return parse_config(hydra_configs.compose(CONF_DIR, [*overrides(arm, mode), f"seed={seed}"]))


@dataclass
class Progress:
    """A run's loop so far: what a snapshot keeps besides the curriculum's state."""

    marks: list[float]  # env steps at which scorings are still due
    curve: list[dict] = field(default_factory=list)
    steps: float = 0.0
    trained: float = 0.0  # of steps: those that updated the policy
    updates: int = 0
    scoring_cpu: float = 0.0
    wall_s: float = 0.0  # of the legs before this process's
    cpu_s: float = 0.0


def run_one(
    arm: str, seed: int, mode: Mode, snapshot: Path | None = None, deadline: float | None = None
) -> dict | None:
    """One run to the budget, scored at `mode.scorings` marks; its row and its curve.

    With `snapshot` the run saves its state there every SNAPSHOT_EVERY_S and goes on from it
    when it exists (a stopped run resumes exactly); past `deadline` (time.time()) it saves
    and returns None."""
    config = arm_config(arm, seed, mode)
    started, cpu = time.perf_counter(), time.process_time()
    space, policy = run_setup.prepare(config)
    saved = pickle.loads(snapshot.read_bytes()) if snapshot and snapshot.exists() else None
    marks = [mode.budget * (k + 1) / mode.scorings for k in range(mode.scorings)]
    done = Progress(**saved["progress"]) if saved else Progress(marks)

    def elapsed() -> Progress:  # the totals of every leg so far, this one included
        wall, used = time.perf_counter() - started, time.process_time() - cpu
        return replace(done, wall_s=done.wall_s + wall, cpu_s=done.cpu_s + used)

    with EvaluationPool(space, policy, "local", 1) as pool, Scorer(space, policy, mode) as scorer:
        built = run_setup.build(config, space, pool)
        if saved:
            built.load_state_dict(saved["curriculum"])
            built.generation = saved["generation"]
        last_saved = time.monotonic()
        while done.steps < mode.budget:
            _generation(built, done, scorer, f"{arm} seed {seed}", mode.budget)
            stop = deadline is not None and time.time() >= deadline
            if snapshot and (stop or time.monotonic() - last_saved >= SNAPSHOT_EVERY_S):
                _save(snapshot, built, elapsed())
                last_saved = time.monotonic()
            if stop and done.steps < mode.budget:
                return None
    total = elapsed()
    row = {
        "arm": arm,
        "seed": seed,
        "budget": mode.budget,
        "env_steps": total.steps,
        "trained_steps": total.trained,  # of env_steps: those of steps that updated the policy
        "updates": total.updates,
        **late_figures(total.curve),
        "wall_s": round(total.wall_s, 1),
        "cpu_s": round(total.cpu_s, 1),
        "scoring_cpu_s": round(total.scoring_cpu, 1),  # of cpu_s: the test scorings'
    }
    return {"row": row, "curve": total.curve}


def _generation(built: Any, done: Progress, scorer: Scorer, label: str, budget: int) -> None:
    """One generation of the curriculum, and a scoring (printed) when a mark is passed."""
    summary = built.step().summary
    done.steps += summary["env_steps"]
    now = int(summary.get("optimizer_steps", done.updates))
    done.trained += summary["env_steps"] if now > done.updates else 0.0
    done.updates = now
    if done.steps < done.marks[0]:
        return
    while done.marks and done.steps >= done.marks[0]:
        done.marks.pop(0)
    theta = next(iter(built.policies_for_testing().policies.values()))
    before = time.process_time()
    done.curve.append({"env_steps": done.steps, "updates": done.updates, **scorer.score(theta)})
    done.scoring_cpu += time.process_time() - before
    point = done.curve[-1]
    print(  # a run takes tens of minutes: its progress at each scoring
        f"{label}: {done.steps / 1e6:.1f} M of {budget / 1e6:.1f} M steps, named "
        f"{point['named_solved']:.0f} %, 0.1-CVaR {point['cvar']:.0f} %",
        flush=True,
    )


def _save(snapshot: Path, built: Any, progress: Progress) -> None:
    """The run's state at `snapshot`, never half written under that name."""
    state = {"curriculum": built.state_dict(), "generation": built.generation}
    snapshot.parent.mkdir(parents=True, exist_ok=True)
    partial = snapshot.with_suffix(".part")
    # Plain values only: the script's classes pickle under a name that differs between the
    # main process and --jobs' spawned ones.
    partial.write_bytes(pickle.dumps({**state, "progress": asdict(progress)}))
    partial.replace(snapshot)


def _key(arm: str, seed: int, mode: Mode) -> str:
    settings = [CACHE_FORMAT, overrides(arm, mode), seed, replace(mode, seeds=()).__repr__()]
    digest = hashlib.sha1(json.dumps(settings).encode()).hexdigest()[:10]
    return f"{arm}_seed{seed}_{digest}.json"


def cached_run(job: tuple[str, int, Mode, Path, float | None]) -> dict | None:
    """One run, or its saved result (runs are deterministic, so a stopped study resumes);
    a run in flight snapshots itself under partial/ and goes on from there. None: it
    stopped at the deadline."""
    arm, seed, mode, cache, deadline = job
    path = cache / _key(arm, seed, mode)
    if path.exists():
        return cached(path, dict)
    if deadline is not None and time.time() >= deadline:
        return None  # a run still queued at the deadline is not started
    snapshot = cache / "partial" / path.with_suffix(".pkl").name
    result = run_one(arm, seed, mode, snapshot, deadline)
    if result is None:
        return None
    finished_run: dict = result
    cached(path, lambda: finished_run)
    snapshot.unlink(missing_ok=True)
    return result


def run_all(
    arms: list[str], mode: Mode, jobs: int, cache: Path, deadline: float | None = None
) -> list[dict]:
    """Every (arm, seed) run, a line per finished one, in (seed, arm) order; past the
    deadline, the runs finished so far (the others saved to go on)."""
    work = [(arm, seed, mode, cache, deadline) for seed in mode.seeds for arm in arms]
    done = []
    for result in finished(cached_run, work, jobs):
        if result is None:
            continue
        done.append(result)
        row = result["row"]
        trace = " ".join(f"{p['named_solved']:.0f}/{p['cvar']:.0f}" for p in result["curve"])
        print(
            f"{row['arm']} seed {row['seed']}: named {row['named_solved_late']:.1f} %, 0.1-CVaR "
            f"{row['cvar_late']:.1f} % ({row['env_steps']:,.0f} steps, {row['updates']} "
            f"updates, {row['wall_s']:.0f} s, {row['cpu_s']:.0f} CPU s); named/CVaR {trace}",
            flush=True,
        )
    order = {(arm, seed): i for i, (arm, seed, *_) in enumerate(work)}
    return sorted(done, key=lambda r: order[(r["row"]["arm"], r["row"]["seed"])])


def write(results: list[dict], arms: list[str], mode: Mode, wall_s: float, out: Path) -> None:
    """runs.csv, curves.csv, table.md, curves.png and every arm's resolved config."""
    (out / "configs").mkdir(parents=True, exist_ok=True)
    code = commit()
    pd.DataFrame([{**r["row"], "commit": code} for r in results]).to_csv(
        out / "runs.csv", index=False
    )
    points = [
        {"arm": r["row"]["arm"], "seed": r["row"]["seed"], **_plain(p)}
        for r in results
        for p in r["curve"]
    ]
    pd.DataFrame(points).to_csv(out / "curves.csv", index=False)
    for arm in arms:
        resolved = run_setup.config_to_dict(arm_config(arm, mode.seeds[0], mode))
        resolved["seed"] = "per run (runs.csv)"
        text = yaml.safe_dump(
            {"overrides": overrides(arm, mode), "config": resolved},
            sort_keys=False,
            allow_unicode=True,
        )
        (out / "configs" / f"{arm}.yaml").write_text(text)
    header = Header(PAPER_BUDGETS, EXPECTATION, code, mode.seeds == CONFIRM_SEEDS)
    (out / "table.md").write_text(table(results, mode, wall_s, header))
    figure(results, out / "curves.png")


def _plain(point: dict) -> dict:
    """A curve point without its per-maze lists (curves.csv keeps the scalars)."""
    return {k: v for k, v in point.items() if not isinstance(v, list)}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--quick", action="store_true", help="tiny budget, 1 probe seed")
    group.add_argument("--full", action="store_true", help="the budget, seeds 10..19")
    group.add_argument("--probe", action="store_true", help="probe seeds at the budget")
    parser.add_argument("--arms", default=",".join(ARMS), help="comma-separated arms")
    parser.add_argument("--seeds", default=str(PROBE_SEED_START), help="--probe's seeds")
    parser.add_argument("--budget", type=int, default=None, help="--probe's budget (sizing)")
    parser.add_argument("--jobs", type=int, default=1, help="processes (the machine is shared)")
    parser.add_argument(
        "--stop-after-min",
        type=float,
        default=None,
        help="save the runs in flight and stop after this many minutes (rerun to go on)",
    )
    parser.add_argument("--out", type=Path, default=None)
    return parser


def _mode_and_out(args: argparse.Namespace, parser: argparse.ArgumentParser) -> tuple[Mode, Path]:
    if not args.probe:
        if args.budget is not None:
            parser.error("--budget is for --probe (sizing); --full runs the declared budget")
        if args.full:
            return MODES["full"], args.out or HERE / "results" / "claim"
        return MODES["quick"], args.out or Path(tempfile.mkdtemp("mazes_ued"))
    seeds = tuple(int(s) for s in args.seeds.split(",") if s)
    low = [s for s in seeds if s < PROBE_SEED_START]
    if low:
        parser.error(f"--seeds {low[0]}: probe seeds are >= {PROBE_SEED_START} (10..19 confirm)")
    budget = args.budget or BUDGET
    mode = replace(MODES["probe"], seeds=seeds, budget=budget)
    default = "probes" if budget == BUDGET else f"probes_{budget}"
    return mode, args.out or HERE / "results" / default


def main(argv: list[str] | None = None) -> Path:
    """Parse the command line, run (or load) the runs, write the results; their folder."""
    parser = _parser()
    args = parser.parse_args(argv)
    arms = [a for a in args.arms.split(",") if a]
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        parser.error(f"unknown arm {unknown[0]}; allowed: {', '.join(ARMS)}")
    mode, out = _mode_and_out(args, parser)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    deadline = None if args.stop_after_min is None else time.time() + 60 * args.stop_after_min
    results = run_all(arms, mode, args.jobs, out / "runs", deadline)
    write(results, arms, mode, time.perf_counter() - started, out)
    print((out / "table.md").read_text())
    print(f"wrote {out}")
    return out


if __name__ == "__main__":
    main()
