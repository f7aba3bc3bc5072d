"""The bridge to neat-python: E-POET's genome settings, genes to and from neat's genomes,
NEAT's mutation drawn from a seeded generator, the network's output at given inputs.

Settings: E-POET's `config-cppn` [DefaultGenome] section (uber-research/poet,
poet_distributed/niches/box2d/): one input, one output, no hidden node at first, sin /
sigmoid / square / tanh / identity activations, structural mutation adding (p 0.1) or
deleting (p 0.075) one node, weights and biases perturbed (p 0.75 each, power 0.1), no
connection added or deleted on its own, responses and activations never mutated.

Activations: E-POET ran neat-python 0.92, whose sin and sigmoid take 5z and tanh 2.5z
(clamped to +-60); neat-python 1.0 made them the plain functions. coevo registers the 0.92
forms under the same names, so a genome draws the ground E-POET's code would draw.

Determinism: neat-python draws from the `random` module's functions, imported by name into
its modules (`from random import choice, gauss, random, ...` in neat.genome, neat.genes,
neat.attributes). `seeded_draws(seed)` points every such name in the loaded neat modules at
the same method of one `random.Random(seed)`, for the length of one draw, under a lock, and
puts the module's own back after; the seed comes from coevo's generator. The global
`random` state is neither read nor changed, so another thread's use of it cannot shift a
mutation. neat's other process-wide counters are set per call from the genome itself: new
node keys count from the genome's largest key (`node_indexer` reset), innovation numbers from
its connection count (a fresh `InnovationTracker`).
"""

from __future__ import annotations

import math
import random
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from types import SimpleNamespace
from typing import Any

try:
    import neat
    from neat.innovation import InnovationTracker
except ImportError as error:  # the registry lists task=bipedal_cppn as not loaded, with this
    raise ImportError(
        f"CPPN terrains need neat-python ({error}): pip install 'coevo[cppn]'"
    ) from error

from coevo.tasks.cppn.level import ACTIVATIONS, OUTPUT_KEY, Connection, CppnTerrain, Node

# E-POET's [DefaultGenome] settings, as neat-python reads them (strings).
GENOME_SETTINGS = {
    "num_inputs": "1",
    "num_outputs": "1",
    "num_hidden": "0",
    "feed_forward": "True",
    "initial_connection": "full",
    "activation_default": "random",
    "activation_mutate_rate": "0.0",
    "activation_options": " ".join(ACTIVATIONS),
    "aggregation_default": "sum",
    "aggregation_mutate_rate": "0.0",
    "aggregation_options": "sum",
    "bias_init_type": "gaussian",
    "bias_init_mean": "0.0",
    "bias_init_stdev": "0.1",
    "bias_max_value": "10.0",
    "bias_min_value": "-10.0",
    "bias_mutate_power": "0.1",
    "bias_mutate_rate": "0.75",
    "bias_replace_rate": "0.0",
    "compatibility_disjoint_coefficient": "1.0",
    "compatibility_weight_coefficient": "0.5",
    "conn_add_prob": "0.0",
    "conn_delete_prob": "0.0",
    "enabled_default": "True",
    "enabled_mutate_rate": "0.0",
    "enabled_rate_to_false_add": "0.0",
    "enabled_rate_to_true_add": "0.0",
    "node_add_prob": "0.1",
    "node_delete_prob": "0.075",
    "response_init_type": "gaussian",
    "response_init_mean": "1.0",
    "response_init_stdev": "0.0",
    "response_max_value": "10.0",
    "response_min_value": "-10.0",
    "response_mutate_power": "0.2",
    "response_mutate_rate": "0.0",
    "response_replace_rate": "0.0",
    "single_structural_mutation": "True",
    "structural_mutation_surer": "default",
    "weight_init_type": "gaussian",
    "weight_init_mean": "0.0",
    "weight_init_stdev": "0.25",
    "weight_max_value": "10.0",
    "weight_min_value": "-10.0",
    "weight_mutate_power": "0.1",
    "weight_mutate_rate": "0.75",
    "weight_replace_rate": "0.0",
}
_LOCK = threading.Lock()


def _scaled(function: Any, factor: float) -> Any:
    def activation(z: float) -> float:
        return function(max(-60.0, min(60.0, factor * z)))

    return activation


# neat-python 0.92's forms (see the module doc); identity and square are unchanged.
EPOET_ACTIVATIONS = {
    "sin": _scaled(math.sin, 5.0),
    "sigmoid": _scaled(lambda z: 1.0 / (1.0 + math.exp(-z)), 5.0),
    "tanh": _scaled(math.tanh, 2.5),
}


@cache
def genome_config() -> Any:
    """neat-python's genome config from `GENOME_SETTINGS`, E-POET's activations added."""
    config = neat.DefaultGenome.parse_config(dict(GENOME_SETTINGS))
    for name, function in EPOET_ACTIVATIONS.items():
        config.add_activation(name, function)
    return config


@contextmanager
def seeded_draws(seed: int) -> Iterator[None]:
    """neat-python's random draws come from `random.Random(seed)` inside the block."""
    source = random.Random(seed)
    shared = random.random.__self__  # the instance behind the module's functions
    with _LOCK:
        swapped = []
        for name, module in list(sys.modules.items()):
            if name != "neat" and not name.startswith("neat."):
                continue
            for attribute, value in list(vars(module).items()):
                if getattr(value, "__self__", None) is shared:
                    swapped.append((module, attribute, value))
                    setattr(module, attribute, getattr(source, attribute))
        try:
            yield
        finally:
            for module, attribute, value in swapped:
                setattr(module, attribute, value)


def to_genome(level: CppnTerrain) -> Any:
    """The level as a neat-python `DefaultGenome` (genes in the level's sorted order)."""
    genome = neat.DefaultGenome(0)
    for n in level.nodes:
        node = genome_config().node_gene_type(n.key)
        node.bias, node.response = n.bias, n.response
        node.activation, node.aggregation, node.time_constant = n.activation, n.aggregation, 1.0
        genome.nodes[n.key] = node
    for innovation, c in enumerate(level.connections, start=1):
        key = (c.source, c.target)
        connection = genome_config().connection_gene_type(key, innovation=innovation)
        connection.weight, connection.enabled = c.weight, c.enabled
        genome.connections[key] = connection
    return genome


def from_genome(genome: Any) -> CppnTerrain:
    """The level of a neat-python genome's genes."""
    nodes = tuple(
        Node(key, n.bias, n.response, n.activation, n.aggregation)
        for key, n in genome.nodes.items()
    )
    connections = tuple(
        Connection(key[0], key[1], c.weight, bool(c.enabled))
        for key, c in genome.connections.items()
    )
    return CppnTerrain(nodes, connections)


def _prepared(level: CppnTerrain) -> Any:
    """The genome config with neat's counters set from `level` (see the module doc)."""
    config = genome_config()
    config.node_indexer = None  # new node keys: the largest key + 1
    config.innovation_tracker = InnovationTracker(start_number=len(level.connections))
    return config


def start_genome(seed: int) -> CppnTerrain:
    """E-POET's starting genome: input fully joined to the output, weight and bias drawn
    from the settings' initial distributions, the output's activation set to identity."""
    genome = neat.DefaultGenome(0)
    with seeded_draws(seed):
        config = genome_config()
        config.node_indexer = None
        config.innovation_tracker = InnovationTracker()
        genome.configure_new(config)
    genome.nodes[OUTPUT_KEY].activation = "identity"
    return from_genome(genome)


def mutated(level: CppnTerrain, seed: int) -> CppnTerrain:
    """One NEAT mutation of `level` (neat-python's `DefaultGenome.mutate`), drawn from
    `seed`; the output's response is reset to 1 first, as E-POET does."""
    genome = to_genome(level.with_response(1.0))
    with seeded_draws(seed):
        genome.mutate(_prepared(level))
    return from_genome(genome)


def genome_distance(a: CppnTerrain, b: CppnTerrain) -> float:
    """neat-python's compatibility distance between two genomes (0 for equal genes)."""
    return float(to_genome(a).distance(to_genome(b), genome_config()))


def network(level: CppnTerrain) -> Any:
    """neat-python's feed-forward network of the level's enabled connections."""
    return neat.nn.FeedForwardNetwork.create(
        to_genome(level), SimpleNamespace(genome_config=genome_config())
    )
