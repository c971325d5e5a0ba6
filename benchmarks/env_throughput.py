"""RegimeDrift-v0 throughput as a ratio to CartPole-v1, and the whole agent loop in tasks/s.

    python benchmarks/env_throughput.py [--steps 20000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np

import tepa_envs  # noqa: F401
from tepa_envs.agents import MemoryAgent, run_episode


def env_steps_per_second(env_id: str, steps: int, **kwargs: object) -> float:
    env = gym.make(env_id, **kwargs)
    actions = np.random.default_rng(0).integers(0, env.action_space.n, size=steps)
    env.reset(seed=0)
    start = time.perf_counter()
    for action in actions:
        _, _, terminated, truncated, _ = env.step(int(action))
        if terminated or truncated:
            env.reset()
    elapsed = time.perf_counter() - start
    env.close()
    return steps / elapsed


def agent_tasks_per_second(method: str, episodes: int, env_id: str = "TEPA/RegimeDrift-v0") -> float:
    env = gym.make(env_id)
    start = time.perf_counter()
    tasks = sum(run_episode(env, MemoryAgent(method), seed).success.size for seed in range(episodes))
    return tasks / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--episodes", type=int, default=100)
    args = parser.parse_args()
    cartpole = env_steps_per_second("CartPole-v1", args.steps)
    drift = env_steps_per_second("TEPA/RegimeDrift-v0", args.steps)
    print(f"CartPole-v1           {cartpole:>10.0f} steps/s (reference)")
    print(f"TEPA/RegimeDrift-v0   {drift:>10.0f} steps/s  = {drift / cartpole:.2f}x CartPole-v1")
    for method in ("no-memory", "tepa", "append-only"):
        rate = agent_tasks_per_second(method, args.episodes)
        print(f"agent loop ({method:<11}) {rate:>8.0f} tasks/s  = {rate / cartpole:.2f}x CartPole-v1 steps")
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "tepa_envs.agents.evaluation.cli", "reproduce", "controlled", "--quiet"],
                   check=True, capture_output=True)
    print(f"tepa-bench reproduce controlled (50 seeds, 13 methods + key noise): "
          f"{time.perf_counter() - start:.1f}s wall")


if __name__ == "__main__":
    main()
