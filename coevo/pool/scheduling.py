"""How a call's jobs are cut into chunks (one worker call each)."""

from __future__ import annotations

import math
from collections.abc import Sequence

# Chunks in flight per worker: one running, one queued, so no worker idles between calls.
IN_FLIGHT_PER_WORKER = 2
# Guided chunking: each chunk takes 1 / (GUIDED_SHARE x workers) of the unassigned jobs.
GUIDED_SHARE = 2


def chunk_sizes(n: int, workers: int, batch: int) -> list[int]:
    """How a call of `n` jobs is cut into chunks, in job order.

    A call that fits in one batch per worker is split evenly, one chunk per worker. A larger
    one is cut in decreasing chunks (guided scheduling): each takes 1 / (2 x workers) of the
    jobs still unassigned, rounded up to whole batches, and at least one batch. The first
    chunks are large (a Ray call is amortized over many episodes), the last ones small
    (workers finish together even when episodes or cores differ in speed), and fixed-length
    episodes never leave a batch half empty.
    """
    if math.ceil(n / workers) <= batch:
        even, extra = divmod(n, workers)
        return [even + (i < extra) for i in range(workers) if even + (i < extra) > 0]
    sizes: list[int] = []
    remaining = n
    while remaining > 0:
        size = batch * math.ceil(remaining / (GUIDED_SHARE * workers * batch))
        sizes.append(min(size, remaining))
        remaining -= sizes[-1]
    return sizes


def sticky_chunks(
    prefer: Sequence[int | None], workers: int, batch: int
) -> list[tuple[list[int], int | None]]:
    """Chunks of a call whose jobs may prefer a worker (e.g. the one holding a trajectory
    stream's live env): (job indices, preferred worker or None) per chunk.

    Without preferences, `chunk_sizes`' contiguous chunks, preferring no worker. Otherwise
    each worker's jobs make its chunks (at most `batch` jobs each, one wave of its slots),
    and the jobs preferring no worker (or one that does not exist) fill the smallest groups
    first, so the workers stay balanced.
    """
    n = len(prefer)
    if all(p is None for p in prefer):
        chunks, start = [], 0
        for size in chunk_sizes(n, workers, batch):
            chunks.append((list(range(start, start + size)), None))
            start += size
        return chunks
    groups: list[list[int]] = [[] for _ in range(workers)]
    free = []
    for index, worker in enumerate(prefer):
        if worker is not None and 0 <= worker < workers:
            groups[worker].append(index)
        else:
            free.append(index)
    for index in free:
        min(groups, key=len).append(index)
    return [
        (sorted(group[start : start + batch]), worker)
        for worker, group in enumerate(groups)
        for start in range(0, len(group), batch)
    ]
