"""Throughput of the native RegimeDrift vector env against SyncVectorEnv, same run.

    python benchmarks/vector_throughput.py --num-envs 256 --steps 1600

Both vector envs step the same seeded random actions for ``--steps`` steps
(``--steps`` 1600 = 10 episodes of the default 160 tasks, so autoresets are
included). Reported: environment steps per second of each and their ratio.
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np

import tepa_envs  # noqa: F401


def steps_per_second(mode: str, num_envs: int, steps: int, seed: int) -> float:
    envs = gym.make_vec("TEPA/RegimeDrift-v0", num_envs=num_envs, vectorization_mode=mode)
    policy = np.random.default_rng(seed)
    actions = policy.integers(0, envs.single_action_space.n, size=(steps, num_envs))
    envs.reset(seed=seed)
    start = time.perf_counter()
    for row in actions:
        envs.step(row)
    elapsed = time.perf_counter() - start
    envs.close()
    return steps * num_envs / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-envs", type=int, default=256)
    parser.add_argument("--steps", type=int, default=1600)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    sync = steps_per_second("sync", args.num_envs, args.steps, args.seed)
    native = steps_per_second("vector_entry_point", args.num_envs, args.steps, args.seed)
    print(f"RegimeDrift-v0, {args.num_envs} envs, {args.steps} vector steps")
    print(f"  SyncVectorEnv        : {sync:12,.0f} env-steps/s")
    print(f"  RegimeDriftVectorEnv: {native:12,.0f} env-steps/s")
    print(f"  ratio native/sync    : {native / sync:.1f}x")


if __name__ == "__main__":
    main()
