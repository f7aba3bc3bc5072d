"""PPO as an optimizer plug-in (`optimizer=ppo`): one step = one rollout + one update.

`ask` returns the pair's trajectory jobs (`n_envs` streams of `n_steps` on the pair's task,
or spread over the tasks given); the loop sends every pair's jobs to the pool in one call;
`tell_many` stacks each pair's streams into a rollout and updates every pair in one batched
torch computation (`ppo_learner.update_many`), in the driver or, with `learner: ray`, as a
Ray task when the cluster has a free CPU (`ppo_remote`); `tell` is `tell_many` of one pair.
A rollout with a failed stream, or an update that is non-finite or exploding, leaves the
pair's weights and state as they were and says why in the step's record (`reason`).

The policy must be the actor-critic (`policy=actor_critic`, or `policy=conv_actor_critic`,
its subclass with a convolution first): the learner needs its value head and its layout.
gSDE (SB3's `use_sde` / `sde_sample_freq`) is set on that policy
(`policy.kwargs.use_sde`, `sde_sample_freq`): it changes the vector's layout.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from coevo.errors import ConfigError
from coevo.optimizers.base import Asked, Optimizer, Register, StepRecord, Told
from coevo.optimizers.ppo_config import LEARNER_PLACES, PPOConfig
from coevo.optimizers.ppo_learner import PPOState, Rollout, Updated
from coevo.optimizers.ppo_remote import learner_place, run_learner, why_in_driver
from coevo.optimizers.ppo_streams import (
    StreamingPPOState,
    continuations,
    stream_plan,
    with_stream_ends,
)
from coevo.policies.actor_critic import ActorCriticSpec
from coevo.pool.jobs import Stored
from coevo.pool.trajectories import Stream, TrajectoryJob
from coevo.tasks.task import Task

log = logging.getLogger(__name__)


class PPO(Optimizer):
    """PPO as an optimizer: one step is one rollout of `n_envs` streams x `n_steps` on the pool
    and one update, with Stable-Baselines3's settings and losses.

    Args:
        config: a `PPOConfig`.
        num_params: the size of the actor-critic's parameter vector.
        policy: the actor-critic policy; a curriculum hands over the pool's when omitted.

    It needs coevo's actor-critic (`policy=actor_critic`). A failed rollout or a non-finite
    update keeps the weights and is recorded as `step_failed`.
    """

    config_class = PPOConfig
    config: PPOConfig
    # Its results (trajectory streams) carry per-step rewards and value predictions: PLR
    # may score levels by positive value loss from them (coevo/curricula/level_sampling.py).
    provides_values = True

    def __init__(
        self,
        config: PPOConfig | None = None,
        num_params: int | None = None,
        policy: Any = None,
        **settings: Any,
    ):
        super().__init__(config, num_params, **settings)
        # Where the learner runs, chosen at the first update (ppo_remote.learner_place), and
        # its calls by place.
        self.learner_place: str | None = None
        self.learner_runs: dict[str, int] = dict.fromkeys(LEARNER_PLACES, 0)
        self.policy: ActorCriticSpec | None = None
        if policy is not None:
            self.use_policy(policy)

    def use_policy(self, policy: Any) -> None:
        """Use `policy` (it must be an `ActorCriticSpec`)."""
        if not isinstance(policy, ActorCriticSpec):
            raise ConfigError(
                "policy.name",
                "optimizer ppo needs the actor-critic policy (a value head): "
                "policy=actor_critic (or conv_actor_critic, for a grid observation such "
                "as a maze's) on the command line, {'policy': {'name': "
                "'actor_critic'}} in parse_config's mapping (or leave policy out), or "
                "coevo.make_policy('actor_critic', obs_space, act_space, {}) from Python; "
                f"got {type(policy).__name__}",
            )
        if self.num_params is None:  # PPO(...) built without num_params: the policy's
            self.bind(policy.num_params)
        if policy.num_params != self.num_params:
            raise ValueError(f"policy has {policy.num_params} parameters, not {self.num_params}")
        self.policy = policy

    def _spec(self) -> ActorCriticSpec:
        if self.policy is None:
            raise RuntimeError("PPO needs its policy: PPO(config, num_params, policy=spec)")
        return self.policy

    def init_state(self, theta: np.ndarray, rng: np.random.Generator) -> PPOState:
        """A fresh PPO state with no streams yet."""
        return StreamingPPOState.fresh(self._spec(), int(rng.integers(0, 2**31 - 1)))

    def ask(
        self,
        theta: np.ndarray,
        state: PPOState,
        tasks: Sequence[Task],
        rng: np.random.Generator,
        register: Register,
    ) -> Asked:
        """The rollout streams of one step, cycling through the tasks (a new one at each
        reset of a training rollout; see `ppo_streams`).

        Args:
            theta: The policy's parameters.
            state: The optimizer's state.
            tasks: The tasks to play; each gets at least one stream.
            rng: The generator of the streams' seeds.
            register: Stores `theta` in the pool and returns its key.

        Returns:
            The stream jobs and what `tell` needs.
        """
        key = register(theta)
        seed = int(rng.integers(0, 2**31 - 1))
        cfg = self.config
        # Streams cycle through the tasks; every task gets at least one stream (a curriculum
        # scoring many tasks at once then gets a larger rollout than n_envs streams). A
        # stream whose episode is unfinished keeps its level until the episode ends; in a
        # training rollout each reset then starts the next of the tasks (`stream_plan`).
        streams = max(cfg.n_envs, len(tasks))
        plan = stream_plan(state, tasks, streams)
        # Each stream goes on with the episode its previous rollout left unfinished.
        ahead = continuations(state, [first for first, _ in plan])
        jobs = [
            TrajectoryJob(Stored(key), first, seed, stream, cfg.n_steps, ahead[stream], following)
            for stream, (first, following) in enumerate(plan)
        ]
        return Asked(jobs)

    def tell(
        self, theta: np.ndarray, state: PPOState, asked: Asked, results: Sequence[Stream]
    ) -> Told:
        """PPO's update on the streams' steps (`tell_many` for one student)."""
        return self.tell_many([(theta, state, asked, results)])[0]

    def tell_many(
        self, items: Sequence[tuple[np.ndarray, PPOState, Asked, Sequence[Stream]]]
    ) -> list[Told]:
        """Every pair's step from its streams: all updates in one batched learner call."""
        told: list[Told | None] = [None] * len(items)
        learning = []  # (index, mean return) of the pairs whose rollouts are whole
        rollouts = []
        for index, (theta, state, _, results) in enumerate(items):
            mean = _mean_return(results)
            failed = [stream.error for stream in results if stream.error]
            if failed:
                last = failed[0].strip().splitlines()[-1] if failed[0].strip() else "failed"
                reason = f"update skipped: {len(failed)} of {len(results)} streams failed ({last})"
                record = StepRecord(mean, len(failed), reason, applied=False)
                told[index] = Told(theta, state, record)
                continue
            learning.append((index, mean))
            rollouts.append(stack(results))
        if self.learner_place is None:
            self.learner_place = learner_place(self.config.learner)
            if self.config.learner == "ray" and self.learner_place == "driver":
                log.warning(
                    "ppo: optimizer.learner=ray, but the learner runs in the driver for the "
                    "whole run: %s",
                    why_in_driver(),
                )
        updated = run_learner(
            self.learner_place,
            self._spec(),
            self.config,
            [items[index][0] for index, _ in learning],
            [items[index][1] for index, _ in learning],
            rollouts,
        )
        self.learner_runs[self.learner_place] += 1
        for (index, mean), done in zip(learning, updated, strict=True):
            theta, state, asked, results = items[index]
            step = _told(theta, state, mean, done)
            if np.isnan(mean) and not done.error:
                step = replace(step, record=replace(step.record, reason=self._no_episode_ended()))
            if not done.error:  # the streams go on where this rollout left them
                step = replace(step, state=with_stream_ends(step.state, asked.jobs, results))
            told[index] = step
        done = [step for step in told if step is not None]
        assert len(done) == len(items)
        return done

    def _no_episode_ended(self) -> str:
        """Why a rollout has no training return: no stream's episode ended within n_steps
        (each goes on, on its task, in the next rollout). Warned of once: every row would
        say it."""
        reason = (
            f"no episode ended within the rollout's optimizer.n_steps={self.config.n_steps} "
            "steps per stream: no training return yet (each stream's episode goes on, on its "
            "task, in the next rollout)"
        )
        if not getattr(self, "_warned_no_return", False):
            self._warned_no_return = True
            log.warning(
                "ppo: %s; a curriculum sees an episode's return only when it ends: make "
                "optimizer.n_steps longer than an episode for a return at every update",
                reason,
            )
        return reason


def _told(theta: np.ndarray, state: PPOState, mean: float, done: Updated) -> Told:
    """A pair's step from its update: the new weights, or the old ones and the reason."""
    if done.error:
        refused = StepRecord(mean, 0, f"update refused: {done.error}", applied=False)
        return Told(theta, state, refused)
    info = done.info
    assert done.theta is not None and info is not None
    extra = {
        "policy_loss": info.policy_loss,
        "value_loss": info.value_loss,
        "entropy": info.entropy,
        "approx_kl": info.approx_kl,
        "clip_fraction": info.clip_fraction,
        "explained_variance": info.explained_variance,
    }
    if np.isfinite(info.std):  # continuous actions only, as SB3's train/std
        extra["std"] = info.std
    return Told(done.theta, done.state, StepRecord(mean, 0, "", extra))


def stack(streams: Sequence[Stream]) -> Rollout:
    """Streams [T, ...] side by side as a rollout [T, E, ...]."""

    def side_by_side(name: str) -> np.ndarray:
        return np.stack([getattr(stream, name) for stream in streams], axis=1)

    return Rollout(
        obs=side_by_side("obs"),
        actions=side_by_side("actions"),
        log_probs=side_by_side("log_probs"),
        rewards=side_by_side("rewards"),
        terminated=side_by_side("terminated"),
        truncated=side_by_side("truncated"),
        values=side_by_side("values"),
        next_values=side_by_side("next_values"),
        last_obs=np.stack([stream.last_obs for stream in streams]),
    )


def _mean_return(streams: Sequence[Stream]) -> float:
    """Mean return of the episodes that ended in the rollout (NaN when none did)."""
    done = sum(stream.episodes_done for stream in streams if not stream.error)
    total = sum(stream.episode_return_sum for stream in streams if not stream.error)
    return total / done if done else float("nan")
