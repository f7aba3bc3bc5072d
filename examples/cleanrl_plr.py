"""A CleanRL-style single-file PPO on CartPole's task space, its tasks from coevo's PLR⊥
sampler used directly: the loop sets each episode's task and reports each finished episode
with its rewards and the critic's values, so PLR⊥ scores levels by positive value loss
(the paper's score), as in coevo's own PPO runs.

    python examples/cleanrl_plr.py           # 100k steps
    python examples/cleanrl_plr.py --small   # a few seconds (what the tests run)
"""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Any

import numpy as np
import torch
from torch import nn

from coevo.curricula.sampler import TaskSampler, sampler
from coevo.tasks import registry


class Agent(nn.Module):
    def __init__(self, obs_dim: int, actions: int):
        super().__init__()
        self.critic = nn.Sequential(nn.Linear(obs_dim, 64), nn.Tanh(), nn.Linear(64, 1))
        self.actor = nn.Sequential(nn.Linear(obs_dim, 64), nn.Tanh(), nn.Linear(64, actions))

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(obs).squeeze(-1)

    def act(self, obs: torch.Tensor, action: torch.Tensor | None = None) -> tuple[Any, ...]:
        dist = torch.distributions.Categorical(logits=self.actor(obs))
        action = dist.sample() if action is None else action
        return action, dist.log_prob(action), dist.entropy(), self.value(obs)


class CurriculumEnvs:
    """`num_envs` envs of the sampler's task space; each reset takes `sampler.sample()`,
    each finished episode goes to `sampler.update` with its rewards and values."""

    def __init__(self, plr: TaskSampler, num_envs: int, seed: int):
        self.plr, self.space = plr, plr.space
        self.envs = [self.space.make_env() for _ in range(num_envs)]
        self.tasks: list[Any] = [None] * num_envs
        self.rewards: list[list[float]] = [[] for _ in range(num_envs)]
        self.values: list[list[float]] = [[] for _ in range(num_envs)]
        self.obs = np.stack([self._reset(i, seed + i) for i in range(num_envs)])

    def _reset(self, i: int, seed: int | None = None) -> np.ndarray:
        self.tasks[i] = self.plr.sample()
        self.envs[i].unwrapped.set_task(self.space.env_task(self.tasks[i]))
        self.rewards[i], self.values[i] = [], []
        return self.envs[i].reset(seed=seed)[0]

    def step(self, actions: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, ...]:
        rewards, dones = np.zeros(len(self.envs)), np.zeros(len(self.envs))
        for i, env in enumerate(self.envs):  # env-index order: a seeded run repeats
            obs, reward, terminated, truncated, _ = env.step(int(actions[i]))
            self.rewards[i].append(float(reward))
            self.values[i].append(float(values[i]))
            truncated = truncated or len(self.rewards[i]) >= self.space.max_episode_steps
            if terminated or truncated:
                self.plr.update(
                    self.tasks[i],
                    episode_return=sum(self.rewards[i]),
                    episode_length=len(self.rewards[i]),
                    rewards=self.rewards[i],
                    values=self.values[i],
                )
                obs = self._reset(i)
            self.obs[i], rewards[i], dones[i] = obs, reward, terminated or truncated
        return self.obs, rewards, dones


def main(argv: list[str] | None = None) -> TaskSampler:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="a few seconds' run (tests)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timesteps", type=int, default=100_000)
    args = parser.parse_args(argv)
    num_envs, n_steps, epochs = 4, 128, 4
    timesteps = 1024 if args.small else args.timesteps
    gamma, gae_lambda, clip = 0.99, 0.95, 0.2
    torch.manual_seed(args.seed)
    space = registry.get("cartpole")
    # gamma / gae_lambda: the learner's own, as value scores need (coevo refuses others).
    plr = sampler(
        "plr",
        space,
        seed=args.seed,
        critic=True,
        gamma=gamma,
        gae_lambda=gae_lambda,
        buffer_size=8 if args.small else 64,
    )
    envs = CurriculumEnvs(plr, num_envs, args.seed)
    agent = Agent(envs.obs.shape[1], envs.envs[0].action_space.n)
    optimizer = torch.optim.Adam(agent.parameters(), lr=2.5e-4, eps=1e-5)
    for _ in range(timesteps // (num_envs * n_steps)):
        obs_b, act_b, logp_b, val_b, rew_b, done_b = [], [], [], [], [], []
        for _ in range(n_steps):
            obs = torch.as_tensor(envs.obs, dtype=torch.float32)
            with torch.no_grad():
                action, logp, _, value = agent.act(obs)
            obs_b.append(obs), act_b.append(action), logp_b.append(logp), val_b.append(value)
            _, reward, done = envs.step(action.numpy(), value.numpy())
            rew_b.append(torch.as_tensor(reward, dtype=torch.float32))
            done_b.append(torch.as_tensor(done, dtype=torch.float32))
        with torch.no_grad():
            next_value = agent.value(torch.as_tensor(envs.obs, dtype=torch.float32))
        advantages, last = torch.zeros(n_steps, num_envs), torch.zeros(num_envs)
        for t in reversed(range(n_steps)):
            following = next_value if t == n_steps - 1 else val_b[t + 1]
            live = 1.0 - done_b[t]
            delta = rew_b[t] + gamma * following * live - val_b[t]
            last = delta + gamma * gae_lambda * live * last
            advantages[t] = last
        returns = advantages + torch.stack(val_b)
        obs_f, act_f = torch.cat(obs_b), torch.cat(act_b)
        logp_f, adv_f, ret_f = torch.cat(logp_b), advantages.flatten(), returns.flatten()
        for _ in range(epochs):
            _, logp, entropy, value = agent.act(obs_f, act_f)
            ratio = (logp - logp_f).exp()
            adv = (adv_f - adv_f.mean()) / (adv_f.std() + 1e-8)
            policy_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - clip, 1 + clip)).mean()
            loss = policy_loss + 0.5 * ((value - ret_f) ** 2).mean() - 0.01 * entropy.mean()
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
            optimizer.step()
    counts = Counter((row.rule, row.outcome) for row in plr.decisions())
    print(f"{plr.episodes} episodes reported to PLR⊥ ({plr.score_used}); decisions: {dict(counts)}")
    return plr


if __name__ == "__main__":
    main()
