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

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from coevo.optimizers.ppo_config import PPOConfig
from coevo.optimizers.ppo_network import StackedActorCritic
from coevo.policies.actor_critic import ActorCriticSpec

# SB3's Adam epsilon for PPO (torch's default is 1e-8); torch's default betas.
ADAM_EPS = 1e-5
ADAM_BETAS = (0.9, 0.999)
# SB3's RunningMeanStd starts with this count, so the first batch sets the statistics.
RUNNING_COUNT_INIT = 1e-4


class PPOUpdateError(RuntimeError):
    """A pair's update failed (non-finite loss, gradients or parameters, or an update larger
    than `max_update_norm`); the message is the reason recorded for the pair."""


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
        """The number of steps in the rollout."""
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
        """A fresh state: zero Adam moments, no updates yet, a generator seeded by `seed`.

        Args:
            spec: The actor-critic's spec.
            seed: The seed of the state's generator.

        Returns:
            The state.
        """
        trainable = int(spec.trainable_mask.sum())
        return cls(
            adam_m=np.zeros(trainable, dtype=np.float32),
            adam_v=np.zeros(trainable, dtype=np.float32),
            adam_step=0,
            updates=0,
            rng_state=dict(np.random.default_rng(seed).bit_generator.state),
            obs_mean=np.zeros(spec.obs_dim, dtype=np.float64),
            obs_var=np.ones(spec.obs_dim, dtype=np.float64),
            obs_count=RUNNING_COUNT_INIT,
        )

    def copy(self) -> PPOState:
        """A deep copy of the state."""
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
    """Diagnostics of one update, as SB3's `train/*` defines them: means over every
    minibatch (the one that crosses target_kl included), except approx_kl, the last
    epoch's mean; explained_variance of the rollout's values for its returns; std (SB3
    logs it for policies with a log_std) the mean exp(log_std) after the update."""

    policy_loss: float = float("nan")
    value_loss: float = float("nan")
    entropy: float = float("nan")
    approx_kl: float = float("nan")
    clip_fraction: float = float("nan")
    explained_variance: float = float("nan")
    std: float = float("nan")  # continuous actions: mean of exp(log_std) after the update
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


@dataclass
class Updated:
    """One pair's outcome of `update_many`: the new vector, state and diagnostics, or the
    reason the update was refused (`error`; the caller keeps the old weights and state)."""

    theta: np.ndarray | None = None
    state: PPOState | None = None
    info: UpdateInfo | None = None
    error: str = ""


def update(
    spec: ActorCriticSpec,
    config: PPOConfig,
    theta: np.ndarray,
    state: PPOState,
    rollout: Rollout,
) -> tuple[np.ndarray, PPOState, UpdateInfo]:
    """One PPO update of `theta` on `rollout`; returns (new theta, new state, info).

    `state` is not modified (a failed update leaves the pair exactly as it was); raises
    `PPOUpdateError` with the reason when the update is non-finite or exploding. The same
    computation as `update_many` with one pair.
    """
    (done,) = update_many(spec, config, [theta], [state], [rollout])
    if done.error:
        raise PPOUpdateError(done.error)
    assert done.theta is not None and done.state is not None and done.info is not None
    return done.theta, done.state, done.info


def _refuse(
    active: np.ndarray,
    finite: np.ndarray,
    errors: list[str],
    epochs: np.ndarray,
    reason: str,
    shown: np.ndarray | None = None,
) -> None:
    """Stop (in place) the active pairs whose `finite` is False, each with `reason` (and its
    own value of `shown`) as its error."""
    for pair in np.flatnonzero(active & ~finite):
        value = "" if shown is None else f" {float(shown[pair])}"
        errors[pair] = f"{reason}{value} in epoch {epochs[pair]}"
    active &= finite


def update_many(
    spec: ActorCriticSpec,
    config: PPOConfig,
    thetas: Sequence[np.ndarray],
    states: Sequence[PPOState],
    rollouts: Sequence[Rollout],
) -> list[Updated]:
    """One PPO update for each pair (same spec and settings), in batched torch computations.

    Pairs whose rollouts have the same number of steps are updated together: their
    parameters, Adam moments and minibatches stacked along a leading pair dimension. Every
    per-pair quantity stays per pair (minibatch order from the pair's own generator,
    advantage normalisation, gradient-norm clipping, Adam's step count, learning rate and
    clip range from the pair's own update count, the target_kl stop, refusals), so a pair
    gets the same result alone or beside others. The states given are not modified.
    """
    import torch

    outcomes: list[Updated | None] = [None] * len(thetas)
    gaes: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    groups: dict[int, list[int]] = {}  # pairs by rollout size
    for index, rollout in enumerate(rollouts):
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
            outcomes[index] = Updated(
                error="non-finite advantages (rewards or values of the rollout)"
            )
            continue
        gaes[index] = advantages, returns
        groups.setdefault(rollout.num_steps, []).append(index)
    threads = torch.get_num_threads()
    # One thread: the small MLPs gain nothing from more on a shared machine, and results
    # must not depend on the thread count of the process that runs the learner.
    torch.set_num_threads(1)
    try:
        for members in groups.values():
            done = _update_group(
                spec,
                config,
                [thetas[i] for i in members],
                [states[i] for i in members],
                [rollouts[i] for i in members],
                [gaes[i] for i in members],
            )
            for index, outcome in zip(members, done, strict=True):
                outcomes[index] = outcome
    finally:
        torch.set_num_threads(threads)
    return [outcome or Updated(error="not updated") for outcome in outcomes]


_DIAGNOSTICS = ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction")
_KL_ROW = _DIAGNOSTICS.index("approx_kl")


def _update_group(
    spec: ActorCriticSpec,
    config: PPOConfig,
    thetas: list[np.ndarray],
    states: list[PPOState],
    rollouts: list[Rollout],
    gaes: list[tuple[np.ndarray, np.ndarray]],
) -> list[Updated]:
    """`update_many` for pairs whose rollouts have the same size."""
    group = _GroupUpdate(spec, config, thetas, states, rollouts, gaes)
    for _ in range(config.n_epochs):
        if not group.active.any():
            break
        group.epoch()
    return [
        group.outcome(pair, theta, state, rollout)
        for pair, (theta, state, rollout) in enumerate(zip(thetas, states, rollouts, strict=True))
    ]


def _batch_tensors(
    spec: ActorCriticSpec,
    thetas: list[np.ndarray],
    rollouts: list[Rollout],
    gaes: list[tuple[np.ndarray, np.ndarray]],
) -> dict[str, Any]:
    """The pairs' rollouts as stacked tensors [P, T * E, ...], observations normalised."""
    import torch

    count = rollouts[0].num_steps

    def stacked(arrays: list[np.ndarray], dtype: Any) -> Any:
        return torch.from_numpy(np.ascontiguousarray(np.stack(arrays), dtype=dtype))

    obs = [
        spec.normalize(theta[None], rollout.obs.reshape(count, -1))
        for theta, rollout in zip(thetas, rollouts, strict=True)
    ]
    if spec.discrete:
        actions = stacked([r.actions.reshape(count) for r in rollouts], np.int64)
    else:
        actions = stacked([r.actions.reshape(count, -1) for r in rollouts], np.float32)
    return {
        "obs": stacked(obs, np.float32),
        "actions": actions,
        "log_probs": stacked([r.log_probs.reshape(count) for r in rollouts], np.float32),
        "values": stacked([r.values.reshape(count) for r in rollouts], np.float32),
        "advantages": stacked([adv.reshape(count) for adv, _ in gaes], np.float32),
        "returns": stacked([ret.reshape(count) for _, ret in gaes], np.float32),
    }


def _generator(rng_state: dict[str, Any]) -> np.random.Generator:
    """A generator resumed from a saved bit-generator state."""
    rng = np.random.default_rng()
    rng.bit_generator.state = rng_state
    return rng


class _GroupUpdate:
    """One update of pairs whose rollouts have the same size, stacked along a leading pair
    dimension: parameters, Adam moments, minibatch generators, and the running sums of the
    diagnostics. `active`: the pairs still taking minibatch steps."""

    def __init__(
        self,
        spec: ActorCriticSpec,
        config: PPOConfig,
        thetas: list[np.ndarray],
        states: list[PPOState],
        rollouts: list[Rollout],
        gaes: list[tuple[np.ndarray, np.ndarray]],
    ):
        import torch

        self.spec, self.config = spec, config
        self.net = _network(spec)
        pairs, self.count = len(thetas), rollouts[0].num_steps
        start = self.net.start
        params = torch.from_numpy(np.stack([theta[start:] for theta in thetas]).astype(np.float32))
        self.params = params.requires_grad_(True)
        self.adam_m = torch.from_numpy(np.stack([s.adam_m for s in states]).astype(np.float32))
        self.adam_v = torch.from_numpy(np.stack([s.adam_v for s in states]).astype(np.float32))
        self.adam_steps = np.array([s.adam_step for s in states], dtype=np.int64)
        fractions = np.array([schedule_fraction(config, s.updates) for s in states])
        self.learning_rates = config.learning_rate * fractions
        clip_ranges = torch.from_numpy((config.clip_range * fractions).astype(np.float32))
        self.clip_ranges = clip_ranges[:, None]
        self.tensors = _batch_tensors(spec, thetas, rollouts, gaes)
        self.rngs = [_generator(state.rng_state) for state in states]
        self.active = np.ones(pairs, dtype=bool)
        self.errors = [""] * pairs
        self.epochs = np.zeros(pairs, dtype=np.int64)
        self.sums = np.zeros((len(_DIAGNOSTICS), pairs))
        self.batches = np.zeros(pairs, dtype=np.int64)
        # SB3's approx_kl is its last epoch's mean: summed per epoch, started again at each.
        self.epoch_kl = np.zeros(pairs)
        self.epoch_batches = np.zeros(pairs, dtype=np.int64)
        self.rows = torch.arange(pairs)[:, None]
        self.orders = np.zeros((pairs, self.count), dtype=np.int64)

    def epoch(self) -> None:
        """One pass over each active pair's rollout, in minibatches of its own order."""
        import torch

        active = self.active
        for pair in np.flatnonzero(active):  # only pairs still stepping draw
            self.orders[pair] = self.rngs[pair].permutation(self.count)
            self.epochs[pair] += 1
        self.epoch_kl[active] = 0.0
        self.epoch_batches[active] = 0
        order = torch.from_numpy(self.orders)
        batch_size = self.config.batch_size
        for begin in range(0, self.count, batch_size):
            if not active.any():
                break
            self._minibatch(order[:, begin : begin + batch_size])

    def _minibatch(self, index: Any) -> None:
        """The loss on one minibatch of each pair, counted, then a step where it is finite."""
        import torch

        active, config = self.active, self.config
        batch = {name: tensor[self.rows, index] for name, tensor in self.tensors.items()}
        loss, parts = ppo_loss(self.net, self.params, batch, config, self.clip_ranges)
        values = torch.stack([parts[name] for name in _DIAGNOSTICS]).detach().numpy()
        # As SB3: a minibatch's figures count before the target_kl check (the one that
        # crosses the bound counts, and is not applied).
        self.sums[:, active] += values[:, active]
        self.batches[active] += 1
        self.epoch_kl[active] += values[_KL_ROW, active]
        self.epoch_batches[active] += 1
        if config.target_kl is not None:
            active &= ~(values[_KL_ROW] > 1.5 * config.target_kl)
        losses = loss.detach().numpy()
        _refuse(active, np.isfinite(losses), self.errors, self.epochs, "non-finite loss", losses)
        if active.any():
            self._step(loss)

    def _step(self, loss: Any) -> None:
        """Backward, per-pair gradient clipping, and Adam on the pairs still active."""
        import torch

        active = self.active
        self.params.grad = None
        loss.sum().backward()  # each pair's loss reaches only its own row
        grad = self.params.grad
        assert grad is not None  # backward() just filled it
        norms = torch.linalg.vector_norm(grad, dim=1)
        finite = torch.isfinite(norms).numpy()
        _refuse(active, finite, self.errors, self.epochs, "non-finite gradient norm")
        if not active.any():
            return
        # clip_grad_norm_'s rule, per pair.
        grad = grad * torch.clamp(self.config.max_grad_norm / (norms + 1e-6), max=1.0)[:, None]
        self.adam_steps[active] += 1
        self.adam_m, self.adam_v = _adam_step(
            self.params,
            grad,
            self.adam_m,
            self.adam_v,
            self.adam_steps,
            self.learning_rates,
            active,
        )

    def outcome(self, pair: int, theta: np.ndarray, state: PPOState, rollout: Rollout) -> Updated:
        """A pair's new vector, state and diagnostics, or why its update is refused."""
        if self.errors[pair]:
            return Updated(error=self.errors[pair])
        new_theta = np.array(theta, dtype=np.float32, copy=True)
        new_theta[self.net.start :] = self.params[pair].detach().numpy()
        if not np.isfinite(new_theta).all():
            return Updated(error="non-finite parameters after the update")
        moved = float(np.linalg.norm(new_theta.astype(np.float64) - theta.astype(np.float64)))
        if moved > self.config.max_update_norm:
            return Updated(
                error=f"exploding update: parameters moved {moved:.3g} (L2), "
                f"max_update_norm is {self.config.max_update_norm:g}"
            )
        new_state = self._new_state(pair, state, rollout, new_theta)
        return Updated(new_theta, new_state, self._info(pair, new_theta))

    def _new_state(
        self, pair: int, state: PPOState, rollout: Rollout, new_theta: np.ndarray
    ) -> PPOState:
        """A pair's state after its update; with observation statistics, `new_theta`'s own
        copy of them moved too."""
        new_state = state.copy()
        if self.adam_steps[pair] != state.adam_step:
            new_state.adam_m = self.adam_m[pair].numpy().copy()
            new_state.adam_v = self.adam_v[pair].numpy().copy()
            new_state.adam_step = int(self.adam_steps[pair])
        # The getter builds a new dict (typed as a Mapping).
        new_state.rng_state = cast(dict[str, Any], self.rngs[pair].bit_generator.state)
        new_state.updates += 1
        if self.spec.normalize_obs:
            # Statistics move after the update: the update used the ones the rollout acted with.
            update_obs_stats(new_state, rollout.obs)
            self.spec.view(new_theta, "obs_mean")[:] = new_state.obs_mean.astype(np.float32)
            self.spec.view(new_theta, "obs_var")[:] = new_state.obs_var.astype(np.float32)
        return new_state

    def _info(self, pair: int, new_theta: np.ndarray) -> UpdateInfo:
        """A pair's diagnostics of this update, means as SB3 logs them."""
        spec, sums = self.spec, self.sums
        share = max(int(self.batches[pair]), 1)
        means = {name: float(sums[row, pair]) / share for row, name in enumerate(_DIAGNOSTICS)}
        return UpdateInfo(
            policy_loss=means["policy_loss"],
            value_loss=means["value_loss"],
            entropy=means["entropy"],
            approx_kl=float(self.epoch_kl[pair]) / max(int(self.epoch_batches[pair]), 1),
            clip_fraction=means["clip_fraction"],
            explained_variance=explained_variance(
                self.tensors["values"][pair].numpy(), self.tensors["returns"][pair].numpy()
            ),
            std=float("nan")
            if spec.discrete
            else float(np.exp(spec.view(new_theta, "log_std").astype(np.float64)).mean()),
            learning_rate=float(self.learning_rates[pair]),
            epochs=int(self.epochs[pair]),
        )


def explained_variance(predicted: np.ndarray, returns: np.ndarray) -> float:
    """1 - Var(returns - predicted) / Var(returns), as SB3 logs it (NaN when the returns do
    not vary): how much of the returns' spread the value predictions explain."""
    spread = float(np.var(returns))
    return float("nan") if spread == 0 else float(1 - np.var(returns - predicted) / spread)


def _adam_step(
    params: Any,
    grad: Any,
    adam_m: Any,
    adam_v: Any,
    steps: np.ndarray,
    learning_rates: np.ndarray,
    active: np.ndarray,
) -> tuple[Any, Any]:
    """torch.optim.Adam's update (eps ADAM_EPS, no weight decay), elementwise on the stacked
    rows, with each pair's own step count and learning rate; rows not `active` keep their
    parameters and moments. Returns the new moments; `params` changes in place."""
    import torch

    beta1, beta2 = ADAM_BETAS
    counted = np.maximum(steps, 1).astype(np.float64)
    # As torch: bias corrections in double precision, applied as float32 factors.
    step_sizes = learning_rates / (1.0 - beta1**counted)
    correction2 = np.sqrt(1.0 - beta2**counted)
    new_m = adam_m.lerp(grad, 1.0 - beta1)
    new_v = adam_v.mul(beta2).addcmul_(grad, grad, value=1.0 - beta2)
    denom = (new_v.sqrt() / torch.from_numpy(correction2.astype(np.float32))[:, None]).add_(
        ADAM_EPS
    )
    negative_steps = torch.from_numpy((-step_sizes).astype(np.float32))[:, None]
    with torch.no_grad():
        moved = params + negative_steps * new_m / denom
        if active.all():
            params.copy_(moved)
            return new_m, new_v
        keep = torch.from_numpy(active)[:, None]
        params.copy_(torch.where(keep, moved, params))
    return torch.where(keep, new_m, adam_m), torch.where(keep, new_v, adam_v)


@functools.cache
def _network(spec: ActorCriticSpec) -> StackedActorCritic:
    return StackedActorCritic(spec)


def ppo_loss(
    net: StackedActorCritic,
    params: Any,
    batch: dict[str, Any],
    config: PPOConfig,
    clip_ranges: Any,
) -> tuple[Any, dict[str, Any]]:
    """SB3's PPO loss on one minibatch of each pair: clipped surrogate + vf_coef * value
    loss - ent_coef * entropy. Tensors are [P, B, ...]; `clip_ranges` is [P, 1]. Returns
    (loss [P], diagnostics [P] each: policy_loss, value_loss, entropy, approx_kl,
    clip_fraction)."""
    import torch

    log_probs, entropy, values = net.evaluate(params, batch["obs"], batch["actions"])
    advantages = batch["advantages"]
    if config.normalize_advantage and advantages.shape[1] > 1:
        mean = advantages.mean(dim=1, keepdim=True)
        advantages = (advantages - mean) / (advantages.std(dim=1, keepdim=True) + 1e-8)
    log_ratio = log_probs - batch["log_probs"]
    ratio = torch.exp(log_ratio)
    surrogate = advantages * ratio
    clipped = advantages * torch.clamp(ratio, 1 - clip_ranges, 1 + clip_ranges)
    policy_loss = -torch.min(surrogate, clipped).mean(dim=1)
    if config.clip_range_vf is not None:
        old = batch["values"]
        values = old + torch.clamp(values - old, -config.clip_range_vf, config.clip_range_vf)
    value_loss = ((batch["returns"] - values) ** 2).mean(dim=1)
    entropy_loss = -entropy.mean(dim=1)
    loss = policy_loss + config.ent_coef * entropy_loss + config.vf_coef * value_loss
    with torch.no_grad():
        approx_kl = ((ratio - 1) - log_ratio).mean(dim=1)
        clip_fraction = ((ratio - 1).abs() > clip_ranges).float().mean(dim=1)
    return loss, {
        "policy_loss": policy_loss.detach(),
        "value_loss": value_loss.detach(),
        "entropy": -entropy_loss.detach(),
        "approx_kl": approx_kl,
        "clip_fraction": clip_fraction,
    }
