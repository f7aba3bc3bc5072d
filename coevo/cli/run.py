"""`coevo-run`: the overrides checked, Hydra's composition, the run, and how it ended."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from coevo import runner
from coevo.checkpoint import CheckpointError
from coevo.cli import console
from coevo.cli.conf import CONF_DIR
from coevo.cli.overrides import check_overrides
from coevo.cli.parse import is_multirun
from coevo.cli.paths import resolve_config_paths
from coevo.cli.plugins import named_on_command_line, policy_named_on_command_line
from coevo.cli.resume import resume
from coevo.cli.run_dir import drop_if_unused, refuse_reused_dirs
from coevo.config import parse_config
from coevo.curricula.base import GenerationFailed
from coevo.errors import ConfigError, Terminated
from coevo.pool.results import WorkerStartError
from coevo.run import RunInterrupted


def main() -> None:
    """`coevo-run [overrides]`, or `coevo-run resume=RUN_DIR|CHECKPOINT [overrides]`."""
    args = sys.argv[1:]
    resumed = [arg for arg in args if arg.startswith("resume=")]
    console.stop_on_sigterm()
    try:
        if resumed:
            # A resumed run keeps its own recorded config: Hydra composition is skipped.
            others = [arg for arg in args if arg not in resumed]
            resume(resumed[0].split("=", 1)[1], others)
            return
        passed, hydra_settings = check_overrides(args)  # registers the structured configs
        refuse_reused_dirs(args, hydra_settings)
        sys.argv[1:] = passed
        with _mode_known(hydra_settings, args):
            _run_composed()
    except KeyboardInterrupt as interrupt:  # before the first generation (pool start-up)
        terminated = isinstance(interrupt, Terminated)
        how = "terminated (SIGTERM)" if terminated else "interrupted"
        print(f"{how} before the first generation finished", file=sys.stderr)
        sys.exit(console.interrupt_code(terminated))


@contextmanager
def _mode_known(hydra_settings: DictConfig | None, args: list[str]) -> Iterator[None]:
    """Hydra's main composes the config once only to read `hydra.mode`, then again to run.
    A single run's overrides were composed with Hydra's section already (check_overrides),
    so that first composition is skipped: ~0.2 s of every coevo-run."""
    from hydra._internal.hydra import Hydra  # Hydra's own: without it, nothing is skipped

    if hydra_settings is None or is_multirun(args) or not hasattr(Hydra, "get_mode"):
        yield
        return
    mode = hydra_settings.get("mode")
    composing = Hydra.get_mode
    Hydra.get_mode = lambda self, config_name, overrides: mode
    try:
        yield
    finally:
        Hydra.get_mode = composing


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def _run_composed(cfg: DictConfig) -> None:
    raw: Any = OmegaConf.to_container(cfg, resolve=True)  # the primary config: a mapping
    resolve_config_paths(raw)
    command = list(HydraConfig.get().overrides.task)
    named_on_command_line(raw, command)
    policy_named_on_command_line(raw, command)
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    try:
        config = parse_config(raw)
        run = runner.run_eligible if config.mode == "eligible_parents" else runner.run
        # Both build the task space and policy (every config error) before Ray starts.
        run(config, run_dir, console.logged_to(run_dir))
    except (ConfigError, CheckpointError) as error:
        console.stop_started(run_dir, error)
        drop_if_unused(run_dir)
        console.fail(str(error))
    except RunInterrupted as error:
        console.interrupted(error)
    except (GenerationFailed, WorkerStartError) as error:
        console.stopped(run_dir, f"coevo-run: error: {error}", 1)
    except Exception as error:
        if getattr(error, "stopped_after", None) is None:
            raise
        # A bug (often a plug-in's) after the run started: its frames, then the way back
        # (the runner's note) as the last line, without Hydra's HYDRA_FULL_ERROR advice.
        traceback.print_exc()
        sys.exit(1)
