"""Where an RLlib checkpoint directory (new API stack) keeps its RLModule, found from the
files alone: no RLlib, no torch (a pairs file and `coevo-eval` ask this of any directory).

- An algorithm checkpoint (`algo.save_to_path()`, `algo.save()`) holds `rllib_checkpoint.json`;
  its learner's modules are under `learner_group/learner/rl_module/`.
- A module checkpoint (`module.save_to_path()`) holds `class_and_ctor_args.pkl` and
  `module_state.pkl` (or `.msgpack`); a MultiRLModule's holds one such folder per module.

Of several modules the one named `default_policy` (RLlib's single-agent name) is read, or
the only one; otherwise the folder of one must be given. A module folder inside an
algorithm checkpoint is read with that algorithm's settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from coevo.errors import ConfigError

ALGORITHM_FILE = "rllib_checkpoint.json"  # in every algorithm checkpoint RLlib writes
CTOR_FILE = "class_and_ctor_args.pkl"  # a Checkpointable's class and constructor arguments
STATE_FILES = ("module_state.pkl", "module_state.msgpack")
LEARNER_MODULES = Path("learner_group", "learner", "rl_module")
DEFAULT_MODULE = "default_policy"  # RLlib's DEFAULT_MODULE_ID


@dataclass(frozen=True)
class ModuleFiles:
    """An RLModule's checkpoint folder and, when it came from one, its algorithm's."""

    module: Path
    algorithm: Path | None


def _is_module_dir(path: Path) -> bool:
    return (path / CTOR_FILE).is_file() and any((path / name).is_file() for name in STATE_FILES)


def _sub_modules(path: Path) -> list[Path]:
    return sorted(p for p in path.iterdir() if p.is_dir() and _is_module_dir(p))


def _algorithm_above(module: Path) -> Path | None:
    """The algorithm checkpoint a module folder lies in (ALGO/learner_group/.../ID), if any."""
    above = module.resolve().parent
    for part in reversed(LEARNER_MODULES.parts):
        if above.name != part:
            return None
        above = above.parent
    return above if (above / ALGORITHM_FILE).is_file() else None


def is_rllib_checkpoint(path: Path) -> bool:
    """Whether `path` is a directory RLlib wrote: an algorithm or (Multi)RLModule checkpoint."""
    path = Path(path)
    return path.is_dir() and (
        (path / ALGORITHM_FILE).is_file() or _is_module_dir(path) or bool(_sub_modules(path))
    )


def module_files(path: Path, field: str) -> ModuleFiles:
    """The RLModule folder of the checkpoint directory `path` (see the module's docstring).

    Raises:
        ConfigError: under `field`: not such a directory, no learner module in an algorithm
            checkpoint (the old API stack's), or several modules none of which is named
            `default_policy`.
    """
    path = Path(path)
    if not path.exists():
        raise ConfigError(field, f"{path} not found")
    if not path.is_dir():
        raise ConfigError(field, f"{path}: not a directory (an RLlib checkpoint is one)")
    algorithm = path if (path / ALGORITHM_FILE).is_file() else None
    folder = path / LEARNER_MODULES if algorithm else path
    if algorithm and not folder.is_dir():
        raise ConfigError(
            field,
            f"{path}: an RLlib algorithm checkpoint without {LEARNER_MODULES} (the old API "
            "stack's?); supported: the new API stack's (RLModule) checkpoints",
        )
    modules = _sub_modules(folder)
    if not modules:
        if _is_module_dir(folder):
            return ModuleFiles(folder, algorithm or _algorithm_above(folder))
        raise ConfigError(
            field,
            f"{path}: not an RLlib checkpoint (no {ALGORITHM_FILE}, nor an RLModule's "
            f"{CTOR_FILE} and {STATE_FILES[0]})",
        )
    by_name = {p.name: p for p in modules}
    if len(modules) == 1 or DEFAULT_MODULE in by_name:
        return ModuleFiles(by_name.get(DEFAULT_MODULE, modules[0]), algorithm)
    raise ConfigError(
        field,
        f"{path} holds the RLModules {', '.join(by_name)}: give the folder of one, "
        f"e.g. {folder / modules[0].name}",
    )
