"""MemoryObservation throughput as a ratio to the plain RegimeDrift-v0 env, same run.

    python benchmarks/memory_observation_throughput.py [--steps 20000] [--runs 7] [--json PATH]
    python benchmarks/memory_observation_throughput.py --compare /tmp/old_memory_observation.py

Steps/s of ``MemoryObservation(gym.make("TEPA/RegimeDrift-v0"), memory=m)`` for
each memory ``m``, divided by the steps/s of the plain
``gym.make("TEPA/RegimeDrift-v0")`` timed in the same run, over ``--runs``
interleaved runs (plain, then every memory, in every run). Reported: the median
ratio and its spread (min to max over the runs). With ``--compare PATH`` a
second ``MemoryObservation`` class, loaded from that file, is timed in the same
runs too (for before/after measurements of the wrapper). Steps/s are per CPU
second of this process (``time.process_time``). ``--json PATH`` writes every
figure (read by ``benchmarks/speed_table.py``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
from typing import Callable

import gymnasium as gym

import tepa_envs  # noqa: F401
from tepa_envs.wrappers import MemoryObservation

from env_throughput import steps_per_second  # benchmarks/ is the script's directory, so on sys.path

ENV_ID = "TEPA/RegimeDrift-v0"
MEMORIES = ("no-memory", "lww", "tepa")


def load_wrapper(path: str) -> type:
    """The ``MemoryObservation`` class defined in the file at ``path``."""
    spec = importlib.util.spec_from_file_location("compared_memory_observation", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.MemoryObservation


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--compare", metavar="PATH", help="also time the MemoryObservation defined in PATH")
    parser.add_argument("--json", metavar="PATH", help="write every figure to PATH")
    args = parser.parse_args()

    wrappers: dict[str, Callable[..., gym.Env]] = {"current": MemoryObservation}
    if args.compare:
        wrappers["compared"] = load_wrapper(args.compare)
    cases = [(label, memory) for memory in MEMORIES for label in wrappers]
    ratios: dict[tuple[str, str], list[float]] = {case: [] for case in cases}
    plain_rates = []
    for _ in range(args.runs):
        plain = steps_per_second(gym.make(ENV_ID), args.steps)
        plain_rates.append(plain)
        for label, memory in cases:
            rate = steps_per_second(wrappers[label](gym.make(ENV_ID), memory=memory), args.steps)
            ratios[(label, memory)].append(rate / plain)

    print(f"{ENV_ID}, {args.steps} steps, {args.runs} interleaved runs; "
          f"plain env median {statistics.median(plain_rates):,.0f} steps/s (reference)")
    for label, memory in cases:
        values = ratios[(label, memory)]
        name = f"MemoryObservation {memory}" + (f" ({label})" if args.compare else "")
        print(f"  {name:<40} {statistics.median(values):.2f}x plain  "
              f"(min {min(values):.2f}, max {max(values):.2f})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "memory_observation_throughput", "env": ENV_ID, "steps": args.steps,
                       "runs": args.runs, "plain_steps_per_second": statistics.median(plain_rates),
                       "ratios": {f"{memory} ({label})" if args.compare else memory:
                                  {"median": statistics.median(v), "min": min(v), "max": max(v)}
                                  for (label, memory), v in ratios.items()}}, f, indent=1)
    if args.compare:
        for memory in MEMORIES:
            speedup = [c / o for c, o in zip(ratios[("current", memory)], ratios[("compared", memory)])]
            print(f"  current / compared, {memory:<11}        {statistics.median(speedup):.2f}x  "
                  f"(min {min(speedup):.2f}, max {max(speedup):.2f})")


if __name__ == "__main__":
    main()
