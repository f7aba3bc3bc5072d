"""Policies: the interface the worker uses (`base.Policy`), the numpy MLP, torch policies
(any nn.Module, GRU/LSTM nets, saved files) and the registry of kinds (`policy.name`)."""

from coevo.policies.base import ActionSpec, ObsNorm, Policy, PolicyOutput
from coevo.policies.mlp import MLPPolicy
from coevo.policies.registry import make_policy, names, register
from coevo.policies.torch_modules import torch_policy_for

__all__ = [
    "ActionSpec",
    "MLPPolicy",
    "ObsNorm",
    "Policy",
    "PolicyOutput",
    "make_policy",
    "names",
    "register",
    "torch_policy_for",
]
