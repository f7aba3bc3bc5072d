"""`ActorCriticSpec`'s network for P pairs at once, in torch, for the PPO learner (a
spec's encoder, such as the conv actor-critic's, runs first: `spec.encode_torch`).

The pairs' trainable parameters are one tensor [P, N] (each row the trainable tail of a
pair's flat vector, in the spec's layout); every layer is a batched matmul over the pair
dimension and every loss term a reduction within a pair's row, so one forward and one
backward serve all P pairs, and a pair's numbers are the same whichever pairs sit beside it
(the learner's tests check them bit for bit). For small MLPs the per-op overhead of torch,
not arithmetic, is the cost: P pairs in one op cost about as much as one.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

from coevo.policies.actor_critic import SDE_EPSILON, ActorCriticSpec

_LOG_2PI = math.log(2.0 * math.pi)


@dataclass(frozen=True)
class _Linear:
    weight: int  # offsets into the trainable tail
    bias: int
    stop: int
    fan_out: int
    fan_in: int


class StackedActorCritic:
    """The spec's function on stacked parameters: `evaluate(params [P, N], obs [P, B, D],
    actions [P, B] or [P, B, A]) -> (log-probs, entropies, values)`, each [P, B]."""

    def __init__(self, spec: ActorCriticSpec):
        self.spec = spec
        trainable = [s for s in spec.segments.values() if s.trainable]
        # Observation statistics (not trainable) come first; the rest is one block.
        self.start = trainable[0].start
        if any(s.start != t.stop for t, s in zip(trainable, trainable[1:], strict=False)):
            raise ValueError("the spec's trainable segments are not contiguous")
        self.size = spec.num_params - self.start
        self.layers: dict[str, _Linear] = {}
        for name, segment in spec.segments.items():
            if name.endswith(".weight"):
                layer = name[: -len(".weight")]
                bias = spec.segments[f"{layer}.bias"]
                fan_out, fan_in = segment.shape
                self.layers[layer] = _Linear(
                    segment.start - self.start,
                    bias.start - self.start,
                    bias.stop - self.start,
                    fan_out,
                    fan_in,
                )
        if not spec.discrete:
            log_std = spec.segments["log_std"]
            self.log_std = (log_std.start - self.start, log_std.stop - self.start)

    @functools.cached_property
    def _activation(self) -> Any:
        import torch

        return {"tanh": torch.tanh, "relu": torch.relu}[self.spec.activation]

    def _linear(self, params: Any, h: Any, name: str) -> Any:
        weight, bias = self._layer(params, name)
        return _pair_matmul(h, weight, bias.unsqueeze(1))

    def _trunk(self, params: Any, h: Any, prefix: str) -> Any:
        for index in range(len(self.spec.hidden)):
            h = self._activation(self._linear(params, h, f"{prefix}.{index}"))
        return h

    def forward(self, params: Any, obs: Any) -> tuple[Any, Any]:
        """(logits or Gaussian means [P, B, A], values [P, B]) of normalised observations."""
        out, values, _ = self._forward(params, obs)
        return out, values

    def _layer(self, params: Any, name: str) -> tuple[Any, Any]:
        """Each pair's (weight [P, out, in], bias [P, out]) of layer `name`."""
        layer = self.layers[name]
        pairs = params.shape[0]
        weight = params[:, layer.weight : layer.bias].view(pairs, layer.fan_out, layer.fan_in)
        return weight, params[:, layer.bias : layer.stop]

    def _forward(self, params: Any, obs: Any) -> tuple[Any, Any, Any]:
        obs = self.spec.encode_torch(obs, lambda name: self._layer(params, name))
        pi = self._trunk(params, obs, "pi")
        out = self._linear(params, pi, "action")
        vf = pi if self.spec.shared else self._trunk(params, obs, "vf")
        return out, self._linear(params, vf, "value")[..., 0], pi

    def _sde_std(self, params: Any) -> Any:
        """The exploration matrix's std [P, h_k, A] (exp or expln of log_std)."""
        import torch

        spec = self.spec
        log_std = params[:, self.log_std[0] : self.log_std[1]].view(
            params.shape[0], *spec.log_std_shape
        )
        if spec.use_expln:
            positive = log_std > 0
            safe = torch.where(positive, log_std, 0.0) + SDE_EPSILON
            std = torch.where(positive, torch.log1p(safe) + 1.0, torch.exp(log_std.clamp(max=0.0)))
        else:
            std = log_std.exp()
        return std.expand(-1, -1, spec.act_dim)

    def evaluate(self, params: Any, obs: Any, actions: Any) -> tuple[Any, Any, Any]:
        """(log-probs, entropies, values), each [P, B], of `actions` at normalised `obs`."""
        import torch

        out, values, latent = self._forward(params, obs)
        if self.spec.use_sde:
            # gSDE: per-sample std from the policy features, taken as constants (SB3's
            # learn_features=False); the gradient reaches log_std and the mean.
            std = self._sde_std(params)
            squared = (std * std).transpose(1, 2)  # [P, A, h_k], a layer's weight layout
            variance = _pair_matmul(latent.detach() ** 2, squared, None)
            log_scale = 0.5 * torch.log(variance + SDE_EPSILON)
            z = (actions - out) / log_scale.exp()
            log_probs = (-0.5 * z * z - log_scale - 0.5 * _LOG_2PI).sum(dim=-1)
            entropy = (0.5 + 0.5 * _LOG_2PI + log_scale).sum(dim=-1)
            return log_probs, entropy, values
        if self.spec.discrete:
            log_probs_all = torch.log_softmax(out, dim=-1)
            log_probs = log_probs_all.gather(-1, actions.unsqueeze(-1))[..., 0]
            entropy = -(log_probs_all.exp() * log_probs_all).sum(dim=-1)
            return log_probs, entropy, values
        log_std = params[:, self.log_std[0] : self.log_std[1]].unsqueeze(1)  # [P, 1, A]
        z = (actions - out) / log_std.exp()
        log_probs = (-0.5 * z * z - log_std - 0.5 * _LOG_2PI).sum(dim=-1)
        entropy = (0.5 + 0.5 * _LOG_2PI + log_std).sum(dim=-1).expand_as(log_probs)
        return log_probs, entropy, values


def _pair_matmul(h: Any, weight: Any, bias: Any) -> Any:
    """h [P, B, in] times each pair's weight [P, out, in] transposed (+ bias [P, 1, out])."""
    import torch

    if weight.shape[1] == 1:
        # One output (the value head, a 1-D action) as a product and a sum: torch's batched
        # matmul takes another kernel for it when P == 1, whose bits differ.
        out = (h * weight[:, 0].unsqueeze(1)).sum(dim=-1, keepdim=True)
        return out if bias is None else out + bias
    if bias is None:
        return torch.bmm(h, weight.transpose(1, 2))
    return torch.baddbmm(bias, h, weight.transpose(1, 2))
