"""A CleanRL-style PPO loop as a client (issue 32, item 6): CleanRL's ``ppo.py`` shape (its
``make_env`` with ``RecordEpisodeStatistics``, ``gym.vector.SyncVectorEnv``, buffers sized by
``envs.single_observation_space.shape``, GAE, clipped updates) written out here in torch, over
``FlatObservation(MemoryObservation(...))`` and the plain ``FlatObservation``. ``Dict``
observations have no ``shape`` (CleanRL's ``torch.zeros`` fails on them); the flat option is
what makes this loop run unchanged. FactConsolidation runs it with ``action_mode="choice"``
(``Discrete`` answers among candidates).

Skipped, with the reason, without torch."""

from __future__ import annotations

from typing import Any, Callable

import gymnasium as gym
import numpy as np
import pytest

from tepa_envs.wrappers import FlatObservation, MemoryObservation

torch = pytest.importorskip("torch", reason="torch is not installed: pip install torch (CPU build)")
from torch import nn  # noqa: E402
from torch.distributions.categorical import Categorical  # noqa: E402


def make_env(env_id: str, memory: str | None, **kwargs: Any) -> Callable[[], gym.Env]:
    def thunk() -> gym.Env:
        env: gym.Env = gym.make(env_id, **kwargs)
        if memory is not None:
            env = MemoryObservation(env, memory=memory)
        env = FlatObservation(env)
        return gym.wrappers.RecordEpisodeStatistics(env)
    return thunk


class Agent(nn.Module):
    def __init__(self, envs: gym.vector.VectorEnv) -> None:
        super().__init__()
        n_in = int(np.prod(envs.single_observation_space.shape))
        self.critic = nn.Sequential(nn.Linear(n_in, 64), nn.Tanh(), nn.Linear(64, 1))
        self.actor = nn.Sequential(nn.Linear(n_in, 64), nn.Tanh(), nn.Linear(64, int(envs.single_action_space.n)))

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x)

    def get_action_and_value(self, x: torch.Tensor, action: torch.Tensor | None = None):
        distribution = Categorical(logits=self.actor(x))
        if action is None:
            action = distribution.sample()
        return action, distribution.log_prob(action), distribution.entropy(), self.critic(x)


def ppo(env_id: str, memory: str | None, num_envs: int = 4, num_steps: int = 64, iterations: int = 3,
        seed: int = 0, **env_kwargs: Any) -> tuple[list[float], Agent]:
    """CleanRL's ppo.py, its defaults scaled down; returns the finished episodes' returns."""
    gamma, gae_lambda, clip, epochs, minibatches = 0.99, 0.95, 0.2, 2, 4
    torch.manual_seed(seed)
    envs = gym.vector.SyncVectorEnv([make_env(env_id, memory, **env_kwargs) for _ in range(num_envs)])
    agent = Agent(envs)
    optimizer = torch.optim.Adam(agent.parameters(), lr=2.5e-4, eps=1e-5)
    obs = torch.zeros((num_steps, num_envs) + envs.single_observation_space.shape)
    actions = torch.zeros((num_steps, num_envs) + envs.single_action_space.shape)
    logprobs, rewards, dones, values = (torch.zeros((num_steps, num_envs)) for _ in range(4))
    next_obs_np, _ = envs.reset(seed=seed)
    next_obs, next_done = torch.Tensor(next_obs_np), torch.zeros(num_envs)
    returns_seen: list[float] = []
    for _ in range(iterations):
        for step in range(num_steps):
            obs[step], dones[step] = next_obs, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
            values[step], actions[step], logprobs[step] = value.flatten(), action, logprob
            next_obs_np, reward, terminations, truncations, infos = envs.step(action.numpy())
            rewards[step] = torch.tensor(reward).view(-1)
            next_obs, next_done = torch.Tensor(next_obs_np), torch.Tensor(np.logical_or(terminations, truncations))
            if "episode" in infos:
                returns_seen += [float(r) for r in infos["episode"]["r"][infos["_episode"]]]
        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards)
            last = torch.zeros(num_envs)
            for t in reversed(range(num_steps)):
                not_done = 1.0 - (next_done if t == num_steps - 1 else dones[t + 1])
                following = next_value if t == num_steps - 1 else values[t + 1]
                delta = rewards[t] + gamma * following * not_done - values[t]
                advantages[t] = last = delta + gamma * gae_lambda * not_done * last
            returns = advantages + values
        b_obs = obs.reshape((-1,) + envs.single_observation_space.shape)
        b_actions, b_logprobs = actions.reshape(-1), logprobs.reshape(-1)
        b_advantages, b_returns = advantages.reshape(-1), returns.reshape(-1)
        batch = num_steps * num_envs
        for _ in range(epochs):
            order = np.random.default_rng(seed).permutation(batch)
            for start in range(0, batch, batch // minibatches):
                mb = order[start:start + batch // minibatches]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb], b_actions.long()[mb])
                ratio = (newlogprob - b_logprobs[mb]).exp()
                adv = (b_advantages[mb] - b_advantages[mb].mean()) / (b_advantages[mb].std() + 1e-8)
                pg_loss = torch.max(-adv * ratio, -adv * torch.clamp(ratio, 1 - clip, 1 + clip)).mean()
                v_loss = 0.5 * ((newvalue.view(-1) - b_returns[mb]) ** 2).mean()
                loss = pg_loss - 0.01 * entropy.mean() + 0.5 * v_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
                optimizer.step()
    envs.close()
    return returns_seen, agent


@pytest.mark.parametrize("env_id", ["TEPA/RegimeDrift-v0", "TEPA/FileOps-v0", "TEPA/PreferenceStream-v0"])
@pytest.mark.parametrize("memory", [None, "tepa"])
def test_a_cleanrl_ppo_loop_runs_with_the_flat_option(env_id, memory):
    returns, agent = ppo(env_id, memory, phase_lengths=(10, 10, 10, 10))
    assert len(returns) >= 4 and all(np.isfinite(returns))
    assert all(torch.isfinite(p).all() for p in agent.parameters())


@pytest.mark.parametrize("memory", [None, "tepa"])
def test_a_cleanrl_ppo_loop_runs_on_fact_consolidation_with_choices(memory):
    """One memorize step and 100 questions; the template front-end (the fastest to generate at
    every reset) keys the questions, so the memory's view points at a candidate."""
    returns, agent = ppo("TEPA/FactConsolidation-v0", memory, iterations=2, length="6k", chunk_facts=455,
                         action_mode="choice", extraction="templates", generator="classic")
    assert len(returns) >= 4 and all(0.0 <= r <= 100.0 for r in returns)  # 100 questions scored 0 or 1
    assert int(agent.actor[-1].out_features) == 4 and all(torch.isfinite(p).all() for p in agent.parameters())


def test_the_same_seed_gives_the_same_returns():
    first, _ = ppo("TEPA/RegimeDrift-v0", "tepa", iterations=2, phase_lengths=(10, 10, 10, 10))
    again, _ = ppo("TEPA/RegimeDrift-v0", "tepa", iterations=2, phase_lengths=(10, 10, 10, 10))
    assert first == again
