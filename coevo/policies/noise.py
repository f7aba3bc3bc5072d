"""Counter-based random numbers for stochastic actions, keyed by (episode seed, step).

Each slot's draws are a pure function of its episode's reset seed and its step count
(splitmix64 of the pair), computed elementwise for all slots at once. So a stochastic
policy's episode is the same whatever slot, batch, worker or backend runs it, and no
per-slot generator objects are stepped in Python.
"""

from __future__ import annotations

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_MASK = (1 << 64) - 1


def _splitmix(x: np.ndarray) -> np.ndarray:
    x = x ^ (x >> np.uint64(30))
    x = x * _MIX1
    x = x ^ (x >> np.uint64(27))
    x = x * _MIX2
    return x ^ (x >> np.uint64(31))


def seed_key(seed: int) -> np.uint64:
    """An episode seed (any Python int) as the uint64 key of its noise stream."""
    return np.uint64(int(seed) & _MASK)


def uniforms(keys: np.ndarray, steps: np.ndarray, width: int) -> np.ndarray:
    """[B, width] uniforms in (0, 1): row b is a function of (keys[b], steps[b]) only."""
    keys = np.asarray(keys, dtype=np.uint64)
    steps = np.asarray(steps).astype(np.uint64)
    base = _splitmix(keys * _GOLDEN + _splitmix(steps + np.uint64(1)))
    columns = np.arange(1, width + 1, dtype=np.uint64) * _GOLDEN
    bits = _splitmix(base[:, None] + columns[None, :])
    # 53 random bits, centred in their interval: never exactly 0 or 1 (log(0) in Box-Muller).
    return ((bits >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53
