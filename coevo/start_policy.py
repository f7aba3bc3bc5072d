"""`policy.start_from`: the parameters a run's new policies start from, instead of the
policy's own random init (fine-tuning a policy trained before, by coevo or elsewhere).

Forms: a `.npy` file holding the flat parameter vector (`np.save(path, theta)`, e.g. a
`LoadedPolicy.theta` of an SB3 or torch policy), or a coevo run directory / checkpoint file,
optionally with `:NAME` to pick one of its policies (the names `coevo-eval` lists). `:` and
not `#`: Hydra's command line takes `runs/x:pair_3` as typed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from coevo import checkpoint
from coevo.errors import ConfigError
from coevo.policies import Policy

FIELD = "policy.start_from"


def load_start_theta(
    spec: str,
    policy: Policy,
    echo: Callable[[str], None] | None = None,
    field: str = FIELD,
) -> np.ndarray:
    """The parameter vector `spec` names, checked to fit `policy` (length, finite); `echo`
    hears which file (and policy) it came from, and any damaged checkpoint skipped."""
    where, name = _split(spec)
    path = Path(where)
    if where.endswith(".npy"):
        if name:
            raise ConfigError(field, f"{spec}: :NAME picks a policy of a checkpoint, not a .npy")
        theta, source = _npy(path, field), str(path)
    elif where.endswith(".zip"):
        raise ConfigError(
            field,
            f"{spec}: an SB3 zip is not read here; save its parameters first: np.save(path, "
            "coevo.policies.loaders.load_sb3_policy(zip).theta), with the run's policy set to "
            "match SB3's network (README: Bring your own policy)",
        )
    else:
        theta, source = _from_checkpoint(path, name, field, echo)
    if echo is not None:
        echo(f"{field}: the policies start from {source}")
    return checked_theta(theta, policy, f"{field} ({source})")


def _split(spec: str) -> tuple[str, str]:
    """(path, policy name) of `PATH[:NAME]`; a colon inside the path's folders is the path's."""
    where, sep, name = spec.rpartition(":")
    if not sep or "/" in name or not where:
        return spec, ""
    return where, name


def checked_theta(theta: object, policy: Policy, field: str) -> np.ndarray:
    """`theta` as the float32 vector `policy` takes, or ConfigError naming what is off."""
    vector = np.asarray(theta, dtype=np.float32).ravel()
    if vector.size != policy.num_params:
        raise ConfigError(
            field,
            f"has {vector.size} parameters; the run's policy has {policy.num_params} (start "
            "from a policy of the same kind and layer sizes)",
        )
    bad = int((~np.isfinite(vector)).sum())
    if bad:
        raise ConfigError(field, f"{bad} of its {vector.size} parameters are not finite")
    return vector


def _npy(path: Path, field: str) -> np.ndarray:
    if not path.is_file():
        raise ConfigError(field, f"{path} not found")
    return read_npy_vector(path, field, str(path))


def read_npy_vector(path: Path, field: str, shown: str) -> np.ndarray:
    """The flat float32 vector of a `.npy` parameter file (`shown`: how errors name it), or
    a ConfigError naming `field`; pairs files' `.npy` policies are read the same way."""
    try:  # never allow_pickle: a parameter file is numbers, not code to run
        return np.asarray(np.load(path, allow_pickle=False), dtype=np.float32).ravel()
    except (ValueError, OSError, EOFError, TypeError):
        raise ConfigError(
            field, f"{shown}: not a numeric .npy array (np.save of the parameter vector)"
        ) from None


def _from_checkpoint(
    path: Path, name: str, field: str, echo: Callable[[str], None] | None
) -> tuple[np.ndarray, str]:
    try:
        path, state = checkpoint.load_run_or_file(path, on_skip=echo)
    except FileNotFoundError:
        raise ConfigError(
            field, f"{path} not found (a .npy file, a run directory or a checkpoint file)"
        ) from None
    except checkpoint.CheckpointError as error:
        raise ConfigError(field, f"{error} (a coevo run directory or checkpoint file?)") from None
    active = dict(state.get("policies") or {})  # the policies its test tasks use
    policies = dict(active)
    population = (state.get("curriculum") or {}).get("population")
    if population is not None:  # POET's archived pairs too, by name, as coevo-eval takes them
        pairs = sorted(population.all_pairs(), key=lambda pair: pair.pair_id)
        policies = {f"pair_{p.pair_id}": p.theta for p in pairs} | active
    if not policies:
        raise ConfigError(field, f"{path} holds no policies (a checkpoint of coevo-run?)")
    if not name:  # the one active policy: an archived pair is taken by name only
        if len(active) != 1:
            raise ConfigError(
                field,
                f"{path} holds {len(active)} active policies; pick one with :NAME, one of: "
                + ", ".join(policies),
            )
        name = next(iter(active))
    if name not in policies:
        raise ConfigError(field, f"no policy '{name}' in {path}; known: {', '.join(policies)}")
    return policies[name], f"{path}:{name}"
