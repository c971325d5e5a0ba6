"""A team of reader agents in shared_drift_v0: shared vs private memory, with and without a liar.

    python examples/shared_memory_team.py --seeds 20

Each agent decides with the project's simulated reader (``EvidenceReader``
with its documented defaults, the same for every memory): it reads what its
memory retrieves for its task's key and follows the first record, or explores
when nothing is shown. The environment holds no memory; the ``SharedMemory``
wrapper writes every agent's evidence into one team memory or one memory per
agent. With the unreliable agent on, agent 0 reports a false success for a
wrong tool at ``--poison-rate``.

Printed: team success (all agents' true task outcomes) in the full-reversal
phase and over the whole stream, mean over seeds.
"""

from __future__ import annotations

import argparse
from typing import Sequence

import numpy as np

from tepa_envs.agents.readers import EvidenceReader
from tepa_envs.core import PHASE_NAMES
from tepa_envs.multi_agent import shared_drift_v0
from tepa_envs.wrappers import SharedMemory

CONFIGS: dict[str, dict[str, object]] = {
    "shared TEPA": {"memory": "tepa", "shared": True},
    "shared append-only": {"memory": "append-only", "shared": True},
    "private TEPA": {"memory": "tepa", "shared": False},
}
FULL_REVERSAL = PHASE_NAMES.index("full_reversal")


def run_team_episode(env: SharedMemory, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """One episode; returns per-(step, agent) success and the phase of each step."""
    readers = {agent: EvidenceReader(seed=i) for i, agent in enumerate(env.possible_agents)}
    for reader in readers.values():
        reader.reset(seed)
    _, infos = env.reset(seed=seed)
    successes: list[list[bool]] = []
    phases: list[int] = []
    while env.agents:
        phases.append(int(infos[env.agents[0]]["oracle"]["phase"]))
        actions = {}
        for agent in env.agents:
            key, context = infos[agent]["key"], infos[agent]["context"]
            records = env.memories[agent].retrieve(key, context)
            actions[agent] = env.to_action(readers[agent].choose(records, env.choices(key)))
        _, rewards, _, _, infos = env.step(actions)
        successes.append([rewards[agent] == 1.0 for agent in env.possible_agents])
    return np.array(successes, dtype=bool), np.array(phases, dtype=np.int64)


def team_success(config: dict[str, object], unreliable: bool, seeds: Sequence[int], poison_rate: float,
                 n_agents: int) -> tuple[float, float]:
    """Mean team success in full reversal and overall, over ``seeds``; ``config`` holds the
    wrapper's ``memory`` and ``shared``."""
    world = shared_drift_v0.parallel_env(n_agents=n_agents, unreliable_agent=0 if unreliable else None,
                                         poison_rate=poison_rate)
    env = SharedMemory(world, memory=config["memory"], shared=config["shared"])
    reversal, overall = [], []
    for seed in seeds:
        success, phase = run_team_episode(env, seed)
        reversal.append(success[phase == FULL_REVERSAL].mean())
        overall.append(success.mean())
    env.close()
    return float(np.mean(reversal)), float(np.mean(overall))


def main(argv: Sequence[str] | None = None) -> dict[tuple[str, bool], tuple[float, float]]:
    parser = argparse.ArgumentParser(description="Team success in shared_drift_v0 by memory configuration")
    parser.add_argument("--seeds", type=int, default=20, help="episodes per configuration (seeds 0..N-1)")
    parser.add_argument("--agents", type=int, default=3)
    parser.add_argument("--poison-rate", type=float, default=0.3)
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be >= 1")
    seeds = range(args.seeds)
    results: dict[tuple[str, bool], tuple[float, float]] = {}
    print(f"shared_drift_v0: {args.agents} agents, {args.seeds} seeds, unreliable agent_0 at "
          f"poison rate {args.poison_rate}")
    print(f"{'memory':<20} {'unreliable':>10} {'full_reversal':>14} {'overall':>8}")
    for label, config in CONFIGS.items():
        for unreliable in (False, True):
            reversal, overall = team_success(config, unreliable, seeds, args.poison_rate, args.agents)
            results[(label, unreliable)] = (reversal, overall)
            print(f"{label:<20} {'yes' if unreliable else 'no':>10} {reversal:>14.3f} {overall:>8.3f}")
    return results


if __name__ == "__main__":
    main()
