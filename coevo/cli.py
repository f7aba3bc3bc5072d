"""Command-line entry points. Hydra composes the config; the work is in `coevo.runner`."""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from coevo import runner
from coevo.checkpoint import CheckpointError
from coevo.config import parse_config
from coevo.errors import ConfigError

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"


def _fail(message: str) -> None:
    print(f"coevo-run: error: {message}", file=sys.stderr)
    sys.exit(2)


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def _run_composed(cfg: DictConfig) -> None:
    raw = OmegaConf.to_container(cfg, resolve=True)
    try:
        config = parse_config(raw)
        runner.prepare(config)  # every config error surfaces here, before Ray starts
    except ConfigError as error:
        _fail(str(error))
    runner.run(config, Path(HydraConfig.get().runtime.output_dir))


def _resume(run_dir: str) -> None:
    try:
        config = runner.load_run_config(Path(run_dir))
        runner.run(config, Path(run_dir), resume=True)
    except (ConfigError, CheckpointError, FileNotFoundError) as error:
        _fail(str(error))


def run_main() -> None:
    """`coevo-run [overrides]`, or `coevo-run resume=RUN_DIR` to continue a run."""
    resume = [arg for arg in sys.argv[1:] if arg.startswith("resume=")]
    if resume:
        # A resumed run keeps its own recorded config, so Hydra composition is skipped.
        _resume(resume[0].split("=", 1)[1])
        return
    _run_composed()


if __name__ == "__main__":
    run_main()
