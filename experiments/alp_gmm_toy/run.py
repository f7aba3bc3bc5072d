"""The ALP-GMM toy (Portelas et al. 2019): % of cells mastered over episodes by ALP-GMM (coevo's
teacher, the paper's settings), uniform random sampling and an oracle of the ideal order.

    python experiments/alp_gmm_toy/run.py --quick   # a smoke test, under a minute
    python experiments/alp_gmm_toy/run.py --full    # the paper's 20,000 episodes, 10 seeds

The rules of the toy are in toy.py. Writes runs.csv (one row per seed and arm), curves.csv (%
mastered every `every` episodes), table.md (IQM and 95 % stratified bootstrap intervals with
coevo.compare.stats, the budget, the wall time, the expectation and the verdict) and
mastery.png (median and IQR band per arm) under --out (default: results/, quick: a temp dir).
"""

from __future__ import annotations

import os

# One BLAS thread per process: a 3 x 3 triangular solve in sklearn's GMM fit takes ~10x longer
# when OpenBLAS spreads it over threads on a loaded machine.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # claim_runs, shared by the claims

from claim_runs import commit, finished  # noqa: E402
from toy import ARMS, PAPER_ALP_GMM, mastery_curve  # noqa: E402

from coevo.compare.stats import iqm_with_ci  # noqa: E402

PAPER_EPISODES = 20_000  # teachDeepRL's toy_env.py main: 20k episodes, scored every 1,000
# Seeds: probes (and --quick) draw from 1000 up; the confirming --full run uses 0..9, never
# probed. Declared before the confirming run (see experiments/README.md).
PROBE_SEED_START = 1000
CONFIRM_SEEDS = tuple(range(10))

# The expectation, committed before the confirming seeds were run. At the last episode:
EXPECTATION = (
    "At 20,000 episodes (10 confirmation seeds per arm): ALP-GMM's IQM % of cells mastered "
    "is above random's with non-overlapping 95 % stratified bootstrap intervals; random's "
    "IQM is at most 10 % (a few percent) and ALP-GMM's at least 50 % (most cells)."
)
RANDOM_AT_MOST = 10.0
ALP_GMM_AT_LEAST = 50.0

MODES = {
    # episodes, every (curve resolution), seeds
    # quick: 4 of ALP-GMM's fits (one every 250 episodes); its fits slow as its history
    # grows, so 2,000 episodes took 4x the time of 1,000.
    "quick": (1_000, 250, tuple(range(PROBE_SEED_START, PROBE_SEED_START + 2))),
    "full": (PAPER_EPISODES, 250, CONFIRM_SEEDS),
}


def _one(job: tuple[str, int, int, int, Path]) -> dict:
    """One run, or its saved result: runs are deterministic, so a stopped study resumes."""
    arm, seed, episodes, every, cache = job
    saved = cache / f"{arm}_{seed}_{episodes}_{every}.npz"
    if saved.exists():
        data = np.load(saved)
        return {"arm": arm, "seed": seed, "curve": data["curve"], "wall_s": float(data["wall_s"])}
    start = time.perf_counter()
    curve = mastery_curve(arm, seed, episodes, every)
    wall_s = time.perf_counter() - start
    np.savez(saved, curve=curve, wall_s=wall_s)
    return {"arm": arm, "seed": seed, "curve": curve, "wall_s": wall_s}


def run_all(
    seeds: tuple[int, ...], episodes: int, every: int, jobs: int, cache: Path
) -> list[dict]:
    """Every (seed, arm) run, in a fixed order; a line per finished run (progress)."""
    cache.mkdir(parents=True, exist_ok=True)
    # ALP-GMM's runs first: they take minutes, the others seconds.
    arms = sorted(ARMS, key=lambda arm: arm != "alp_gmm")
    work = [(arm, seed, episodes, every, cache) for arm in arms for seed in seeds]
    done = []
    for result in finished(_one, work, jobs):
        done.append(result)
        print(
            f"{result['arm']} seed {result['seed']}: {result['curve'][-1]:.0f} % mastered "
            f"({result['wall_s']:.0f} s)",
            flush=True,
        )
    order = {(arm, seed): i for i, (arm, seed) in enumerate((a, s) for s in seeds for a in ARMS)}
    return sorted(done, key=lambda r: order[(r["arm"], r["seed"])])


def cached_runs(seeds: tuple[int, ...], episodes: int, every: int, cache: Path) -> list[dict]:
    """The finished runs in the cache only (a partial write while a study is under way)."""
    jobs = [(arm, seed, episodes, every, cache) for seed in seeds for arm in ARMS]
    return [
        _one(job) for job in jobs if (cache / f"{job[0]}_{job[1]}_{episodes}_{every}.npz").exists()
    ]


def verdict(final: dict[str, np.ndarray], seeds: int) -> tuple[str, list[str]]:
    """'confirmed' when every declared check holds, else 'not confirmed'; with each check.
    Fewer runs than the declared seeds in any arm: 'inconclusive (partial)'."""
    if min(len(v) for v in final.values()) == 0:
        return "inconclusive (partial: an arm has no finished run)", []
    alp, alp_low, _ = iqm_with_ci(final["alp_gmm"])
    rnd, _, rnd_high = iqm_with_ci(final["random"])
    checks = {
        f"ALP-GMM's interval above random's ({alp_low:.1f} > {rnd_high:.1f})": alp_low > rnd_high,
        f"random's IQM <= {RANDOM_AT_MOST:g} % ({rnd:.1f})": rnd <= RANDOM_AT_MOST,
        f"ALP-GMM's IQM >= {ALP_GMM_AT_LEAST:g} % ({alp:.1f})": alp >= ALP_GMM_AT_LEAST,
    }
    lines = [f"- {'holds' if ok else 'fails'}: {name}" for name, ok in checks.items()]
    if min(len(v) for v in final.values()) < seeds:
        counts = ", ".join(f"{arm} {len(v)}" for arm, v in final.items())
        return f"inconclusive (partial: runs per arm {counts} of {seeds})", lines
    return ("confirmed" if all(checks.values()) else "not confirmed"), lines


def table(
    results: list[dict], episodes: int, every: int, wall_s: float, declared_seeds: int
) -> str:
    marks = sorted({episodes // 4, episodes // 2, episodes})
    seeds = sorted({r["seed"] for r in results})
    lines = [
        "# ALP-GMM toy: % of cells mastered (IQM [95 % stratified bootstrap CI] over seeds)",
        "",
        f"Budget: {episodes:,} episodes per run (the paper: {PAPER_EPISODES:,}); "
        f"seeds {seeds[0]}..{seeds[-1]} ({len(results)} runs); wall time {wall_s:.0f} s "
        f"(all runs, {sum(r['wall_s'] for r in results):.0f} s summed over runs).",
        f"ALP-GMM settings (coevo's ALPGMMTeacher): {PAPER_ALP_GMM}.",
        "",
        "| arm | " + " | ".join(f"{m:,} episodes" for m in marks) + " |",
        "|---|" + "---|" * len(marks),
    ]
    final = {arm: np.array([]) for arm in ARMS}
    for arm in ARMS:
        if not any(r["arm"] == arm for r in results):
            lines.append(f"| {arm} | " + " | ".join("no run yet" for _ in marks) + " |")
            continue
        curves = np.stack([r["curve"] for r in results if r["arm"] == arm])
        final[arm] = curves[:, -1]
        cells = [
            "{:.1f} [{:.1f}, {:.1f}]".format(*iqm_with_ci(curves[:, m // every])) for m in marks
        ]
        lines.append(f"| {arm} | " + " | ".join(cells) + " |")
    outcome, checks = verdict(final, declared_seeds)
    lines += ["", f"Expectation (declared before the run): {EXPECTATION}", "", *checks]
    lines += ["", f"Verdict: **{outcome}**", ""]
    return "\n".join(lines)


def figure(results: list[dict], every: int, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for arm in ARMS:
        if not any(r["arm"] == arm for r in results):
            continue
        curves = np.stack([r["curve"] for r in results if r["arm"] == arm])
        x = np.arange(curves.shape[1]) * every
        low, median, high = np.percentile(curves, [25, 50, 75], axis=0)
        ax.plot(x, median, label=arm)
        ax.fill_between(x, low, high, alpha=0.25)
    ax.set_xlabel("episodes")
    ax.set_ylabel("% of cells mastered")
    ax.set_ylim(0, 100)
    ax.set_title("ALP-GMM toy: median and IQR over seeds")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write(
    results: list[dict], episodes: int, every: int, wall_s: float, seeds: int, out: Path
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    code = commit()
    runs = pd.DataFrame(
        [
            {
                "arm": r["arm"],
                "seed": r["seed"],
                "episodes": episodes,
                "mastered_pct": r["curve"][-1],
                "wall_s": round(r["wall_s"], 2),
                "commit": code,
            }
            for r in results
        ]
    )
    runs.to_csv(out / "runs.csv", index=False)
    curves = pd.DataFrame(
        [
            {"arm": r["arm"], "seed": r["seed"], "episode": i * every, "mastered_pct": v}
            for r in results
            for i, v in enumerate(r["curve"])
        ]
    )
    curves.to_csv(out / "curves.csv", index=False)
    (out / "table.md").write_text(table(results, episodes, every, wall_s, seeds))
    figure(results, every, out / "mastery.png")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--quick", action="store_true", help="1,000 episodes, 2 probe seeds")
    mode.add_argument("--full", action="store_true", help="20,000 episodes, seeds 0..9")
    parser.add_argument("--jobs", type=int, default=1, help="processes (the machine is shared)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(tempfile.gettempdir()) / "alp_gmm_toy_runs",
        help="finished runs are kept here, so a stopped study resumes",
    )
    parser.add_argument(
        "--cached-only", action="store_true", help="write what the cache holds; run nothing"
    )
    args = parser.parse_args(argv)
    name = "full" if args.full else "quick"
    episodes, every, seeds = MODES[name]
    out = args.out or (HERE / "results" if args.full else Path(tempfile.mkdtemp("alp_gmm_toy")))
    start = time.perf_counter()
    if args.cached_only:
        results = cached_runs(seeds, episodes, every, args.cache / name)
    else:
        results = run_all(seeds, episodes, every, args.jobs, args.cache / name)
    write(results, episodes, every, time.perf_counter() - start, len(seeds), out)
    print((out / "table.md").read_text())
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
