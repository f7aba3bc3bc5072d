"""The shared evaluation pool: workers that keep envs and a policy skeleton alive."""

from coevo.pool.jobs import EpisodeJob, Perturbed, Stored, perturbation_noise, weights_key
from coevo.pool.pool import Backend, EvalResult, EvaluationPool
from coevo.pool.worker import Worker

__all__ = [
    "Backend",
    "EpisodeJob",
    "EvalResult",
    "EvaluationPool",
    "Perturbed",
    "Stored",
    "Worker",
    "perturbation_noise",
    "weights_key",
]
