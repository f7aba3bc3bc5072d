"""`coevo-eval RUN_DIR_OR_CHECKPOINT [...]`: replay a saved policy and print its returns."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from coevo.checkpoint import CheckpointError
from coevo.cli.console import asked_for_help, print_line
from coevo.errors import ConfigError
from coevo.pool import EvaluationError

EVAL_HELP = """usage: coevo-eval RUN_DIR_OR_CHECKPOINT [pair=ID] [task=ID|name=value,...]
                  [episodes=N] [seed=S] [video=FILE.gif]
       coevo-eval POLICY_FILE task=SPACE[,name=value,...] [episodes=N] [seed=S]
                  [video=FILE.gif]

Replay a saved policy from a run's newest checkpoint (or the checkpoint file given), or a
policy file made outside coevo, and print its return in each episode, deterministically
(episode k resets with seed S+k).

  pair=ID        the pair (POET) or policy index (single-policy curricula); default: the
                 active pair with the best last score, or policy 0
  task=...       a pair id (POET: that pair's task), a value (a one-parameter space), or
                 name=value,... (those parameters changed, the others kept; a value
                 outside the run's bounds is evaluated as given, with a warning), or a
                 level's JSON (mazes: as test_set.csv's task column holds it), or a
                 named level (mazes: labyrinth, four_rooms, long_corridor,
                 perfect_maze_0..2); default: the pair's own task, or the space's initial
                 task
  episodes=N     episodes to run (default 5)
  seed=S         the first episode's reset seed (default 0)
  video=FILE.gif film the first episode (reset seed S) as a GIF

A POLICY_FILE is an SB3 zip (.zip: PPO, A2C, DQN, SAC, TD3 MlpPolicy, acting as SB3's
predict(deterministic=True)), a TorchScript module (.pt, .pth) or an RLlib checkpoint
directory (an algorithm's or an RLModule's, new API stack: PPO's default torch module,
acting as RLlib's forward_inference with explore=False; needs coevo[rllib]). Its task= names
the task space first, as coevo-run's task= does (or a task YAML file), then optionally
parameter values: task=pendulum or task=pendulum,gravity=12."""
# What a file coevo-eval cannot read is told it can take instead.
TAKES = (
    "coevo-eval takes a run directory, a checkpoint file, an SB3 zip (.zip), a TorchScript "
    "module (.pt) or an RLlib checkpoint directory with task=SPACE"
)


def main() -> None:
    """`coevo-eval RUN_DIR_OR_CHECKPOINT [pair=ID] [task=...] [episodes=N] [seed=S]
    [video=FILE.gif]`, or `coevo-eval POLICY_FILE task=SPACE[,...]`: per-episode returns of
    a saved policy, optionally a GIF."""
    asked_for_help(EVAL_HELP)
    from coevo.cli.eval_file import policy_file_kind  # its imports: after --help answers

    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        print(EVAL_HELP, file=sys.stderr)
        sys.exit(2)
    options = _key_values(sys.argv[2:], ("pair", "task", "episodes", "seed", "video"), "coevo-eval")
    path, video = Path(sys.argv[1]), options.get("video")
    try:
        if video is not None and Path(video).suffix.lower() != ".gif":
            raise ConfigError("video", f"'{video}': only .gif is written; e.g. video=out.gif")
        if video is not None and not Path(video).resolve().parent.is_dir():
            # Checked before the episodes run, not when the GIF is written after them.
            raise ConfigError("video", f"'{video}': directory {Path(video).parent} does not exist")
        kind = policy_file_kind(path)
        if kind is None:
            header, returns = _replay_run(path, options)
        else:
            header, returns = _replay_file(path, kind, options)
    except (ConfigError, CheckpointError, FileNotFoundError, ValueError) as error:
        text = str(error)
        if isinstance(error, CheckpointError) and "is not a coevo checkpoint" in text:
            text += f"; {TAKES}"
        print(f"coevo-eval: error: {text}", file=sys.stderr)
        sys.exit(2)
    except EvaluationError as error:  # the policy's episodes failed: not a usage error
        print(f"coevo-eval: error: {error}", file=sys.stderr)
        sys.exit(1)
    lines = [header]
    # Six significant digits: enough to compare with SB3's evaluate_policy by eye.
    lines += [f"episode {index}: return {value:.6g}" for index, value in enumerate(returns)]
    lines.append(
        f"mean {np.nanmean(returns):.6g} over {len(returns)} episode{'s' * (len(returns) != 1)}"
    )
    if "video" in options:
        lines.append(f"video: {options['video']}")
    for line in lines:  # `coevo-eval ... | head -1`: the rest goes nowhere, no traceback
        print_line(line, sys.stdout)


def _warn(line: str) -> None:
    print(f"coevo-eval: warning: {line}", file=sys.stderr)


def _video(options: dict[str, str]) -> Path | None:
    return Path(options["video"]) if "video" in options else None


def _replay_run(path: Path, options: dict[str, str]) -> tuple[str, np.ndarray]:
    """(header line, returns) of a run directory's or checkpoint's policy."""
    from coevo.replay import replay

    pair, task, returns, generation = replay(
        path,
        pair_id=_int_option(options, "pair", None, minimum=0),
        task_text=options.get("task"),
        episodes=_int_option(options, "episodes", 5, minimum=1),
        seed=_int_option(options, "seed", 0, minimum=0),
        video=_video(options),
        on_skip=_warn,
    )
    name = getattr(pair, "name", None)  # a single-policy curriculum's policy has a name
    label = f"policy {pair.pair_id} ({name})" if name else f"pair {pair.pair_id} policy"
    task_text = options.get("task", "").strip()
    # task=ID of a POET run is a pair's task (a single-policy run's is a parameter's value)
    whose = f"pair {task_text}'s task " if task_text.isdigit() and not name else ""
    return f"{label} on {whose}{task!r} (checkpoint of generation {generation})", returns


def _replay_file(path: Path, kind: str, options: dict[str, str]) -> tuple[str, np.ndarray]:
    """(header line, returns) of a policy file (`coevo.cli.eval_file`)."""
    from coevo.cli.eval_file import KIND_NAMES, replay_policy_file

    if "pair" in options:
        raise ConfigError("pair", f"{path} holds one policy; pair= picks among a run's policies")
    task, returns = replay_policy_file(
        path,
        kind,
        options.get("task"),
        episodes=_int_option(options, "episodes", 5, minimum=1),
        seed=_int_option(options, "seed", 0, minimum=0),
        video=_video(options),
        warn=_warn,
    )
    return f"{KIND_NAMES[kind]} {path} on {task!r}", returns


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
