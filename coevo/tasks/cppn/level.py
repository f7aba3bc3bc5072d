"""`CppnTerrain`: one CPPN terrain level, the genome of a small network that draws the ground.

The level holds the genome's genes as plain values (no neat-python objects), so it is
immutable, picklable and hashable, and its JSON form is the genome itself:

- nodes: key (0 is the output; hidden nodes count up from 1), bias, response, activation,
  aggregation, as neat-python's `DefaultNodeGene` has them;
- connections: source (-1 is the input, x), target, weight, enabled, as its
  `DefaultConnectionGene` (without the innovation number: coevo never crosses genomes over,
  and leaving it out keeps the content id a function of the network alone).

Genes are kept sorted by key, so equal genomes are equal values with one content `id`.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any, ClassVar

from coevo.errors import ConfigError

KIND = "bipedal_cppn"
INPUT_KEY = -1  # neat-python's key of the one input (the x position)
OUTPUT_KEY = 0  # and of the one output (the height)
# E-POET's `activation_options` (poet_distributed/niches/box2d/config-cppn).
ACTIVATIONS = ("identity", "sin", "sigmoid", "square", "tanh")
AGGREGATIONS = ("sum",)


@dataclass(frozen=True)
class Node:
    """A node gene: `key`, `bias`, `response` (the weight of its summed input), activation
    and aggregation function names."""

    key: int
    bias: float
    response: float
    activation: str
    aggregation: str = "sum"

    def to_dict(self) -> dict[str, Any]:
        """The gene as plain values."""
        return {
            "key": self.key,
            "bias": self.bias,
            "response": self.response,
            "activation": self.activation,
            "aggregation": self.aggregation,
        }


@dataclass(frozen=True)
class Connection:
    """A connection gene from node `source` to node `target`, with its weight and whether
    it is enabled (a disabled one carries no signal)."""

    source: int
    target: int
    weight: float
    enabled: bool = True

    def to_dict(self) -> dict[str, Any]:
        """The gene as plain values."""
        return {
            "source": self.source,
            "target": self.target,
            "weight": self.weight,
            "enabled": self.enabled,
        }


@dataclass(frozen=True)
class CppnTerrain:
    """A CPPN genome whose network draws a terrain's height profile (see the module doc)."""

    nodes: tuple[Node, ...]
    connections: tuple[Connection, ...]
    # What a `Task` also carries, for the tables and the pool's checks: the kind's name, and
    # its named numbers (a CPPN terrain has none; its id names it).
    space: ClassVar[str] = KIND
    params: ClassVar[tuple] = ()

    def __post_init__(self) -> None:
        nodes = tuple(sorted((_node(n) for n in self.nodes), key=lambda n: n.key))
        connections = tuple(
            sorted((_connection(c) for c in self.connections), key=lambda c: (c.source, c.target))
        )
        object.__setattr__(self, "nodes", nodes)
        object.__setattr__(self, "connections", connections)
        self._validate()

    def _validate(self) -> None:
        keys = [n.key for n in self.nodes]
        if len(set(keys)) != len(keys):
            raise ConfigError("cppn.nodes", f"node keys must be distinct, got {keys}")
        if OUTPUT_KEY not in keys or min(keys) < OUTPUT_KEY:
            raise ConfigError("cppn.nodes", f"needs the output node {OUTPUT_KEY}; keys >= 0")
        for node in self.nodes:
            if node.activation not in ACTIVATIONS:
                raise ConfigError(
                    "cppn.nodes.activation",
                    f"'{node.activation}' of node {node.key}; allowed: {', '.join(ACTIVATIONS)}",
                )
            if node.aggregation not in AGGREGATIONS:
                raise ConfigError(
                    "cppn.nodes.aggregation",
                    f"'{node.aggregation}' of node {node.key}; allowed: {', '.join(AGGREGATIONS)}",
                )
        ends = {(c.source, c.target) for c in self.connections}
        if len(ends) != len(self.connections):
            raise ConfigError("cppn.connections", "at most one connection per (source, target)")
        known = set(keys)
        for c in self.connections:
            if c.source not in known | {INPUT_KEY} or c.target not in known:
                raise ConfigError(
                    "cppn.connections",
                    f"({c.source}, {c.target}) joins an unknown node; nodes: {sorted(known)}, "
                    f"input {INPUT_KEY}",
                )
        if _has_cycle(self.connections):
            raise ConfigError("cppn.connections", "the network must be feed-forward (no cycle)")

    @property
    def id(self) -> str:
        """Content hash of the JSON form: the same in every process (no `hash()`)."""
        return hashlib.blake2b(self.to_json().encode(), digest_size=6).hexdigest()

    @property
    def output(self) -> Node:
        """The output node (its response scales the drawn heights)."""
        return next(n for n in self.nodes if n.key == OUTPUT_KEY)

    @property
    def hidden(self) -> int:
        """Hidden nodes."""
        return len(self.nodes) - 1

    def with_response(self, response: float) -> CppnTerrain:
        """This genome with the output node's response set to `response`."""
        nodes = tuple(
            Node(n.key, n.bias, float(response), n.activation, n.aggregation)
            if n.key == OUTPUT_KEY
            else n
            for n in self.nodes
        )
        return CppnTerrain(nodes, self.connections)

    def to_dict(self) -> dict[str, Any]:
        """The genome as plain values (kind, nodes, connections): `from_dict`'s input."""
        return {
            "kind": KIND,
            "nodes": [n.to_dict() for n in self.nodes],
            "connections": [c.to_dict() for c in self.connections],
        }

    def to_json(self) -> str:
        """`to_dict()` as compact JSON with sorted keys; the `id` is its hash (floats are
        written as Python's shortest repr, so they read back to the same bits)."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CppnTerrain:
        """The terrain `to_dict()` gave `data`.

        Raises:
            ConfigError: `data` is another kind of level's, or not a valid genome.
        """
        if data.get("kind", KIND) != KIND:
            raise ConfigError("cppn.kind", f"expected '{KIND}', got {data.get('kind')!r}")
        try:
            nodes = tuple(Node(**n) for n in data["nodes"])
            connections = tuple(Connection(**c) for c in data["connections"])
        except (KeyError, TypeError) as error:
            raise ConfigError(
                "cppn", f"a genome is {{kind, nodes, connections}} of gene dicts: {error}"
            ) from None
        return cls(nodes, connections)

    @classmethod
    def from_json(cls, text: str) -> CppnTerrain:
        """The terrain `to_json()` gave `text`."""
        return cls.from_dict(json.loads(text))

    @property
    def size_text(self) -> str:
        """The network's size in words: "2 hidden nodes, 3 connections" (enabled ones)."""
        enabled = sum(c.enabled for c in self.connections)
        nodes = f"{self.hidden} hidden node{'' if self.hidden == 1 else 's'}"
        return f"{nodes}, {enabled} connection{'' if enabled == 1 else 's'}"

    def __repr__(self) -> str:
        return f"CppnTerrain({self.id}: {self.size_text})"


def flat_terrain() -> CppnTerrain:
    """Flat ground: the input joined to an identity output by a weight of 0."""
    return CppnTerrain(
        (Node(OUTPUT_KEY, 0.0, 1.0, "identity"),), (Connection(INPUT_KEY, OUTPUT_KEY, 0.0),)
    )


def as_terrain(level: Any) -> CppnTerrain:
    """A `CppnTerrain`, or its dict or JSON form, as a CppnTerrain."""
    if isinstance(level, CppnTerrain):
        return level
    if isinstance(level, str):
        return CppnTerrain.from_json(level)
    if isinstance(level, dict):
        return CppnTerrain.from_dict(level)
    raise TypeError(f"expected a CppnTerrain or its dict / JSON form, got {type(level).__name__}")


def _node(node: Node) -> Node:
    bias, response = _finite("bias", node.bias), _finite("response", node.response)
    return Node(int(node.key), bias, response, str(node.activation), str(node.aggregation))


def _connection(c: Connection) -> Connection:
    if not isinstance(c.enabled, bool):
        raise ConfigError("cppn.connections.enabled", f"true or false, got {c.enabled!r}")
    return Connection(int(c.source), int(c.target), _finite("weight", c.weight), c.enabled)


def _finite(name: str, value: Any) -> float:
    number = float(value)
    if not math.isfinite(number):
        raise ConfigError(f"cppn.{name}", f"must be a finite number, got {value!r}")
    return number


def _has_cycle(connections: tuple[Connection, ...]) -> bool:
    """Does following the connections (enabled or not) ever come back to a node?"""
    targets: dict[int, list[int]] = {}
    for c in connections:
        targets.setdefault(c.source, []).append(c.target)
    done: set[int] = set()

    def visit(node: int, path: set[int]) -> bool:
        if node in path:
            return True
        if node in done:
            return False
        path.add(node)
        found = any(visit(t, path) for t in targets.get(node, ()))
        path.discard(node)
        done.add(node)
        return found

    return any(visit(source, set()) for source in list(targets))
