"""OpenAI-ES (Salimans et al. 2017, arXiv:1703.03864): mirrored sampling, centred ranks,
Adam, decaying lr and sigma, L2.

The pool gets seeds, not vectors: workers rebuild theta ± sigma·noise(seed) themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from coevo.errors import ConfigError
from coevo.optimizers.base import Asked, Optimizer, OptimizerConfig, Register, StepRecord, Told
from coevo.pool.jobs import EpisodeJob, Perturbed, perturbation_noise
from coevo.settings import setting
from coevo.tasks.task import Task


@dataclass(frozen=True)
class ESConfig(OptimizerConfig):
    """OpenAI-ES settings (Salimans et al. 2017): mirrored Gaussian perturbations, centred
    ranks and an Adam step, with decaying noise (`sigma`) and learning rate (`lr`).

    Every field is checked when the config is built; a bad value raises `ConfigError`
    naming the field, e.g. `optimizer.population: must be an integer >= 1, got -3`.
    """

    name: str = setting("es", doc="registry name or package.module:Class")
    population: int = setting(16, low=1, doc="mirrored pairs per step (2x perturbations)")
    episodes: int = setting(1, low=1, doc="episodes per perturbation")
    sigma: float = setting(0.1, low=0.0, open_low=True)
    sigma_decay: float = setting(0.999, low=0.0, high=1.0)
    sigma_min: float = setting(0.01, low=0.0)
    lr: float = setting(0.1, low=0.0)
    lr_decay: float = setting(0.999, low=0.0, high=1.0)
    lr_min: float = setting(0.01, low=0.0)
    l2: float = setting(0.005, low=0.0)
    beta1: float = setting(0.9, low=0.0, high=1.0, open_high=True)
    beta2: float = setting(0.999, low=0.0, high=1.0, open_high=True)
    epsilon: float = setting(1e-8, low=0.0, open_low=True)

    def check(self) -> None:
        """Checks across fields (each field's own range is checked from its `setting`)."""
        if self.sigma_min > self.sigma:
            raise ConfigError(
                "optimizer.sigma_min",
                f"must be <= optimizer.sigma ({self.sigma:g}), got {self.sigma_min:g}",
            )
        if self.lr_min > self.lr:
            raise ConfigError(
                "optimizer.lr_min", f"must be <= optimizer.lr ({self.lr:g}), got {self.lr_min:g}"
            )


@dataclass(frozen=True, eq=False)
class ESState:
    """A pair's ES state: Adam moments, step count, current lr and sigma (a value: steps
    return a new state)."""

    m: np.ndarray
    v: np.ndarray
    lr: float
    sigma: float
    t: int = 0

    @classmethod
    def fresh(cls, num_params: int, config: ESConfig) -> ESState:
        zeros = np.zeros(num_params, dtype=np.float32)
        return cls(zeros.copy(), zeros.copy(), config.lr, config.sigma)


def centred_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks scaled to [-0.5, 0.5], ties sharing their average rank."""
    flat = values.ravel()
    order = flat.argsort(kind="stable")
    ranks = np.empty(flat.size, dtype=np.float64)
    ranks[order] = np.arange(flat.size, dtype=np.float64)
    sorted_values = flat[order]
    start = 0
    while start < flat.size:
        end = start
        while end + 1 < flat.size and sorted_values[end + 1] == sorted_values[start]:
            end += 1
        if end > start:
            ranks[order[start : end + 1]] = (start + end) / 2.0
        start = end + 1
    if flat.size > 1:
        ranks = ranks / (flat.size - 1) - 0.5
    else:
        ranks[:] = 0.0
    return ranks.reshape(values.shape)


def episode_returns(results: Sequence) -> np.ndarray:
    """The returns of `EpisodeResult`s as an array (NaN for a failed episode)."""
    return np.fromiter((r.ret for r in results), dtype=np.float64, count=len(results))


class EvolutionStrategy(Optimizer):
    """OpenAI-ES as an optimizer: one step perturbs the weights `population` times each way.

    Args:
        config: an `ESConfig`.
        num_params: the size of the policy's parameter vector (`policy.num_params`).

    Its jobs carry seeds, not weights: each perturbation is rebuilt on the worker. The
    perturbations are spread over the step's tasks, so `task_capacity()` is `population`.
    """

    config_class = ESConfig
    config: ESConfig

    def init_state(self, theta: np.ndarray, rng: np.random.Generator) -> ESState:
        return ESState.fresh(np.size(theta), self.config)

    def ask(
        self,
        theta: np.ndarray,
        state: ESState,
        tasks: Sequence[Task],
        rng: np.random.Generator,
        register: Register,
    ) -> Asked:
        n, k = self.config.population, self.config.episodes
        key = register(theta)
        noise_seeds = rng.integers(0, 2**31 - 1, size=n)
        episode_seed = int(rng.integers(0, 2**31 - 1))
        jobs = [
            EpisodeJob(
                Perturbed(key, int(seed), state.sigma, sign),
                tasks[i % len(tasks)],
                episode_seed + e,
            )
            for i, seed in enumerate(noise_seeds)
            for sign in (1, -1)
            for e in range(k)
        ]
        return Asked(jobs, noise_seeds)

    def task_capacity(self) -> tuple[int, str]:
        return self.config.population, "optimizer.population"  # whole mirrored pairs per task

    def tell(self, theta: np.ndarray, state: ESState, asked: Asked, results: Sequence) -> Told:
        cfg = self.config
        n, k = cfg.population, cfg.episodes
        fitness = episode_returns(results).reshape(n, 2, k).mean(axis=2)  # [n, 2]
        failed = int(np.isnan(fitness).sum())
        if failed == fitness.size:  # nothing to rank: no step (not even the L2 decay)
            reason = f"update skipped: all {failed} perturbations failed"
            return Told(theta, state, StepRecord(float("nan"), failed, reason, applied=False))
        # A failed perturbation ranks lowest rather than poisoning the step.
        ranks = centred_ranks(np.where(np.isfinite(fitness), fitness, -np.inf))
        weights = ranks[:, 0] - ranks[:, 1]
        grad = np.zeros_like(theta, dtype=np.float32)
        for weight, seed in zip(weights, asked.memo, strict=True):
            grad += np.float32(weight) * perturbation_noise(int(seed), theta.size)
        grad /= 2 * n
        new_theta, state = self._adam(theta, -grad + cfg.l2 * theta, state)
        mean = float(np.nanmean(fitness))
        reason = (
            f"{failed} of {fitness.size} perturbations failed; they ranked lowest in the update"
            if failed
            else ""
        )
        return Told(new_theta, state, StepRecord(mean, failed, reason))

    def _adam(
        self, theta: np.ndarray, grad: np.ndarray, state: ESState
    ) -> tuple[np.ndarray, ESState]:
        cfg = self.config
        t = state.t + 1
        m = (cfg.beta1 * state.m + (1 - cfg.beta1) * grad).astype(np.float32)
        v = (cfg.beta2 * state.v + (1 - cfg.beta2) * grad * grad).astype(np.float32)
        step_size = state.lr * np.sqrt(1 - cfg.beta2**t) / (1 - cfg.beta1**t)
        update = -step_size * m / (np.sqrt(v) + cfg.epsilon)
        new_state = ESState(
            m,
            v,
            max(state.lr * cfg.lr_decay, cfg.lr_min),
            max(state.sigma * cfg.sigma_decay, cfg.sigma_min),
            t,
        )
        return (theta + update).astype(np.float32), new_state
