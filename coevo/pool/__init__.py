"""The shared evaluation pool: workers that keep envs and a policy skeleton alive."""

from coevo.pool.dispatch import EpisodeResult, register_job_kind
from coevo.pool.jobs import EpisodeJob, Perturbed, Stored, perturbation_noise, weights_key
from coevo.pool.pool import Backend, EvaluationPool
from coevo.pool.results import EvalResult, EvaluationError, WorkerStartError
from coevo.pool.worker import Worker

__all__ = [
    "Backend",
    "EpisodeJob",
    "EpisodeResult",
    "EvalResult",
    "EvaluationError",
    "EvaluationPool",
    "Perturbed",
    "Stored",
    "Worker",
    "WorkerStartError",
    "perturbation_noise",
    "register_job_kind",
    "weights_key",
]
