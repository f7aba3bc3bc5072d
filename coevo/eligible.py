"""The eligible-parents question on its own: which given (task, policy) pairs pass a threshold?

Pairs come from a YAML or CSV file. YAML:

    pairs:
      - name: balancer-heavy
        task: {gravity: 14.0}                     # unnamed parameters take their initial value
        policy: policies/balancer.npy             # a flat float32 vector, relative to the file
      - name: from-a-run
        task: {gravity: 9.8}
        policy: {checkpoint: runs/x/checkpoints/gen_000030.pkl, pair: 3}

CSV: columns `name`, `policy`, optional `pair` (with a checkpoint policy), and one column per
task parameter (`gravity`, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from coevo import checkpoint
from coevo.curricula.base import Decision
from coevo.curricula.poet import rules
from coevo.errors import ConfigError
from coevo.pool import EvaluationPool
from coevo.tasks.task import Task, TaskSpace


@dataclass(frozen=True)
class GivenPair:
    name: str
    task: Task
    theta: np.ndarray
    source: str


def load_pairs(path: Path, space: TaskSpace, num_params: int) -> list[GivenPair]:
    path = Path(path)
    if not path.is_file():
        raise ConfigError("eligible.pairs_file", f"{path} not found")
    if path.suffix.lower() == ".csv":
        entries = _csv_entries(path, space)
    elif path.suffix.lower() in (".yaml", ".yml"):
        data = yaml.safe_load(path.read_text()) or {}
        entries = data.get("pairs") if isinstance(data, dict) else None
        if not isinstance(entries, list) or not entries:
            raise ConfigError("eligible.pairs_file", f"{path}: expected a non-empty 'pairs' list")
    else:
        raise ConfigError("eligible.pairs_file", f"{path}: allowed formats: .yaml, .yml, .csv")
    pairs = []
    for index, entry in enumerate(entries):
        where = f"{path.name}: pairs[{index}]"
        if not isinstance(entry, dict) or "policy" not in entry:
            raise ConfigError(where, "each pair needs 'policy' (and usually 'task')")
        task = space.task(**{k: float(v) for k, v in (entry.get("task") or {}).items()})
        theta, source = _load_policy(entry["policy"], path.parent, where)
        if theta.shape != (num_params,):
            raise ConfigError(
                f"{where}.policy",
                f"{source} has {theta.size} parameters; the policy config needs {num_params}",
            )
        pairs.append(GivenPair(str(entry.get("name", f"pair{index}")), task, theta, source))
    return pairs


def _csv_entries(path: Path, space: TaskSpace) -> list[dict[str, Any]]:
    frame = pd.read_csv(path)
    if "policy" not in frame:
        raise ConfigError("eligible.pairs_file", f"{path}: a 'policy' column is required")
    unknown = set(frame.columns) - {"name", "policy", "pair", *space.names}
    if unknown:
        raise ConfigError(
            f"{path.name}: column '{sorted(unknown)[0]}'",
            f"unknown; allowed: name, policy, pair, {', '.join(space.names)}",
        )
    entries = []
    for _, row in frame.iterrows():
        policy: Any = row["policy"]
        if "pair" in frame and pd.notna(row.get("pair")):
            policy = {"checkpoint": policy, "pair": int(row["pair"])}
        task = {k: row[k] for k in space.names if k in frame and pd.notna(row[k])}
        entries.append({"name": row.get("name", None) or None, "policy": policy, "task": task})
    return entries


def _load_policy(spec: Any, base: Path, where: str) -> tuple[np.ndarray, str]:
    if isinstance(spec, str) and spec.endswith(".npy"):
        file = (base / spec).resolve()
        if not file.is_file():
            raise ConfigError(f"{where}.policy", f"{spec} not found (looked in {base})")
        return np.load(file).astype(np.float32).ravel(), spec
    if isinstance(spec, dict) and "checkpoint" in spec:
        file = (base / str(spec["checkpoint"])).resolve()
        state = checkpoint.load(file)
        population = state["coevolution"]["population"]
        try:
            pair = population.get(int(spec.get("pair", 0)))
        except KeyError:
            known = ", ".join(str(p.pair_id) for p in population.all_pairs())
            raise ConfigError(
                f"{where}.policy.pair", f"not in {file.name}; known: {known}"
            ) from None
        return pair.theta.copy(), f"{spec['checkpoint']}#pair{pair.pair_id}"
    raise ConfigError(f"{where}.policy", "must be a .npy file or {checkpoint: PATH, pair: ID}")


def judge_pairs(
    pool: EvaluationPool,
    pairs: list[GivenPair],
    episodes: int,
    threshold: float,
    seed: int = 0,
) -> tuple[list[Decision], np.ndarray]:
    """Evaluate each pair K episodes on the pool; one eligibility decision per pair."""
    returns, errors = pool.evaluate_detailed([(p.theta, p.task) for p in pairs], episodes, seed)
    decisions = []
    for index, (pair, score) in enumerate(zip(pairs, returns.mean(axis=1), strict=True)):
        ok, reason = rules.eligibility(float(score), threshold)
        decisions.append(
            Decision(
                generation=0,
                kind="pair",
                rule="eligibility",
                outcome="eligible" if ok else "ineligible",
                reason=f"{pair.name}: {reason}",
                pair_id=index,
                task_id=pair.task.id,
                task=pair.task.to_json(),
                score=float(score),
                threshold=threshold,
                error=errors.get(index, ""),
            )
        )
    return decisions, returns
