"""`coevo-run resume=RUN_DIR|CHECKPOINT [overrides]`: the run's recorded config, with the
command's overrides checked against it (`coevo.resume_rules`): a setting resume allows is
applied, one equal to the run's own is accepted (the original command repeated), and every
real change is refused at once, by name."""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

import yaml

from coevo import hydra_configs, run_setup, runner
from coevo.checkpoint import CheckpointError
from coevo.cli import console
from coevo.cli.conf import CONF_DIR
from coevo.cli.parse import leaf_keys, override_key, override_values, value_at
from coevo.config import RunConfig, parse_config
from coevo.curricula.base import GenerationFailed
from coevo.errors import ConfigError
from coevo.pool.results import WorkerStartError
from coevo.resume_rules import (
    MISSING,
    allowed_on_resume,
    hydra_setting_kept,
    refuse_changes,
)
from coevo.run import RunInterrupted


def resume(target: str, overrides: list[str]) -> None:
    """Resume the run in `target` (a run directory, or one of its checkpoint files)."""
    path = Path(target).absolute()  # printed as a fresh run prints its (Hydra's) directory
    checkpoint_file = path if path.is_file() else None
    run_dir = path.parent.parent if checkpoint_file else path  # RUN_DIR/checkpoints/gen_N.pkl
    try:
        config = run_setup.load_run_config(run_dir)
        config = apply_resume_overrides(config, overrides, run_dir)
        echo = console.logged_to(run_dir)
        runner.run(config, run_dir, echo, resume=True, checkpoint_file=checkpoint_file)
    except (ConfigError, CheckpointError, FileNotFoundError) as error:
        console.stop_started(run_dir, error)
        console.fail(str(error))
    except RunInterrupted as error:
        console.interrupted(error)
    except (GenerationFailed, WorkerStartError) as error:
        console.stopped(run_dir, f"coevo-run: error: {error}", 1)


def apply_resume_overrides(config: RunConfig, overrides: list[str], run_dir: Path) -> RunConfig:
    """`config` (the run's own) with the command's overrides: those resume allows applied,
    those equal to the run's settings accepted, the others refused, all in one error."""
    raw = run_setup.config_to_dict(config)
    known = leaf_keys(raw)
    hydra_record = _hydra_record(run_dir)
    choices = hydra_record.get("runtime", {}).get("choices", {})
    # A preset first, then the settings given one by one, in whatever order they were typed:
    # `pool=ray pool.num_workers=4` and `pool.num_workers=4 pool=ray` mean the same.
    presets, settings = [], []
    for override in overrides:
        key, sep, text = override.partition("=")
        if not sep:
            console.fail(f"resume: '{override}' is not KEY=VALUE")
        if key == "pool":
            presets += _pool_preset(text, run_dir, hydra_record.get("searchpath") or [])
        else:
            settings.append(override)
    changes: dict[str, tuple[Any, Any]] = {}
    for override in presets + settings:
        key, value = override_key(override), _value_of(override)
        if key.startswith(("hydra.", "hydra/")) or key in choices:
            # Hydra's settings and a group's choice: as the run had them, or a change.
            had = choices[key] if key in choices else value_at(hydra_record, key[6:])
            had = MISSING if had is None else had
            kept = hydra_setting_kept(key, value, had, run_dir)
            _note_change(changes, key, had, value, kept)
            continue
        if not allowed_on_resume(key) and key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=3, cutoff=0.6)
            hint = f"; did you mean: {', '.join(close)}" if close else ""
            console.fail(f"{key}: unknown key{hint}")
        *parents, leaf = key.split(".")
        node = raw
        for part in parents:
            node = node[part]
        if allowed_on_resume(key):
            node[leaf] = value
        else:
            had = node.get(leaf, MISSING)
            _note_change(changes, key, had, value, kept=had == value)
    refuse_changes(changes, run_dir)
    return parse_config(raw)


def _note_change(changes: dict, key: str, had: Any, value: Any, kept: bool) -> None:
    """Note (or forget) a change of `key`: the last value typed for a key is the one meant,
    as in Hydra."""
    if kept:
        changes.pop(key, None)
    else:
        changes[key] = (had, value)


def _value_of(override: str) -> Any:
    """An override's value as Hydra reads it for a fresh run (`7` an int, `[16,16]` a list,
    `'a b'` unquoted); a sweep has no one value."""
    values = override_values(override, sweep=False)
    if not values:
        console.fail(f"resume: '{override}' is a sweep; resume takes one value per key")
    return values[0]


def _hydra_record(run_dir: Path) -> dict:
    """Hydra's settings as the run had them (RUN_DIR/.hydra/hydra.yaml), {} without one."""
    recorded = run_dir / ".hydra" / "hydra.yaml"
    try:
        return (yaml.safe_load(recorded.read_text()) or {}).get("hydra", {})
    except (OSError, yaml.YAMLError):
        return {}


def _pool_preset(name: str, run_dir: Path, searchpath: list[str]) -> list[str]:
    """`pool=NAME` on resume: every pool.* setting as a fresh run of the same command with
    `pool=NAME` would have it (the run's recorded overrides, e.g. an experiment preset's
    pool.envs_per_worker, composed again on the run's search path), all of which resume
    allows."""
    presets = sorted(p.stem for p in (CONF_DIR / "pool").glob("*.yaml"))
    if name not in presets:
        console.fail(f"pool: unknown preset '{name}'; allowed: {', '.join(presets)}")
    recorded = run_dir / ".hydra" / "overrides.yaml"
    command = yaml.safe_load(recorded.read_text()) if recorded.is_file() else []
    # The preset's own keys replace the command's (pool.backend=local in the command would
    # otherwise win over pool=ray, as Hydra applies values after group choices).
    written = yaml.safe_load((CONF_DIR / "pool" / f"{name}.yaml").read_text()) or {}
    replaced = {"pool", *(f"pool.{key}" for key in written if key != "defaults")}
    command = [o for o in command or [] if override_key(o) not in replaced]
    if searchpath:  # the run's own config directories (a task preset of the user's, say)
        command.insert(0, f"hydra.searchpath=[{', '.join(searchpath)}]")
    try:
        composed = hydra_configs.compose(CONF_DIR, [*command, f"pool={name}"])["pool"]
    except Exception:  # noqa: BLE001 - e.g. a preset of the user's own, not on this path
        composed = hydra_configs.compose(CONF_DIR, [f"pool={name}"])["pool"]
    return [f"pool.{key}={json.dumps(value)}" for key, value in composed.items()]  # JSON is YAML
