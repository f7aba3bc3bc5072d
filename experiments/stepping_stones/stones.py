"""The stepping-stones experiment's parts: the domains, the arms, and one run (one seed of one
arm, trained to a budget of env steps and scored on the domain's hard task at 10 marks)."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from coevo import run_setup
from coevo.config import RunConfig, parse_config
from coevo.tasks.test_sets import TestSet, score_test_set

MARKS = 10  # scorings of the hard task per run, at budget * k / MARKS training env steps
SCORING_SEED = 10_000  # the hard task's episodes use reset seeds 10,000, 10,001, ...


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
    budget: int = 2_000_000  # training env steps per run, unless a mode says otherwise


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
    # weak engine (power 0.0004, gymnasium: 0.0015): the hard task is the goal at 0.45, near
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


@dataclass(frozen=True)
class Arm:
    """How an arm trains: a curriculum with settings, on the domain's space or (`collapse`)
    on the hard task alone. Every arm is ES with the same policy and optimizer settings."""

    curriculum: str
    doc: str
    settings: dict = field(default_factory=dict)
    collapse: bool = False


ARMS = {
    "direct": Arm(
        "dr",
        "ES on the hard task alone (DR over bounds collapsed onto it: the same machinery)",
        collapse=True,
    ),
    "dr": Arm("dr", "domain randomisation over the domain's space"),
    "dr_x6": Arm(
        "dr",
        "6 independent DR policies sharing the run's budget (1/6 each); the best of the 6 on "
        "the hard task (the population control: POET keeps up to 6 active pairs)",
        settings={"policies": 6},
    ),
    "poet": Arm("poet", "POET; its best pair on the hard task, archived pairs included"),
    "poet_no_transfer": Arm(
        "poet",
        "POET without transfer: no transfer step, and a child starts with its parent's "
        "policy (the mechanism control)",
        settings={"transfer_every": 0, "admission_transfer": False},
    ),
    "alp_gmm": Arm("alp_gmm", "ALP-GMM over the domain's space (an optional extra arm)"),
    "plr": Arm("plr", "PLR over the domain's space (an optional extra arm)"),
    "easy": Arm(
        "poet",
        "ES on the curricula's first task alone: POET with no children, one pair on the "
        "initial task (an optional extra arm: does the easiest task's policy solve the hard "
        "one?)",
        settings={"max_children": 0},
    ),
}
CLAIM_ARMS = ("direct", "dr", "dr_x6", "poet", "poet_no_transfer")


@dataclass(frozen=True)
class Job:
    """One run: an arm of a domain, a seed, its budget and the hard task's episodes."""

    domain: str
    arm: str
    seed: int
    budget: int
    episodes: int


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


def arm_config(domain_name: str, arm_name: str, seed: int) -> RunConfig:
    """The checked config of one run: the domain's space, the arm's curriculum and settings
    (after the domain's overrides for that curriculum), one local worker."""
    domain, arm = DOMAINS[domain_name], ARMS[arm_name]
    return parse_config(
        {
            "seed": seed,
            "pool": {"backend": "local", "num_workers": 1},
            "task": space_config(domain, arm.collapse),
            "curriculum": {
                "name": arm.curriculum,
                "generations": 10**6,  # the budget of env steps ends the run
                **domain.overrides.get(arm.curriculum, {}),
                **arm.settings,
            },
        }
    )


@dataclass
class Candidates:
    """The policies whose best score on the hard task counts; which are archived; the task
    each was trained on (POET's pairs; none for a single-policy curriculum)."""

    policies: dict[str, np.ndarray]
    archived: set[str] = field(default_factory=set)
    tasks: dict[str, str] = field(default_factory=dict)


def hard_task_policies(curriculum) -> Candidates:
    """Every pair of a POET population (archived ones too, so a solver that was archived
    still counts); a single-policy curriculum's `policies_for_testing` (all 6 of DR x 6)."""
    population = getattr(curriculum, "population", None)
    if population is None:
        return Candidates(dict(curriculum.policies_for_testing().policies))
    pairs = {f"pair_{p.pair_id}": p for p in population.all_pairs()}
    return Candidates(
        {name: p.theta for name, p in pairs.items()},
        {f"pair_{p.pair_id}" for p in population.archive},
        {
            name: " ".join(f"{k}={v:g}" for k, v in p.task.as_dict().items())
            for name, p in pairs.items()
        },
    )


class HardTaskScorer:
    """Mean return of policies on the hard task over fixed episodes. A policy is scored once
    per content: its episodes' seeds do not depend on the others in the call, so a frozen
    (archived) policy's score is the same at every mark."""

    def __init__(self, pool, test_set: TestSet, episodes: int):
        self.pool, self.test_set, self.episodes = pool, test_set, episodes
        self.known: dict[bytes, float] = {}

    @staticmethod
    def _key(theta: np.ndarray) -> bytes:
        return hashlib.sha1(np.ascontiguousarray(theta, dtype=np.float64).tobytes()).digest()

    def scores(self, policies: dict[str, np.ndarray]) -> dict[str, float]:
        """Each policy's mean return (NaN when an episode failed)."""
        new = {self._key(t): t for t in policies.values() if self._key(t) not in self.known}
        if new:
            score = score_test_set(
                self.pool, list(new.values()), self.test_set, self.episodes, seed=SCORING_SEED
            )
            self.known.update(zip(new, (float(s) for s in score.scores[:, 0]), strict=True))
        return {name: self.known[self._key(theta)] for name, theta in policies.items()}


def best_of(scores: dict[str, float]) -> tuple[str, float]:
    """The best finite score and its policy's name ('' and NaN when none is finite)."""
    finite = {name: s for name, s in scores.items() if np.isfinite(s)}
    if not finite:
        return "", float("nan")
    name = max(finite, key=lambda n: finite[n])
    return name, finite[name]


def run_one(job: Job) -> dict:
    """Train one arm to the budget; score the hard task at each of the MARKS marks. Returns
    the run's row (runs.csv) and curve (curves.csv)."""
    domain = DOMAINS[job.domain]
    config = arm_config(job.domain, job.arm, job.seed)
    space, policy = run_setup.prepare(config)
    target = TestSet(space.name, (space.task(**domain.hard),), domain.threshold, seed=0)
    marks = [job.budget * (k + 1) / MARKS for k in range(MARKS)]
    curve, steps = [], 0.0
    with run_setup.make_pool(config, space, policy) as pool:
        curriculum = run_setup.build(config, space, pool)
        scorer = HardTaskScorer(pool, target, job.episodes)
        while steps < job.budget:
            steps += curriculum.step().summary["env_steps"]
            if steps < marks[0]:
                continue
            while marks and steps >= marks[0]:
                marks.pop(0)
            found = hard_task_policies(curriculum)
            scores = scorer.scores(found.policies)
            best, value = best_of(scores)
            _, active = best_of({n: s for n, s in scores.items() if n not in found.archived})
            curve.append(
                {
                    "arm": job.arm,
                    "seed": job.seed,
                    "env_steps": steps,
                    "hard_return": value,
                    "active_return": active,
                    "best_policy": best,
                    "best_archived": best in found.archived,
                    "best_task": found.tasks.get(best, ""),
                    "policies": len(found.policies),
                }
            )
    return {"row": run_row(job, curve, curriculum.generation, domain.threshold), "curve": curve}


def run_row(job: Job, curve: list[dict], generations: int, threshold: float) -> dict:
    """runs.csv's row of a finished run: the last scoring, the best, the mean of the last 3."""
    last = curve[-1]
    returns = [p["hard_return"] for p in curve]
    return {
        "arm": job.arm,
        "seed": job.seed,
        "env_steps": last["env_steps"],
        "generations": generations,
        "hard_return": last["hard_return"],
        "reached": bool(last["hard_return"] >= threshold),
        "reached_any": bool(max(returns) >= threshold),
        "late_return": float(np.mean(returns[-3:])),
        "best_hard_return": float(max(returns)),
        "active_return": last["active_return"],
        "reached_active_only": bool(last["active_return"] >= threshold),
        "best_policy": last["best_policy"],
        "best_archived": last["best_archived"],
        "best_task": last["best_task"],
        "policies": last["policies"],
    }


def cached_run(job: Job, cache: Path, commit: str) -> dict:
    """One run, or its saved result (runs are deterministic, so a stopped study resumes).
    The saved file names the job; one for another job (budget, episodes) is run again."""
    path = cache / f"{job.arm}_seed{job.seed}.json"
    if path.exists():
        saved = json.loads(path.read_text())
        if saved["job"] == asdict(job):
            return saved
    started = time.perf_counter()
    result = run_one(job)
    result["row"] |= {"wall_s": round(time.perf_counter() - started, 2), "commit": commit}
    result["job"] = asdict(job)
    partial = path.with_suffix(".part")
    partial.write_text(json.dumps(result))
    partial.replace(path)  # never a half-written file under the final name
    return result
