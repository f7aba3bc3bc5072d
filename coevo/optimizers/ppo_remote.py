"""Where PPO's learner runs: in the driver, or as a Ray task when the cluster has room.

`learner: ray` sends the batched update (`ppo_learner.update_many`, every pair of the step in
one call) to a Ray task of one CPU when, at the optimizer's first update, Ray is running and
has a CPU free; otherwise (no Ray, or the pool's workers hold every CPU, as on a 2-core
machine with 2 workers) the driver runs it. The choice is made once: Ray reports a finished
task's CPU as free only a moment later, so asking again at every update would flip between
the two. Both run the same function on one torch thread, so the results are the same bits
wherever it ran. PPO is on-policy: a pair's next rollout needs the weights this update
makes, so the task cannot overlap with the pair's next rollout; it frees the driver's core.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from coevo.optimizers.ppo_config import PPOConfig
from coevo.optimizers.ppo_learner import PPOState, Rollout, Updated, update_many
from coevo.policies.actor_critic import ActorCriticSpec


def run_learner(
    place: str,
    spec: ActorCriticSpec,
    config: PPOConfig,
    thetas: Sequence[np.ndarray],
    states: Sequence[PPOState],
    rollouts: Sequence[Rollout],
) -> list[Updated]:
    """`update_many` of the pairs, in the driver or (place "ray", from `learner_place`) as a
    Ray task."""
    if place == "ray" and thetas:
        import ray

        task = _remote_update().remote(spec, config, list(thetas), list(states), list(rollouts))
        # Arrays from Ray's store are read-only views: the pairs get their own copies.
        return [_own_copy(done) for done in ray.get(task)]
    return update_many(spec, config, thetas, states, rollouts)


def learner_place(setting: str) -> str:
    """Where the learner runs for the `learner` setting: "ray" if asked and Ray has room."""
    return "ray" if setting == "ray" and ray_has_room() else "driver"


def why_in_driver() -> str:
    """Why `learner: ray` runs in the driver, for its warning."""
    if "ray" not in sys.modules:
        return "this run has no Ray (pool=local)"
    import ray

    if not ray.is_initialized():
        return (
            "Ray was not running yet at the first update (an embedded Ray starts in the "
            "background while the first generations run); it takes effect on a cluster "
            "(pool.address=...)"
        )
    return "Ray had no CPU free at the first update (the pool's workers hold them)"


def ray_has_room() -> bool:
    """Ray is running (in this process) and has at least one CPU free for a task."""
    if "ray" not in sys.modules:  # never start Ray, nor import it, for the learner
        return False
    import ray

    return ray.is_initialized() and ray.available_resources().get("CPU", 0.0) >= 1.0


def _own_copy(done: Updated) -> Updated:
    if done.error:
        return done
    assert done.theta is not None and done.state is not None
    return Updated(np.array(done.theta), done.state.copy(), done.info)


@functools.cache
def _remote_update() -> Any:
    import ray

    return ray.remote(num_cpus=1)(update_many)
