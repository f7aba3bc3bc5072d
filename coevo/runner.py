"""Run an experiment from a validated `RunConfig`: what `coevo-run` does, as a library call."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

from coevo import checkpoint, tasks
from coevo.config import RunConfig, parse_config
from coevo.errors import ConfigError
from coevo.evolve import Coevolution, EvolutionStrategy, GenerationResult
from coevo.policy import PolicySpec, make_policy
from coevo.pool import EvaluationPool
from coevo.report import RunRecorder, write_report
from coevo.tasks.task import TaskSpace

CONFIG_FILE = "config.yaml"
CHECKPOINTS = "checkpoints"


def prepare(config: RunConfig) -> tuple[TaskSpace, PolicySpec]:
    """Build and check the task space and policy spec; raises ConfigError, starts nothing."""
    space = tasks.space_from_config(config.task)
    env = space.make_env()
    try:
        policy = make_policy(
            config.policy.name,
            env.observation_space,
            env.action_space,
            {"hidden": config.policy.hidden, "activation": config.policy.activation},
        )
    finally:
        env.close()
    return space, policy


def task_renderer(run_dir: Path):
    """The run's task-picture function (task dict, PNG path) -> path, if its space has one."""
    try:
        space, _ = prepare(load_run_config(run_dir))
    except (FileNotFoundError, ConfigError):
        return None
    return space.metadata.get("render_png")


def format_generation(result: GenerationResult, total: int) -> str:
    s = result.summary
    return (
        f"gen {result.generation:>3}/{total} | active {s['active']:>2} archived {s['archived']:>2}"
        f" | eligible {s['eligible']:>2} | children {s['children_tried']:>2} tried "
        f"{s['children_passed_mc']:>2} passed MC {s['admitted']:>2} admitted"
        f" | transfers {s['transfers']:>2} | ANNECS {s['annecs']:>2} | best {s['best_score']:7.1f} "
        f"median {s['median_score']:7.1f} | {s['steps_per_s'] / 1000:6.1f}k steps/s"
        f" | {s['wall_s']:5.1f}s"
    )


def config_to_dict(config: RunConfig) -> dict:
    return json.loads(json.dumps(dataclasses.asdict(config)))


def load_run_config(run_dir: Path) -> RunConfig:
    path = Path(run_dir) / CONFIG_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: is {run_dir} a coevo run directory?")
    return parse_config(yaml.safe_load(path.read_text()))


def run(
    config: RunConfig,
    run_dir: Path,
    echo: Callable[[str], None] = print,
    resume: bool = False,
) -> Coevolution:
    """Run (or resume) the experiment, writing tables, checkpoints and report to `run_dir`."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    space, policy = prepare(config)
    renderer = space.metadata.get("render_png")
    if not resume:
        (run_dir / CONFIG_FILE).write_text(yaml.safe_dump(config_to_dict(config), sort_keys=False))
    pool_cfg = config.pool
    total = config.evolution.generations
    with EvaluationPool(
        space,
        policy,
        backend=pool_cfg.backend,
        num_workers=pool_cfg.num_workers,
        envs_per_worker=pool_cfg.envs_per_worker,
        address=pool_cfg.address,
    ) as pool:
        optimizer = EvolutionStrategy(config.optimizer, pool)
        coevolution = Coevolution(space, pool, optimizer, config.evolution, seed=config.seed)
        recorder = RunRecorder(run_dir)
        checkpoints = run_dir / CHECKPOINTS

        def save_checkpoint() -> None:
            state = {"coevolution": coevolution.state_dict(), "report": recorder.state_dict()}
            checkpoint.save(checkpoints, coevolution.generation, state, config.checkpoints_kept)

        if resume:
            generation, state = checkpoint.load_latest(checkpoints, on_skip=echo)
            coevolution.load_state_dict(state["coevolution"])
            recorder.load_state_dict(state["report"], coevolution.population)
            echo(f"resuming {run_dir} after generation {generation}")
        else:
            save_checkpoint()
        while coevolution.generation < total:
            result = coevolution.step()
            recorder.record(result, coevolution.population)
            save_checkpoint()
            write_report(run_dir, renderer)
            echo(format_generation(result, total))
            sys.stdout.flush()
        write_report(run_dir, renderer)
    echo(f"run directory: {run_dir}")
    return coevolution
