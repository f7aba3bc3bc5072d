"""The PPO learner: GAE and the clipped-surrogate update on plain arrays, in torch.

It knows nothing about pools or pairs: `update` takes one pair's rollout (arrays shaped
[T, E, ...]: T steps of E parallel streams), its parameter vector and its `PPOState`, and
returns the new vector or raises `PPOUpdateError` (the caller keeps the old weights).

What follows Stable-Baselines3's PPO (checked side by side in tests/test_ppo_learner.py):
GAE with the value of the final observation on truncation and none on termination, advantages
normalised per minibatch, the clipped surrogate, the value loss against the returns (its
prediction optionally clipped around the old values), the entropy bonus, gradient-norm
clipping, Adam with eps 1e-5, linear annealing of the learning rate and clip range by update
count, the optional approximate-KL early stop, and running observation statistics
(`RunningMeanStd` with SB3's initial count), applied inside the policy vector.

The state holds no torch objects (Adam moments as numpy arrays, the minibatch generator's
state, the observation statistics), so a pickled checkpoint resumes the update exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from coevo.policies.actor_critic import ActorCriticSpec

# SB3's Adam epsilon for PPO (torch's default is 1e-8).
ADAM_EPS = 1e-5
# SB3's RunningMeanStd starts with this count, so the first batch sets the statistics.
RUNNING_COUNT_INIT = 1e-4


class PPOUpdateError(RuntimeError):
    """A pair's update failed (non-finite loss, gradients or parameters, or an update larger
    than `max_update_norm`); the message is the reason recorded for the pair."""


@dataclass(frozen=True)
class PPOConfig:
    """PPO settings; names and defaults as Stable-Baselines3's `PPO` where it has them."""

    n_envs: int = 8  # parallel streams per pair and rollout
    n_steps: int = 256  # steps per stream and rollout (each stream starts at a reset)
    batch_size: int = 64
    n_epochs: int = 10
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_range: float = 0.2
    clip_range_vf: float | None = None  # None: the value loss is not clipped
    ent_coef: float = 0.0
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    learning_rate: float = 3e-4
    # "constant", or "linear": learning rate and clip range fall linearly to 0 over
    # `anneal_updates` updates (SB3's lin_ schedules, progress counted in updates).
    schedule: str = "constant"
    anneal_updates: int = 0
    normalize_advantage: bool = True
    target_kl: float | None = None  # stop an update's epochs early past this approx KL
    # An update that moves the parameter vector farther than this (L2) is refused as
    # exploding; the pair keeps its previous weights.
    max_update_norm: float = 1e3

    @property
    def rollout_steps(self) -> int:
        return self.n_envs * self.n_steps


@dataclass
class Rollout:
    """One pair's rollout as arrays [T, E, ...] (T steps of E streams).

    `next_values` holds, where an episode was truncated and at the last step of each
    stream, the value of the following observation (the bootstrap), else 0; values come
    from the policy that acted, as do `log_probs`.
    """

    obs: np.ndarray  # [T, E, D] raw observations (before normalisation)
    actions: np.ndarray  # [T, E] int (discrete) or [T, E, A] float32, unclipped
    log_probs: np.ndarray  # [T, E] float32
    rewards: np.ndarray  # [T, E] float32
    terminated: np.ndarray  # [T, E] bool
    truncated: np.ndarray  # [T, E] bool: the time limit cut the episode (not the segment end)
    values: np.ndarray  # [T, E] float32
    next_values: np.ndarray  # [T, E] float32
    last_obs: np.ndarray | None = None  # [E, D] the observation after the last step

    @property
    def num_steps(self) -> int:
        return int(self.rewards.size)


@dataclass
class PPOState:
    """A pair's learner state: Adam moments and step, updates done, the minibatch
    generator's state and the running observation statistics."""

    adam_m: np.ndarray
    adam_v: np.ndarray
    adam_step: int
    updates: int
    rng_state: dict[str, Any]
    obs_mean: np.ndarray
    obs_var: np.ndarray
    obs_count: float

    @classmethod
    def fresh(cls, spec: ActorCriticSpec, seed: int) -> PPOState:
        trainable = int(spec.trainable_mask.sum())
        return cls(
            adam_m=np.zeros(trainable, dtype=np.float32),
            adam_v=np.zeros(trainable, dtype=np.float32),
            adam_step=0,
            updates=0,
            rng_state=np.random.default_rng(seed).bit_generator.state,
            obs_mean=np.zeros(spec.obs_dim, dtype=np.float64),
            obs_var=np.ones(spec.obs_dim, dtype=np.float64),
            obs_count=RUNNING_COUNT_INIT,
        )

    def copy(self) -> PPOState:
        return PPOState(
            self.adam_m.copy(),
            self.adam_v.copy(),
            self.adam_step,
            self.updates,
            dict(self.rng_state, state=dict(self.rng_state["state"])),
            self.obs_mean.copy(),
            self.obs_var.copy(),
            self.obs_count,
        )


@dataclass
class UpdateInfo:
    """Diagnostics of one update (means over its minibatches)."""

    policy_loss: float = float("nan")
    value_loss: float = float("nan")
    entropy: float = float("nan")
    approx_kl: float = float("nan")
    clip_fraction: float = float("nan")
    learning_rate: float = float("nan")
    epochs: int = 0
    extra: dict[str, float] = field(default_factory=dict)


def compute_gae(
    rewards: np.ndarray,
    values: np.ndarray,
    next_values: np.ndarray,
    terminated: np.ndarray,
    truncated: np.ndarray,
    gamma: float,
    gae_lambda: float,
) -> tuple[np.ndarray, np.ndarray]:
    """(advantages, returns) [T, E] by generalised advantage estimation.

    The value after step t is `values[t + 1]` while the episode goes on, `next_values[t]`
    where it was truncated or at the last step (bootstrap), and 0 where it terminated; the
    advantage recursion stops at every episode end.
    """
    steps = rewards.shape[0]
    rewards = rewards.astype(np.float32)
    values = values.astype(np.float32)
    terminated = terminated.astype(bool)
    ended = terminated | truncated.astype(bool)
    following = np.empty_like(values)
    following[:-1] = np.where(ended[:-1], next_values[:-1], values[1:])
    following[-1] = next_values[-1]
    alive = (~terminated).astype(np.float32)
    deltas = rewards + np.float32(gamma) * following * alive - values
    carry = (~ended).astype(np.float32) * np.float32(gamma * gae_lambda)
    advantages = np.zeros_like(values)
    last = np.zeros(values.shape[1:], dtype=np.float32)
    for t in reversed(range(steps)):
        last = deltas[t] + (carry[t] * last if t + 1 < steps else 0.0)
        advantages[t] = last
    return advantages, advantages + values


def schedule_fraction(config: PPOConfig, updates_done: int) -> float:
    """The factor on learning rate and clip range for update number `updates_done + 1`."""
    if config.schedule == "constant":
        return 1.0
    # SB3 multiplies by the progress remaining after the rollout that feeds the update.
    return max(0.0, 1.0 - (updates_done + 1) / config.anneal_updates)


def update_obs_stats(state: PPOState, obs: np.ndarray) -> None:
    """Fold a batch of raw observations into the running mean and variance (SB3's
    parallel-variance update)."""
    batch = obs.reshape(-1, obs.shape[-1]).astype(np.float64)
    batch_mean, batch_var, batch_count = batch.mean(axis=0), batch.var(axis=0), batch.shape[0]
    delta = batch_mean - state.obs_mean
    total = state.obs_count + batch_count
    mean = state.obs_mean + delta * batch_count / total
    m2 = (
        state.obs_var * state.obs_count
        + batch_var * batch_count
        + delta**2 * state.obs_count * batch_count / total
    )
    state.obs_mean, state.obs_var, state.obs_count = mean, m2 / total, total


def update(
    spec: ActorCriticSpec,
    config: PPOConfig,
    theta: np.ndarray,
    state: PPOState,
    rollout: Rollout,
) -> tuple[np.ndarray, PPOState, UpdateInfo]:
    """One PPO update of `theta` on `rollout`; returns (new theta, new state, info).

    `state` is not modified (a failed update leaves the pair exactly as it was); raises
    `PPOUpdateError` with the reason when the update is non-finite or exploding.
    """
    import torch

    new_state = state.copy()
    advantages, returns = compute_gae(
        rollout.rewards,
        rollout.values,
        rollout.next_values,
        rollout.terminated,
        rollout.truncated,
        config.gamma,
        config.gae_lambda,
    )
    if not (np.isfinite(advantages).all() and np.isfinite(returns).all()):
        raise PPOUpdateError("non-finite advantages (rewards or values of the rollout)")
    count = rollout.num_steps
    obs = spec.normalize(theta[None], rollout.obs.reshape(count, -1))
    fraction = schedule_fraction(config, state.updates)
    learning_rate = config.learning_rate * fraction
    clip_range = config.clip_range * fraction

    module = spec.to_torch(theta)
    params = list(module.parameters())
    optimizer = torch.optim.Adam(params, lr=learning_rate, eps=ADAM_EPS)
    _load_adam(optimizer, params, new_state)
    if spec.discrete:
        actions = rollout.actions.reshape(count).astype(np.int64)
    else:
        actions = rollout.actions.reshape(count, -1).astype(np.float32)
    tensors = {
        "obs": torch.from_numpy(np.ascontiguousarray(obs, dtype=np.float32)),
        "actions": torch.from_numpy(np.ascontiguousarray(actions)),
        "log_probs": torch.from_numpy(rollout.log_probs.reshape(count).astype(np.float32)),
        "values": torch.from_numpy(rollout.values.reshape(count).astype(np.float32)),
        "advantages": torch.from_numpy(advantages.reshape(count)),
        "returns": torch.from_numpy(returns.reshape(count).astype(np.float32)),
    }
    rng = np.random.default_rng()
    rng.bit_generator.state = new_state.rng_state
    sums = {"policy_loss": 0.0, "value_loss": 0.0, "entropy": 0.0, "approx_kl": 0.0, "clip": 0.0}
    batches = 0
    epochs = 0
    stop = False
    for _ in range(config.n_epochs):
        order = rng.permutation(count)
        epochs += 1
        for start in range(0, count, config.batch_size):
            index = torch.from_numpy(order[start : start + config.batch_size])
            batch = {name: tensor[index] for name, tensor in tensors.items()}
            loss, parts = ppo_loss(module, batch, config, clip_range)
            if config.target_kl is not None and parts["approx_kl"] > 1.5 * config.target_kl:
                stop = True  # as SB3: the minibatch that crosses the bound is not applied
                break
            if not torch.isfinite(loss):
                raise PPOUpdateError(f"non-finite loss {loss.item()} in epoch {epochs}")
            optimizer.zero_grad()
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm)
            if not torch.isfinite(grad_norm):
                raise PPOUpdateError(f"non-finite gradient norm in epoch {epochs}")
            optimizer.step()
            for name in sums:
                sums[name] += parts[name]
            batches += 1
        if stop:
            break
    new_theta = module.flat_into(theta)
    if not np.isfinite(new_theta).all():
        raise PPOUpdateError("non-finite parameters after the update")
    moved = float(np.linalg.norm(new_theta.astype(np.float64) - theta.astype(np.float64)))
    if moved > config.max_update_norm:
        raise PPOUpdateError(
            f"exploding update: parameters moved {moved:.3g} (L2), max_update_norm is "
            f"{config.max_update_norm:g}"
        )
    _store_adam(optimizer, params, new_state)
    new_state.rng_state = rng.bit_generator.state
    new_state.updates += 1
    if spec.normalize_obs:
        # Statistics move after the update: the update used the ones the rollout acted with.
        update_obs_stats(new_state, rollout.obs)
        spec.view(new_theta, "obs_mean")[:] = new_state.obs_mean.astype(np.float32)
        spec.view(new_theta, "obs_var")[:] = new_state.obs_var.astype(np.float32)
    share = max(batches, 1)
    info = UpdateInfo(
        policy_loss=sums["policy_loss"] / share,
        value_loss=sums["value_loss"] / share,
        entropy=sums["entropy"] / share,
        approx_kl=sums["approx_kl"] / share,
        clip_fraction=sums["clip"] / share,
        learning_rate=learning_rate,
        epochs=epochs,
    )
    return new_theta, new_state, info


def ppo_loss(
    module: Any, batch: dict[str, Any], config: PPOConfig, clip_range: float
) -> tuple[Any, dict[str, float]]:
    """SB3's PPO loss on one minibatch: clipped surrogate + vf_coef * value loss
    - ent_coef * entropy; returns (loss tensor, diagnostics)."""
    import torch

    log_probs, entropy, values = module.evaluate(batch["obs"], batch["actions"])
    advantages = batch["advantages"]
    if config.normalize_advantage and len(advantages) > 1:
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    log_ratio = log_probs - batch["log_probs"]
    ratio = torch.exp(log_ratio)
    surrogate = advantages * ratio
    clipped = advantages * torch.clamp(ratio, 1 - clip_range, 1 + clip_range)
    policy_loss = -torch.min(surrogate, clipped).mean()
    if config.clip_range_vf is not None:
        old = batch["values"]
        values = old + torch.clamp(values - old, -config.clip_range_vf, config.clip_range_vf)
    value_loss = torch.nn.functional.mse_loss(batch["returns"], values)
    entropy_loss = -entropy.mean()
    loss = policy_loss + config.ent_coef * entropy_loss + config.vf_coef * value_loss
    with torch.no_grad():
        approx_kl = float(((ratio - 1) - log_ratio).mean())
        clip_fraction = float(((ratio - 1).abs() > clip_range).float().mean())
    return loss, {
        "policy_loss": policy_loss.item(),
        "value_loss": value_loss.item(),
        "entropy": -entropy_loss.item(),
        "approx_kl": approx_kl,
        "clip": clip_fraction,
    }


def _load_adam(optimizer: Any, params: list[Any], state: PPOState) -> None:
    if state.adam_step == 0:
        return
    import torch

    offset = 0
    for param in params:
        size = param.numel()
        optimizer.state[param] = {
            "step": torch.tensor(float(state.adam_step)),
            "exp_avg": torch.from_numpy(state.adam_m[offset : offset + size].copy()).view_as(param),
            "exp_avg_sq": torch.from_numpy(state.adam_v[offset : offset + size].copy()).view_as(
                param
            ),
        }
        offset += size


def _store_adam(optimizer: Any, params: list[Any], state: PPOState) -> None:
    parts_m, parts_v, step = [], [], state.adam_step
    for param in params:
        entry = optimizer.state.get(param)
        if not entry:  # no step taken (e.g. target_kl stopped the first minibatch)
            return
        parts_m.append(entry["exp_avg"].detach().numpy().ravel())
        parts_v.append(entry["exp_avg_sq"].detach().numpy().ravel())
        step = int(entry["step"])
    state.adam_m = np.concatenate(parts_m).astype(np.float32)
    state.adam_v = np.concatenate(parts_v).astype(np.float32)
    state.adam_step = step


def check_config(config: PPOConfig) -> None:
    """Raise ConfigError naming the first PPO setting out of range."""
    from coevo.errors import ConfigError

    def need(name: str, ok: bool, allowed: str) -> None:
        if not ok:
            value = getattr(config, name)
            raise ConfigError(f"optimizer.{name}", f"must be {allowed}, got {value!r}")

    def is_int(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    def is_num(value: Any) -> bool:
        return isinstance(value, int | float) and not isinstance(value, bool)

    need("n_envs", is_int(config.n_envs) and config.n_envs >= 1, "an integer >= 1")
    need("n_steps", is_int(config.n_steps) and config.n_steps >= 1, "an integer >= 1")
    need("batch_size", is_int(config.batch_size) and config.batch_size >= 2, "an integer >= 2")
    need("n_epochs", is_int(config.n_epochs) and config.n_epochs >= 1, "an integer >= 1")
    need("gamma", is_num(config.gamma) and 0.0 <= config.gamma <= 1.0, "in [0, 1]")
    need("gae_lambda", is_num(config.gae_lambda) and 0.0 <= config.gae_lambda <= 1.0, "in [0, 1]")
    need("clip_range", is_num(config.clip_range) and config.clip_range > 0, "a number > 0")
    need(
        "clip_range_vf",
        config.clip_range_vf is None or (is_num(config.clip_range_vf) and config.clip_range_vf > 0),
        "null or a number > 0",
    )
    need("ent_coef", is_num(config.ent_coef) and math.isfinite(config.ent_coef), "a number")
    need("vf_coef", is_num(config.vf_coef) and config.vf_coef >= 0, "a number >= 0")
    need("max_grad_norm", is_num(config.max_grad_norm) and config.max_grad_norm > 0, "> 0")
    need("learning_rate", is_num(config.learning_rate) and config.learning_rate > 0, "> 0")
    need("schedule", config.schedule in ("constant", "linear"), "one of: constant, linear")
    need("anneal_updates", is_int(config.anneal_updates) and config.anneal_updates >= 0, ">= 0")
    if config.schedule == "linear":
        need("anneal_updates", config.anneal_updates >= 1, ">= 1 with schedule linear")
    need("normalize_advantage", isinstance(config.normalize_advantage, bool), "true or false")
    need(
        "target_kl",
        config.target_kl is None or (is_num(config.target_kl) and config.target_kl > 0),
        "null or a number > 0",
    )
    need("max_update_norm", is_num(config.max_update_norm) and config.max_update_norm > 0, "> 0")
