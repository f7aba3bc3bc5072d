"""Stepping stones: does a curriculum reach a hard task that training on it directly does not,
within the same budget of training env steps?

    python experiments/stepping_stones/run.py --seeds 5 --jobs 1   # the recorded headline
    python experiments/stepping_stones/run.py --domain acrobot_high_goal   # the earlier one
    python experiments/stepping_stones/run.py --budget 200000 --seeds 1   # a quick look

"direct" trains on the hard task alone: domain randomisation over a task space whose bounds
are collapsed onto the hard task, so it runs through exactly the same machinery (ES, pool,
env-step accounting) as the curricula. The curricula start from the domain's space (its
bounds and initial task). Every run is scored on the hard task (best of the curriculum's
test policies, `--episodes` episodes) at 10 marks of training env steps; a run "reaches" the
hard task when that mean return is >= the domain's threshold. Writes runs.csv, curves.csv (as
runs finish), table.md (with one-sided Mann-Whitney tests against direct and DR) and
curves.png under --out (default: results/<domain>).
"""

from __future__ import annotations

import argparse
import multiprocessing
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from coevo import run_setup
from coevo.config import parse_config
from coevo.pool import EvaluationPool
from coevo.tasks.test_sets import TestSet, score_test_set

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Domain:
    """A task space (with parameter overrides), its hard task and the return that counts."""

    space: str
    hard: dict[str, float]
    threshold: float
    params: dict[str, dict] = field(default_factory=dict)  # task.params overrides
    # Per-curriculum settings beyond the config files' defaults (POET's thresholds are in
    # the domain's return scale), and why: see experiments/README.md.
    overrides: dict[str, dict] = field(default_factory=dict)
    budget: int = 2_000_000  # training env steps per run, unless --budget says otherwise


DOMAINS = {
    # The negative result recorded in experiments/README.md: continuous MountainCar with the
    # weakest engine the space allows (the car must rock ~10 times); +100 at the goal minus
    # 0.1 a^2 per step, so a return > 0 means the goal was reached.
    "mountain_car_weak": Domain(
        space="mountain_car_continuous",
        hard={"power": 0.0005, "max_speed": 0.07, "goal_position": 0.45},
        threshold=50.0,
        overrides={"plr": {"buffer_size": 64, "score": "return_regret"}},
    ),
    # Pendulum with gymnasium's gravity and length and a heavy bob: the motor can no longer
    # lift it straight up, so the policy must swing it up.
    "pendulum_heavy": Domain(
        space="pendulum",
        hard={"gravity": 10.0, "mass": 1.0, "length": 1.0},
        threshold=-400.0,
        params={
            "gravity": {"low": 10.0, "high": 10.0, "init": 10.0, "step": 0.0},
            "length": {"low": 1.0, "high": 1.0, "init": 1.0, "step": 0.0},
            "mass": {"low": 0.2, "high": 1.2, "init": 0.2, "step": 0.1},
        },
        overrides={
            "plr": {"buffer_size": 64, "score": "return_regret"},
            "poet": {"repro_threshold": -400.0, "mc_lower": -1000.0, "mc_upper": -200.0},
        },
    ),
    # Acrobot with heavy links (2 kg each, gymnasium: 1) and half gymnasium's torque, whose
    # episode ends when the tip is higher than goal_height (gymnasium: 1.0): -1 per step until
    # then, so a policy that never gets that high sees a flat -500. The hard goal, 1.9, is
    # nearly upright. Threshold: the hand-written pumping controller (torque along the second
    # joint's velocity) scores about -460 here (goal reached in ~30 % of episodes).
    "acrobot_high_goal": Domain(
        space="acrobot_reach",
        hard={"goal_height": 1.9, "torque": 0.5, "link_mass_1": 2.0, "link_mass_2": 2.0},
        threshold=-450.0,
        params={
            "torque": {"low": 0.5, "high": 0.5, "init": 0.5, "step": 0.0},
            "link_mass_1": {"low": 2.0, "high": 2.0, "init": 2.0, "step": 0.0},
            "link_mass_2": {"low": 2.0, "high": 2.0, "init": 2.0, "step": 0.0},
            "goal_height": {"low": -1.0, "high": 1.9, "init": 0.0, "step": 0.1},
        },
        overrides={
            "plr": {"buffer_size": 64, "score": "return_regret"},
            "poet": {"repro_threshold": -300.0, "mc_lower": -490.0, "mc_upper": -100.0},
        },
    ),
    # MountainCar as a reaching task (-1 per step until the goal, scaled observations) with a
    # weak engine (power 0.0004, gymnasium: 0.0015): the hard task is the goal at 0.5, near
    # the right end of the track, which takes ~5 swings of pumping along the velocity. The
    # curricula start from the goal at -0.4, just right of the valley (one small swing).
    "mountain_car_hilltop": Domain(
        space="mountain_car_reach",
        hard={"power": 0.0004, "goal_position": 0.45},
        threshold=-500.0,
        params={
            "power": {"low": 0.0004, "high": 0.0004, "init": 0.0004, "step": 0.0},
            "goal_position": {"low": -0.4, "high": 0.45, "init": -0.4, "step": 0.05},
        },
        overrides={
            "plr": {"buffer_size": 64, "score": "return_regret"},
            "poet": {"repro_threshold": -400.0, "mc_lower": -990.0, "mc_upper": -150.0},
        },
        budget=50_000_000,
    ),
}


def space_config(domain: Domain, collapse: bool) -> dict:
    """The task section of the run's config: the domain's space, or the hard task alone."""
    if not collapse:
        return {"name": domain.space, "params": domain.params}
    return {
        "name": domain.space,
        "params": {
            name: {"low": value, "high": value, "init": value, "step": 0.0}
            for name, value in domain.hard.items()
        }
        | {name: spec for name, spec in domain.params.items() if name not in domain.hard},
    }


def run_one(job: tuple[str, str, int, int, int]) -> tuple[dict, list[dict]]:
    domain_name, method, seed, budget, episodes = job
    domain = DOMAINS[domain_name]
    curriculum = "dr" if method == "direct" else method  # direct: DR on the collapsed space
    config = parse_config(
        {
            "seed": seed,
            "task": space_config(domain, collapse=method == "direct"),
            "curriculum": {
                "name": curriculum,
                "generations": 10**6,
                **domain.overrides.get(method, {}),
            },
        }
    )
    space, policy = run_setup.prepare(config)
    target = TestSet(space.name, (space.task(**domain.hard),), domain.threshold, seed=0)
    marks = [budget * (k + 1) / 10 for k in range(10)]
    curve, steps = [], 0.0
    started = time.perf_counter()
    with EvaluationPool(space, policy, "local", 1) as pool:
        built = run_setup.build(config, space, pool)
        while steps < budget:
            steps += built.step().summary["env_steps"]
            if steps >= marks[0]:
                while marks and steps >= marks[0]:
                    marks.pop(0)
                chosen = built.policies_for_testing()
                score = score_test_set(
                    pool, list(chosen.policies.values()), target, episodes, seed=10_000
                )
                curve.append(
                    {
                        "domain": domain_name,
                        "method": method,
                        "seed": seed,
                        "env_steps": steps,
                        "hard_return": float(score.returns[0]),
                    }
                )
    row = {
        "domain": domain_name,
        "method": method,
        "seed": seed,
        "env_steps": steps,
        "generations": built.generation,
        "hard_return": curve[-1]["hard_return"],
        "best_hard_return": max(p["hard_return"] for p in curve),
        "reached": curve[-1]["hard_return"] >= domain.threshold,
        "wall_s": time.perf_counter() - started,
    }
    return row, curve


def late_returns(curves: pd.DataFrame) -> pd.Series:
    """Per (method, seed): the mean of the last 3 scorings, less noisy than the last one."""
    return curves.groupby(["method", "seed"], sort=False)["hard_return"].apply(
        lambda v: v.iloc[-3:].mean()
    )


def table(runs: pd.DataFrame, curves: pd.DataFrame, threshold: float) -> str:
    """Markdown: per method, seeds reaching the hard task, returns at the end, late, best."""
    late = late_returns(curves)
    lines = [
        "| method | seeds reaching the hard task (last scoring) | seeds reaching it at any "
        "scoring | hard-task return at the end (mean ± std) | mean of the last 3 scorings "
        "(mean ± std) | best during the run (mean) | wall s / run |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for method, part in runs.groupby("method", sort=False):
        tail = late[method]
        lines.append(
            f"| {method} | {int(part['reached'].sum())} of {len(part)} | "
            f"{int((part['best_hard_return'] >= threshold).sum())} of {len(part)} | "
            f"{part['hard_return'].mean():.1f} ± {np.std(part['hard_return']):.1f} | "
            f"{tail.mean():.1f} ± {np.std(tail):.1f} | "
            f"{part['best_hard_return'].mean():.1f} | {part['wall_s'].mean():.0f} |"
        )
    return "\n".join(lines) + "\n"


def statistics(curves: pd.DataFrame, baselines: tuple[str, ...] = ("direct", "dr")) -> str:
    """One-sided Mann-Whitney U tests on the mean of the last 3 scorings: is each method
    above each baseline? (scipy's, asymptotic with ties: direct's seeds often tie at the
    floor.)"""
    from scipy.stats import mannwhitneyu

    late = late_returns(curves)
    methods = list(dict.fromkeys(curves["method"]))
    lines = []
    for base in baselines:
        if base not in methods:
            continue
        for method in methods:
            if method in (base, "direct"):  # direct is the baseline of the others
                continue
            ours, theirs = late[method].to_numpy(), late[base].to_numpy()
            if np.ptp(np.concatenate([ours, theirs])) == 0:
                lines.append(f"- {method} > {base}: all seeds equal, no test")
                continue
            test = mannwhitneyu(ours, theirs, alternative="greater")
            lines.append(
                f"- {method} > {base}: U = {test.statistic:.1f}, one-sided p = {test.pvalue:.4f} "
                f"({len(ours)} vs {len(theirs)} seeds)"
            )
    return "\n".join(lines) + "\n" if lines else ""


def write_results(rows: list[dict], points: list[dict], out: Path) -> None:
    """runs.csv and curves.csv of the runs finished so far (a cut-short run keeps them)."""
    pd.DataFrame(rows).to_csv(out / "runs.csv", index=False)
    pd.DataFrame(points).to_csv(out / "curves.csv", index=False)


def plot(curves: pd.DataFrame, threshold: float, title: str, path: Path) -> None:
    """Hard-task return against training env steps: each seed thin, the seeds' mean thick."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for k, (method, rows) in enumerate(curves.groupby("method", sort=False)):
        colour = f"C{k}"
        for _, seed_rows in rows.groupby("seed"):
            ax.plot(seed_rows["env_steps"], seed_rows["hard_return"], color=colour, lw=0.6)
        # Seeds reach the k-th mark at slightly different steps: average by mark.
        mark = rows.groupby("seed").cumcount()
        mean = rows.groupby(mark)[["env_steps", "hard_return"]].mean()
        ax.plot(mean["env_steps"], mean["hard_return"], color=colour, lw=2.2, label=method)
    ax.axhline(threshold, color="k", ls="--", lw=1, label=f"threshold {threshold:g}")
    ax.set_xlabel("training env steps")
    ax.set_ylabel("hard-task return (10 episodes)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def commit() -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE
    ).stdout.strip()


def main(argv: list[str] | None = None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--domain", default="mountain_car_hilltop", choices=sorted(DOMAINS))
    parser.add_argument("--methods", default="direct,poet,dr,alp_gmm")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument(
        "--budget", type=int, default=None, help="training env steps (default: the domain's)"
    )
    parser.add_argument("--episodes", type=int, default=10, help="episodes on the hard task")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    domain = DOMAINS[args.domain]
    budget = args.budget or domain.budget
    out = args.out or HERE / "results" / args.domain
    out.mkdir(parents=True, exist_ok=True)
    jobs = [
        (args.domain, m, s, budget, args.episodes)
        for m in args.methods.split(",")
        for s in range(args.first_seed, args.first_seed + args.seeds)
    ]
    rows, points = [], []
    started = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(args.jobs) as workers:
        for row, curve in workers.imap(run_one, jobs):
            rows.append(row)
            points.extend(curve)
            trace = " ".join(f"{p['hard_return']:.0f}" for p in curve)
            print(
                f"{row['method']} seed {row['seed']}: hard-task return {row['hard_return']:.1f} "
                f"(best {row['best_hard_return']:.1f}) after {row['env_steps']:,.0f} steps, "
                f"{row['generations']} generations, {row['wall_s']:.0f} s; curve {trace}",
                flush=True,
            )
            write_results(rows, points, out)
    runs, curves = pd.DataFrame(rows), pd.DataFrame(points)
    stats = statistics(curves)
    text = (
        table(runs, curves, domain.threshold)
        + (f"\nMean of the last 3 scorings, one-sided Mann-Whitney:\n{stats}" if stats else "")
        + (
            f"\nHard task {domain.hard} of {domain.space}, threshold {domain.threshold:g}; "
            f"budget {budget:,} training env steps per run; seeds {args.first_seed} to "
            f"{args.first_seed + args.seeds - 1}; commit {commit()}; "
            f"{time.perf_counter() - started:.0f} s in all.\n"
        )
    )
    (out / "table.md").write_text(text)
    plot(curves, domain.threshold, f"{args.domain}: {domain.hard}", out / "curves.png")
    print(text)
    return runs


if __name__ == "__main__":
    main()
