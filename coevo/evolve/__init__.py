"""Pairs, population, rules, the ES optimizer and the generation loop."""

from coevo.evolve.coevolution import Coevolution, EvolutionConfig, GenerationResult
from coevo.evolve.es import ESConfig, ESState, EvolutionStrategy, centred_ranks
from coevo.evolve.population import Pair, Population
from coevo.evolve.rules import Decision

__all__ = [
    "Coevolution",
    "Decision",
    "ESConfig",
    "ESState",
    "EvolutionConfig",
    "EvolutionStrategy",
    "GenerationResult",
    "Pair",
    "Population",
    "centred_ranks",
]
