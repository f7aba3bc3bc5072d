"""Env wrappers that bring coevo's curricula to any trainer: `CurriculumWrapper` (one
env, its tasks from a task sampler) and `serve` / `VectorSampler` (one sampler shared by
envs in other processes, in a fixed order)."""

from coevo.wrappers.curriculum import AUTORESETS, CurriculumWrapper
from coevo.wrappers.shared import SharedSampler, VectorSampler, serve

__all__ = ["AUTORESETS", "CurriculumWrapper", "SharedSampler", "VectorSampler", "serve"]
