"""ALP-GMM: sample tasks where the policy's absolute learning progress is high.

Portelas, Colas, Hofmann, Oudeyer, "Teacher algorithms for curriculum learning of Deep RL in
continuously parameterized environments", CoRL 2019; defaults as in TeachMyAgent's `ALPGMM`
class (see conf/curriculum/alp_gmm.yaml). Our own code; the rules:

- ALP of a sampled task = |r_new - r_old|, r_old the return on the nearest previous task of
  the history (Euclidean in the unit cube of the task space); 0 while the history holds at
  most `min_history` tasks (TeachMyAgent: 5).
- Every `fit_rate` tasks (after `bootstrap` random ones) Gaussian mixtures with
  `min_components`..`max_components` full-covariance components are fitted to the last
  `fit_rate` (task, ALP) points; the one with the lowest AIC (or BIC) is kept.
- Sampling: with probability `random_ratio`, during the bootstrap, or before any fit, a uniform
  task; else a component with probability proportional to its mean ALP (uniform if all are
  0), then a task from its Gaussian (task dimensions), clipped to the bounds.

Deviation, said once: by default (`alp_scale="window_max"`) the ALP column is divided by the
window's largest ALP before the fit, so the mixture sees tasks (unit cube) and ALP on
comparable [0, 1] scales without needing the env's return bounds (TeachMyAgent fits raw ALP,
or rescales returns with given bounds when `scale_reward` is on); `alp_scale="none"` fits
raw ALP as TeachMyAgent does. As in TeachMyAgent every fit uses one fixed `random_state`
(`gmm_seed`), so fits repeat exactly; sampling draws from the caller's generator.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from coevo.curricula.task_sampling import decode_task, uniform_task
from coevo.tasks.task import Task, TaskSpace

CRITERIA = ("aic", "bic")
ALP_SCALES = ("window_max", "none")


@dataclass
class Mixture:
    """A fitted mixture over (task in the unit cube, scaled ALP); the last column is ALP."""

    means: np.ndarray  # [k, d + 1]
    covariances: np.ndarray  # [k, d + 1, d + 1]
    weights: np.ndarray  # [k]
    criterion: str
    criterion_values: dict[int, float]  # components -> AIC/BIC of each candidate
    alp_scale: float  # ALP values were divided by this before fitting
    fitted_at: int  # history length at the fit

    @property
    def components(self) -> int:
        """The number of Gaussian components."""
        return len(self.weights)

    @property
    def mean_alps(self) -> np.ndarray:
        """Each component's mean ALP, in ALP units."""
        return self.means[:, -1] * self.alp_scale


@dataclass(frozen=True)
class Sampled:
    """A sampled task and where it came from (for the eligibility table)."""

    task: Task
    origin: str  # "random", "bootstrap" or "gmm"
    component: int | None = None
    component_alp: float = float("nan")
    probability: float = float("nan")

    def reason(self, random_ratio: float) -> str:
        """Why the task was drawn, in words.

        Args:
            random_ratio: The teacher's share of uniform draws.

        Returns:
            The reason.
        """
        if self.origin == "bootstrap":
            return "uniform task: bootstrap (no mixture fitted yet)"
        if self.origin == "random":
            return f"uniform task: random exploration (ratio {random_ratio:g})"
        return (
            f"sampled from GMM component {self.component}, ALP {self.component_alp:.3g} "
            f"(P {self.probability:.3f})"
        )


@dataclass
class ALPGMMTeacher:
    """The ALP-GMM history and mixture; every random draw takes the caller's generator."""

    space: TaskSpace
    fit_rate: int = 250
    bootstrap: int = 250
    random_ratio: float = 0.2
    min_components: int = 2
    max_components: int = 10
    criterion: str = "aic"
    em_inits: int = 1
    min_history: int = 5
    alp_scale: str = "window_max"
    gmm_seed: int = 0
    tasks: list[Task] = field(default_factory=list)
    points: list[np.ndarray] = field(default_factory=list)  # the tasks in the unit cube
    returns: list[float] = field(default_factory=list)
    alps: list[float] = field(default_factory=list)
    mixture: Mixture | None = None

    def __post_init__(self) -> None:
        if self.criterion not in CRITERIA:
            raise ValueError(f"criterion must be one of {', '.join(CRITERIA)}")
        if not 1 <= self.min_components <= self.max_components:
            raise ValueError("need 1 <= min_components <= max_components")
        if self.fit_rate < self.max_components:
            raise ValueError("fit_rate must be >= max_components (points per fit)")
        if self.bootstrap < self.fit_rate:
            raise ValueError("bootstrap must be >= fit_rate (TeachMyAgent's rule)")
        if not 0.0 <= self.random_ratio <= 1.0:
            raise ValueError("random_ratio must be in [0, 1]")
        if self.alp_scale not in ALP_SCALES:
            raise ValueError(f"alp_scale must be one of {', '.join(ALP_SCALES)}")

    def __len__(self) -> int:
        return len(self.points)

    def alp_of(self, point: np.ndarray, episode_return: float) -> float:
        """|r - r_nearest| against the history so far (0 while it is too short)."""
        if len(self.points) <= self.min_history:
            return 0.0
        history = np.stack(self.points)
        distances = np.linalg.norm(history - point[None, :], axis=1)
        nearest = int(np.argmin(distances))  # first of equals: deterministic
        return float(abs(episode_return - self.returns[nearest]))

    def record(self, task: Task, episode_return: float) -> float:
        """Add a (task, return) to the history; refits the mixture when due. Returns the ALP.

        A failed evaluation (NaN return) is not recorded: failures are not learning progress.
        """
        if not np.isfinite(episode_return):
            return float("nan")
        point = self.space.encode(task)
        alp = self.alp_of(point, float(episode_return))
        self.tasks.append(task)
        self.points.append(point)
        self.returns.append(float(episode_return))
        self.alps.append(alp)
        n = len(self.points)
        if n >= self.bootstrap and n % self.fit_rate == 0:
            self.fit()
        return alp

    def fit(self) -> Mixture:
        """Fit mixtures of each allowed size to the last `fit_rate` (encoded task, ALP) points.

        Returns:
            The fit with the lowest AIC or BIC (`criterion`), also kept as `mixture`.
        """
        from sklearn.mixture import GaussianMixture  # optional dependency: the curricula extra

        window = slice(-self.fit_rate, None)
        alps = np.asarray(self.alps[window], dtype=float)
        scale = 1.0
        if self.alp_scale == "window_max" and alps.size and alps.max() > 0:
            scale = float(alps.max())
        data = np.column_stack([np.stack(self.points[window]), alps / scale])
        best: GaussianMixture | None = None
        values: dict[int, float] = {}
        # More components than distinct points (a few int levels) fit nothing more: sklearn
        # warns and collapses them. Tried up to the distinct points, never below the minimum.
        distinct = len(np.unique(data, axis=0))
        most = max(self.min_components, min(self.max_components, distinct))
        for k in range(self.min_components, most + 1):
            model = GaussianMixture(
                n_components=k,
                covariance_type="full",
                random_state=self.gmm_seed,
                n_init=self.em_inits,
            ).fit(data)
            values[k] = float(model.aic(data) if self.criterion == "aic" else model.bic(data))
            if best is None or values[k] < values[best.n_components]:
                best = model
        assert best is not None  # the range of component counts holds min_components at least
        self.mixture = Mixture(
            # Arrays once fitted (sklearn's inferred types also allow the unset init values).
            cast(np.ndarray, best.means_).copy(),
            cast(np.ndarray, best.covariances_).copy(),
            cast(np.ndarray, best.weights_).copy(),
            self.criterion,
            values,
            scale,
            len(self.points),
        )
        return self.mixture

    def sample(self, rng: np.random.Generator) -> Sampled:
        """One task; draws the same number of random numbers on each path's prefix so the
        sequence is a function of the generator state and the history only."""
        explore = float(rng.random()) < self.random_ratio
        if self.mixture is None or len(self.points) < self.bootstrap:
            return Sampled(uniform_task(self.space, rng), "bootstrap")
        if explore:
            return Sampled(uniform_task(self.space, rng), "random")
        mixture = self.mixture
        alps = np.clip(mixture.mean_alps, 0.0, None)
        total = alps.sum()
        probabilities = (
            alps / total if total > 0 else np.full(mixture.components, 1.0 / mixture.components)
        )
        component = int(rng.choice(mixture.components, p=probabilities))
        mean = mixture.means[component, :-1]
        cov = mixture.covariances[component, :-1, :-1]
        point = rng.multivariate_normal(mean, cov)
        return Sampled(
            decode_task(self.space, point),
            "gmm",
            component,
            float(mixture.mean_alps[component]),
            float(probabilities[component]),
        )

    def rows(self) -> list[dict[str, Any]]:
        """The teacher's history, one row per task: task, return and ALP."""
        return [
            {
                "index": i,
                "task_id": t.id,
                **{f"task.{k}": v for k, v in t.params},
                "return": r,
                "alp": a,
            }
            for i, (t, r, a) in enumerate(zip(self.tasks, self.returns, self.alps, strict=True))
        ]

    # The space holds an env factory (often a closure): checkpoints keep only the history.
    _STATE = ("tasks", "points", "returns", "alps", "mixture", "gmm_seed")

    def state_dict(self) -> dict[str, Any]:
        """The teacher's state for checkpoints."""
        return {name: getattr(self, name) for name in self._STATE}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what `state_dict` returned."""
        for name in self._STATE:
            setattr(self, name, state[name])
