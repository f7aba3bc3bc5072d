"""PPO's settings (`optimizer=ppo`): the one `PPOConfig`, with each setting's default and
range, read by the plug-in (ppo.py) and the learner (ppo_learner.py) alike."""

from __future__ import annotations

from dataclasses import dataclass

from coevo.errors import ConfigError
from coevo.optimizers.base import OptimizerConfig
from coevo.settings import setting

LEARNER_PLACES = ("driver", "ray")


@dataclass(frozen=True)
class PPOConfig(OptimizerConfig):
    """PPO's settings; names and defaults as Stable-Baselines3's `PPO`."""

    name: str = setting("ppo", doc="registry name or package.module:Class")
    n_envs: int = setting(8, low=1, doc="streams per pair and rollout")
    n_steps: int = setting(256, low=1, doc="steps per stream and rollout (episodes go on)")
    batch_size: int = setting(64, low=2, doc="minibatch size")
    n_epochs: int = setting(10, low=1, doc="passes over each rollout")
    gamma: float = setting(0.99, low=0.0, high=1.0)
    gae_lambda: float = setting(0.95, low=0.0, high=1.0)
    clip_range: float = setting(0.2, low=0.0, open_low=True)
    clip_range_vf: float | None = setting(None, low=0.0, open_low=True, doc="null: unclipped")
    ent_coef: float = setting(0.0, doc="entropy bonus weight (any sign, as SB3)")
    vf_coef: float = setting(0.5, low=0.0)
    max_grad_norm: float = setting(0.5, low=0.0, open_low=True)
    learning_rate: float = setting(3e-4, low=0.0, open_low=True)
    schedule: str = setting(
        "constant", choices=("constant", "linear"), doc="lr and clip range over anneal_updates"
    )
    anneal_updates: int = setting(0, low=0, doc="updates to anneal over (schedule linear)")
    normalize_advantage: bool = setting(True)
    target_kl: float | None = setting(None, low=0.0, open_low=True, doc="null: no early stop")
    max_update_norm: float = setting(
        1e3, low=0.0, open_low=True, doc="an update moving theta farther (L2) is refused"
    )
    learner: str = setting(
        "driver",
        choices=LEARNER_PLACES,
        doc="where updates run: driver, or ray (a Ray task when the cluster has a free CPU)",
    )

    def check(self) -> None:
        """The rule across fields (each field's range is its `setting`)."""
        if self.schedule == "linear" and self.anneal_updates < 1:
            raise ConfigError(
                "optimizer.anneal_updates",
                f"must be >= 1 with schedule linear, got {self.anneal_updates!r}",
            )
