"""Levels travel to the workers by content id, as weights travel by key.

A level (a numeric `Task`, a `Maze`, a CPPN terrain: any task of the pool's space) is put in
the object store once, in a block with the other levels new to that call (`LevelStore`, in
the driver). A job on its way to a worker (an episode, or a PPO trajectory stream with its
continuation and the levels its resets take, `next_tasks`) names each level by a
`LevelKey`, which pickles as the level's content id alone; each chunk's sources say where
every level it names lies (block, handle, row). A worker keeps the levels it took
(`LevelCache`, LRU), so a level replayed over generations (PLR's buffer, POET's active envs,
a PPO rollout's tasks update after update, a test set) reaches each worker once, not once
per job. A restarted worker starts with an empty cache and fetches the blocks again: every
chunk carries the sources of all its levels, so nothing assumes what a worker holds. Both
backends take this path; in-process the block is the tuple of levels itself, and nothing is
pickled.
"""

from __future__ import annotations

import dataclasses
import pickle
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, cast

from coevo.pool.jobs import EpisodeJob

# The key of a chunk's sources under which its levels' sources lie (weight keys are hex).
LEVEL_SOURCES = "levels"
# Levels the driver keeps (least recently used go first, between calls), and each worker.
STORE_SIZE = 4096
CACHE_SIZE = 1024
# Level blocks a worker keeps: a call's new levels make one block.
_BLOCK_CACHE = 2

# Where a worker finds a level: (block id, the block or its ObjectRef, row in the block).
Source = tuple[str, Any, int]
# Puts a block of levels where the workers read it: (handle, bytes that travelled).
PutLevels = Callable[[tuple[Any, ...]], tuple[Any, int]]


def with_task(job: Any, task: Any) -> Any:
    """`job` (an `EpisodeJob`, or any frozen dataclass job with a `task` field, e.g. a
    `TrajectoryJob` with its continuation) with `task` in place of its own."""
    if type(job) is EpisodeJob:  # the common case, built directly (under half of `replace`)
        return EpisodeJob(job.params, task, job.seed)
    return dataclasses.replace(job, task=task)


def job_levels(job: Any) -> tuple[Any, ...]:
    """Every level a job names: its `task`, then its `next_tasks` (a PPO stream's levels
    after its resets) where it has them."""
    following = getattr(job, "next_tasks", ())
    return (job.task, *following) if following else (job.task,)


def with_levels(job: Any, levels: Sequence[Any]) -> Any:
    """`job` with `levels` in place of its own (`job_levels` order)."""
    if len(levels) == 1:
        return with_task(job, levels[0])
    return dataclasses.replace(job, task=levels[0], next_tasks=tuple(levels[1:]))


class LevelKey:
    """A job's level on its way to a worker: pickled, only its content `id` travels. In
    the driver it also holds the level, which its repr shows (a timeout message's task)."""

    __slots__ = ("id", "level")

    def __init__(self, id: str, level: Any = None) -> None:
        self.id = id
        self.level = level

    def __reduce__(self) -> tuple[type, tuple[str]]:
        return (LevelKey, (self.id,))

    def __repr__(self) -> str:
        return repr(self.level) if self.level is not None else f"LevelKey({self.id!r})"


class LevelStore:
    """The driver's levels by content id, put in blocks (one per call of new levels), LRU."""

    def __init__(self, put: PutLevels, capacity: int = STORE_SIZE):
        self._put = put  # the backend's: pickled into Ray's object store, or kept in-process
        self.capacity = capacity
        self.bytes_shipped = 0
        self._entries: OrderedDict[str, tuple[LevelKey, Source]] = OrderedDict()
        self._blocks_made = 0

    def send(
        self, chunks: Sequence[Sequence[Any]]
    ) -> tuple[list[list[Any]], list[dict[str, Source]]]:
        """The chunks with every job's level named by a `LevelKey`, and each chunk's level
        sources; the levels new to the store are put first, as one block."""
        keys: dict[int, LevelKey] = {}  # by the level object's identity, for this call
        new: dict[str, LevelKey] = {}
        sent = []
        for chunk in chunks:
            named = []
            for job in chunk:
                named_levels = []
                for level in job_levels(job):
                    key = keys.get(id(level))
                    if key is None:
                        key = keys[id(level)] = self._key(level, new)
                    named_levels.append(key)
                # On its way: the worker puts the levels back (`LevelCache.resolve`).
                named.append(with_levels(job, named_levels))
            sent.append(named)
        self._ship(list(new.values()))
        sources = [self._sources(chunk) for chunk in sent]
        return sent, sources

    def _key(self, level: Any, new: dict[str, LevelKey]) -> LevelKey:
        """The key of `level`: the store's, or a new one staged in `new`."""
        content_id = level.id
        entry = self._entries.get(content_id)
        known = entry[0] if entry is not None else new.get(content_id)
        if known is None:
            known = new[content_id] = LevelKey(content_id, level)
        elif known.level is not level and known.level.to_json() != level.to_json():
            raise ValueError(
                f"two different levels share the content id '{content_id}': {known.level!r} "
                f"and {level!r}; a level's id must be a hash of all of its content"
            )
        if entry is not None:
            self._entries.move_to_end(content_id)
        return known

    def _ship(self, keys: list[LevelKey]) -> None:
        if not keys:
            return
        handle, size = self._put(tuple(key.level for key in keys))
        block_id = f"{id(self):x}.L{self._blocks_made}"
        self._blocks_made += 1
        self.bytes_shipped += size
        for row, key in enumerate(keys):
            self._entries[key.id] = (key, (block_id, handle, row))

    def _sources(self, chunk: list[Any]) -> dict[str, Source]:
        ids = {level.id for job in chunk for level in job_levels(job)}
        return {content_id: self._entries[content_id][1] for content_id in ids}

    def evict(self) -> None:
        """Drop the least recently used levels beyond `capacity` (after a call)."""
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        """Forget every level."""
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


class LevelCache:
    """A worker's levels by content id (LRU), taken from the blocks the driver put."""

    def __init__(self, capacity: int = CACHE_SIZE):
        self.capacity = capacity
        self.levels: OrderedDict[str, Any] = OrderedDict()
        self.blocks: OrderedDict[str, tuple[Any, ...]] = OrderedDict()
        self._lock = threading.Lock()  # two chunks may arrive at once on a Ray actor

    def resolve(
        self, jobs: Sequence[Any], sources: Mapping[str, Any], counters: dict[str, float]
    ) -> Sequence[Any]:
        """The jobs with their levels back in place of their `LevelKey`s; jobs sent without
        level sources (a `Worker` used directly) carry their levels and come back as they are."""
        where = sources.get(LEVEL_SOURCES)
        if where is None:
            return jobs
        with self._lock:
            ids = dict.fromkeys(level.id for job in jobs for level in job_levels(job))
            found = self._take(ids, where, counters)
        return [with_levels(job, [found[key.id] for key in job_levels(job)]) for job in jobs]

    def _take(
        self, ids: Iterable[str], where: Mapping[str, Source], counters: dict[str, float]
    ) -> dict[str, Any]:
        """The levels of `ids`: cached, or taken from their blocks (one fetch per block)."""
        found: dict[str, Any] = {}
        missing: dict[str, list[str]] = {}  # block id -> ids of the levels wanted from it
        for content_id in ids:
            if content_id in self.levels:
                self.levels.move_to_end(content_id)
                found[content_id] = self.levels[content_id]
            else:
                missing.setdefault(where[content_id][0], []).append(content_id)
        for block_id, wanted in missing.items():
            block = self._block(block_id, where[wanted[0]][1], counters)
            for content_id in wanted:
                found[content_id] = self.levels[content_id] = block[where[content_id][2]]
                counters["levels_loaded"] += 1
        while len(self.levels) > self.capacity:
            self.levels.popitem(last=False)
        return found

    def _block(self, block_id: str, handle: Any, counters: dict[str, float]) -> tuple[Any, ...]:
        block = self.blocks.get(block_id)
        if block is not None:
            self.blocks.move_to_end(block_id)
            return block
        if isinstance(handle, tuple):  # put in this process: the levels themselves
            block = handle
        else:
            import ray  # only a Ray actor is handed object refs

            data = cast(bytes, ray.get(handle))  # the block as `put_levels` pickled it
            counters["level_bytes_loaded"] += len(data)
            block = pickle.loads(data)
        self.blocks[block_id] = block
        if len(self.blocks) > _BLOCK_CACHE:
            self.blocks.popitem(last=False)
        return block
