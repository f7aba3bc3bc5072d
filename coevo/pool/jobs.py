"""What travels to workers: episode jobs naming their parameters by key, never by value (and,
on their way from a pool, their level by content id: coevo/pool/levels.py)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from coevo.tasks.task import Task


def weights_key(vector: np.ndarray) -> str:
    """Content hash of a parameter vector: the cache key workers use."""
    data = np.ascontiguousarray(vector, dtype=np.float32)
    return hashlib.blake2b(data.tobytes(), digest_size=10).hexdigest()


def perturbation_noise(seed: int, size: int) -> np.ndarray:
    """ES noise for a seed; the driver and every worker rebuild the same vector from it."""
    return np.random.default_rng(seed).standard_normal(size, dtype=np.float32)


@dataclass(frozen=True)
class Stored:
    """A parameter vector registered in the pool under `key`."""

    key: str


@dataclass(frozen=True)
class Perturbed:
    """theta(key) + sign * sigma * noise(noise_seed), rebuilt by the worker (ES sends seeds)."""

    key: str
    noise_seed: int
    sigma: float
    sign: int

    def build(self, theta: np.ndarray, noise: np.ndarray | None = None) -> np.ndarray:
        """The perturbed vector; `noise` may pass noise(noise_seed) already drawn."""
        if noise is None:
            noise = perturbation_noise(self.noise_seed, theta.size)
        return theta + np.float32(self.sign * self.sigma) * noise


ParamSource = Stored | Perturbed


@dataclass(frozen=True)
class EpisodeJob:
    """One episode: these parameters on this task from this reset seed."""

    params: ParamSource
    task: Task
    seed: int
