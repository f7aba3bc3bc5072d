"""Curricula side by side under a protocol a reviewer can check (issue 29): every arm is a
`coevo-run` with Hydra overrides, so it runs exactly the config coevo-run composes (the config
files' values, e.g. conf/optimizer/ppo.yaml's, never a dataclass's defaults), and the runs are
compared by `coevo-compare`.

    python experiments/curricula/run_study.py --full             # >= 10 seeds per arm
    python experiments/curricula/run_study.py --quick            # the same pipeline, minutes
    python experiments/curricula/run_study.py --check OUT        # one recorded cell, again
    python experiments/curricula/run_study.py --quick optimizer.lr=0.02   # + Hydra overrides

The protocol:
- An arm is (task space, optimizer, curriculum) plus the study's declared overrides (ARM_,
  OPTIMIZER_ and SPACE_OVERRIDES, each with its reason) and any overrides given on the
  command line; its directory is named by its overrides. Each arm declares beforehand what
  it is expected to show (EXPECTATIONS), and the study says whether it did.
- Budget in training env steps: every episode a curriculum runs, scored levels included
  (PLR⊥'s and ACCEL's new levels, SFL's samples); test episodes are counted apart.
  coevo-run counts generations, so a run goes in legs: its first `first_generations`, then
  `coevo-run resume=` with more generations, estimated from its own env steps per
  generation, until the budget is reached. The generations of every leg are recorded
  (study_run.yaml), so `--check` replays the run exactly. The last leg may pass the budget;
  scorings past it are not counted.
- Scorings: the held-out test set every `test_set.every` generations, chosen per arm from a
  pilot run (seed 0, no scorings, to the budget) so that about `test_points` fall inside the
  budget: a POET generation is 100x a PLR round, so one period cannot suit both.
- The figure of a run: the mean of its last 3 scorings inside the budget; per arm, IQM with
  a stratified-bootstrap 95 % interval, α-CVaR over test tasks as SFL's evaluation takes it
  (the worst 10 % ranked on one test episode per task and their return taken from the other:
  `test_set.episodes=2`), and the probability of improvement over DR (coevo.compare, to
  rliable's definitions).
- Every run directory keeps its resolved config (config.yaml, and Hydra's .hydra/).

Writes under --out (default: protocol/full/ or protocol/quick/ beside this script):
arms/<arm>/seed=N/ (run directories), pilots/<arm>/, compare/<task,optimizer>/ (coevo-compare's
page and CSVs) and study.md (the tables, each arm's expectation and whether it held, budget
and commit).
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from coevo.compare.analysis import Budget, GroupStats, run_figure
from coevo.compare.cli import compare, parser
from coevo.compare.report import console_table
from coevo.compare.runs import load_run
from coevo.pool.stats import is_runtime_column

HERE = Path(__file__).resolve().parent
COEVO_RUN = str(Path(sys.executable).parent / "coevo-run")
CURRICULA = ("dr", "plr", "accel", "sfl", "alp_gmm", "poet", "enhanced_poet")
BASELINE = "dr"
RUN_RECORD = "study_run.yaml"
ARM_RECORD = "arm.yaml"
# Episodes per test task at each scoring: coevo-compare's α-CVaR ranks the test tasks on the
# even-numbered episodes and reports their return on the odd, so it needs two; mastery is
# then the mean of the two (test episodes are not counted in the budget).
TEST_EPISODES = 2

# The study's settings beyond the config files', and why (Hydra overrides, per curriculum or
# per curriculum on a task space).
ARM_OVERRIDES: dict[str, tuple[str, ...]] = {
    # dcd's buffer of 4000 levels replays nothing before 2000 are scored: past these budgets.
    "plr": ("curriculum.buffer_size=64",),
    "accel": ("curriculum.buffer_size=64",),
    # SFL's refreshes score fresh levels without training on them, and the budget counts
    # those env steps (as it counts PLR⊥'s and ACCEL's scoring of new levels). At its
    # defaults (100 levels x 10 episodes every 10 optimizer steps) a CartPole pilot spent 73 %
    # of an ES run's env steps and 93 % of a PPO run's scoring, leaving DR 4x to 14x the
    # training. Half the sample (the 10 kept are then its top 20 %, not 10 %) and a refresh
    # period per optimizer (OPTIMIZER_OVERRIDES) bring it to 40 % (ES) and 33 % (PPO) in
    # the pilot (seed 0, 63 and 202 generations); the 10 episodes per level, which make
    # learnability's estimate, stay.
    "sfl": ("curriculum.levels_sampled=50",),
}
# Per (optimizer, curriculum): SFL's refresh period in optimizer steps. An ES step is 32
# episodes, an ARS step 16, a PPO step 2048 env steps (4 streams x 512): 20 ES steps, 40
# ARS steps and 100 PPO updates (the reference's EVAL_FREQ) each train on about as many env
# steps as a refresh of 50 levels x 10 episodes takes.
OPTIMIZER_OVERRIDES: dict[tuple[str, str], tuple[str, ...]] = {
    ("es", "sfl"): ("curriculum.refresh_every=20",),
    ("ars", "sfl"): ("curriculum.refresh_every=40",),
    ("ppo", "sfl"): ("curriculum.refresh_every=100",),
}
# POET's thresholds are returns; the config files' are CartPole's ([0, 500]). Acrobot's lie on
# [-500, 0]: the same thresholds mapped linearly onto that range.
_ACROBOT_POET = (
    "curriculum.repro_threshold=-300.0",
    "curriculum.mc_lower=-450.0",
    "curriculum.mc_upper=-25.0",
)
SPACE_OVERRIDES: dict[tuple[str, str], tuple[str, ...]] = {
    ("acrobot_reach", "poet"): _ACROBOT_POET,
    ("acrobot_reach", "enhanced_poet"): _ACROBOT_POET,
}


@dataclass(frozen=True)
class Expectation:
    """What an arm is expected to show, declared before it runs, and the test of it."""

    claim: str
    holds: Callable[[GroupStats], bool]


def _beats_baseline(group: GroupStats) -> bool:
    return math.isfinite(group.improvement) and group.improvement > 0.5


EXPECTATIONS: dict[str, Expectation] = {
    "dr": Expectation("the baseline learns: IQM of test mastery above 0", lambda g: g.iqm > 0),
    "plr": Expectation(
        "PLR⊥ beats DR on held-out tasks (Jiang et al. 2021): P(improvement over DR) > 0.5",
        _beats_baseline,
    ),
    "accel": Expectation(
        "ACCEL beats DR on held-out tasks (Parker-Holder et al. 2022): P(improvement) > 0.5",
        _beats_baseline,
    ),
    "sfl": Expectation(
        "SFL beats DR on held-out tasks (Rutherford et al. 2024, who report it beating DR and "
        "PLR⊥): P(improvement over DR) > 0.5",
        _beats_baseline,
    ),
    "alp_gmm": Expectation(
        "ALP-GMM beats DR (Portelas et al. 2019): P(improvement over DR) > 0.5",
        _beats_baseline,
    ),
    "poet": Expectation(
        "POET's population masters some test tasks (best of its policies): IQM above 0",
        lambda g: g.iqm > 0,
    ),
    "enhanced_poet": Expectation(
        "Enhanced POET's population masters some test tasks: IQM above 0", lambda g: g.iqm > 0
    ),
}
NO_EXPECTATION = Expectation("none declared", lambda g: False)


@dataclass(frozen=True)
class Scale:
    budget: int  # training env steps per run
    seeds: int
    test_size: int
    test_points: int  # scorings aimed for inside the budget
    first_generations: int  # a run's first leg, before its env steps per generation are known


SCALES = {
    "full": Scale(budget=5_000_000, seeds=10, test_size=100, test_points=10, first_generations=20),
    "quick": Scale(budget=6_000, seeds=2, test_size=10, test_points=4, first_generations=4),
}


@dataclass(frozen=True)
class Arm:
    space: str
    optimizer: str
    curriculum: str
    extra: tuple[str, ...] = ()  # the command line's overrides, for every arm

    @property
    def overrides(self) -> tuple[str, ...]:
        return (
            f"task={self.space}",
            f"optimizer={self.optimizer}",
            f"curriculum={self.curriculum}",
            "pool=local",
            *ARM_OVERRIDES.get(self.curriculum, ()),
            *OPTIMIZER_OVERRIDES.get((self.optimizer, self.curriculum), ()),
            *SPACE_OVERRIDES.get((self.space, self.curriculum), ()),
            *self.extra,
        )

    @property
    def name(self) -> str:
        """The arm's directory: its overrides, the study's pool setting left out."""
        return ",".join(o for o in self.overrides if o != "pool=local").replace("/", "_")

    @property
    def expectation(self) -> Expectation:
        return EXPECTATIONS.get(self.curriculum, NO_EXPECTATION)


def coevo_run(args: list[str]) -> None:
    done = subprocess.run([COEVO_RUN, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"coevo-run {' '.join(args)} failed:\n{done.stderr[-3000:]}")


def _steps(run_dir: Path) -> tuple[float, int]:
    """Training env steps so far and generations done."""
    summary = pd.read_csv(run_dir / "summary.csv")
    return float(summary["env_steps"].sum()), len(summary)


def run_to_budget(
    overrides: list[str], run_dir: Path, scale: Scale, schedule: list[int] | None = None
) -> list[int]:
    """Run `coevo-run overrides` into run_dir in legs until its training env steps reach
    the budget (or, given a recorded `schedule`, with exactly those legs); the legs' target
    generations."""
    legs = list(schedule or [scale.first_generations])
    coevo_run([*overrides, f"curriculum.generations={legs[0]}", f"hydra.run.dir='{run_dir}'"])
    done = 1
    while True:
        steps, generations = _steps(run_dir)
        if schedule is not None:
            if done == len(schedule):
                return legs
            target = schedule[done]
        else:
            if steps >= scale.budget:
                return legs
            if steps <= 0:
                raise RuntimeError(f"{run_dir}: no env steps in {generations} generations")
            # 10 % over the estimate: steps per generation grow as episodes lengthen.
            more = math.ceil(1.1 * (scale.budget - steps) * generations / steps)
            target = generations + max(1, more)
            legs.append(target)
        coevo_run([f"resume={run_dir}", f"curriculum.generations={target}"])
        done += 1


def scoring_period(arm: Arm, scale: Scale, out: Path) -> int:
    """The arm's scoring period in generations, from a pilot (seed 0, no scorings) run to the
    budget: about `test_points` scorings fall inside it."""
    pilot = out / "pilots" / arm.name
    if not (pilot / "summary.csv").exists():
        run_to_budget([*arm.overrides, "seed=0", "test_set.every=0"], pilot, scale)
    steps = pd.read_csv(pilot / "summary.csv")["env_steps"].cumsum()
    inside = int((steps <= scale.budget).sum())
    return max(1, inside // scale.test_points)


def run_arm_seed(arm: Arm, seed: int, every: int, scale: Scale, out: Path) -> Path:
    run_dir = out / "arms" / arm.name / f"seed={seed}"
    record = run_dir / RUN_RECORD
    if record.exists():  # a study stopped early goes on where it was
        return run_dir
    overrides = [
        *arm.overrides,
        f"seed={seed}",
        f"test_set.every={every}",
        f"test_set.size={scale.test_size}",
        f"test_set.episodes={TEST_EPISODES}",
    ]
    legs = run_to_budget(overrides, run_dir, scale)
    figure = run_figure(load_run(run_dir), arm.curriculum, "test_mastered", _budget(scale), 3, 0.1)
    record.write_text(
        yaml.safe_dump(
            {
                "overrides": overrides,
                "legs": legs,
                "budget": scale.budget,
                "first_generations": scale.first_generations,
                "figure": figure.value,
                "commit": _commit(),
            },
            sort_keys=False,
            allow_unicode=True,
        )
    )
    print(f"{arm.name} seed {seed}: {figure.value:.3f} ({legs[-1]} generations)", flush=True)
    return run_dir


def _budget(scale: Scale) -> Budget:
    return Budget(env_steps=scale.budget)


def _commit() -> str:
    """The checkout's commit, with "-dirty" when files differ from it."""
    done = subprocess.run(
        ["git", "describe", "--always", "--dirty", "--abbrev=40"],
        capture_output=True,
        text=True,
        cwd=HERE,
    )
    return done.stdout.strip()


def run_study(arms: list[Arm], scale: Scale, out: Path, jobs: int) -> str:
    """Every arm's seeds, then one coevo-compare per (task space, optimizer); study.md."""
    with ThreadPoolExecutor(jobs) as pool:
        periods = dict(
            zip(arms, pool.map(lambda a: scoring_period(a, scale, out), arms), strict=True)
        )
        for arm, every in periods.items():
            (out / "arms" / arm.name).mkdir(parents=True, exist_ok=True)
            (out / "arms" / arm.name / ARM_RECORD).write_text(
                yaml.safe_dump(
                    {
                        "overrides": list(arm.overrides),
                        "expectation": arm.expectation.claim,
                        "test_set.every": every,
                    },
                    sort_keys=False,
                    allow_unicode=True,
                )
            )
        jobs_list = [(a, s) for a in arms for s in range(scale.seeds)]
        list(pool.map(lambda job: run_arm_seed(*job, periods[job[0]], scale, out), jobs_list))
    sections = []
    for space, optimizer in dict.fromkeys((a.space, a.optimizer) for a in arms):
        mine = [a for a in arms if (a.space, a.optimizer) == (space, optimizer)]
        sections.append(_compare_section(space, optimizer, mine, scale, out))
    seeds = f"{scale.seeds} seed{'s' if scale.seeds != 1 else ''} per arm"
    text = "\n\n".join(sections) + (
        f"\n\nBudget {scale.budget:,} training env steps per run; {seeds}; "
        f"test set of {scale.test_size} tasks; runs at commit {_run_commits(arms, out)} "
        f"(each run's study_run.yaml); tables written at {_commit()}.\n"
    )
    (out / "study.md").write_text(text)
    return text


def _run_commits(arms: list[Arm], out: Path) -> str:
    """The commits the arms' runs ended at, each once, in the order of the arms and seeds."""
    records = [p for a in arms for p in sorted((out / "arms" / a.name).glob(f"*/{RUN_RECORD}"))]
    commits = [yaml.safe_load(p.read_text()).get("commit", "?") for p in records]
    return ", ".join(dict.fromkeys(commits)) or "?"


def _compare_section(space: str, optimizer: str, arms: list[Arm], scale: Scale, out: Path) -> str:
    baseline = BASELINE if any(a.curriculum == BASELINE for a in arms) else None
    where = out / "compare" / f"task={space},optimizer={optimizer}"
    args = [str(out / "arms" / a.name) for a in arms]
    args += ["--budget-steps", str(scale.budget)]
    if baseline:
        args += ["--baseline", baseline]
    groups = compare(parser().parse_args([*args, "--out", str(where)]))
    lines = [f"## {space}, {optimizer}", "", "```", console_table(groups, "curriculum.name",
             "test_mastered", baseline, 0.1), "```", ""]  # fmt: skip
    for group in groups:
        expectation = EXPECTATIONS.get(group.label, NO_EXPECTATION)
        verdict = "held" if expectation.holds(group) else "did not hold"
        lines.append(f"- {group.label}: expected: {expectation.claim}: {verdict}")
    return "\n".join(lines + ["", _equal_updates_section(groups, args, baseline, where)])


def updates_cut(groups: list[GroupStats]) -> tuple[float, dict[str, float]]:
    """The equal-updates cut: the median updates (at the last scoring inside the step
    budget) of the arm with the fewest, and every arm's median. NaN and {} when no arm
    records its updates in every run."""
    medians = {
        g.label: statistics.median(r.updates for r in g.runs)
        for g in groups
        if g.runs and all(math.isfinite(r.updates) for r in g.runs)
    }
    return (min(medians.values()) if medians else math.nan), medians


def _equal_updates_section(
    groups: list[GroupStats], args: list[str], baseline: str | None, where: Path
) -> str:
    """The same runs compared at equal gradient updates: the budget in env steps, and as
    many updates as the arm with the fewest made. At equal env steps an arm that spends
    steps scoring levels makes fewer updates; this table shows whether that, rather than the
    levels, explains a difference. A run's figure here is its last scoring at or below the
    cut (one scoring, so that an arm scored less often is not read much earlier)."""
    fewest, medians = updates_cut(groups)
    if not medians:
        return "No run records its updates (optimizer_steps) in every run: no equal-updates table."
    skipped = [g.label for g in groups if g.label not in medians]
    made = ", ".join(f"{label} {median:,.0f}" for label, median in medians.items())
    budget = ["--budget-updates", str(fewest), "--last", "1", "--out", str(where / "equal_updates")]
    equal = compare(parser().parse_args([*args, *budget]))
    read_at = ", ".join(
        f"{g.label} {statistics.mean(r.updates for r in g.runs if math.isfinite(r.updates)):,.0f}"
        for g in equal
        if any(math.isfinite(r.updates) for r in g.runs)
    )
    lines = [
        f"Updates at the last scoring inside the step budget (median per arm): {made}."
        + (f" Not counted (a run without updates): {', '.join(skipped)}." if skipped else ""),
        "",
        f"At equal updates ({fewest:,.0f}, and the step budget; secondary, no expectation "
        "declared on it). A run's figure: its last scoring at or below the cut. The updates "
        f"of those scorings (mean per arm): {read_at}.",
        "",
        "```",
        console_table(equal, "curriculum.name", "test_mastered", baseline, 0.1),
        "```",
    ]
    return "\n".join(lines)


def check(out: Path, cell: str | None) -> bool:
    """Re-run one recorded run (default: the first arm's seed 0) with its recorded overrides
    and legs, and compare its summary.csv (every column but timings) and figure bit for bit."""
    records = sorted((out / "arms").glob(f"*/seed=*/{RUN_RECORD}"))
    if cell is not None:
        records = [r for r in records if f"{r.parent.parent.name}/{r.parent.name}" == cell]
    if not records:
        raise SystemExit(f"no recorded run {cell or ''} under {out}/arms (ARM_DIR/seed=N)")
    recorded_dir = records[0].parent
    record = yaml.safe_load(records[0].read_text())
    scale = Scale(record["budget"], 1, 1, 1, record["first_generations"])
    with tempfile.TemporaryDirectory() as tmp:
        again = Path(tmp) / "run"
        run_to_budget(record["overrides"], again, scale, schedule=record["legs"])
        old, new = (_deterministic(d) for d in (recorded_dir, again))
        figure = run_figure(load_run(again), "", "test_mastered", _budget(scale), 3, 0.1).value
    same = old.equals(new) and _same_float(figure, record["figure"])
    at = f"recorded at {record['commit'][:10]}, re-run at {_commit()[:10]}"
    print(
        f"{recorded_dir.parent.name}/{recorded_dir.name}: figure {record['figure']!r} recorded, "
        f"{figure!r} again; summary.csv {'identical' if old.equals(new) else 'DIFFERS'} ({at}): "
        + ("reproduced bit for bit" if same else "NOT reproduced")
    )
    return same


def _same_float(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def _deterministic(run_dir: Path) -> pd.DataFrame:
    summary = pd.read_csv(run_dir / "summary.csv")
    return summary.drop(columns=[c for c in summary if is_runtime_column(c)])


def main(argv: list[str] | None = None) -> str | bool:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--full", action="store_true", help="the study's scale (the default)")
    mode.add_argument("--quick", action="store_true", help="tiny budget, 2 seeds (minutes)")
    mode.add_argument("--check", type=Path, metavar="OUT", help="re-run one cell of OUT")
    p.add_argument("--cell", default=None, help="--check's run: ARM_DIR/seed=N (default: first)")
    p.add_argument("--spaces", default="cartpole", help="comma-separated task spaces")
    p.add_argument("--optimizers", default="es", help="comma-separated: es, ppo, ars")
    p.add_argument("--curricula", default=",".join(CURRICULA))
    p.add_argument("--seeds", type=int, default=None, help="seeds per arm (scale's default)")
    p.add_argument("--budget", type=int, default=None, help="training env steps per run")
    p.add_argument("--jobs", type=int, default=2, help="runs at once (processes)")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="default: protocol/full/ or protocol/quick/ beside this script",
    )
    p.add_argument("overrides", nargs="*", help="Hydra overrides for every arm (key=value)")
    args = p.parse_args(argv)
    if args.check is not None:
        if not check(args.check, args.cell):
            sys.exit(1)
        return True
    scale = SCALES["quick" if args.quick else "full"]
    if args.seeds is not None or args.budget is not None:
        scale = Scale(
            args.budget or scale.budget,
            args.seeds or scale.seeds,
            scale.test_size,
            scale.test_points,
            scale.first_generations,
        )
    arms = [
        Arm(space, optimizer, curriculum, tuple(args.overrides))
        for space in args.spaces.split(",")
        for optimizer in args.optimizers.split(",")
        for curriculum in args.curricula.split(",")
    ]
    out = args.out or HERE / "protocol" / ("quick" if args.quick else "full")
    out.mkdir(parents=True, exist_ok=True)
    text = run_study(arms, scale, out, args.jobs)
    print(text)
    return text


if __name__ == "__main__":
    main()
