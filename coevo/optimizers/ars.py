"""Augmented Random Search, V1-t (Mania, Guy & Recht 2018, "Simple random search provides a
competitive approach to reinforcement learning", arXiv:1803.07055, Algorithm 1).

Each step draws `directions` noise vectors delta, evaluates theta ± noise·delta, keeps the
`top` directions by max(r+, r-), and moves theta by
step_size / (top · sigma_R) · Σ (r+ - r-) delta, where sigma_R is the standard deviation of
the 2·top returns used. No observation normalization (that is V2): our policies take raw
observations. Like ES, the pool gets seeds, not vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from coevo.errors import ConfigError
from coevo.optimizers.base import Asked, Optimizer, OptimizerConfig, Register, StepRecord, Told
from coevo.optimizers.es import episode_returns
from coevo.pool.jobs import EpisodeJob, Perturbed, perturbation_noise
from coevo.settings import setting
from coevo.tasks.task import Task


@dataclass(frozen=True)
class ARSConfig(OptimizerConfig):
    """Augmented Random Search settings (Mania et al. 2018, V1-t): `directions` noise
    directions per step, the `top` best used in the update.

    Raises:
        ConfigError: when built with a bad value, or `top` > `directions`.
    """

    # Defaults: those of the authors' reference code (n_directions 8, deltas_used 8,
    # step_size 0.02, delta_std 0.03); the paper tunes them per environment (its Table 9).
    name: str = setting("ars", doc="registry name or package.module:Class")
    directions: int = setting(8, low=1, doc="N: noise directions per step")
    top: int = setting(8, low=1, doc="b: best directions used in the update (<= directions)")
    step_size: float = setting(0.02, low=0.0, open_low=True, doc="alpha")
    noise: float = setting(0.03, low=0.0, open_low=True, doc="nu: exploration noise")
    episodes: int = setting(1, low=1, doc="episodes per perturbation")

    def check(self) -> None:
        if self.top > self.directions:
            raise ConfigError(
                "optimizer.top",
                f"must be <= optimizer.directions ({self.directions}), got {self.top}",
            )


@dataclass(frozen=True)
class ARSState:
    t: int = 0  # steps taken


class AugmentedRandomSearch(Optimizer):
    """ARS V1-t: steps along the best directions, scaled by their returns' standard deviation.

    Args:
        config: an `ARSConfig`.
        num_params: the size of the policy's parameter vector.
    """

    config_class = ARSConfig
    config: ARSConfig

    def init_state(self, theta: np.ndarray, rng: np.random.Generator) -> ARSState:
        return ARSState()

    def ask(
        self,
        theta: np.ndarray,
        state: ARSState,
        tasks: Sequence[Task],
        rng: np.random.Generator,
        register: Register,
    ) -> Asked:
        cfg = self.config
        key = register(theta)
        noise_seeds = rng.integers(0, 2**31 - 1, size=cfg.directions)
        episode_seed = int(rng.integers(0, 2**31 - 1))
        jobs = [
            EpisodeJob(
                Perturbed(key, int(seed), cfg.noise, sign), tasks[i % len(tasks)], episode_seed + e
            )
            for i, seed in enumerate(noise_seeds)
            for sign in (1, -1)
            for e in range(cfg.episodes)
        ]
        return Asked(jobs, noise_seeds)

    def task_capacity(self) -> tuple[int, str]:
        return self.config.directions, "optimizer.directions"  # whole mirrored pairs per task

    def tell(self, theta: np.ndarray, state: ARSState, asked: Asked, results: Sequence) -> Told:
        cfg = self.config
        returns = episode_returns(results).reshape(cfg.directions, 2, cfg.episodes).mean(axis=2)
        ok = np.isfinite(returns).all(axis=1)  # a direction with a failed rollout is dropped
        failed = int((~ok).sum())
        mean = float(np.nanmean(returns)) if np.isfinite(returns).any() else float("nan")
        usable = np.flatnonzero(ok)
        # Top b by max(r+, r-); a stable sort keeps ties in draw order (deterministic).
        order = usable[np.argsort(-returns[usable].max(axis=1), kind="stable")]
        chosen = order[: min(cfg.top, usable.size)]
        if chosen.size == 0:
            reason = f"no update: all {cfg.directions} directions failed"
            return Told(theta, state, StepRecord(mean, failed, reason, applied=False))
        used = returns[chosen]
        spread = float(used.std())
        # Equal returns everywhere (e.g. every episode hits the step limit): no signal, and
        # dividing by a zero spread would be undefined; the paper's update is then zero.
        scale = cfg.step_size / (chosen.size * spread) if spread > 0 else 0.0
        step = np.zeros_like(theta, dtype=np.float32)
        for index in chosen:
            difference = np.float32(returns[index, 0] - returns[index, 1])
            step += difference * perturbation_noise(int(asked.memo[index]), theta.size)
        new_theta = (theta + np.float32(scale) * step).astype(np.float32)
        reason = (
            f"{failed} of {cfg.directions} directions failed and were dropped" if failed else ""
        )
        return Told(new_theta, ARSState(state.t + 1), StepRecord(mean, failed, reason))
