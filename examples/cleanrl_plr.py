"""A CleanRL-style single-file PPO on CartPole's task space, its tasks from coevo's PLR⊥
sampler used directly: each finished episode goes to `update` with its rewards and the
critic's values, so levels are scored by positive value loss (the paper's score).
python examples/cleanrl_plr.py [--small] [--seed N]
"""

import argparse
from collections import Counter

import numpy as np
import torch
from torch import nn

from coevo.curricula import sampler


def mlp(obs: int, out: int) -> nn.Module:
    return nn.Sequential(nn.Linear(obs, 64), nn.Tanh(), nn.Linear(64, out))


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--small", action="store_true", help="a few seconds' run (tests)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    n_envs, n_steps, gamma, lam = 4, 128, 0.99, 0.95
    torch.manual_seed(args.seed)
    # Value scores use the learner's own gamma / gae_lambda (coevo refuses others).
    plr = sampler("plr", "cartpole", seed=args.seed, critic=True, gamma=gamma, gae_lambda=lam,
                  buffer_size=8 if args.small else 64)  # fmt: skip
    envs = [(space := plr.space).make_env() for _ in range(n_envs)]
    tasks, rews, vals = [None] * n_envs, [[] for _ in envs], [[] for _ in envs]

    def reset(i, seed=None):  # the next task, through the env's set_task
        tasks[i], rews[i], vals[i] = plr.sample(), [], []
        envs[i].unwrapped.set_task(space.env_task(tasks[i]))
        return envs[i].reset(seed=seed)[0]

    obs = np.stack([reset(i, args.seed + i) for i in range(n_envs)])
    actor, critic = mlp(obs.shape[1], 2), mlp(obs.shape[1], 1)
    optimizer = torch.optim.Adam([*actor.parameters(), *critic.parameters()], lr=2.5e-4)
    for _ in range((1024 if args.small else 100_000) // (n_envs * n_steps)):
        batch = {key: [] for key in ("obs", "act", "logp", "val", "rew", "done")}
        for _ in range(n_steps):
            x = torch.tensor(obs, dtype=torch.float32)  # a copy: obs changes in place
            with torch.no_grad():
                dist = torch.distributions.Categorical(logits=actor(x))
                act, value = dist.sample(), critic(x).squeeze(-1)
            rew, done = np.zeros(n_envs), np.zeros(n_envs)
            for i, env in enumerate(envs):  # env-index order: a seeded run repeats
                o, rew[i], term, trunc, _ = env.step(int(act[i]))
                rews[i].append(float(rew[i]))
                vals[i].append(float(value[i]))
                done[i] = term or trunc or len(rews[i]) >= space.max_episode_steps
                if done[i]:  # the finished episode goes to PLR⊥
                    plr.update(tasks[i], episode_return=sum(rews[i]), episode_length=len(rews[i]),
                               rewards=rews[i], values=vals[i])  # fmt: skip
                    o = reset(i)
                obs[i] = o
            for key, item in zip(
                batch, (x, act, dist.log_prob(act), value, rew, done), strict=True
            ):
                batch[key].append(torch.as_tensor(item, dtype=torch.float32))
        with torch.no_grad():  # GAE
            following = critic(torch.as_tensor(obs, dtype=torch.float32)).squeeze(-1)
        adv, last = torch.zeros(n_steps, n_envs), torch.zeros(n_envs)
        for t in reversed(range(n_steps)):
            live = 1.0 - batch["done"][t]
            delta = batch["rew"][t] + gamma * following * live - batch["val"][t]
            adv[t] = last = delta + gamma * lam * live * last
            following = batch["val"][t]
        ret, adv = (adv + torch.stack(batch["val"])).flatten(), adv.flatten()
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        x, act, old = (torch.cat(batch[k]) for k in ("obs", "act", "logp"))
        for _ in range(4):  # epochs
            dist = torch.distributions.Categorical(logits=actor(x))
            ratio = (dist.log_prob(act) - old).exp()
            clipped = torch.max(-adv * ratio, -adv * ratio.clamp(0.8, 1.2)).mean()
            value_loss = ((critic(x).squeeze(-1) - ret) ** 2).mean()
            loss = clipped + 0.5 * value_loss - 0.01 * dist.entropy().mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    counts = Counter((row.rule, row.outcome) for row in plr.decisions())
    print(f"{plr.episodes} episodes reported to PLR⊥ ({plr.score_used}): {dict(counts)}")
    return plr


if __name__ == "__main__":
    main()
