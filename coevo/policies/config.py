"""`policy:` settings: which policy kind (coevo/policies/registry.py) and its options.

Beside the policies it configures, so the registry reads its defaults without importing the
run's config (coevo/config.py imports this module).
"""

from __future__ import annotations

from dataclasses import dataclass

from coevo.errors import ConfigError
from coevo.settings import Checked, setting


@dataclass(frozen=True)
class PolicyConfig(Checked):
    """Which policy kind (coevo/policies/registry.py) and its options."""

    section = "policy"

    name: str = setting(
        "mlp",
        doc="mlp, torch, gru, lstm, actor_critic, conv_actor_critic, a kind a user "
        "registered, or package.module:builder",
    )
    hidden: tuple[int, ...] = setting(
        (16,), doc="mlp layers; gru/lstm: layers before the cell, then its size"
    )
    activation: str = setting("tanh", choices=("tanh", "relu"))
    action: str | None = setting(
        None,
        choices=("argmax", "sample", "deterministic", "gaussian"),
        doc="discrete: argmax (default) or sample; continuous: deterministic (default) or gaussian",
    )
    bounds: str = setting(
        "tanh", choices=("clip", "tanh"), doc="continuous actions into the bounds: squash or clip"
    )
    log_std_init: float = setting(
        0.0, low=-20.0, high=2.0, doc="gaussian: initial log standard deviation (learned)"
    )
    module: str | None = setting(None, doc='name=torch: "package.module:Class" of an nn.Module')
    kwargs: dict = setting(factory=dict, doc="name=torch: the module's constructor keywords")
    file: str | None = setting(None, doc="name=torch: a state_dict to start from")
    batch_block: int = setting(
        64, low=1, doc="torch kinds: rows per fixed-shape forward (part of the policy)"
    )
    start_from: str | None = setting(
        None,
        doc="parameters new policies start from: a .npy vector, or a run directory / "
        "checkpoint file [:NAME of one of its policies]; null: the policy's own init",
    )

    def check(self) -> None:
        """Refuse two sources of starting weights.

        Raises:
            ConfigError: If both `file` and `start_from` are set.
        """
        if self.file and self.start_from:  # both say where the weights come from
            raise ConfigError(
                "policy.start_from",
                f"give one source of starting weights: policy.file ({self.file}, the torch "
                f"module's state_dict) or policy.start_from ({self.start_from}), not both",
            )
