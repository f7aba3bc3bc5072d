"""What a resumed run may change, and the check that a resume keeps to it.

A resumed run is the run it was: its recorded config.yaml, but for the settings that change
no result. `coevo-run resume=` and `runner.run(..., resume=True)` both keep to these rules.
"""

from __future__ import annotations

from typing import Any

from coevo.errors import ConfigError

# What resume may change: none of these changes a result (generations only adds more; the
# results are the same whatever the backend and number of workers; the worker limits only act
# on an env call that hangs or a worker that leaks, which would otherwise stop the run).
RESUME_OVERRIDES = (
    "curriculum.generations",
    "report_every_s",
    "checkpoints_kept",
    "logger",
    "pool.backend",
    "pool.num_workers",
    "pool.envs_per_worker",
    "pool.address",
    "pool.episode_timeout_s",
    "pool.worker_memory_mb",
    "pool.wait_for_workers",
)


def allowed_on_resume(key: str) -> bool:
    """`key` (dotted) is one resume may change, or lies inside one (logger.*)."""
    return any(key == name or key.startswith(f"{name}.") for name in RESUME_OVERRIDES)


def leaf_values(node: Any, prefix: str = "") -> dict[str, Any]:
    """Every leaf of a nested mapping under its dotted key."""
    if not isinstance(node, dict) or not node:
        return {prefix: node}
    leaves: dict[str, Any] = {}
    for key, value in node.items():
        leaves.update(leaf_values(value, f"{prefix}.{key}" if prefix else str(key)))
    return leaves


_MISSING = "(not set)"


def check_resume_config(recorded: dict, given: dict, run_dir: Any) -> None:
    """Refuse a config for resuming `run_dir` that differs from the run's recorded one in a
    setting resume may not change: the first such setting by name (a section's name first,
    e.g. curriculum.name, as its other fields differ because of it), the others listed."""
    old, new = leaf_values(recorded), leaf_values(given)
    changed = [
        key
        for key in sorted(old.keys() | new.keys())
        if not allowed_on_resume(key) and old.get(key, _MISSING) != new.get(key, _MISSING)
    ]
    if not changed:
        return
    changed.sort(key=lambda key: (not key.endswith(".name"), key))
    first = changed[0]
    listed = ", ".join(changed[1:6]) + (f" and {len(changed) - 6} more" if len(changed) > 6 else "")
    others = f"; also changed: {listed}" if listed else ""
    raise ConfigError(
        first,
        f"cannot be changed on resume: the run in {run_dir} has {old.get(first, _MISSING)!r}, "
        f"this config {new.get(first, _MISSING)!r}{others} (the run would no longer be the run "
        f"it was; allowed to change: {', '.join(RESUME_OVERRIDES)}). To go on with other "
        f"settings, start a new run (a directory of its own) from this run's weights: "
        f"policy.start_from={run_dir}[:NAME] (the optimizer's state starts afresh). From "
        "Python, resume with the run's own config: runner.run(None, run_dir, resume=True), or "
        "dataclasses.replace(runner.load_run_config(run_dir), ...) for an allowed change",
    )
