"""Stepping stones (POET, Wang et al. 2019; issue 31, claim 1): does POET reach a hard task
that training on it directly, domain randomisation, or 6 DR policies (the same total budget)
do not? And does it need transfer?

    python experiments/stepping_stones/run.py --quick            # a smoke test, seconds
    python experiments/stepping_stones/run.py --full --jobs 2    # the confirmation
    python experiments/stepping_stones/run.py --probe --arms dr_x6 --seeds 100 --jobs 1

Arms (stones.py): direct (ES on the hard task alone), dr, dr_x6 (6 DR policies, 1/6 of the
budget each, the best of the 6 counts), poet (its best pair, archived pairs included),
poet_no_transfer (the mechanism control); alp_gmm and plr as optional extras (--arms). Each
run trains to a budget of training env steps (ES, MLP [16]) and is scored on the hard task
(best of the arm's policies, 10 episodes) at 10 marks; a seed reaches the hard task when its
last scoring is >= the domain's threshold. Primary test: seeds reaching, one-sided Fisher
exact, POET against direct, DR and DR x 6; POET against POET without transfer reported as
the mechanism control; one-sided Mann-Whitney on the mean of the last 3 scorings secondary.

Writes under --out (full: results/claim_mountain_car_hilltop; probes: results/probes_<domain>;
quick: a temp dir): runs/<arm>_seed<seed>.json (each finished run, so a stopped study
resumes: rerun the same command), configs/<arm>.yaml (each arm's resolved config), runs.csv
and curves.csv (as runs finish), table.md (seeds reaching, Fisher p-values, the budget, wall
time, commit, the expectation and the verdict) and curves.png.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # claim_runs, shared by the claims

from claim_runs import commit, finished  # noqa: E402
from stones import ARMS, CLAIM_ARMS, DOMAINS, Job, arm_config, cached_run  # noqa: E402
from stones_table import (  # noqa: E402
    ALPHA,
    archive_line,
    arm_table,
    figure,
    fisher_lines,
    mann_whitney_lines,
    verdict,
)

from coevo.run_setup import config_to_dict  # noqa: E402

CLAIM_DOMAIN = "mountain_car_hilltop"
# Seeds: the earlier hilltop runs used 0..7 (experiments/README.md) and probes 100..105; the
# confirmation uses 10..19, never run before; probes and --quick use seeds from 100 up.
CONFIRM_SEEDS = tuple(range(10, 20))
PROBE_SEED_START = 100
QUICK = {"budget": 150_000, "episodes": 2, "seeds": (PROBE_SEED_START,)}
FULL_EPISODES = 10

# The expectation, committed before any confirmation seed ran. The prior: at f2df98f/fde666f
# (seeds 0-7, 50 M steps, active pairs only) POET reached the hard task at the last scoring on
# 6 of 8 seeds (on every seed at some scoring), direct on 0 of 8, DR and ALP-GMM on 0 of 5
# (at no scoring). Probes on seed 100 at 50 M steps (results/probes_mountain_car_hilltop):
# DR x 6's best policy reached the hard task at 3 of 10 scorings, not the last; POET without
# transfer at every scoring, through its first pair (trained on the easiest goal only, then
# archived); POET from 15 M steps on, through later pairs, archived by the end; ES on the
# easiest goal alone at no scoring.
EXPECTATION = (
    "At 50 M training env steps, on the 10 confirmation seeds 10..19 per arm: POET (its best "
    "pair, archived pairs included) reaches the hard task (last scoring >= -500) on more "
    "seeds than direct, DR and DR x 6, each by a one-sided Fisher exact test at p < 0.05. "
    "Our guesses: POET on 8-10 of 10, direct and DR on 0, DR x 6 on 0-4 (the check most at "
    "risk). Mechanism control, checked as the paper's claim that transfer is needed (POET "
    "without transfer reaches it on fewer seeds than POET): we expect it not to hold here, "
    "POET without transfer reaching it about as often as POET (on probe seed 100 its first "
    "pair, trained on the easiest goal and archived, solved the hard task)."
)


def _run(job_and_place: tuple[Job, Path, str]) -> dict:
    return cached_run(*job_and_place)


def run_all(jobs: list[Job], out: Path, workers: int, code: str) -> list[dict]:
    """Every job (finished ones read back from out/runs), in the jobs' order; a line and the
    CSVs rewritten as each run finishes."""
    cache = out / "runs"
    cache.mkdir(parents=True, exist_ok=True)
    done: list[dict] = []
    for result in finished(_run, [(job, cache, code) for job in jobs], workers):
        done.append(result)
        row = result["row"]
        trace = " ".join(f"{p['hard_return']:.0f}" for p in result["curve"])
        print(
            f"{row['arm']} seed {row['seed']}: hard-task return {row['hard_return']:.1f} "
            f"(reached: {row['reached']}) after {row['env_steps']:,.0f} steps, "
            f"{row['generations']} generations, {row['wall_s']:.0f} s; curve {trace}",
            flush=True,
        )
        write_csvs(done, jobs, out)
    return sorted(done, key=lambda r: jobs.index(Job(**r["job"])))


def write_csvs(done: list[dict], jobs: list[Job], out: Path) -> None:
    """runs.csv and curves.csv of the runs finished so far, in the jobs' order."""
    ordered = sorted(done, key=lambda r: jobs.index(Job(**r["job"])))
    pd.DataFrame([r["row"] for r in ordered]).to_csv(out / "runs.csv", index=False)
    pd.DataFrame([p for r in ordered for p in r["curve"]]).to_csv(out / "curves.csv", index=False)


def write_configs(domain: str, arms: list[str], seeds: list[int], out: Path) -> None:
    """configs/<arm>.yaml: each arm's resolved config (the first seed's; the others differ
    only in `seed`)."""
    folder = out / "configs"
    folder.mkdir(parents=True, exist_ok=True)
    for arm in arms:
        header = (
            f"# {arm}: {ARMS[arm].doc}.\n# Run once per seed ({', '.join(map(str, seeds))}); "
            "shown with the first. test_set and eligible are unused: run.py scores the hard "
            "task itself.\n"
        )
        text = yaml.safe_dump(config_to_dict(arm_config(domain, arm, seeds[0])), sort_keys=False)
        (folder / f"{arm}.yaml").write_text(header + text)


def table(results: list[dict], args: argparse.Namespace, wall_s: float, code: str) -> str:
    """table.md: per-arm counts, the tests, the budget, wall time, commit, the verdict."""
    domain = DOMAINS[args.domain]
    runs = pd.DataFrame([r["row"] for r in results])
    p_values, fisher = fisher_lines(runs)
    commits = sorted(set(runs["commit"]))
    lines = [
        f"# Stepping stones: {args.domain} ({args.mode})",
        "",
        f"Hard task {domain.hard} of `{domain.space}`; a seed reaches it when its last scoring "
        f"is >= {domain.threshold:g}. Budget: {args.budget:,} training env steps per run, ES; "
        f"the hard task scored on {args.episodes} episodes at 10 marks. Seeds "
        f"{', '.join(map(str, args.seed_list))}. Wall time {wall_s:.0f} s for this command "
        f"({runs['wall_s'].sum():.0f} s summed over runs). Runs made at commit "
        f"{', '.join(commits)}; tables written at {code}.",
        "",
        *arm_table(runs, args.arm_list),
        "",
        "Primary: seeds reaching the hard task at the last scoring, one-sided Fisher exact:",
        *fisher,
        "",
        "Secondary: seeds reaching it at any scoring (as if every arm kept its past policies, "
        "as POET's archive does), one-sided Fisher exact:",
        *fisher_lines(runs, "reached_any")[1],
        "",
        "Mean of the last 3 scorings, one-sided Mann-Whitney (secondary):",
        *mann_whitney_lines(runs),
        "",
        archive_line(runs),
        "",
    ]
    if args.mode != "full":
        return "\n".join(
            [*lines, f"Verdict: not judged ({args.mode} run, not the declared confirmation)", ""]
        )
    primary, mechanism, checks = verdict(runs, p_values, len(CONFIRM_SEEDS))
    lines += [f"Expectation (declared before the confirmation seeds ran): {EXPECTATION}", ""]
    outcome = f"Verdict: **{primary}** (alpha {ALPHA}); the paper's mechanism (transfer needed): "
    return "\n".join([*lines, *checks, "", f"{outcome}**{mechanism}**", ""])


def parse(argv: list[str] | None) -> argparse.Namespace:
    """The command line, with the mode's domain, arms, seeds, budget and output folder."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--quick", action="store_true", help="tiny budget, seed 100, all arms")
    mode.add_argument("--full", action="store_true", help="the confirmation: seeds 10..19")
    mode.add_argument("--probe", action="store_true", help="--arms and --seeds (100 up)")
    parser.add_argument("--domain", default=CLAIM_DOMAIN, choices=sorted(DOMAINS))
    parser.add_argument("--arms", default=",".join(CLAIM_ARMS), help="comma-separated")
    parser.add_argument("--seeds", default=None, help="probe seeds, comma-separated, >= 100")
    parser.add_argument("--budget", type=int, default=None, help="probe: training env steps")
    parser.add_argument("--episodes", type=int, default=None, help="probe: hard-task episodes")
    parser.add_argument("--jobs", type=int, default=1, help="processes (the machine is shared)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    args.mode = "quick" if args.quick else "full" if args.full else "probe"
    args.arm_list = [a.strip() for a in args.arms.split(",") if a.strip()]
    unknown = [a for a in args.arm_list if a not in ARMS]
    if unknown:
        parser.error(f"--arms: unknown {unknown}; allowed: {', '.join(ARMS)}")
    if args.mode != "probe":
        for name in ("seeds", "budget", "episodes"):
            if getattr(args, name) is not None:
                parser.error(f"--{name} is for --probe; --{args.mode} fixes it")
        if args.domain != CLAIM_DOMAIN or (args.full and args.arm_list != list(CLAIM_ARMS)):
            parser.error(f"--{args.mode} runs the claim: {CLAIM_DOMAIN}, its declared arms")
    if args.mode == "quick":
        args.seed_list, args.budget = list(QUICK["seeds"]), QUICK["budget"]
        args.episodes = QUICK["episodes"]
    elif args.mode == "full":
        args.seed_list, args.budget, args.episodes = list(CONFIRM_SEEDS), None, FULL_EPISODES
    else:
        if not args.seeds:
            parser.error("--probe needs --seeds (comma-separated, from 100 up)")
        args.seed_list = [int(s) for s in args.seeds.split(",")]
        if min(args.seed_list) < PROBE_SEED_START:
            parser.error(f"--seeds: probes use seeds >= {PROBE_SEED_START}, got {args.seeds}")
    args.budget = args.budget or DOMAINS[args.domain].budget
    args.episodes = args.episodes or FULL_EPISODES
    if args.out is None:
        folder = {"full": "claim_", "probe": "probes_"}.get(args.mode)
        args.out = HERE / "results" / f"{folder}{args.domain}" if folder else None
        args.out = args.out or Path(tempfile.mkdtemp("stepping_stones_quick"))
    return args


def main(argv: list[str] | None = None) -> pd.DataFrame:
    """Run (or read back) every run of the mode; write the configs, CSVs, table and figure."""
    args = parse(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    code = commit()
    write_configs(args.domain, args.arm_list, args.seed_list, out)
    # Seed by seed, every arm: a stopped study leaves the arms with equal numbers of runs.
    jobs = [
        Job(args.domain, arm, seed, args.budget, args.episodes)
        for seed in args.seed_list
        for arm in args.arm_list
    ]
    started = time.perf_counter()
    results = run_all(jobs, out, args.jobs, code)
    text = table(results, args, time.perf_counter() - started, code)
    (out / "table.md").write_text(text)
    curves = pd.DataFrame([p for r in results for p in r["curve"]])
    domain = DOMAINS[args.domain]
    figure(curves, domain.threshold, f"{args.domain}: {domain.hard}", out / "curves.png")
    print(text)
    print(f"wrote {out}")
    return pd.DataFrame([r["row"] for r in results])


if __name__ == "__main__":
    main()
