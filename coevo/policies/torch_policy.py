"""A policy over any `torch.nn.Module`, batched over B stacked parameter rows.

The module's parameters, in `named_parameters()` order, form the flat float32 vector. A
batch of B rows runs as one `torch.func.vmap` of `functional_call` over the rows. Modules
vmap cannot batch (e.g. `nn.LSTMCell`, TorchScript) run row by row instead.

Determinism: torch's batched kernels give a row different bits when the batch size changes
(measured here: batch 1 takes another kernel). So rows always run in blocks of exactly
`batch_block` rows, the last block padded; with a fixed shape a row's bits depend on its
own inputs only (tests check this), so an episode's return is the same whatever the number
of slots, workers or backend.

Module conventions: `forward(obs)` returns the action logits (discrete) or action means
(continuous) for one unbatched observation (vmap hides the batch), or `(out, value)` when
the module sets `has_value = True`. A recurrent module sets `state_size = S` and takes and
returns a flat state row: `forward(obs, state) -> (out, state)` or `(out, value, state)`.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from torch.func import functional_call, vmap

from coevo.errors import ConfigError
from coevo.policies.base import ActionSpec, ObsNorm, Policy

DEFAULT_BATCH_BLOCK = 64


class TorchPolicy(Policy):
    """A torch module as a coevo policy (see the module docstring for the conventions)."""

    def __init__(
        self,
        module: torch.nn.Module,
        obs_dim: int,
        action: ActionSpec,
        *,
        obs_norm: ObsNorm | None = None,
        log_std_init: float = 0.0,
        batch_block: int = DEFAULT_BATCH_BLOCK,
        source: str = "module",
        start_from_module: bool = False,
    ):
        if batch_block < 1:
            raise ConfigError("policy.batch_block", f"must be an integer >= 1, got {batch_block}")
        self.module = module.eval()
        self.obs_dim = int(obs_dim)
        self.action = action
        self.act_dim = action.size
        self.discrete = action.discrete
        self.obs_norm = obs_norm
        self.log_std_init = float(log_std_init)
        self.batch_block = int(batch_block)
        self.source = source
        # True when the module's weights were loaded from a file (`policy.file`): new pairs
        # and policies start from them, not from random weights.
        self.start_from_module = bool(start_from_module)
        self._read_module(module, source)
        self._batched: Any = None
        self._vmappable: bool | None = None
        self._chain = self._numpy_chain(module)
        # Reused zero-padded inputs of the general path's last block (see `network`).
        self._pads: dict[tuple[int, ...], np.ndarray] = {}
        self._check_output()
        # The loaded weights, taken now: later load_into_module calls change nothing here.
        self._start = self.flatten() if self.start_from_module else None

    def _read_module(self, module: torch.nn.Module, source: str) -> None:
        """The module's state size, value head, scripting and parameter shapes; a
        ConfigError for a module this policy cannot run or has nothing to optimize."""
        self.state_size = int(getattr(module, "state_size", 0) or 0)
        self.has_value = bool(getattr(module, "has_value", False))
        # TorchScript cannot be called functionally: it runs per distinct parameter vector.
        self.scripted = isinstance(module, torch.jit.ScriptModule)
        if self.scripted and (self.state_size or self.has_value):
            raise ConfigError(
                "policy.torchscript",
                f"{source}: recurrent or value-head TorchScript modules are not supported",
            )
        self.shapes: tuple[tuple[str, tuple[int, ...]], ...] = tuple(
            (name, tuple(p.shape)) for name, p in module.named_parameters()
        )
        if not self.shapes:
            raise ConfigError(
                "policy.module", f"{source} has no parameters: nothing to optimize or load"
            )
        self._sizes = tuple(int(np.prod(shape)) for _, shape in self.shapes)

    def _numpy_chain(self, module: torch.nn.Module) -> list | None:
        """The module as a numpy program (`_numpy_program`), or None: it runs by vmap."""
        # A module made of Linear layers, tanh / relu and sums of them (an MLP, an SB3 actor,
        # a residual MLP with its own forward) runs as a numpy program instead: the same
        # function, with stacked matmuls that keep rows bit-stable like the numpy MLP,
        # without vmap's per-call cost (~0.2 ms per block here, benchmarks/policy_throughput.py).
        if self.state_size or self.has_value or self.scripted:
            return None
        return _numpy_program(module, dict(zip(self._names(), self._offsets(), strict=True)))

    # -- flat <-> module ------------------------------------------------------------------------
    @property
    def num_network_params(self) -> int:
        """The number of the module's parameters."""
        return int(sum(self._sizes))

    def unflatten(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        """Views of a flat [P] or stacked [B, P] tensor as the module's named parameters."""
        out, offset = {}, 0
        lead = flat.shape[:-1]
        for (name, shape), size in zip(self.shapes, self._sizes, strict=True):
            out[name] = flat[..., offset : offset + size].reshape(*lead, *shape)
            offset += size
        return out

    def flatten(self, module: torch.nn.Module | None = None) -> np.ndarray:
        """A module's parameters (this policy's own by default) as one float32 vector."""
        named = dict((module or self.module).named_parameters())
        parts = [named[name].detach().reshape(-1).float().cpu() for name, _ in self.shapes]
        return torch.cat(parts).numpy().astype(np.float32)

    def init_from_module(self) -> np.ndarray:
        """The module's current weights as a full parameter vector (log_std at its init)."""
        extra = np.full(self.action.extra_params, self.log_std_init, dtype=np.float32)
        return np.concatenate([self.flatten(), extra]).astype(np.float32)

    def signature(self) -> tuple:
        """Equal for policies that may share one worker skeleton (only parameters differ)."""
        if self.scripted:
            return ("torchscript", id(self))
        buffers = tuple(
            (name, tuple(b.shape), b.detach().cpu().numpy().tobytes())
            for name, b in self.module.named_buffers()
        )
        kind = type(self.module)
        return (
            f"{kind.__module__}.{kind.__qualname__}",
            # Its layers and activations: one class may wrap different functions (SB3
            # actors of one shape differing in activation_fn were judged as one).
            repr(self.module),
            self.shapes,
            buffers,
            self.obs_dim,
            self.action,
            self.obs_norm,
            self.state_size,
            self.has_value,
            self.batch_block,
        )

    def load_into_module(self, flat: np.ndarray, module: torch.nn.Module | None = None) -> None:
        """Copy a flat vector (network part) into the module's parameters in place."""
        target = module or self.module
        tensor = torch.as_tensor(np.asarray(flat, dtype=np.float32)[: self.num_network_params])
        named = dict(target.named_parameters())
        with torch.no_grad():
            for name, value in self.unflatten(tensor).items():
                named[name].copy_(value)

    def init_network(self, rng: np.random.Generator) -> np.ndarray:
        """Matrices ~ N(0, 1/fan_in), vectors zero: a function of `rng` alone (not torch's);
        the module's own weights when it was loaded from a file (`start_from_module`)."""
        if self._start is not None:
            return self._start.copy()
        parts = []
        for (_, shape), size in zip(self.shapes, self._sizes, strict=True):
            if len(shape) >= 2:
                fan_in = int(np.prod(shape[1:]))
                parts.append(rng.standard_normal(size) / np.sqrt(fan_in))
            else:
                parts.append(np.zeros(size))
        return np.concatenate(parts).astype(np.float32) if parts else np.zeros(0, np.float32)

    # -- forward --------------------------------------------------------------------------------
    def _call(self, params: Mapping[str, torch.Tensor], obs, state):
        args = (obs, state) if self.state_size else (obs,)
        returned = functional_call(self.module, dict(params), args)
        result: tuple[Any, ...] = returned if isinstance(returned, tuple) else (returned,)
        out = result[0]
        value = result[1] if self.has_value else None
        next_state = result[-1] if self.state_size else None
        if value is None:
            value = out.new_zeros(())
        if next_state is None:
            next_state = out.new_zeros((0,))
        return out, value.reshape(()), next_state

    def _batched_call(self):
        if self._batched is None:
            self._batched = vmap(self._call)
        return self._batched

    def _run_rows(self, params: torch.Tensor, obs: torch.Tensor, state: torch.Tensor):
        """One block: vmap over rows, or row by row where the module cannot be vmapped."""
        if self._vmappable is not False:
            try:
                result = self._batched_call()(self.unflatten(params), obs, state)
                self._vmappable = True
                return result
            except RuntimeError:
                if self._vmappable:
                    raise
                self._vmappable = False
        outs, values, states = [], [], []
        for row in range(params.shape[0]):
            out, value, next_state = self._call(self.unflatten(params[row]), obs[row], state[row])
            outs.append(out)
            values.append(value)
            states.append(next_state)
        return torch.stack(outs), torch.stack(values), torch.stack(states)

    def _network_scripted(self, params: np.ndarray, obs: np.ndarray):
        """Rows grouped by parameter vector; each group in fixed blocks of batched obs."""
        block = self.batch_block
        out = np.zeros((obs.shape[0], self.action.outputs), dtype=np.float32)
        vectors, inverse = np.unique(params, axis=0, return_inverse=True)
        with torch.inference_mode():
            for group, vector in enumerate(vectors):
                self.load_into_module(vector)
                rows = np.flatnonzero(inverse.ravel() == group)
                for start in range(0, rows.size, block):
                    chosen = rows[start : start + block]
                    batch = _padded(obs[chosen], block)
                    result = self.module(torch.from_numpy(batch))
                    out[chosen] = result[: chosen.size].reshape(chosen.size, -1).numpy()
        return out, np.zeros((obs.shape[0], 0), dtype=np.float32), None

    def _names(self) -> list[str]:
        return [name for name, _ in self.shapes]

    def _offsets(self) -> list[tuple[int, tuple[int, ...]]]:
        offsets, at = [], 0
        for (_, shape), size in zip(self.shapes, self._sizes, strict=True):
            offsets.append((at, shape))
            at += size
        return offsets

    def _network_chain(self, chain: list, params: np.ndarray, obs: np.ndarray):
        """Run the numpy program: register k holds instruction k's output, -1 the obs."""
        batch = obs.shape[0]
        values: list[np.ndarray] = []
        obs = obs.astype(np.float32, copy=False)

        def arg(k: int) -> np.ndarray:
            return obs if k < 0 else values[k]

        for op, inputs, weight, bias in chain:
            h = arg(inputs[0])
            if op == "linear":
                (at, (rows, cols)) = weight
                w = params[:, at : at + rows * cols].reshape(batch, rows, cols)
                # Stacked matmul: each row's bits are independent of the batch around it.
                h = np.matmul(w, h[:, :, None])[:, :, 0]
                if bias is not None:
                    h = h + params[:, bias[0] : bias[0] + rows]
            elif op == "tanh":
                h = np.tanh(h)
            elif op == "relu":
                h = np.maximum(h, np.float32(0.0))
            elif op == "add":
                h = h + arg(inputs[1])
            values.append(h)
        return values[-1] if values else obs, np.zeros((batch, 0), dtype=np.float32), None

    def network(self, params, obs, state):
        """The module's outputs, states and values for `obs`, each row with its own parameters."""
        if self._chain is not None:
            return self._network_chain(self._chain, params, obs)
        if self.scripted:
            return self._network_scripted(params, obs)
        batch, block = obs.shape[0], self.batch_block
        outs, values, states = [], [], []
        with torch.inference_mode():
            for start in range(0, batch, block):
                stop = min(start + block, batch)
                rows = stop - start
                p, o, s = params[start:stop], obs[start:stop], state[start:stop]
                if rows < block:  # pad to the fixed block shape (see the module docstring)
                    p, o, s = (self._padded(i, a, block) for i, a in enumerate((p, o, s)))
                out, value, next_state = self._run_rows(
                    torch.from_numpy(np.ascontiguousarray(p, dtype=np.float32)),
                    torch.from_numpy(np.ascontiguousarray(o, dtype=np.float32)),
                    torch.from_numpy(np.ascontiguousarray(s, dtype=np.float32)),
                )
                outs.append(out[:rows].reshape(rows, -1).numpy())
                values.append(value[:rows].numpy())
                states.append(next_state[:rows].reshape(rows, -1).numpy())
        value = np.concatenate(values) if self.has_value else None
        return np.concatenate(outs), np.concatenate(states).astype(np.float32), value

    def _padded(self, role: int, array: np.ndarray, rows: int) -> np.ndarray:
        """`array` in the first rows of a reused [rows, ...] buffer, zeros below; one buffer
        per input `role` (params, obs, state). The results never point into it: `network`
        concatenates them into new arrays."""
        key = (role, rows, *array.shape[1:])
        buffer = self._pads.get(key)
        if buffer is None:
            buffer = self._pads[key] = np.zeros(key[1:], dtype=np.float32)
        used = array.shape[0]
        buffer[:used] = array
        buffer[used:] = 0.0
        return buffer

    def _check_output(self) -> None:
        """One probe forward: the output must fit the action space (fails at build time)."""
        params = self.init_from_module()[None]  # the module's own weights: left as they are
        obs = np.zeros((1, self.obs_dim), dtype=np.float32)
        try:
            out, state, _ = self.network(
                params[:, : self.num_network_params], obs, self.initial_state(1)
            )
        except Exception as error:
            raise ConfigError(
                "policy.module",
                f"{self.source} fails on an observation of shape ({self.obs_dim},): {error!r}"
                + self._input_mismatch(),
            ) from None
        if out.shape != (1, self.action.outputs):
            raise ConfigError(
                "policy.module",
                f"{self.source} outputs shape {tuple(out.shape[1:])} per observation; the "
                f"action space needs ({self.action.outputs},)",
            )
        if state.shape != (1, self.state_size):
            raise ConfigError(
                "policy.module",
                f"{self.source} returns a state of shape {tuple(state.shape[1:])}; its "
                f"state_size says ({self.state_size},)",
            )

    def _input_mismatch(self) -> str:
        """A likely cause of a failed probe, added to its error: the first Linear layer
        declared takes another input size than the env's observations have (numpy's matmul
        error says it in its own terms). Declared first need not mean run first: a hint."""
        import torch

        for name, layer in self.module.named_modules():
            if isinstance(layer, torch.nn.Linear):
                if layer.in_features == self.obs_dim:
                    return ""
                return (
                    f"; its first declared Linear layer ({name or 'the module'}: "
                    f"{layer.in_features} -> {layer.out_features}) takes {layer.in_features} "
                    f"inputs, the env's observations have {self.obs_dim} values"
                )
        return ""

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_batched"] = None  # a vmapped closure: rebuilt where it runs
        state["_pads"] = {}
        return state


_ACTIVATIONS = {
    torch.nn.Tanh: "tanh",
    torch.nn.ReLU: "relu",
    torch.tanh: "tanh",
    torch.relu: "relu",
    torch.nn.functional.tanh: "tanh",
    torch.nn.functional.relu: "relu",
    "tanh": "tanh",  # tensor methods: x.tanh(), x.relu()
    "relu": "relu",
}
_PASS_THROUGH = (torch.nn.Identity, torch.nn.Flatten, torch.nn.Dropout)  # eval mode: no-ops


def _numpy_program(module: torch.nn.Module, offsets: dict[str, tuple[int, tuple[int, ...]]]):
    """The module as a list of numpy instructions [(op, inputs, weight, bias)], or None.

    Read from the module's own `forward` by torch.fx: every call must be a Linear layer,
    tanh / relu (modules, functions or tensor methods), Identity / Flatten / Dropout, or the
    sum of two earlier values; anything else (or a forward fx cannot trace) leaves the
    module to vmap. Instruction k's output is register k; input -1 is the observation.
    """
    import torch.fx

    try:
        graph = torch.fx.symbolic_trace(module).graph
    except Exception:  # data-dependent control flow, unsupported calls: the general path
        return None
    submodules = dict(module.named_modules())
    program: list = []
    register: dict[Any, int] = {}
    inputs_seen = 0
    for node in graph.nodes:
        if node.op == "placeholder":
            inputs_seen += 1
            if inputs_seen > 1:
                return None
            register[node] = -1
            continue
        if node.op == "output":
            result = node.args[0]
            if not isinstance(result, torch.fx.Node) or result not in register:
                return None
            # The result must be the last instruction's (not the observation or an earlier
            # value: rare, left to vmap).
            return program if program and register[result] == len(program) - 1 else None
        instruction = _instruction(node, submodules, offsets, register)
        if instruction is None:
            return None
        if isinstance(instruction, int):  # a no-op: the node's value is its input's
            register[node] = instruction
            continue
        program.append(instruction)
        register[node] = len(program) - 1
    return None


def _instruction(
    node: Any, submodules: dict, offsets: dict, register: dict[Any, int]
) -> tuple | int | None:
    """A traced call's instruction (op, inputs, weight, bias); the register of its input
    for a no-op (Identity, Flatten, Dropout); None for a call the numpy path cannot run."""
    import torch.fx

    args = node.args
    sources = [a for a in args if isinstance(a, torch.fx.Node)]
    if any(a not in register for a in sources) or node.kwargs.get("inplace"):
        return None
    other_kwargs = {k: v for k, v in node.kwargs.items() if k != "inplace"}
    if other_kwargs:
        return None
    instruction = None
    if node.op == "call_module":
        sub = submodules.get(node.target)
        if len(args) != 1 or len(sources) != 1:
            return None
        if isinstance(sub, torch.nn.Linear):
            bias = offsets[f"{node.target}.bias"] if sub.bias is not None else None
            instruction = ("linear", offsets[f"{node.target}.weight"], bias)
        elif type(sub) in _ACTIVATIONS:
            instruction = (_ACTIVATIONS[type(sub)], None, None)
        elif type(sub) in _PASS_THROUGH:
            return register[sources[0]]
    elif node.op in ("call_function", "call_method"):
        key = node.target
        if key in (operator.add, torch.add) and len(args) == 2 and len(sources) == 2:
            return ("add", (register[args[0]], register[args[1]]), None, None)
        if len(args) == 1 and len(sources) == 1 and _hashable(key) in _ACTIVATIONS:
            instruction = (_ACTIVATIONS[key], None, None)
    if instruction is None:
        return None
    op, weight, bias = instruction
    return (op, (register[sources[0]],), weight, bias)


def _hashable(key: Any) -> Any:
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _padded(array: np.ndarray, rows: int) -> np.ndarray:
    out = np.zeros((rows, *array.shape[1:]), dtype=np.float32)
    out[: array.shape[0]] = array
    return out
