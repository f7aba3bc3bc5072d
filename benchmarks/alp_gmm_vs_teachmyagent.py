"""coevo's ALP-GMM teacher beside TeachMyAgent's `ALPGMM`, on the same inputs and seeds.

    git clone https://github.com/flowersteam/TeachMyAgent /tmp/TeachMyAgent
    .venv/bin/python benchmarks/alp_gmm_vs_teachmyagent.py --teachmyagent /tmp/TeachMyAgent

TeachMyAgent's teacher is imported from the checkout (only `teachers/algos/alp_gmm.py`, its
`AbstractTeacher` and `teachers/utils/dataset.py` are loaded; `gym.spaces.Box` is served by
gymnasium's). Two parts:

1. Open loop: both teachers record the SAME stream of (task, return) pairs; the ALP of
   every task and every mixture fitted (number of components, means) are compared. coevo
   runs with `alp_scale=none` and TeachMyAgent's GMM seed, i.e. TeachMyAgent's settings.
2. Closed loop: each teacher picks the tasks of a synthetic learner on a 2-D task space in
   which only a quarter (x < 0.5 and y < 0.5) can be learned; per seed, the share of tasks
   sampled in that quarter after the bootstrap and the learner's final competence there,
   beside uniform sampling (domain randomisation). Same learner seeds for all teachers.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
import types
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coevo.curricula.alp_gmm_teacher import ALPGMMTeacher  # noqa: E402
from coevo.tasks.task import Param, TaskSpace  # noqa: E402

GRID = 10  # competence cells per axis


def load_teachmyagent(path: Path):
    """TeachMyAgent's ALPGMM class from a checkout, with gymnasium standing in for gym."""
    import gymnasium.spaces

    gym = types.ModuleType("gym")
    gym.spaces = gymnasium.spaces
    sys.modules.setdefault("gym", gym)
    sys.modules.setdefault("gym.spaces", gymnasium.spaces)
    sys.path.insert(0, str(path))
    return importlib.import_module("TeachMyAgent.teachers.algos.alp_gmm").ALPGMM


def unit_space() -> TaskSpace:
    params = (Param("x", 0.0, 1.0, 0.5, 0.1), Param("y", 0.0, 1.0, 0.5, 0.1))
    return TaskSpace("unit", params, make_env=lambda: None, max_episode_steps=1)


class Learner:
    """Competence per grid cell; training on a learnable cell raises it and its neighbours'."""

    def __init__(self, seed: int):
        self.competence = np.zeros((GRID, GRID))
        self.rng = np.random.default_rng(seed)

    @staticmethod
    def learnable(x: float, y: float) -> bool:
        return x < 0.5 and y < 0.5

    def episode(self, x: float, y: float) -> float:
        i, j = min(int(x * GRID), GRID - 1), min(int(y * GRID), GRID - 1)
        ret = self.competence[i, j] + self.rng.normal(0.0, 0.02)
        if self.learnable(x, y):
            for di in (-1, 0, 1):
                for dj in (-1, 0, 1):
                    a, b = i + di, j + dj
                    if 0 <= a < GRID and 0 <= b < GRID and self.learnable(a / GRID, b / GRID):
                        rate = 0.05 if (di, dj) == (0, 0) else 0.02
                        self.competence[a, b] += rate * (1.0 - self.competence[a, b])
        return float(ret)

    def learnable_competence(self) -> float:
        half = GRID // 2
        return float(self.competence[:half, :half].mean())


def open_loop(tma_class, episodes: int, fit_rate: int, seed: int) -> None:
    space = unit_space()
    tma = tma_class([0, 0], [1, 1], seed, None, None, fit_rate=fit_rate)
    ours = ALPGMMTeacher(
        space, fit_rate=fit_rate, bootstrap=fit_rate, alp_scale="none", gmm_seed=seed
    )
    data = np.random.default_rng(seed)
    learner = Learner(seed)
    alp_gap, fits, same_k, mean_gap = 0.0, 0, 0, 0.0
    for _ in range(episodes):
        x, y = data.random(2)
        ret = learner.episode(x, y)
        task = space.task(x=float(x), y=float(y))
        refit = tma.episodic_update(np.array([x, y], dtype=np.float64), ret, False)
        alp = ours.record(task, ret)
        alp_gap = max(alp_gap, abs(alp - tma.alps[-1]))
        if refit:
            fits += 1
            mine = ours.mixture
            same_k += int(mine.components == tma.gmm.n_components)
            if mine.components == tma.gmm.n_components:
                a = mine.means[np.lexsort(mine.means.T)]
                b = tma.gmm.means_[np.lexsort(tma.gmm.means_.T)]
                mean_gap = max(mean_gap, float(np.abs(a - b).max()))
    print(f"open loop, {episodes} identical (task, return) pairs, fit every {fit_rate}:")
    print(f"  largest ALP difference:          {alp_gap:.3g}")
    print(f"  fits with the same number of components: {same_k} of {fits}")
    print(f"  largest difference of component means:   {mean_gap:.3g}")


def closed_loop(tma_class, episodes: int, fit_rate: int, seeds: list[int]) -> None:
    space = unit_space()
    rows = {"TeachMyAgent ALP-GMM": [], "coevo ALP-GMM": [], "uniform (DR)": []}
    started = time.process_time()
    for seed in seeds:
        tma = tma_class([0, 0], [1, 1], seed, None, None, fit_rate=fit_rate)
        ours = ALPGMMTeacher(space, fit_rate=fit_rate, bootstrap=fit_rate, gmm_seed=seed)
        rng = np.random.default_rng(seed)
        teachers = {
            "TeachMyAgent ALP-GMM": (
                lambda t=tma: tuple(t.sample_task()),
                lambda x, y, r, t=tma: t.episodic_update(np.array([x, y]), r, False),
            ),
            "coevo ALP-GMM": (
                lambda t=ours, g=rng: tuple(t.sample(g).task.as_dict()[k] for k in ("x", "y")),
                lambda x, y, r, t=ours: t.record(space.task(x=float(x), y=float(y)), r),
            ),
            "uniform (DR)": (lambda g=rng: tuple(g.random(2)), lambda x, y, r: None),
        }
        for name, (sample, record) in teachers.items():
            learner = Learner(seed)
            inside = 0
            for episode in range(episodes):
                x, y = (float(v) for v in sample())
                record(x, y, learner.episode(x, y))
                if episode >= fit_rate:
                    inside += int(Learner.learnable(x, y))
            rows[name].append((inside / (episodes - fit_rate), learner.learnable_competence()))
    print(
        f"\nclosed loop, {episodes} episodes, fit every {fit_rate}, seeds {seeds} "
        f"({time.process_time() - started:.1f} CPU s):"
    )
    print("| teacher | share of tasks in the learnable quarter | competence there at the end |")
    print("| --- | ---: | ---: |")
    for name, values in rows.items():
        share = np.array([v[0] for v in values])
        skill = np.array([v[1] for v in values])
        print(
            f"| {name} | {share.mean():.2f} ± {share.std():.2f} | "
            f"{skill.mean():.2f} ± {skill.std():.2f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--teachmyagent", type=Path, required=True, help="checkout path")
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--fit-rate", type=int, default=250)
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    tma_class = load_teachmyagent(args.teachmyagent)
    open_loop(tma_class, args.episodes, args.fit_rate, seed=7)
    closed_loop(tma_class, args.episodes, args.fit_rate, list(range(args.seeds)))


if __name__ == "__main__":
    main()
