"""The driver's weight store: parameter vectors by content key, shipped in blocks.

A version is registered once (`register` returns its key; jobs carry keys, never
vectors). New versions are staged and put in the object store together, one block per
call or per `BLOCK_BYTES`: a put per vector cost ~0.5 ms here and idled the workers. The
store keeps the newest `capacity` versions (least recently used go first, between calls).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from coevo.pool.jobs import weights_key

# Newly registered vectors are put in the object store together, in blocks of at most this
# many bytes. A block fills a preallocated staging array and is put as soon as it is full,
# so the driver holds at most one block of copies whatever the number of versions.
BLOCK_BYTES = 4 << 20

# What a worker gets for a key: (block id, block or its ObjectRef, row in the block).
Source = tuple[str, Any, int]


class WeightStore:
    """Parameter vectors by content key, shipped to the workers in blocks (LRU, `capacity` kept)."""

    def __init__(self, num_params: int, put: Callable[[np.ndarray], Any], capacity: int = 4096):
        self.num_params = num_params
        self._put = put  # ray.put on the Ray backend, a copy in-process
        self.capacity = capacity
        self.bytes_shipped = 0
        self._entries: OrderedDict[str, Source] = OrderedDict()  # least recently used first
        # Versions registered since the last put: their keys, in the rows of `_staging`.
        self._pending: list[str] = []
        self._pending_keys: set[str] = set()
        self._staging = np.zeros((0, num_params), dtype=np.float32)
        self._blocks_made = 0

    def register(self, vector: np.ndarray) -> str:
        """Stage a parameter vector (once per version) and return its key."""
        vector = np.ascontiguousarray(vector, dtype=np.float32)
        if vector.shape != (self.num_params,):
            raise ValueError(
                f"parameter vector has shape {vector.shape}, policy needs ({self.num_params},)"
            )
        key = weights_key(vector)
        if key in self._entries:
            self._entries.move_to_end(key)
        elif key not in self._pending_keys:
            if not self._pending:
                rows = max(1, BLOCK_BYTES // vector.nbytes)
                self._staging = np.empty((rows, vector.size), dtype=np.float32)
            self._staging[len(self._pending)] = vector
            self._pending.append(key)
            self._pending_keys.add(key)
            if len(self._pending) == len(self._staging):
                self.ship()
        return key

    def ship(self) -> None:
        """Put the staged versions in the object store as one block."""
        if not self._pending:
            return
        block = self._staging[: len(self._pending)]
        block_id = f"{id(self):x}.{self._blocks_made}"
        self._blocks_made += 1
        handle = self._put(block)  # copied: the staging array is free afterwards
        self.bytes_shipped += block.nbytes
        for row, key in enumerate(self._pending):
            self._entries[key] = (block_id, handle, row)
        self._pending = []
        self._pending_keys = set()
        self._staging = np.zeros((0, self.num_params), dtype=np.float32)

    def sources(self, keys: Iterable[str]) -> dict[str, Source]:
        """Where the workers find each key (all must be shipped)."""
        keys = set(keys)
        missing = keys - self._entries.keys()
        if missing:
            raise KeyError(f"weights not registered with this pool: {sorted(missing)[:3]}")
        return {key: self._entries[key] for key in keys}

    def evict(self) -> None:
        """Drop the least recently used vectors beyond `capacity`."""
        # After a call, never during one: a call may use more versions than the bound.
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        """Forget every vector, stored or staged."""
        self._entries.clear()
        self._pending.clear()
        self._pending_keys.clear()

    def __len__(self) -> int:
        return len(self._entries)
