"""Command-line entry points. Hydra composes the config; the work is in `coevo.runner`."""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
import re
import shutil
import signal
import sys
import traceback
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn, TextIO

import hydra
import numpy as np
import yaml
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from coevo import hydra_configs, runner
from coevo.checkpoint import CheckpointError
from coevo.config import (
    RunConfig,
    TaskConfig,
    parse_config,
    plugin_config_class,
)
from coevo.curricula.base import GenerationFailed
from coevo.errors import ConfigError, Terminated, yaml_error_text
from coevo.policies.config import PolicyConfig
from coevo.pool import EvaluationError
from coevo.pool.results import WorkerStartError
from coevo.resume_rules import RESUME_OVERRIDES, allowed_on_resume
from coevo.settings import defaults_of


def _conf_dir() -> Path:
    """conf/ inside the installed package (a wheel ships it as coevo/conf), else the
    repository's top-level conf/ (an editable install or a source checkout)."""
    package = Path(__file__).resolve().parent
    inside = package / "conf"
    return inside if (inside / "config.yaml").is_file() else package.parent / "conf"


CONF_DIR = _conf_dir()
# `${conf:PATH}` in a preset: PATH relative to coevo's conf/ directory, wherever coevo is
# installed and whatever the working directory (e.g. the example pairs file).
OmegaConf.register_new_resolver("conf", lambda path: str((CONF_DIR / path).resolve()), replace=True)


def _help_choices() -> str:
    """`coevo-run --help`'s choices per group, as Hydra's own help lists them (a
    `--config-dir` included; like Hydra's, not a `hydra.searchpath` given on the command
    line); the `*_defaults` files are shared settings of a group's options, not options."""
    from hydra.core.global_hydra import GlobalHydra

    loader = GlobalHydra.instance().config_loader()
    lines = []
    for group in sorted(g for g in loader.list_groups("") if g != "hydra"):
        options = [o for o in loader.get_group_options(group) if not o.endswith("_defaults")]
        if options:
            lines.append(f"{group}: {', '.join(options)}")
    return "\n".join(lines)


OmegaConf.register_new_resolver("coevo_help_choices", _help_choices, replace=True)


def _fail(message: str) -> NoReturn:
    print(f"coevo-run: error: {message}", file=sys.stderr)
    sys.exit(2)


def _logged_to(run_dir: Path, stream: TextIO | None = None) -> Callable[[str], None]:
    """The run's console lines, printed (stdout unless `stream`) and appended to
    RUN_DIR/cli.log (where Hydra's logging writes the warnings): a run started in the
    background keeps its progress."""
    log = run_dir / "cli.log"

    def echo(line: str) -> None:
        # The log first: the line stays there whatever happens to the console.
        with log.open("a", encoding="utf-8") as file:
            file.write(line + "\n")
        _print(line, stream or sys.stdout)

    return echo


def _print(line: str, stream: TextIO) -> None:
    """Print a console line; once its reader has gone (`coevo-run ... | head`), the run goes
    on with its lines in cli.log only, rather than dying of a broken pipe mid-run."""
    try:
        print(line, file=stream, flush=True)
    except BrokenPipeError:
        # Point the stream's descriptor at /dev/null: the lines still buffered, and the
        # flush at exit, then go nowhere instead of raising again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)


def _stop_started(run_dir: Path, error: BaseException) -> None:
    """An error that stopped a run after it started (a state that does not pickle, say;
    the runner marks it `stopped_after`): a run's error, not a refused config. The message
    and the way back go to cli.log too, exit code 1."""
    if getattr(error, "stopped_after", None) is not None:
        _stopped(
            run_dir,
            f"coevo-run: error: {error}; after fixing it, resume with: coevo-run resume={run_dir}",
            1,
        )


def _stopped(run_dir: Path, message: str, code: int) -> NoReturn:
    """A run that started and stopped: the reason on stderr and in its cli.log."""
    _logged_to(run_dir, sys.stderr)(message)
    sys.exit(code)


def _terminated(signum: int, frame: Any) -> None:
    raise Terminated


def _interrupt_code(terminated: bool) -> int:
    """A SIGTERM's exit code (143) or Ctrl-C's (130)."""
    return 128 + signal.SIGTERM if terminated else 130


def _interrupted(error: runner.RunInterrupted) -> NoReturn:
    terminated = error.how != "interrupted"
    _stopped(
        error.run_dir,
        f"{error.how} after generation {error.generation}; resume with: "
        f"coevo-run resume={error.run_dir}",
        _interrupt_code(terminated),
    )


# Settings that name files, as (config group, key inside it). A relative path written in a
# config file is relative to that file (a preset travels with its files); one given on the
# command line stays relative to the working directory.
PATH_SETTINGS = (("eligible", "pairs_file"), ("policy", "file"), ("policy", "start_from"))


def _config_file(group: str, choice: str) -> Path | None:
    """The file Hydra composed for `group=choice`: the first source on the search path."""
    for source in HydraConfig.get().runtime.config_sources:
        if source.schema == "file":
            candidate = Path(source.path) / group / f"{choice}.yaml"
            if candidate.is_file():
                return candidate
    return None


def _written_in(path: Path, keys: tuple[str, ...]) -> Any:
    data = yaml.safe_load(path.read_text()) or {}
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def resolve_config_paths(raw: dict[str, Any]) -> None:
    """Rewrite relative file settings that come from a config file against that file."""
    hydra_config = HydraConfig.get()
    given = {override_key(override) for override in hydra_config.overrides.task}
    choices = hydra_config.runtime.choices
    for section, key in PATH_SETTINGS:
        settings = raw.get(section)
        value = settings.get(key) if isinstance(settings, dict) else None  # else: parse_config
        if not isinstance(value, str) or Path(value).is_absolute():
            continue
        if f"{section}.{key}" in given:
            continue  # typed by the user: relative to where they typed it
        # The experiment preset (global package) wins over the section's own group file.
        places = [("experiment", (section, key)), (section, (key,))]
        for group, keys in places:
            choice = choices.get(group)
            source = _config_file(group, choice) if choice else None
            if source is not None and _written_in(source, keys) == value:
                raw[section][key] = str((source.parent / value).resolve())
                break


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def _run_composed(cfg: DictConfig) -> None:
    raw = OmegaConf.to_container(cfg, resolve=True)
    resolve_config_paths(raw)
    _named_on_command_line(raw, list(HydraConfig.get().overrides.task))
    _policy_named_on_command_line(raw, list(HydraConfig.get().overrides.task))
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    try:
        config = parse_config(raw)
        run = runner.run_eligible if config.mode == "eligible_parents" else runner.run
        # Both build the task space and policy (every config error) before Ray starts.
        run(config, run_dir, _logged_to(run_dir))
    except (ConfigError, CheckpointError) as error:
        _stop_started(run_dir, error)
        _drop_if_unused(run_dir)
        _fail(str(error))
    except runner.RunInterrupted as error:
        _interrupted(error)
    except (GenerationFailed, WorkerStartError) as error:
        _stopped(run_dir, f"coevo-run: error: {error}", 1)
    except Exception as error:
        if getattr(error, "stopped_after", None) is None:
            raise
        # A bug (often a plug-in's) after the run started: its frames, then the way back
        # (the runner's note) as the last line, without Hydra's HYDRA_FULL_ERROR advice.
        traceback.print_exc()
        sys.exit(1)


# Run directories that existed before Hydra ran (`hydra.run.dir=` of the user's own
# making): a refused run takes out what Hydra put there, never the directory itself.
_MADE_BY_USER: set[Path] = set()


def _drop_if_unused(run_dir: Path) -> None:
    """Remove what Hydra wrote for a run refused before it wrote anything (an empty log and
    Hydra's record of the composed config), and the directory if Hydra made it: a mistyped
    value should not leave an empty run behind in runs/."""
    try:
        entries = {e.name: e for e in run_dir.iterdir()}
        log = entries.pop("cli.log", None)
        hydra_record = entries.pop(".hydra", None)
        if entries or log is None or log.stat().st_size:
            return  # something of the run's own, or a log with words in it: keep all
        log.unlink()
        if hydra_record is not None:
            shutil.rmtree(hydra_record)
        if run_dir.resolve() not in _MADE_BY_USER:
            run_dir.rmdir()
    except OSError:
        pass  # best effort: a directory we cannot read or remove is left as it is


def _resume(target: str, overrides: list[str]) -> None:
    path = Path(target).absolute()  # printed as a fresh run prints its (Hydra's) directory
    checkpoint_file = path if path.is_file() else None
    run_dir = path.parent.parent if checkpoint_file else path  # RUN_DIR/checkpoints/gen_N.pkl
    try:
        config = runner.load_run_config(run_dir)
        config = _apply_resume_overrides(config, overrides, run_dir)
        echo = _logged_to(run_dir)
        runner.run(config, run_dir, echo, resume=True, checkpoint_file=checkpoint_file)
    except (ConfigError, CheckpointError, FileNotFoundError) as error:
        _stop_started(run_dir, error)
        _fail(str(error))
    except runner.RunInterrupted as error:
        _interrupted(error)
    except (GenerationFailed, WorkerStartError) as error:
        _stopped(run_dir, f"coevo-run: error: {error}", 1)


def _pool_preset(name: str, run_dir: Path) -> list[str]:
    """`pool=NAME` on resume: every pool.* setting as a fresh run of the same command with
    `pool=NAME` would have it (the run's recorded overrides, e.g. an experiment preset's
    pool.envs_per_worker, composed again), all of which resume allows."""
    presets = sorted(p.stem for p in (CONF_DIR / "pool").glob("*.yaml"))
    if name not in presets:
        _fail(f"pool: unknown preset '{name}'; allowed: {', '.join(presets)}")
    recorded = run_dir / ".hydra" / "overrides.yaml"
    command = yaml.safe_load(recorded.read_text()) if recorded.is_file() else []
    # The preset's own keys replace the command's (pool.backend=local in the command would
    # otherwise win over pool=ray, as Hydra applies values after group choices).
    written = yaml.safe_load((CONF_DIR / "pool" / f"{name}.yaml").read_text()) or {}
    replaced = {"pool", *(f"pool.{key}" for key in written if key != "defaults")}
    command = [o for o in command or [] if override_key(o) not in replaced]
    try:
        composed = hydra_configs.compose(CONF_DIR, [*command, f"pool={name}"])["pool"]
    except Exception:  # noqa: BLE001 - e.g. a preset of the user's own, not on this path
        composed = hydra_configs.compose(CONF_DIR, [f"pool={name}"])["pool"]
    return [f"pool.{key}={json.dumps(value)}" for key, value in composed.items()]  # JSON is YAML


def _apply_resume_overrides(config: RunConfig, overrides: list[str], run_dir: Path) -> RunConfig:
    raw = runner.config_to_dict(config)
    known = _leaf_keys(raw)
    # A preset first, then the settings given one by one, in whatever order they were typed:
    # `pool=ray pool.num_workers=4` and `pool.num_workers=4 pool=ray` mean the same.
    presets, settings = [], []
    for override in overrides:
        key, sep, text = override.partition("=")
        if key == "pool" and sep:
            presets += _pool_preset(text, run_dir)
        else:
            settings.append(override)
    expanded = presets + settings
    for override in expanded:
        key, sep, text = override.partition("=")
        if not sep:
            _fail(f"resume: '{override}' is not KEY=VALUE")
        if key.lstrip("+").startswith(("hydra.", "hydra/")):
            _fail(
                f"{key}: Hydra's settings are not taken on resume (it runs without Hydra, in "
                f"the run's own directory {run_dir}); allowed with resume=: "
                f"{', '.join(RESUME_OVERRIDES)}"
            )
        if not allowed_on_resume(key) and key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=3, cutoff=0.6)
            hint = f"; did you mean: {', '.join(close)}" if close else ""
            _fail(f"{key}: unknown key{hint}")
        if not allowed_on_resume(key):
            _fail(
                f"{key}: cannot be changed on resume (the run would no longer be the run it "
                f"was); allowed with resume=: {', '.join(RESUME_OVERRIDES)}. To go on with "
                "other settings, start a new run from this run's weights: "
                f"policy.start_from={run_dir}[:NAME] (the optimizer's state starts afresh)"
            )
        node = raw
        *parents, leaf = key.split(".")
        for part in parents:
            node = node[part]
        node[leaf] = yaml.safe_load(text) if text else None
    return parse_config(raw)


def _groups(search_dirs: list[Path]) -> set[str]:
    return {d.name for base in search_dirs if base.is_dir() for d in base.iterdir() if d.is_dir()}


def _leaf_keys(node: Any, prefix: str = "") -> set[str]:
    keys = set()
    if isinstance(node, dict):
        for key, value in node.items():
            path = f"{prefix}{key}"
            keys.add(path)
            keys |= _leaf_keys(value, f"{path}.")
    return keys


def _hydra_flags(args: list[str]) -> tuple[str, list[Path]] | None:
    """(--config-name, --config-dir dirs) of Hydra's own flags; None with --config-path."""
    name, dirs = "config", []
    pending = None
    for arg in args:
        if pending is not None:
            if pending == "name":
                name = arg
            else:
                dirs.append(Path(arg).resolve())
            pending = None
        elif arg in ("--config-path", "-cp") or arg.startswith("--config-path="):
            return None
        elif arg in ("--config-name", "-cn"):
            pending = "name"
        elif arg.startswith("--config-name="):
            name = arg.split("=", 1)[1]
        elif arg in ("--config-dir", "-cd"):
            pending = "dir"
        elif arg.startswith("--config-dir="):
            dirs.append(Path(arg.split("=", 1)[1]).resolve())
    return name, dirs


# Hydra's flags that print something and run nothing (no run directory is written).
INSPECT_FLAGS = ("--cfg", "-c", "--info", "-i", "--help", "-h", "--hydra-help", "--resolve")


def _is_multirun(args: list[str]) -> bool:
    return any(arg in ("-m", "--multirun") or arg == "hydra.mode=MULTIRUN" for arg in args)


# Settings of the sections whose group files (conf/task/*.yaml, conf/policy/*.yaml, a
# user's own) state only some of their dataclass's fields.
DECLARED_FIELDS = frozenset(
    f"{section}.{f.name}"
    for section, config_class in (("task", TaskConfig), ("policy", PolicyConfig))
    for f in dataclasses.fields(config_class)
)


def override_key(arg: str) -> str:
    """The dotted key an override sets, without Hydra's +, ++ or ~ prefix."""
    return arg.split("=", 1)[0].lstrip("+~")


def _override_values(arg: str, sweep: bool) -> list[Any]:
    """An override's value as Hydra reads it (unquoted, unescaped; `7` an int, which no
    plug-in name is: parse_config says what it must be); with `sweep` (a multirun), each
    value of a sweep (`a,b`, `choice(a,b)`)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        override = OverridesParser.create().parse_overrides([arg.lstrip("+~")])[0]
    except Exception:  # noqa: BLE001 - Hydra refuses it later, with its own message
        return [arg.split("=", 1)[1] if "=" in arg else ""]
    if override.is_sweep_override():
        values = list(override.sweep_string_iterator()) if sweep else []
        # Sweep strings keep Hydra's escapes (`pkg\\:Class`).
        return [re.sub(r"\\(.)", r"\1", value) for value in values]
    return [override.value()]


def _named_plugins(overrides: list[str], section: str, sweep: bool) -> list[Any]:
    """The plug-in names `section.name=...` on the command line gives (several in a sweep)."""
    named = [a for a in overrides if "=" in a and override_key(a) == f"{section}.name"]
    return _override_values(named[-1], sweep) if named else []


def _fields_of(section: str, name: str) -> set[str] | None:
    """The config fields of plug-in `name`, or None when it does not resolve (a bad name is
    parse_config's error, named there)."""
    try:
        return {f.name for f in dataclasses.fields(plugin_config_class(section, name))}
    except Exception:  # noqa: BLE001 - an import error, an unknown name, ...
        return None


def _plugin_fields(composed: dict, overrides: list[str], sweep: bool = False) -> set[str]:
    """The settings of the optimizer and curriculum plug-ins this run names (`section.field`):
    a plug-in's group file may leave out fields its config dataclass has, as task and policy
    files may. Every plug-in of a sweep over `section.name` counts."""
    fields: set[str] = set()
    for section in ("optimizer", "curriculum"):
        preset = composed.get(section) if isinstance(composed.get(section), dict) else {}
        named = _named_plugins(overrides, section, sweep)
        for name in named or [preset.get("name")]:
            if not isinstance(name, str):
                continue
            found = _fields_of(section, name)
            if found is None and named:
                # The cause, not its effect: a plug-in that does not import would make
                # each of its settings an "unknown key".
                try:
                    plugin_config_class(section, name)
                except ConfigError as error:
                    _fail(str(error))
            fields |= {f"{section}.{f}" for f in found or ()}
    return fields


# The optimizer's and curriculum's class names as the presets compose them, before the
# command line's `section.name=` (recorded by `_check_overrides`).
_PRESET_NAMES: dict[str, str] = {}


def _carried_fields(section: str, named: str, preset: str | None) -> dict[str, Any] | None:
    """The preset's settings a plug-in named on the command line takes over: of the fields
    of the nearest config class both derive from, those the preset set to other than its
    class's defaults (poet_bipedal's thresholds for Enhanced POET; not POET's own defaults,
    which Enhanced POET sets otherwise; a user's optimizer from ES: nothing, so ES's
    `sigma` does not become its `sigma`). Field -> the preset class's default; None when
    the named class does not resolve."""
    try:
        mine = plugin_config_class(section, named)
    except Exception:  # noqa: BLE001 - parse_config names the error
        return None
    try:
        theirs = plugin_config_class(section, preset) if preset else None
    except Exception:  # noqa: BLE001 - a preset that does not resolve: nothing carries
        theirs = None
    if theirs is None:
        return {}
    common = next(c for c in mine.__mro__ if c in theirs.__mro__)
    if not dataclasses.is_dataclass(common):  # object: no config class in common
        return {}
    defaults = defaults_of(theirs)
    return {f.name: defaults.get(f.name) for f in dataclasses.fields(common) if f.name != "name"}


def _named_on_command_line(raw: dict, overrides: list[str]) -> None:
    """A plug-in named by `section.name=...` on the command line replaces the preset's class:
    it takes over the preset's settings of the config class both derive from
    (`_carried_fields`) and those the command line states; the rest are dropped (ES's
    `optimizer.population` is none of a user's optimizer) and take its own defaults."""
    stated = {override_key(o) for o in overrides if "=" in o}
    for section in ("optimizer", "curriculum"):
        names = _named_plugins(overrides, section, sweep=False)
        settings = raw.get(section)
        if not names or not isinstance(names[-1], str) or not isinstance(settings, dict):
            continue
        carried = _carried_fields(section, names[-1], _PRESET_NAMES.get(section))
        if carried is None:
            continue
        raw[section] = {
            key: value
            for key, value in settings.items()
            if key == "name"
            or (key in carried and value != carried[key])  # set by the preset, not a default
            or _stated(f"{section}.{key}", stated)
        }


def _policy_named_on_command_line(raw: dict, overrides: list[str]) -> None:
    """`policy.name=KIND` beside another policy group (mlp by default): the group file's
    settings were for its own kind (mlp's hidden [16]), so they are dropped and KIND's own
    defaults apply (the actor-critic's [64, 64]), as for a plug-in named by optimizer.name.
    What the command line or an experiment preset states is kept."""
    stated = {override_key(o) for o in overrides if "=" in o}
    policy = raw.get("policy")
    choice = HydraConfig.get().runtime.choices.get("policy")
    if "policy.name" not in stated or not isinstance(policy, dict) or policy.get("name") == choice:
        return
    source = _config_file("policy", choice) if choice else None
    written = (yaml.safe_load(source.read_text()) or {}) if source is not None else {}
    raw["policy"] = {
        key: value
        for key, value in policy.items()
        if key == "name"
        or key not in written
        or value != written[key]  # an experiment preset's own value
        or _stated(f"policy.{key}", stated)
    }


def _stated(key: str, stated: set[str]) -> bool:
    """Does the command line set `key`, or a key inside it (policy.kwargs.shared)?"""
    return any(k == key or k.startswith(f"{key}.") for k in stated)


def _check_overrides(args: list[str]) -> tuple[list[str], DictConfig | None]:
    """Refuse an unknown key (exit 2, naming the closest valid keys) before Hydra would
    answer with its own message and exit 1; a group choice that does not exist likewise.
    A multirun sweep over groups is checked option by option.

    Returns the arguments for Hydra: a value given to a whole mapping (e.g.
    `policy.kwargs={width: 8}`, an empty `{}` in the preset) is passed as `++key=...`, since
    Hydra's struct mode refuses keys the mapping does not have yet otherwise; and Hydra's
    own settings as composed (for the run directory), None when not checked here."""
    from hydra.errors import HydraException

    hydra_configs.register()
    flags = _hydra_flags(args)
    if flags is None:  # a primary config of the user's own (--config-path): Hydra checks
        return args, None
    config_name, extra_dirs = flags
    overrides = [a for a in args if "=" in a and not a.startswith("-")]
    paths = [f"file://{d}" for d in extra_dirs]  # --config-dir: first on the search path
    for arg in overrides:
        if arg.startswith("hydra.searchpath="):
            text = arg.split("=", 1)[1].strip("[]")
            paths += [p.strip() for p in text.split(",") if p.strip()]
    search = [f"hydra.searchpath=[{', '.join(paths)}]"] if paths else []
    search_dirs = [CONF_DIR, *(Path(p.removeprefix("file://")) for p in paths)]
    groups = _groups(search_dirs)
    choices, values, settings = [], [], []
    for arg in overrides:
        key = arg.split("=", 1)[0]
        if key.lstrip("+").startswith(("hydra.", "hydra/")) or key == "hydra":
            if key != "hydra.searchpath":  # already in `search`
                settings.append(arg)
        elif not key.startswith(("+", "~")):
            (choices if key.split("@")[0] in groups else values).append(arg)
    multirun = _is_multirun(args)
    if multirun and any("(" in arg.split("=", 1)[1] for arg in choices):
        # A sweep function over groups (choice, glob): Hydra expands and checks it. The
        # sections' dataclass fields a group file may leave out go as `++` all the same.
        unstated = [a for a in values if a.split("=", 1)[0] in DECLARED_FIELDS]
        return [f"++{a}" if a in unstated else a for a in args], None
    runs = _each_choice(choices) if multirun else [choices]
    mappings: set[str] = set()
    # A section's dataclass fields that its group file leaves out (task.solved_score with
    # conf/task/cartpole.yaml, a user's task file): settings all the same, passed as `++`.
    unstated: set[str] = set()
    existing: set[str] = set()  # every key the composed configs have (values, not groups)
    for picked in runs:
        try:
            composed = _compose(config_name, [*search, *picked])
        except HydraException as error:
            _fail(_choice_error(str(error)))
        except yaml.YAMLError as error:  # a config file of the user's own (hydra.searchpath)
            mark = getattr(error, "problem_mark", None)
            where = f"{mark.name}: " if mark is not None else ""
            _fail(f"{where}invalid YAML at {yaml_error_text(error)}")
        for section in ("optimizer", "curriculum"):
            preset = composed.get(section)
            if isinstance(preset, dict) and isinstance(preset.get("name"), str):
                _PRESET_NAMES[section] = preset["name"]
        known = _leaf_keys(composed)
        existing |= known
        mappings |= {k for k in known if isinstance(_value_at(composed, k), dict)}
        swept = [pick for pick in picked if pick not in choices]  # this run's swept options
        declared = DECLARED_FIELDS | _plugin_fields(composed, overrides, multirun)
        for arg in values:
            key = arg.split("=", 1)[0]
            if key not in known and key in declared:
                unstated.add(key)
            elif key not in known:
                candidates = sorted(set(known) | declared)
                section = key.split(".", 1)[0]
                plugin = section in ("optimizer", "curriculum")
                if plugin and _named_plugins(overrides, section, multirun):
                    # A plug-in named here: its own settings, not the preset's it replaces.
                    candidates = [
                        c
                        for c in candidates
                        if c != section and (not c.startswith(f"{section}.") or c in declared)
                    ]
                close = difflib.get_close_matches(key, candidates, n=3, cutoff=0.6)
                hint = f"; did you mean: {', '.join(close)}" if close else ""
                where = f" with {', '.join(swept)}" if swept else ""
                # Only an open mapping below a section (task.params, policy.kwargs) takes
                # keys of the user's own; a section's settings are a fixed set.
                parents = {key.rsplit(".", n)[0] for n in range(1, key.count(".") + 1)}
                opened = any(p in mappings and "." in p for p in parents)
                plus = f" (a key the config does not have needs Hydra's '+' prefix: +{key}=...)"
                _fail(f"{key}: unknown key{where}{hint}{plus if opened else ''}")
    add = mappings | unstated
    passed = [f"++{a}" if a in values and a.split("=", 1)[0] in add else a for a in args]

    # `+key=...` (the README's way to add a task parameter) on a key the config already has
    # is Hydra's error (exit 1); `++` adds or overrides, so `+` never fails for that reason.
    # Only for a key the composed config already has as a value: never a config group
    # (`+group=option` adds it to the defaults; Hydra refuses `++` there, nested groups and
    # pkg:// search paths included), nor Hydra's own settings.
    def already_there(arg: str) -> bool:
        key = arg.split("=", 1)[0].lstrip("+")
        return "/" not in key and "@" not in key and key in existing and key not in groups

    passed = [
        f"+{a}" if a.startswith("+") and not a.startswith("++") and already_there(a) else a
        for a in passed
    ]
    hydra_settings = None
    if not any(arg.split("=", 1)[0] in INSPECT_FLAGS for arg in args):
        # A single run: every override as Hydra gets it (a directory may name `${seed}`);
        # a multirun's swept values cannot compose as one config: its first choices.
        given = [a for a in passed if "=" in a and not a.startswith(("-", "hydra.searchpath="))]
        composed = [*runs[0], *settings] if multirun else given
        try:
            hydra_settings = _compose(config_name, [*search, *composed], hydra_config=True)
            hydra_settings = hydra_settings["hydra"]
        except Exception:  # noqa: BLE001 - only the early directory check is skipped
            hydra_settings = None
    return passed, hydra_settings


def _choice_error(text: str) -> str:
    """Hydra's answer to a group choice it cannot find, as one line naming the group, the
    closest choices and the allowed ones (not the `*_defaults` nodes the presets build on)."""
    import re

    text = text.split("\nConfig search path")[0]
    missing = re.search(r"Could not find '([^'/]+)/([^']+)'", text)
    listed = re.search(r"Available options in '[^']+':\s*(.*)", text, re.S)
    if not (missing and listed):
        return text.replace(":\n\t", ": ").replace("\n\t", ", ").replace("\n", " ")
    group, name = missing.groups()
    options = [o.strip() for o in re.split(r"[\n\t,]+", listed.group(1)) if o.strip()]
    allowed = [o for o in options if not o.endswith("_defaults")]
    close = difflib.get_close_matches(name, allowed, n=3, cutoff=0.6)
    hint = f"; did you mean: {', '.join(close)}" if close else ""
    return f"{group}: unknown choice '{name}'{hint}; allowed: {', '.join(allowed)}"


def _compose(config_name: str, overrides: list[str], hydra_config: bool = False) -> Any:
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name, overrides=overrides, return_hydra_config=hydra_config)
    return cfg if hydra_config else OmegaConf.to_container(cfg, resolve=False)


def _planned_dir(hydra_settings: Any, setting: str) -> Path | None:
    """The directory `setting` (run.dir or sweep.dir) will be, as Hydra resolves it (quotes,
    `${seed}`, `${now:...}` at this moment, set in a config file); None for one that only
    Hydra's run can resolve (the job's name). A timestamp to the second is new by
    construction; a coarser one (`${now:%Y-%m-%d}`) names the same directory all day."""
    if hydra_settings is None:
        return None
    if not OmegaConf.has_resolver("now"):  # Hydra registers it only inside its run
        OmegaConf.register_new_resolver("now", lambda pattern: datetime.now().strftime(pattern))
    try:
        raw = OmegaConf.to_container(hydra_settings, resolve=False)
        written = str(raw[setting.split(".")[0]][setting.split(".")[1]])
        if "${hydra" in written:
            return None
        value = OmegaConf.select(hydra_settings, setting)
    except Exception:  # noqa: BLE001 - an interpolation only Hydra's run can resolve
        return None
    return Path(value) if value else None


def _sweep_jobs(args: list[str]) -> int | None:
    """How many jobs a multirun's comma sweeps make; None with a sweep function."""
    jobs = 1
    for arg in args:
        key, sep, value = arg.partition("=")
        if not sep or arg.startswith("-") or key.lstrip("+").startswith("hydra"):
            continue
        if "(" in value:
            return None
        if "," in value and not value.startswith(("[", "{")):
            jobs *= len(value.split(","))
    return jobs


def _refuse_reused_dirs(args: list[str], hydra_settings: Any) -> None:
    """Before Hydra writes its record (.hydra/) anywhere: a run directory that holds a run
    is refused; for a multirun, the numbered job directories it will write."""
    if _is_multirun(args):
        sweep = _planned_dir(hydra_settings, "sweep.dir")
        subdir = (
            OmegaConf.to_container(hydra_settings, resolve=False)["sweep"]["subdir"]
            if (hydra_settings is not None)
            else None
        )
        jobs = _sweep_jobs(args)
        if sweep is None or subdir != "${hydra.job.num}" or jobs is None:
            return  # job directories named otherwise: the run itself refuses a reused one
        for job in range(jobs):
            try:
                runner.refuse_existing_run(sweep / str(job), setting="hydra.sweep.dir")
            except ConfigError as error:
                _fail(str(error))
        return
    run_dir = _planned_dir(hydra_settings, "run.dir")
    if run_dir is None:
        return
    try:
        runner.refuse_existing_run(run_dir)
    except ConfigError as error:
        _fail(str(error))
    if run_dir.exists():
        _MADE_BY_USER.add(run_dir.resolve())


def _each_choice(choices: list[str]) -> list[list[str]]:
    """The group choices of a multirun, one list per composition to check: the first
    options, then each further option of each swept group (`curriculum=poet,enhanced_poet`)
    with the other groups at their first."""
    options = []
    for arg in choices:
        key, _, value = arg.partition("=")
        sweep = "," in value and not value.startswith("[")  # [a,b]: one choice of a list
        options.append([f"{key}={v.strip()}" for v in value.split(",")] if sweep else [arg])
    first = [picks[0] for picks in options]
    runs = [first]
    for index, picks in enumerate(options):
        runs += [[*first[:index], pick, *first[index + 1 :]] for pick in picks[1:]]
    return runs


def _value_at(node: Any, key: str) -> Any:
    for part in key.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def run_main() -> None:
    """`coevo-run [overrides]`, or `coevo-run resume=RUN_DIR|CHECKPOINT [safe overrides]`."""
    args = sys.argv[1:]
    resume = [arg for arg in args if arg.startswith("resume=")]
    # A batch scheduler's cancel or preemption (SIGTERM) stops the run as Ctrl-C does:
    # report, stopped.txt and the resume hint, then the exit code of a SIGTERM.
    signal.signal(signal.SIGTERM, _terminated)
    try:
        if resume:
            # A resumed run keeps its own recorded config: Hydra composition is skipped.
            others = [arg for arg in args if arg not in resume]
            _resume(resume[0].split("=", 1)[1], others)
            return
        passed, hydra_settings = _check_overrides(args)  # registers the structured configs
        _refuse_reused_dirs(args, hydra_settings)
        sys.argv[1:] = passed
        _run_composed()
    except KeyboardInterrupt as interrupt:  # before the first generation (pool start-up)
        terminated = isinstance(interrupt, Terminated)
        how = "terminated (SIGTERM)" if terminated else "interrupted"
        print(f"{how} before the first generation finished", file=sys.stderr)
        sys.exit(_interrupt_code(terminated))


def _key_values(args: list[str], allowed: tuple[str, ...], program: str) -> dict[str, str]:
    values = {}
    for arg in args:
        key, sep, value = arg.partition("=")
        if not sep or key not in allowed:
            print(
                f"{program}: error: unknown argument '{arg}'; allowed: "
                f"{', '.join(k + '=...' for k in allowed)}",
                file=sys.stderr,
            )
            sys.exit(2)
        if key in values and values[key] != value:  # which one was meant is unknown
            print(
                f"{program}: error: {key} given twice ({key}={values[key]}, {key}={value}); "
                "give it once",
                file=sys.stderr,
            )
            sys.exit(2)
        values[key] = value
    return values


REPORT_HELP = """usage: coevo-report RUN_DIR

Rebuild RUN_DIR/report.html from the run directory's tables (summary.csv, eligibility.csv,
population.csv, ...) and print its path. A run rebuilds its page every report_every_s
seconds and at its end; this rebuilds it now, e.g. while the run goes on."""

EVAL_HELP = """usage: coevo-eval RUN_DIR_OR_CHECKPOINT [pair=ID] [task=ID|name=value,...]
                  [episodes=N] [seed=S] [video=FILE.gif]

Replay a saved policy from a run's newest checkpoint (or the checkpoint file given) and print
its return in each episode, deterministically (episode k resets with seed S+k).

  pair=ID        the pair (POET) or policy index (single-policy curricula); default: the
                 active pair with the best last score, or policy 0
  task=...       a pair id (POET: that pair's task), a value (a one-parameter space), or
                 name=value,... (those parameters changed, the others kept; a value
                 outside the run's bounds is evaluated as given, with a warning), or a
                 level's JSON (mazes: as test_set.csv's task column holds it); default:
                 the pair's own task, or the space's initial task
  episodes=N     episodes to run (default 5)
  seed=S         the first episode's reset seed (default 0)
  video=FILE.gif film the first episode (reset seed S) as a GIF"""


def _asked_for_help(usage: str) -> None:
    """`-h`/`--help`: the usage on stdout, exit 0 (it is what was asked for)."""
    if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help"):
        print(usage)
        sys.exit(0)


def report_main() -> None:
    """`coevo-report RUN_DIR`: rebuild report.html from the run directory's files."""
    from coevo.report import write_report

    _asked_for_help(REPORT_HELP)
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        print(REPORT_HELP.splitlines()[0], file=sys.stderr)
        sys.exit(2)
    run_dir = Path(sys.argv[1])
    if not (run_dir / "summary.csv").exists() and not (run_dir / "config.yaml").exists():
        print(f"coevo-report: error: {run_dir} is not a coevo run directory", file=sys.stderr)
        sys.exit(2)
    from coevo.report.html import ReportError

    try:
        print(write_report(run_dir, runner.task_renderer(run_dir)))
    except ReportError as error:
        print(f"coevo-report: error: {error}", file=sys.stderr)
        sys.exit(2)


def _int_option(options: dict[str, str], name: str, default: int | None, minimum: int) -> Any:
    """An integer argument of coevo-eval, refused by name when it is not one or too small."""
    if name not in options:
        return default
    text = options[name]
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(name, f"must be an integer >= {minimum}, got '{text}'") from None
    if value < minimum:
        raise ConfigError(name, f"must be an integer >= {minimum}, got {value}")
    return value


def eval_main() -> None:
    """`coevo-eval RUN_DIR_OR_CHECKPOINT [pair=ID] [task=...] [episodes=N] [seed=S]
    [video=FILE.gif]`: per-episode returns of a saved policy, optionally a GIF."""
    from coevo.replay import replay

    _asked_for_help(EVAL_HELP)
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        print(EVAL_HELP, file=sys.stderr)
        sys.exit(2)
    options = _key_values(sys.argv[2:], ("pair", "task", "episodes", "seed", "video"), "coevo-eval")
    video = options.get("video")
    try:
        if video is not None and Path(video).suffix.lower() != ".gif":
            raise ConfigError("video", f"'{video}': only .gif is written; e.g. video=out.gif")
        if video is not None and not Path(video).resolve().parent.is_dir():
            # Checked before the episodes run, not when the GIF is written after them.
            raise ConfigError("video", f"'{video}': directory {Path(video).parent} does not exist")
        pair, task, returns, generation = replay(
            Path(sys.argv[1]),
            pair_id=_int_option(options, "pair", None, minimum=0),
            task_text=options.get("task"),
            episodes=_int_option(options, "episodes", 5, minimum=1),
            seed=_int_option(options, "seed", 0, minimum=0),
            video=Path(video) if video is not None else None,
            on_skip=lambda line: print(f"coevo-eval: warning: {line}", file=sys.stderr),
        )
    except (ConfigError, CheckpointError, FileNotFoundError, ValueError) as error:
        print(f"coevo-eval: error: {error}", file=sys.stderr)
        sys.exit(2)
    except EvaluationError as error:  # the policy's episodes failed: not a usage error
        print(f"coevo-eval: error: {error}", file=sys.stderr)
        sys.exit(1)
    name = getattr(pair, "name", None)  # a single-policy curriculum's policy has a name
    label = f"policy {pair.pair_id} ({name})" if name else f"pair {pair.pair_id} policy"
    task_text = options.get("task", "").strip()
    # task=ID of a POET run is a pair's task (a single-policy run's is a parameter's value)
    whose = f"pair {task_text}'s task " if task_text.isdigit() and not name else ""
    lines = [f"{label} on {whose}{task!r} (checkpoint of generation {generation})"]
    # Six significant digits: enough to compare with SB3's evaluate_policy by eye.
    lines += [f"episode {index}: return {value:.6g}" for index, value in enumerate(returns)]
    lines.append(
        f"mean {np.nanmean(returns):.6g} over {len(returns)} episode{'s' * (len(returns) != 1)}"
    )
    if "video" in options:
        lines.append(f"video: {options['video']}")
    for line in lines:  # `coevo-eval ... | head -1`: the rest goes nowhere, no traceback
        _print(line, sys.stdout)


if __name__ == "__main__":
    run_main()
