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


def main() -> None:
    """`coevo-eval RUN_DIR_OR_CHECKPOINT [pair=ID] [task=...] [episodes=N] [seed=S]
    [video=FILE.gif]`: per-episode returns of a saved policy, optionally a GIF."""
    from coevo.replay import replay

    asked_for_help(EVAL_HELP)
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
        print_line(line, sys.stdout)


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
