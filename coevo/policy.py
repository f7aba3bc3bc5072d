"""Kept so `from coevo.policy import PolicySpec` goes on working: policies live in
`coevo.policies` now."""

from coevo.policies import MLPPolicy, Policy, PolicySpec, make_policy

__all__ = ["MLPPolicy", "Policy", "PolicySpec", "make_policy"]
