"""OpenAI-ES: mirrored sampling, centred ranks, Adam, decaying lr and sigma, L2.

The pool gets seeds, not vectors: workers rebuild theta ± sigma·noise(seed) themselves.
All active pairs' steps go to the pool in one call, so every worker stays busy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from coevo.pool import EpisodeJob, EvaluationPool, Perturbed, perturbation_noise
from coevo.tasks.task import Task


@dataclass(frozen=True)
class ESConfig:
    population: int = 16  # mirrored pairs per step (2x this many perturbations)
    episodes: int = 1  # episodes per perturbation
    sigma: float = 0.1
    sigma_decay: float = 0.999
    sigma_min: float = 0.01
    lr: float = 0.01
    lr_decay: float = 0.9999
    lr_min: float = 0.001
    l2: float = 0.01
    beta1: float = 0.9
    beta2: float = 0.999
    epsilon: float = 1e-8


@dataclass
class ESState:
    """A pair's optimizer state: Adam moments, step count, current lr and sigma."""

    m: np.ndarray
    v: np.ndarray
    lr: float
    sigma: float
    t: int = 0

    @classmethod
    def fresh(cls, num_params: int, config: ESConfig) -> ESState:
        zeros = np.zeros(num_params, dtype=np.float32)
        return cls(zeros.copy(), zeros.copy(), config.lr, config.sigma)

    def copy(self) -> ESState:
        return ESState(self.m.copy(), self.v.copy(), self.lr, self.sigma, self.t)


@dataclass
class ESStepResult:
    theta: np.ndarray
    mean_return: float  # mean over all perturbations: a cheap progress signal
    failed: int = 0  # perturbations whose evaluation failed (ranked lowest)


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


class EvolutionStrategy:
    def __init__(self, config: ESConfig, pool: EvaluationPool):
        self.config = config
        self.pool = pool

    def init_state(self) -> ESState:
        return ESState.fresh(self.pool.policy.num_params, self.config)

    def step_many(
        self,
        thetas: Sequence[np.ndarray],
        states: Sequence[ESState],
        tasks: Sequence[Task],
        rng: np.random.Generator,
    ) -> list[ESStepResult]:
        """One ES step for each (theta, state, task); states are updated in place."""
        cfg = self.config
        n, k = cfg.population, cfg.episodes
        plans = []
        jobs: list[EpisodeJob] = []
        for theta, state, task in zip(thetas, states, tasks, strict=True):
            key = self.pool.register(theta)
            noise_seeds = rng.integers(0, 2**31 - 1, size=n)
            episode_seed = int(rng.integers(0, 2**31 - 1))
            plans.append(noise_seeds)
            for seed in noise_seeds:
                for sign in (1, -1):
                    source = Perturbed(key, int(seed), state.sigma, sign)
                    jobs.extend(EpisodeJob(source, task, episode_seed + e) for e in range(k))
        returns = self.pool.run(jobs).returns.reshape(len(plans), n, 2, k)
        results = []
        for index, (theta, state) in enumerate(zip(thetas, states, strict=True)):
            fitness = returns[index].mean(axis=2)  # [n, 2]
            failed = int(np.isnan(fitness).sum())
            # A failed perturbation ranks lowest rather than poisoning the step.
            finite = np.where(np.isfinite(fitness), fitness, -np.inf)
            ranks = centred_ranks(finite)
            weights = ranks[:, 0] - ranks[:, 1]
            grad = np.zeros_like(theta, dtype=np.float32)
            for weight, seed in zip(weights, plans[index], strict=True):
                grad += np.float32(weight) * perturbation_noise(int(seed), theta.size)
            grad /= 2 * n
            new_theta = self._adam(theta, -grad + cfg.l2 * theta, state)
            state.lr = max(state.lr * cfg.lr_decay, cfg.lr_min)
            state.sigma = max(state.sigma * cfg.sigma_decay, cfg.sigma_min)
            mean = float(np.nanmean(fitness)) if failed < fitness.size else float("nan")
            results.append(ESStepResult(new_theta, mean, failed))
        return results

    def _adam(self, theta: np.ndarray, grad: np.ndarray, state: ESState) -> np.ndarray:
        cfg = self.config
        state.t += 1
        state.m = (cfg.beta1 * state.m + (1 - cfg.beta1) * grad).astype(np.float32)
        state.v = (cfg.beta2 * state.v + (1 - cfg.beta2) * grad * grad).astype(np.float32)
        step_size = state.lr * np.sqrt(1 - cfg.beta2**state.t) / (1 - cfg.beta1**state.t)
        update = -step_size * state.m / (np.sqrt(state.v) + cfg.epsilon)
        return (theta + update).astype(np.float32)
