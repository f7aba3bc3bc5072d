"""How a call's jobs are cut into chunks (one worker call each)."""

from __future__ import annotations

import math

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
