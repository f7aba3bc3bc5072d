"""The eligible-parents question on its own: which given (task, policy) pairs pass a threshold?

Pairs come from a YAML or CSV file. YAML:

    pairs:
      - name: balancer-heavy
        task: {gravity: 14.0}                     # unnamed parameters take their initial value
        policy: policies/balancer.npy             # a flat float32 vector, relative to the file
      - name: from-a-run
        task: {gravity: 9.8}
        policy: {checkpoint: runs/x/checkpoints/gen_000030.pkl, pair: 3}  # or runs/x: newest
      - name: my-actor                            # a torch state_dict for a module of yours
        policy: {torch: actor.pt, module: "mypkg.nets:Actor", kwargs: {width: 64}}
      - name: scripted
        policy: {torchscript: actor_scripted.pt}
      - name: sb3-ppo                             # a Stable-Baselines3 zip (coevo[sb3])
        policy: {sb3: ppo_cartpole.zip}           # optional: vecnormalize: stats.pkl
      - name: rllib-ppo                           # an RLlib checkpoint directory (coevo[rllib])
        policy: {rllib: ppo_checkpoint}           # an algorithm's or an RLModule's

`.npy` policies use this command's policy config; a checkpoint's policy its own run's
(RUN/config.yaml; this command's for a checkpoint outside a run directory); the others
bring their own architecture. Pairs are evaluated in groups of one architecture each (one
pool per group). CSV: columns `name`, `policy`, optional `pair` (with a checkpoint policy), and one
column per task parameter (`gravity`, ...). A task space of one parameter (e.g. a level
index) also takes the value alone: `task: 3`. A `.zip` policy is read as SB3, a `.pt` one as
TorchScript, a directory RLlib wrote (`rllib_checkpoint.json`, or an RLModule's
`class_and_ctor_args.pkl` and `module_state.pkl`) as `rllib:`.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd
import yaml

from coevo import checkpoint
from coevo.curricula.base import Decision
from coevo.curricula.poet import rules
from coevo.errors import ConfigError, yaml_error_text
from coevo.policies.base import ActionSpec, Policy, obs_dim_of
from coevo.policies.rllib_files import is_rllib_checkpoint
from coevo.pool import EvaluationPool
from coevo.run_files import CHECKPOINTS, CONFIG_FILE
from coevo.start_policy import read_npy_vector
from coevo.tasks.task import Task, TaskSpace

# Keys of a YAML pair's `policy` mapping that name a file of each kind.
log = logging.getLogger(__name__)
POLICY_FORMS = ("checkpoint", "torch", "torchscript", "sb3", "rllib")


@dataclass(frozen=True)
class GivenPair:
    """A task and a policy; `policy` None means the run's policy (from its config)."""

    name: str
    task: Task
    theta: np.ndarray
    source: str
    policy: Policy | None = None


def load_pairs(path: Path, space: TaskSpace, policy: Policy) -> list[GivenPair]:
    """The file's pairs; `policy` is the run's, used by `.npy` and checkpoint entries."""
    path = Path(path)
    entries = _file_entries(path, space)
    env = space.make_env()
    spaces = (env.observation_space, env.action_space)
    env.close()
    pairs = []
    loaded: dict[tuple, Any] = {}  # a file named by several pairs is read once
    in_csv = path.suffix.lower() == ".csv"
    for index, entry in enumerate(entries):
        # Errors name the file's own places: pairs[1].task.gravity, or line 3, column gravity.
        where = f"{path.name}: " + (
            f"line {entry.get('line', index + 2)}" if in_csv else f"pairs[{index}]"
        )
        if not isinstance(entry, dict) or "policy" not in entry:
            raise ConfigError(where, "each pair needs 'policy' (and usually 'task')")
        task = _entry_task(entry.get("task"), space, where, in_csv)
        policy_field = f"{where}, column policy" if in_csv else f"{where}.policy"
        own, theta, source = _load_policy(
            entry["policy"], path.parent, policy_field, spaces, loaded
        )
        if own is None and theta.shape != (policy.num_params,):
            raise ConfigError(
                policy_field,
                f"{source} has {theta.size} parameters; the policy config needs "
                f"{policy.num_params}",
            )
        name = entry.get("name")
        name = f"pair{index}" if name is None else str(name)
        pairs.append(GivenPair(name, task, theta, source, own))
    return pairs


def _file_entries(path: Path, space: TaskSpace) -> list:
    """The pairs file's entries as read (CSV rows as mappings), before any is checked."""
    if not path.is_file():
        raise ConfigError("eligible.pairs_file", f"{path} not found")
    if path.suffix.lower() == ".csv":
        return _csv_entries(path, space)
    if path.suffix.lower() not in (".yaml", ".yml"):
        raise ConfigError("eligible.pairs_file", f"{path}: allowed formats: .yaml, .yml, .csv")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as error:
        raise ConfigError(
            "eligible.pairs_file", f"{path}: invalid YAML at {yaml_error_text(error)}"
        ) from None
    entries = data.get("pairs") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ConfigError("eligible.pairs_file", f"{path}: expected a non-empty 'pairs' list")
    return entries


def _entry_task(given: Any, space: TaskSpace, where: str, in_csv: bool) -> Task:
    """An entry's task (a mapping, nothing, or a one-parameter space's value); errors name
    the file's own key: pairs[1].task.gravty, or line 3, column gravty."""
    given = {} if given is None else given
    if isinstance(given, int | float) and not isinstance(given, bool) and len(space.names) == 1:
        given = {space.names[0]: given}  # a one-parameter space's task as its value
    if not isinstance(given, dict):
        raise ConfigError(
            f"{where}.task",
            f"expected a mapping of parameter values (parameters of task space "
            f"'{space.name}': {', '.join(space.names)}), got {given!r}",
        )
    try:
        return space.task(**given)
    except ConfigError as error:
        param = _param_of(error.field)
        if in_csv:
            field = f"{where}, column {param}" if param else where
        else:
            field = f"{where}.task.{param}" if param else f"{where}.task"
        raise ConfigError(field, str(error).split(": ", 1)[1]) from None


def _param_of(field: str) -> str:
    """The task parameter a TaskSpace error names (task.gravity, task.params.gravity), or ''."""
    for prefix in ("task.params.", "task."):
        if field.startswith(prefix) and field != "task.params":
            return field.removeprefix(prefix)
    return ""


def _csv_entries(path: Path, space: TaskSpace) -> list[dict[str, Any]]:
    # Blank lines kept (then dropped) so that errors name the file's own line numbers.
    frame = pd.read_csv(path, skip_blank_lines=False).dropna(how="all")
    if "policy" not in frame:
        raise ConfigError("eligible.pairs_file", f"{path}: a 'policy' column is required")
    unknown = set(frame.columns) - {"name", "policy", "pair", *space.names}
    if unknown:
        raise ConfigError(
            f"{path.name}: column '{sorted(unknown)[0]}'",
            f"unknown; allowed: name, policy, pair, {', '.join(space.names)}",
        )
    entries = []
    for index, row in frame.iterrows():
        # The file's own line: the header is line 1, blank lines count (a RangeIndex label).
        line = int(cast(int, index)) + 2
        policy: Any = row["policy"]
        if "pair" in frame and bool(pd.notna(row.get("pair"))):
            policy = {"checkpoint": policy, "pair": row["pair"]}
        task = {k: row[k] for k in space.names if k in frame and bool(pd.notna(row[k]))}
        name = row.get("name", None)
        name = None if name is None or pd.isna(name) else str(name)
        entries.append({"name": name, "policy": policy, "task": task, "line": line})
    return entries


def _load_policy(
    spec: Any, base: Path, field: str, spaces: tuple, loaded: dict[tuple, Any]
) -> tuple[Policy | None, np.ndarray, str]:
    """(own policy or None for the run's, parameter vector, source text) of one entry;
    `field` names the entry's policy in errors."""
    if isinstance(spec, str) and spec.endswith(".npy"):
        file = (base / spec).resolve()
        if not file.is_file():
            raise ConfigError(field, f"{spec} not found (looked in {base})")
        return None, read_npy_vector(file, field, spec), spec
    if isinstance(spec, str) and spec.endswith(".zip"):
        spec = {"sb3": spec}
    elif isinstance(spec, str) and spec.endswith(".pt"):
        spec = {"torchscript": spec}
    elif isinstance(spec, str) and is_rllib_checkpoint(base / spec):
        spec = {"rllib": spec}
    forms = [k for k in POLICY_FORMS if k in spec] if isinstance(spec, Mapping) else []
    if not isinstance(spec, Mapping) or len(forms) != 1:
        raise ConfigError(
            field,
            "must be a .npy file or a mapping with one of "
            + ", ".join(f"{k}: {'DIR' if k == 'rllib' else 'FILE'}" for k in POLICY_FORMS)
            + f" (got {spec!r})",
        )
    form = forms[0]
    if form == "checkpoint":
        theta, source, read = _checkpoint_policy(spec, base, field)
        own = _run_policy(read.parent.parent, field, spaces, loaded)
        if own is not None and theta.shape != (own.num_params,):
            raise ConfigError(
                field,
                f"{source} has {theta.size} parameters; its run's policy config "
                f"({read.parent.parent / CONFIG_FILE}) needs {own.num_params}",
            )
        return own, theta, source
    key = (form, repr(sorted(spec.items(), key=str)))
    if key not in loaded:
        loaded[key] = _load_own_policy(form, spec, base, field, spaces)
    own = loaded[key]
    return own.policy, own.theta.copy(), f"{form}:{spec[form]}"


def _pair_index(spec: Mapping, field: str) -> int:
    value = spec.get("pair", 0)
    try:
        index = float(value)
    except (TypeError, ValueError):
        index = float("nan")
    if not index.is_integer() or isinstance(value, bool):
        raise ConfigError(f"{field}.pair", f"must be a whole number, got {value!r}")
    return int(index)


def _checkpoint_policy(spec: Mapping, base: Path, field: str) -> tuple[np.ndarray, str, Path]:
    """(parameters, source text, checkpoint file read) of a `checkpoint:` entry."""
    index = _pair_index(spec, field)  # before reading what may be a large file
    file = (base / str(spec["checkpoint"])).resolve()
    shown = str(spec["checkpoint"])  # the policy's source in the tables
    try:  # a run directory too, as resume=, coevo-eval and start_from take
        read, state = checkpoint.load_run_or_file(
            file, lambda line: log.warning("%s.checkpoint: %s", field, line)
        )
    except (FileNotFoundError, checkpoint.CheckpointError) as error:
        raise ConfigError(f"{field}.checkpoint", str(error)) from None
    if read != file:  # the run directory's newest: named in the tables
        shown = f"{shown.rstrip('/')}/{CHECKPOINTS}/{read.name}"
    file = read
    run_state = state.get("curriculum", state.get("coevolution")) or {}
    population = run_state.get("population")
    if population is None:  # a single-policy curriculum's run: its policies by index
        policies = dict(state.get("policies") or {})
        names = list(policies)
        if not 0 <= index < len(names):
            known = ", ".join(f"{i} ({name})" for i, name in enumerate(names)) or "none"
            raise ConfigError(f"{field}.pair", f"no policy {index} in {file.name}; known: {known}")
        return policies[names[index]].copy(), f"{shown}#{names[index]}", file
    try:
        pair = population.get(index)
    except KeyError:
        known = ", ".join(str(p.pair_id) for p in population.all_pairs())
        raise ConfigError(f"{field}.pair", f"not in {file.name}; known: {known}") from None
    return pair.theta.copy(), f"{shown}#pair{pair.pair_id}", file


def _run_policy(run_dir: Path, field: str, spaces: tuple, loaded: dict[tuple, Any]) -> Any:
    """The policy a checkpoint's run was trained with (RUN/config.yaml's `policy`), built
    for the task space's env; None for a checkpoint outside a run directory, which takes
    the command's policy settings. Built once per run."""
    from coevo.policies import make_policy
    from coevo.run_setup import load_run_config

    config_file = run_dir / CONFIG_FILE
    if not config_file.is_file():
        return None
    key = ("run", str(run_dir.resolve()))
    if key not in loaded:
        try:
            options = dataclasses.asdict(load_run_config(run_dir).policy)
            loaded[key] = make_policy(options.pop("name"), spaces[0], spaces[1], options)
        except ConfigError as error:
            raise ConfigError(
                f"{field}.checkpoint", f"its run's policy ({config_file}): {error}"
            ) from None
    return loaded[key]


def _load_own_policy(form: str, spec: Mapping, base: Path, field: str, spaces: tuple) -> Any:
    """A torch, TorchScript, SB3 or RLlib policy, checked against the task space's env."""
    from coevo.policies import loaders  # imports torch: only when a pairs file needs it

    obs_space, act_space = spaces
    file = (base / str(spec[form])).resolve()
    options = {k: spec[k] for k in ("action", "batch_block") if k in spec}
    allowed = {
        "torch": {"torch", "module", "kwargs"},
        "torchscript": {"torchscript"},
        "sb3": {"sb3", "vecnormalize"},
        "rllib": {"rllib"},
    }[form] | set(options)
    unknown = sorted(set(spec) - allowed)
    if unknown:
        raise ConfigError(
            f"{field}.{unknown[0]}",
            f"unknown key for a {form} policy; allowed: {', '.join(sorted(allowed))}, "
            "action, batch_block",
        )
    if form == "torch":
        if not spec.get("module"):
            raise ConfigError(
                f"{field}.module", "required with torch: FILE ('package.module:Class')"
            )
        own = loaders.load_torch(
            file,
            str(spec["module"]),
            dict(spec.get("kwargs") or {}),
            obs_space,
            act_space,
            field,
            options,
        )
    elif form == "torchscript":
        own = loaders.load_torchscript_policy(
            file, obs_space, act_space, f"{field}.torchscript", options
        )
    elif form == "rllib":
        own = loaders.load_rllib_policy(file, f"{field}.rllib", options)
    else:
        vecnormalize = spec.get("vecnormalize")
        own = loaders.load_sb3_policy(
            file,
            f"{field}.sb3",
            (base / str(vecnormalize)).resolve() if vecnormalize else None,
            options,
        )
    check_policy_fits(own.policy, obs_space, act_space, f"{field}.{form}")
    return own


def check_policy_fits(policy: Policy, obs_space: Any, act_space: Any, field: str) -> None:
    """Refuse, under `field`, a policy whose observation size, action kind and size, or
    Box bounds differ from the env's spaces."""
    obs_dim = obs_dim_of(obs_space)
    if policy.obs_dim != obs_dim:
        raise ConfigError(
            field,
            f"the policy takes observations of size {policy.obs_dim}; the task space's env "
            f"gives {obs_dim}",
        )
    env = ActionSpec.for_space(act_space)
    ours = policy.action
    if (ours.discrete, ours.size) != (env.discrete, env.size) or (
        not env.discrete and (ours.low, ours.high) != (env.low, env.high)
    ):
        raise ConfigError(
            field,
            f"the policy acts in {_describe(ours)}; the task space's env takes {_describe(env)}",
        )


def _describe(spec: ActionSpec) -> str:
    if spec.discrete:
        return f"{spec.size} discrete actions"
    return f"a {spec.size}-dim box [{spec.low}, {spec.high}]"


def eligibility_threshold(threshold: float | None, space: TaskSpace) -> float:
    """The score a pair must reach: `eligible.threshold` when set, else the task space's
    `solved_score` (a score on the space's own scale, not CartPole's)."""
    if threshold is not None:
        return float(threshold)
    if space.solved_score is None:
        raise ConfigError(
            "eligible.threshold",
            f"task space '{space.name}' declares no solved_score: set the score a pair must "
            "reach (eligible.threshold=...)",
        )
    return float(space.solved_score)


def judge_pairs(
    pool: EvaluationPool,
    pairs: list[GivenPair],
    episodes: int,
    threshold: float,
    seed: int = 0,
) -> tuple[list[Decision], np.ndarray]:
    """Evaluate each pair K episodes on one pool; one eligibility decision per pair.

    Every pair's policy must be the pool's (or None); `judge_groups` takes mixed ones.
    """
    for pair in pairs:
        if pair.policy is not None and pair.policy.signature() != pool.policy.signature():
            raise ConfigError(
                f"pairs: {pair.name}", "its policy differs from the pool's; use judge_groups"
            )
    returns, errors = pool.evaluate_detailed([(p.theta, p.task) for p in pairs], episodes, seed)
    decisions = [
        _decision(index, pair, float(score), threshold, errors.get(index, ""))
        for index, (pair, score) in enumerate(zip(pairs, returns.mean(axis=1), strict=True))
    ]
    return decisions, returns


def judge_groups(
    open_pool: Callable[[Policy], EvaluationPool],
    default_policy: Policy,
    pairs: list[GivenPair],
    episodes: int,
    threshold: float,
    seed: int = 0,
) -> tuple[list[Decision], np.ndarray, dict[str, float]]:
    """`judge_pairs` for pairs of several architectures: one pool per architecture, opened
    by `open_pool(policy)` one after the other. Returns decisions and returns in the pairs'
    order, and the pools' episode, step and time counters summed."""
    groups: dict[Any, list[int]] = {}
    policies: dict[Any, Policy] = {}
    for index, pair in enumerate(pairs):
        policy = pair.policy or default_policy
        key = policy.signature()
        groups.setdefault(key, []).append(index)
        policies.setdefault(key, policy)
    decisions: list[Decision | None] = [None] * len(pairs)
    returns = np.zeros((len(pairs), episodes))
    stats = {"episodes": 0.0, "env_steps": 0.0, "wall_s": 0.0}
    for key, members in groups.items():
        group = [pairs[i] for i in members]
        with open_pool(policies[key]) as pool:
            shared = [
                GivenPair(p.name, p.task, p.theta, p.source, None) for p in group
            ]  # the pool's own policy
            found, got = judge_pairs(pool, shared, episodes, threshold, seed)
            snapshot = pool.stats_snapshot()
        for index, decision, row in zip(members, found, got, strict=True):
            decisions[index] = dataclasses.replace(decision, pair_id=index)
            returns[index] = row
        for name in stats:
            stats[name] += snapshot[name]
    stats["steps_per_s"] = stats["env_steps"] / stats["wall_s"] if stats["wall_s"] > 0 else 0.0
    return [d for d in decisions if d is not None], returns, stats


def _decision(index: int, pair: GivenPair, score: float, threshold: float, error: str) -> Decision:
    ok, reason = rules.eligibility(score, threshold, "eligible.threshold")
    return Decision(
        generation=0,
        kind="pair",
        rule="eligibility",
        outcome="eligible" if ok else "ineligible",
        reason=f"{pair.name}: {reason}",
        pair_id=index,
        task_id=pair.task.id,
        task=pair.task.to_json(),
        score=score,
        threshold=threshold,
        error=error,
    )
