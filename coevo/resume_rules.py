"""What a resumed run may change, the checks that a resume keeps to it, and the command
that resumes a run.

A resumed run is the run it was: its recorded config.yaml, but for the settings that change
no result. `coevo-run resume=` and `runner.run(..., resume=True)` both keep to these rules.
`coevo-run` takes the run's original command beside `resume=`: a setting equal to the run's
own (Hydra's `hydra.run.dir` and `hydra.searchpath` as the run had them) changes nothing.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
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

MISSING = "(not set)"


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


def changed_on_resume(recorded: dict, given: dict) -> dict[str, tuple[Any, Any]]:
    """The settings resume may not change that differ between two configs (nested
    mappings): dotted key -> (recorded, given), MISSING for one a config lacks. A section's
    name comes first (curriculum.name): its other fields differ because of it."""
    old, new = leaf_values(recorded), leaf_values(given)
    changed = [
        key
        for key in old.keys() | new.keys()
        if not allowed_on_resume(key) and old.get(key, MISSING) != new.get(key, MISSING)
    ]
    changed.sort(key=lambda key: (not key.endswith(".name"), key))
    return {key: (old.get(key, MISSING), new.get(key, MISSING)) for key in changed}


def check_resume_config(recorded: dict, given: dict, run_dir: Any) -> None:
    """Refuse a config for resuming `run_dir` that differs from the run's recorded one in a
    setting resume may not change: the first such setting by name, the others listed."""
    changed = changed_on_resume(recorded, given)
    if not changed:
        return
    first, *rest = changed
    listed = ", ".join(rest[:5]) + (f" and {len(rest) - 5} more" if len(rest) > 5 else "")
    others = f"; also changed: {listed}" if listed else ""
    old, new = changed[first]
    raise ConfigError(
        first,
        f"cannot be changed on resume: the run in {run_dir} has {old!r}, this config "
        f"{new!r}{others} (the run would no longer be the run it was; allowed to change: "
        f"{', '.join(RESUME_OVERRIDES)}). To go on with other settings, start a new run (a "
        f"directory of its own) from this run's weights: policy.start_from={run_dir}[:NAME] "
        "(the optimizer's state starts afresh). From Python, resume with the run's own "
        "config: runner.run(None, run_dir, resume=True), or dataclasses.replace("
        "run_setup.load_run_config(run_dir), ...) for an allowed change",
    )


def hydra_setting_kept(key: str, value: Any, recorded: Any, run_dir: Path) -> bool:
    """A Hydra setting of the command line (`hydra.run.dir=...`) given again on resume
    that the run had as well: `recorded` is its value in the run's .hydra/hydra.yaml
    (MISSING when not recorded). The run directory counts as kept wherever it is typed
    from: a path naming the run's own directory."""
    if value == recorded:
        return True
    if key == "hydra.run.dir" and isinstance(value, str) and "${" not in value:
        return Path(value).expanduser().resolve() == Path(run_dir).resolve()
    return False


def refuse_changes(changes: dict[str, tuple[Any, Any]], run_dir: Path) -> None:
    """Refuse a resume command that changes settings of the run (key -> (the run's value,
    the command's)): every one named in one error, with the ways that remain."""
    if not changes:
        return
    had = ", ".join(f"{key}={old!r}" for key, (old, _) in changes.items())
    wanted = ", ".join(f"{key}={new!r}" for key, (_, new) in changes.items())
    raise ConfigError(
        ", ".join(changes),
        f"cannot be changed on resume: the run in {run_dir} has {had}; this command "
        f"{wanted} (the run would no longer be the run it was); allowed with resume=: "
        f"{', '.join(RESUME_OVERRIDES)}, and the rest of the run's command (Hydra's settings "
        f"too) as it was. To go on with other settings, start a new run from this run's "
        f"weights: policy.start_from={run_dir}[:NAME] (the optimizer's state starts afresh)",
    )


def needed_pythonpath() -> list[str]:
    """The PYTHONPATH entries (absolute, in PYTHONPATH's order) this process imported
    modules from, coevo's own aside: a user's task, policy or curriculum module that the
    run's config names is imported again on resume, from the same place."""
    entries = [Path(e).resolve() for e in os.environ.get("PYTHONPATH", "").split(os.pathsep) if e]
    if not entries:
        return []
    coevo_dir = Path(__file__).resolve().parent
    used: set[Path] = set()
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if not isinstance(file, str):
            continue
        path = Path(file).resolve()
        if path.is_relative_to(coevo_dir):
            continue
        # Python searched the entries in order: the first that holds the module's top-level
        # package or file by its name gave it (an entry inside another, e.g. a checkout and
        # its tasks/ folder, holds the file too, under another name).
        top = name.partition(".")[0]
        found = next((entry for entry in entries if _gave(entry, path, top)), None)
        if found is not None:
            used.add(found)
    return list(dict.fromkeys(str(entry) for entry in entries if entry in used))


def _gave(entry: Path, path: Path, top: str) -> bool:
    """Whether `path`, the file of a module whose top-level name is `top`, was imported from
    PYTHONPATH entry `entry`: it lies under `entry` as `top` (a package) or `top.*` (a file,
    an extension module)."""
    if not path.is_relative_to(entry):
        return False
    first = path.relative_to(entry).parts[0]
    return first == top or first.partition(".")[0] == top


def resume_command(run_dir: Path) -> str:
    """The command that resumes `run_dir` from a shell, with the PYTHONPATH its modules
    need (`needed_pythonpath`)."""
    paths = needed_pythonpath()
    prefix = f"PYTHONPATH={shlex.quote(os.pathsep.join(paths))} " if paths else ""
    return f"{prefix}coevo-run resume={run_dir}"
