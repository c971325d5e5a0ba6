"""RegimeDrift-v0 throughput as a ratio to CartPole-v1, and the whole agent loop in tasks/s.

    python benchmarks/env_throughput.py [--steps 20000] [--episodes 100] [--runs 5] [--json PATH] [--reproduce]

Every run times CartPole-v1 (the reference), RegimeDrift-v0 and the agent loop
(``run_episode`` with ``MemoryAgent``: env + memory + reader) for no-memory,
TEPA and append-only, interleaved; ratios are taken within a run and reported as
the median over ``--runs`` runs with their spread (min to max). Steps/s are per
CPU second of this process (``time.process_time``). ``--reproduce`` also times
``tepa-bench reproduce controlled`` once (wall seconds). ``--json PATH`` writes
every figure (read by ``benchmarks/speed_table.py``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np

import tepa_envs  # noqa: F401
from tepa_envs.agents import MemoryAgent, run_episode

AGENT_METHODS = ("no-memory", "tepa", "append-only")


def env_steps_per_second(env_id: str, steps: int, **kwargs: object) -> float:
    return steps_per_second(gym.make(env_id, **kwargs), steps)


def steps_per_second(env: gym.Env, steps: int) -> float:
    """Steps/s of ``env`` under seeded random actions, resets included; closes ``env``."""
    actions = np.random.default_rng(0).integers(0, env.action_space.n, size=steps)
    env.reset(seed=0)
    start = time.process_time()
    for action in actions:
        _, _, terminated, truncated, _ = env.step(int(action))
        if terminated or truncated:
            env.reset()
    elapsed = time.process_time() - start
    env.close()
    return steps / elapsed


def agent_tasks_per_second(method: str, episodes: int, env_id: str = "TEPA/RegimeDrift-v0") -> float:
    env = gym.make(env_id)
    start = time.process_time()
    tasks = sum(run_episode(env, MemoryAgent(method), seed).success.size for seed in range(episodes))
    return tasks / (time.process_time() - start)


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--reproduce", action="store_true", help="also time tepa-bench reproduce controlled")
    parser.add_argument("--json", metavar="PATH", help="write every figure to PATH")
    args = parser.parse_args()
    rates: dict[str, list[float]] = {"CartPole-v1": [], "TEPA/RegimeDrift-v0": []}
    rates.update({f"agent loop ({m})": [] for m in AGENT_METHODS})
    for _ in range(args.runs):
        rates["CartPole-v1"].append(env_steps_per_second("CartPole-v1", args.steps))
        rates["TEPA/RegimeDrift-v0"].append(env_steps_per_second("TEPA/RegimeDrift-v0", args.steps))
        for method in AGENT_METHODS:
            rates[f"agent loop ({method})"].append(agent_tasks_per_second(method, args.episodes))
    reference = rates["CartPole-v1"]
    ratios = {name: spread([v / r for v, r in zip(values, reference)])
              for name, values in rates.items() if name != "CartPole-v1"}
    print(f"{args.runs} interleaved runs; per CPU second (median), ratio to CartPole-v1 steps/s (median, min-max)")
    print(f"CartPole-v1           {statistics.median(reference):>10,.0f} steps/s (reference)")
    for name, r in ratios.items():
        unit = "tasks/s" if name.startswith("agent") else "steps/s"
        print(f"{name:<26} {statistics.median(rates[name]):>10,.0f} {unit}  = {r['median']:.2f}x "
              f"({r['min']:.2f}-{r['max']:.2f})")
    result = {"benchmark": "env_throughput", "steps": args.steps, "episodes": args.episodes, "runs": args.runs,
              "per_second": {name: spread(values) for name, values in rates.items()}, "ratios": ratios}
    if args.reproduce:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "tepa_envs.agents.evaluation.cli", "reproduce", "controlled",
                        "--quiet"], check=True, capture_output=True)
        result["reproduce_controlled_wall_seconds"] = time.perf_counter() - start
        print(f"tepa-bench reproduce controlled: {result['reproduce_controlled_wall_seconds']:.1f}s wall")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
