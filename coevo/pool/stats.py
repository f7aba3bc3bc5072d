"""The pool's counters, and the per-generation figures derived from them.

`generation_figures(before, after)` turns two `stats_snapshot()`s into the pool's columns
of a summary.csv row; `is_runtime_column` names the columns that vary with machine, timing
or number of workers (all other columns are a function of config and seed).
"""

from __future__ import annotations

# Counters a worker reports per chunk, summed by the pool.
CHUNK_STAT_KEYS = (
    "episodes",
    "env_steps",
    "cache_hits",
    "cache_misses",
    "bytes_loaded",
    # Levels a worker took into its level cache, and the bytes of level blocks it fetched
    # from the object store (coevo/pool/levels.py).
    "levels_loaded",
    "level_bytes_loaded",
    "busy_s",
    "cpu_s",
    # Episodes a worker started while another chunk's episodes still ran there (the next
    # call's jobs filling rows that the previous call's last episodes left free).
    "overlap_starts",
    "trajectory_bytes",  # trajectory jobs: the arrays' size that came back to the driver
    # Trajectory streams continuing an episode: live env found in the worker's cache or not;
    # on a miss the env is reset and the episode's actions replayed (steps and seconds).
    "stream_cache_hits",
    "stream_cache_misses",
    "replay_steps",
    "replay_s",
)
PER_WORKER_PREFIX = "busy_s_worker_"
RUNTIME_COLUMNS = (
    "wall_s",
    "steps_per_s",
    "cache_hits",
    "cache_misses",
    "bytes_shipped",
    "level_bytes_shipped",
    "worker_busy_s",
    "worker_restarts",
    # where a stream's live env was (and how much was replayed) depends on the workers
    "stream_cache_hits",
    "stream_cache_misses",
    "replay_steps",
)


# The pool's columns of a summary.csv row (`generation_figures`, and "wall_s" of the whole
# generation), besides one `busy_s_worker_i` per worker.
POOL_COLUMNS = (
    "jobs",
    "episodes",
    "failed_episodes",
    "env_steps",
    "steps_per_s",
    "cache_hits",
    "cache_misses",
    "bytes_shipped",
    "level_bytes_shipped",
    "trajectory_bytes",
    "worker_busy_s",
    "worker_restarts",
    "stream_cache_hits",
    "stream_cache_misses",
    "replay_steps",
    "wall_s",
)


def is_pool_column(name: str) -> bool:
    """True for the summary columns the pool adds to every curriculum's row."""
    return name in POOL_COLUMNS or name.startswith(PER_WORKER_PREFIX)


def busy_key(worker: int) -> str:
    """The `stats_snapshot()` key of one worker's cumulative busy seconds."""
    return f"{PER_WORKER_PREFIX}{worker}"


def is_runtime_column(name: str) -> bool:
    """True for summary columns that vary with machine, timing or number of workers."""
    return name in RUNTIME_COLUMNS or name.startswith(PER_WORKER_PREFIX)


def generation_figures(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """The pool's work between two snapshots, as summary.csv columns (counts as integers,
    so a column reads 3, never 3.0 in one row and 3 in the next)."""

    def count(key: str) -> int:
        return int(round(after.get(key, 0.0) - before.get(key, 0.0)))

    env_steps = count("env_steps")
    pool_wall = after["wall_s"] - before["wall_s"]
    return {
        "jobs": count("jobs"),  # episodes asked for, or PPO streams
        "episodes": count("episodes"),
        "failed_episodes": count("failed_episodes"),
        "env_steps": env_steps,
        "steps_per_s": env_steps / pool_wall if pool_wall > 0 else 0.0,
        "cache_hits": count("cache_hits"),
        "cache_misses": count("cache_misses"),
        "bytes_shipped": count("bytes_shipped"),
        "level_bytes_shipped": count("level_bytes_shipped"),
        "trajectory_bytes": count("trajectory_bytes"),
        "worker_busy_s": after["busy_s"] - before["busy_s"],
        **{
            key: after[key] - before.get(key, 0.0)
            for key in after
            if key.startswith(PER_WORKER_PREFIX)
        },
        "worker_restarts": count("worker_restarts"),
        # PPO streams continuing an episode: live env found in a worker's cache, or replayed
        **{key: count(key) for key in ("stream_cache_hits", "stream_cache_misses", "replay_steps")},
    }
