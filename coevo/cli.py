"""Command-line entry points. Hydra composes the config; the work is in `coevo.runner`."""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
import numpy as np
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
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    try:
        config = parse_config(raw)
        run = runner.run_eligible if config.mode == "eligible_parents" else runner.run
        # Both build the task space and policy (every config error) before Ray starts.
        run(config, run_dir)
    except (ConfigError, CheckpointError) as error:
        _fail(str(error))


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
        values[key] = value
    return values


def report_main() -> None:
    """`coevo-report RUN_DIR`: rebuild report.html from the run directory's files."""
    from coevo.report import write_report

    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        print("usage: coevo-report RUN_DIR", file=sys.stderr)
        sys.exit(2)
    run_dir = Path(sys.argv[1])
    if not (run_dir / "summary.csv").exists() and not (run_dir / "config.yaml").exists():
        print(f"coevo-report: error: {run_dir} is not a coevo run directory", file=sys.stderr)
        sys.exit(2)
    print(write_report(run_dir, runner.task_renderer(run_dir)))


def eval_main() -> None:
    """`coevo-eval RUN_DIR_OR_CHECKPOINT [pair=ID] [task=...] [episodes=N] [seed=S]
    [video=FILE.gif]`: per-episode returns of a saved policy, optionally a GIF."""
    from coevo.replay import replay

    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        print(eval_main.__doc__, file=sys.stderr)
        sys.exit(2)
    options = _key_values(sys.argv[2:], ("pair", "task", "episodes", "seed", "video"), "coevo-eval")
    try:
        pair, task, returns = replay(
            Path(sys.argv[1]),
            pair_id=int(options["pair"]) if "pair" in options else None,
            task_text=options.get("task"),
            episodes=int(options.get("episodes", 5)),
            seed=int(options.get("seed", 0)),
            video=Path(options["video"]) if "video" in options else None,
        )
    except (ConfigError, CheckpointError, FileNotFoundError, ValueError) as error:
        print(f"coevo-eval: error: {error}", file=sys.stderr)
        sys.exit(2)
    print(f"pair {pair.pair_id} policy on {task!r}")
    for index, value in enumerate(returns):
        print(f"episode {index}: return {value:.2f}")
    print(f"mean {np.nanmean(returns):.2f} over {len(returns)} episodes")
    if "video" in options:
        print(f"video: {options['video']}")


if __name__ == "__main__":
    run_main()
