"""Why PLR⊥ and ACCEL lose random mazes as they train (issue 31, claim 3): a probe of the
level buffer. Not the claim's confirmation: probe seeds only (>= run.PROBE_SEED_START).

    python experiments/mazes_ued/diagnose.py --arm plr --seed 1003            # PLR⊥ as run.py
    python experiments/mazes_ued/diagnose.py --arm plr --seed 1003 --score learnability
    python experiments/mazes_ued/diagnose.py --arm accel --seed 1003
    python experiments/mazes_ued/diagnose.py --arm plr --quick                # seconds

One run of a buffer arm of run.py (its overrides, and `curriculum.score=<score>` with
--score), trained to --budget env steps. At --marks marks it records:
- the buffer's levels: how many, the share that cannot be solved, and the mean shortest
  start-to-goal path of the solvable ones (coevo.tasks.maze.level.shortest_path);
- the replay probability mass (the buffer's P_replay) by shortest-path bucket (BUCKETS);
- the share of the buffer's solvable levels the policy solves (up to BUFFER_PROBE of them,
  evenly spaced, PROBE_EPISODES sampled episodes each);
- run.py's scoring (ued_scoring.Scorer): random mazes solved and their 0.1-CVaR, named
  mazes solved.
The generator's own bucket shares and mean path (GENERATOR_MAZES mazes) are the baseline.

Writes <out>/<arm>_<score>_seed<seed>_<budget>.json and <out>/table.md (every JSON there).
Default out: results/diagnosis (--quick: a temp dir).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run as ued  # noqa: E402  (sets one BLAS thread per process, as the claim's runs)
from ued_scoring import Scorer  # noqa: E402

from coevo import hydra_configs, run_setup  # noqa: E402
from coevo.config import RunConfig, parse_config  # noqa: E402
from coevo.curricula.level_buffer import LevelBuffer  # noqa: E402
from coevo.curricula.plr import PLRConfig, PrioritizedLevelReplay  # noqa: E402
from coevo.pool import EvaluationPool  # noqa: E402
from coevo.tasks.maze.level import Maze, sample, shortest_path  # noqa: E402

BUFFER_ARMS = ("plr", "accel")  # run.py's arms with a level buffer
# Shortest-path buckets (moves): (label, lowest, highest or None); unsolvable apart.
BUCKETS: tuple[tuple[str, int, int | None], ...] = (("1-3", 1, 3), ("4-8", 4, 8), ("9+", 9, None))
UNSOLVABLE = "unsolvable"
BUFFER_PROBE = 64  # buffer levels the policy plays at a mark
PROBE_EPISODES = 4
GENERATOR_MAZES = 2000
GENERATOR_SEED = 777
BUDGET = 10_000_000
MARKS = 10
QUICK_BUDGET, QUICK_MARKS = 4096, 2
OUT = HERE / "results" / "diagnosis"


@dataclass(frozen=True)
class Probe:
    """One diagnosis run: an arm, its score override (None: the arm's own), seed, scale."""

    arm: str
    seed: int
    budget: int
    marks: int
    score: str | None = None
    quick: bool = False

    def mode(self) -> ued.Mode:
        """run.py's scale for this run (quick: its shrunk arms and scoring sets)."""
        base = ued.MODES["quick" if self.quick else "probe"]
        return replace(base, seeds=(self.seed,), budget=self.budget, scorings=self.marks)

    def overrides(self) -> list[str]:
        """run.py's overrides of the arm, the score's and the seed."""
        score = [f"curriculum.score={self.score}"] if self.score else []
        return [*ued.overrides(self.arm, self.mode()), *score, f"seed={self.seed}"]

    def config(self) -> RunConfig:
        """The config coevo-run composes from `overrides`, checked."""
        return parse_config(hydra_configs.compose(ued.CONF_DIR, self.overrides()))


def bucket(path: int | None) -> str:
    """The BUCKETS label of a shortest path (None: UNSOLVABLE)."""
    if path is None:
        return UNSOLVABLE
    for label, low, high in BUCKETS:
        if path >= low and (high is None or path <= high):
            return label
    raise ValueError(f"shortest path {path}: not in any bucket")


def path_figures(paths: list[int | None], weights: np.ndarray) -> dict[str, Any]:
    """Levels' count, unsolvable share, mean solvable path and weight mass per bucket."""
    solvable = [p for p in paths if p is not None]
    total = float(weights.sum())
    labels = [bucket(p) for p in paths]
    mass = {
        name: float(weights[[lab == name for lab in labels]].sum()) / total if total else 0.0
        for name in (*(b[0] for b in BUCKETS), UNSOLVABLE)
    }
    return {
        "levels": len(paths),
        "unsolvable_share": (len(paths) - len(solvable)) / len(paths) if paths else 0.0,
        "mean_path": float(np.mean(solvable)) if solvable else None,
        "mass": mass,
    }


def generator_figures(count: int = GENERATOR_MAZES) -> dict[str, Any]:
    """The training generator's mazes, each weighing the same: path_figures' baseline."""
    rng = np.random.default_rng(GENERATOR_SEED)
    paths = [shortest_path(sample(rng)) for _ in range(count)]
    return path_figures(paths, np.ones(count))


def buffer_solved(scorer: Scorer, theta: np.ndarray, mazes: list[Maze]) -> float | None:
    """% of sampled episodes solved on up to BUFFER_PROBE of `mazes`, evenly spaced."""
    if not mazes:
        return None
    picked = mazes[:: max(1, len(mazes) // BUFFER_PROBE)][:BUFFER_PROBE]
    solved = scorer.solved(scorer.sampled, theta, picked, PROBE_EPISODES)
    return 100.0 * float(solved.mean())


def mark_figures(buffer: LevelBuffer, scorer: Scorer, theta: np.ndarray) -> dict[str, Any]:
    """One mark's buffer figures (replay mass by P_replay) and the policy's scores."""
    mazes = [_maze(level.task) for level in buffer.levels]
    paths = [shortest_path(m) for m in mazes]
    weights = buffer.distribution() if mazes else np.zeros(0)
    figures = path_figures(paths, weights)
    solvable = [m for m, p in zip(mazes, paths, strict=True) if p is not None]
    figures["buffer_solved"] = buffer_solved(scorer, theta, solvable)
    scores = scorer.score(theta)
    for name in ("random_solved", "cvar", "named_solved"):
        figures[name] = scores[name]
    return figures


def run_probe(probe: Probe) -> dict[str, Any]:
    """Train the arm to the budget; the run's record with a point per mark."""
    if probe.seed < ued.PROBE_SEED_START:
        raise ValueError(f"seed {probe.seed}: probe seeds are >= {ued.PROBE_SEED_START}")
    config = probe.config()
    space, policy = run_setup.prepare(config)
    marks = [probe.budget * (k + 1) / probe.marks for k in range(probe.marks)]
    points: list[dict[str, Any]] = []
    steps, updates, cpu = 0.0, 0, time.process_time()
    with (
        EvaluationPool(space, policy, "local", 1) as pool,
        Scorer(space, policy, probe.mode()) as scorer,
    ):
        built = run_setup.build(config, space, pool)
        while marks:
            summary = built.step().summary
            steps += summary["env_steps"]
            updates = int(summary.get("optimizer_steps", updates))
            if steps < marks[0]:
                continue
            marks = [m for m in marks if m > steps]
            theta = next(iter(built.policies_for_testing().policies.values()))
            figures = mark_figures(_buffer(built), scorer, theta)
            points.append({"env_steps": steps, "updates": updates, **figures})
            print(_line(probe, points[-1]), flush=True)
    return {
        "arm": probe.arm,
        "score": _score(config),
        "seed": probe.seed,
        "budget": probe.budget,
        "overrides": probe.overrides(),
        "commit": ued.commit(),
        "cpu_s": round(time.process_time() - cpu, 1),
        "generator": generator_figures(),
        "marks": points,
    }


def _maze(task: object) -> Maze:
    if not isinstance(task, Maze):
        raise TypeError(f"a buffer level is a {type(task).__name__}, not a Maze")
    return task


def _buffer(curriculum: object) -> LevelBuffer:
    """The one student's level buffer of a PLR⊥ or ACCEL curriculum."""
    if not isinstance(curriculum, PrioritizedLevelReplay):
        raise TypeError(f"{type(curriculum).__name__} has no level buffer (arms: {BUFFER_ARMS})")
    return curriculum.buffers[0]


def _score(config: RunConfig) -> str:
    curriculum = config.curriculum
    if not isinstance(curriculum, PLRConfig):
        raise TypeError(f"curriculum {curriculum.name} has no level score")
    return str(curriculum.score)


def _line(probe: Probe, point: dict[str, Any]) -> str:
    mass = ", ".join(f"{k} {v:.2f}" for k, v in point["mass"].items())
    return (
        f"{probe.arm} seed {probe.seed}: {point['env_steps'] / 1e6:.1f} M steps, random "
        f"{point['random_solved']:.1f} %, buffer path {_num(point['mean_path'])}, mass {mass}"
    )


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def table(records: list[dict[str, Any]]) -> str:
    """table.md: the generator's baseline, then a section per run, a row per mark."""
    names = [*(b[0] for b in BUCKETS), UNSOLVABLE]
    head = (
        "| M steps | updates | random solved % | 0.1-CVaR % | buffer levels | unsolvable | "
        f"mean path | {' | '.join(f'mass {n}' for n in names)} | buffer solved % |"
    )
    rule = "|" + "---|" * (8 + len(names))
    lines = ["# Buffer diagnosis (probe seeds, not the confirmation)", ""]
    if records:
        gen = records[0]["generator"]
        shares = ", ".join(f"{n} {gen['mass'][n]:.2f}" for n in names)
        lines += [
            f"Generator ({GENERATOR_MAZES} mazes): mean path {_num(gen['mean_path'], 2)}; "
            f"share by path: {shares}.",
            "",
        ]
    for rec in records:
        lines += [
            f"## {rec['arm']}, score {rec['score']}, seed {rec['seed']}, "
            f"{rec['budget'] / 1e6:g} M steps ({rec['cpu_s']:.0f} CPU s, {rec['commit']})",
            "",
            head,
            rule,
        ]
        lines += [_row(p, names) for p in rec["marks"]]
        lines.append("")
    return "\n".join(lines)


def _row(p: dict[str, Any], names: list[str]) -> str:
    cells = [
        f"{p['env_steps'] / 1e6:.1f}",
        str(p["updates"]),
        f"{p['random_solved']:.1f}",
        f"{p['cvar']:.0f}",
        str(p["levels"]),
        f"{p['unsolvable_share']:.3f}",
        _num(p["mean_path"], 2),
        *(f"{p['mass'][n]:.3f}" for n in names),
        _num(p["buffer_solved"]),
    ]
    return "| " + " | ".join(cells) + " |"


def write(record: dict[str, Any], out: Path) -> Path:
    """The run's JSON under `out`, and table.md rebuilt from every JSON there."""
    out.mkdir(parents=True, exist_ok=True)
    name = f"{record['arm']}_{record['score']}_seed{record['seed']}_{record['budget']}.json"
    path = out / name
    path.write_text(json.dumps(record, indent=1))
    records = [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]
    (out / "table.md").write_text(table(records))
    return path


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--arm", required=True, choices=BUFFER_ARMS)
    parser.add_argument("--seed", type=int, default=ued.PROBE_SEED_START)
    parser.add_argument("--budget", type=int, default=None, help=f"env steps ({BUDGET:,})")
    parser.add_argument("--marks", type=int, default=None, help=f"recording marks ({MARKS})")
    parser.add_argument("--score", default=None, help="curriculum.score (e.g. learnability)")
    parser.add_argument("--quick", action="store_true", help="a tiny budget, seconds")
    parser.add_argument("--out", type=Path, default=None)
    return parser


def main(argv: list[str] | None = None) -> Path:
    """Parse the command line, run the probe, write its JSON and table.md; the JSON's path."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.seed < ued.PROBE_SEED_START:
        parser.error(
            f"--seed {args.seed}: probe seeds are >= {ued.PROBE_SEED_START} (10..19 confirm)"
        )
    budget = args.budget or (QUICK_BUDGET if args.quick else BUDGET)
    marks = args.marks or (QUICK_MARKS if args.quick else MARKS)
    probe = Probe(args.arm, args.seed, budget, marks, args.score, args.quick)
    out = args.out or (Path(tempfile.mkdtemp("diagnosis")) if args.quick else OUT)
    path = write(run_probe(probe), out)
    print((out / "table.md").read_text())
    print(f"wrote {path}")
    return path


if __name__ == "__main__":
    main()
