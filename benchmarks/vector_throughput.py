"""Vector throughput at 256 environments: the native RegimeDrift vector env, with and without batched memories.

    python benchmarks/vector_throughput.py [--num-envs 256] [--steps 1600] [--sync-steps 200] [--runs 5] [--json PATH]

Subjects (every one steps the same seeded random actions; CPU time of this process):

* ``native``: ``gym.make_vec("TEPA/RegimeDrift-v0", num_envs=N)`` (the native vector env), no memory;
* ``batched <memory>``: :class:`~tepa_envs.wrappers.MemoryObservationV` over the native env,
  for no-memory, LWW, append-only and TEPA;
* ``sync``: ``SyncVectorEnv`` of N ``gym.make`` envs, no memory;
* ``sync tepa``: ``SyncVectorEnv`` of N ``MemoryObservation(gym.make(...), memory="tepa")``,
  the per-environment Python memory the batched one replaces.

Every run times every subject once, interleaved; a ratio is taken within a run
and reported as the median over ``--runs`` runs with its spread (min to max).
The native and batched subjects step ``--steps`` vector steps (1600 = 10
episodes of the default 160 tasks: autoresets included), the two slower sync
subjects ``--sync-steps`` (200: one autoreset). Throughput is env-steps per CPU
second (vector steps x N / seconds).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any, Callable

import gymnasium as gym
import numpy as np

import tepa_envs  # noqa: F401
from tepa_envs.wrappers import MemoryObservation, MemoryObservationV

ENV_ID = "TEPA/RegimeDrift-v0"
BATCHED = ("no-memory", "lww", "append-only", "tepa")


def env_steps_per_second(envs: gym.vector.VectorEnv, actions: np.ndarray, seed: int) -> float:
    envs.reset(seed=seed)
    start = time.process_time()
    for row in actions:
        envs.step(row)
    elapsed = time.process_time() - start
    envs.close()
    return actions.size / elapsed


def subjects(num_envs: int) -> dict[str, tuple[Callable[[], gym.vector.VectorEnv], bool]]:
    """name -> (a builder, whether it is a slow sync subject)."""
    def native() -> gym.vector.VectorEnv:
        return gym.make_vec(ENV_ID, num_envs=num_envs, vectorization_mode="vector_entry_point")

    out: dict[str, tuple[Callable[[], gym.vector.VectorEnv], bool]] = {"native": (native, False)}
    for memory in BATCHED:
        out[f"batched {memory}"] = (lambda memory=memory: MemoryObservationV(native(), memory=memory), False)
    out["sync"] = (lambda: gym.make_vec(ENV_ID, num_envs=num_envs, vectorization_mode="sync"), True)
    out["sync tepa"] = (lambda: gym.vector.SyncVectorEnv(
        [lambda: MemoryObservation(gym.make(ENV_ID), memory="tepa") for _ in range(num_envs)]), True)
    return out


RATIOS = {  # name: (subject, reference)
    "native / sync": ("native", "sync"),
    "batched tepa / sync tepa": ("batched tepa", "sync tepa"),
    "batched tepa / native": ("batched tepa", "native"),
    "batched lww / native": ("batched lww", "native"),
    "batched append-only / native": ("batched append-only", "native"),
    "batched no-memory / native": ("batched no-memory", "native"),
    "sync tepa / sync": ("sync tepa", "sync"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num-envs", type=int, default=256)
    parser.add_argument("--steps", type=int, default=1600)
    parser.add_argument("--sync-steps", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="PATH", help="write every figure to PATH")
    args = parser.parse_args()
    policy = np.random.default_rng(args.seed)
    n_actions = gym.make(ENV_ID).action_space.n
    actions = policy.integers(0, n_actions, size=(args.steps, args.num_envs))
    built = subjects(args.num_envs)
    rates: dict[str, list[float]] = {name: [] for name in built}
    for _ in range(args.runs):
        for name, (build, slow) in built.items():
            rates[name].append(env_steps_per_second(build(), actions[: args.sync_steps] if slow else actions,
                                                    args.seed))
    ratios = {name: [rates[a][i] / rates[b][i] for i in range(args.runs)] for name, (a, b) in RATIOS.items()}
    spread = {name: {"median": statistics.median(v), "min": min(v), "max": max(v)} for name, v in ratios.items()}
    print(f"{ENV_ID}, {args.num_envs} envs, {args.steps} vector steps ({args.sync_steps} for sync subjects), "
          f"{args.runs} interleaved runs; env-steps per CPU second (median)")
    for name, values in rates.items():
        print(f"  {name:<22} {statistics.median(values):>12,.0f}")
    for name, r in spread.items():
        print(f"  {name:<30} {r['median']:>6.2f}x  (min {r['min']:.2f}, max {r['max']:.2f})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "vector_throughput", "num_envs": args.num_envs, "steps": args.steps,
                       "sync_steps": args.sync_steps, "runs": args.runs,
                       "env_steps_per_second": {k: statistics.median(v) for k, v in rates.items()},
                       "ratios": spread, "conditions": _conditions()}, f, indent=1)


def _conditions() -> dict[str, Any]:
    try:
        with open("/proc/loadavg") as f:
            load = f.read().split()[:3]
    except OSError:
        load = None
    return {"load_average_at_end": load, "clock": "time.process_time (CPU seconds of this process)"}


if __name__ == "__main__":
    main()
