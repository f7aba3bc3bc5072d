"""POET and Enhanced POET: the loop, its rules, novelty, transfer and population."""

from coevo.curricula.poet.loop import EnhancedPoet, EnhancedPoetConfig, Poet, PoetConfig
from coevo.curricula.poet.population import Pair, Population

__all__ = ["EnhancedPoet", "EnhancedPoetConfig", "Pair", "Poet", "PoetConfig", "Population"]
