"""TEPA observe/retrieve cost per operation at 1k, 100k and 1M distinct keys.

Every figure is a ratio to a reference measured in the same run: a plain
``dict`` set (for observe) and get (for retrieve). An append-and-scan memory is
measured for contrast, and tracemalloc gives bytes per precedent.

    python benchmarks/memory_ops.py [--sizes 1000,100000,1000000]
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc

from tepa_envs.agents import TEPA
from tepa_envs.core import Evidence


def per_op(fn, n: int, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        gc.disable()
        start = time.perf_counter()
        fn()
        best = min(best, (time.perf_counter() - start) / n)
        gc.enable()
    return best


class AppendScan:
    """The naive contrast: append every evidence, scan the whole log per query."""

    def __init__(self) -> None:
        self.log: list[Evidence] = []

    def observe(self, evidence: Evidence) -> None:
        self.log.append(evidence)

    def retrieve(self, key: str) -> list[str]:
        return [e.value for e in self.log if e.key == key]


def measure(n_keys: int) -> dict[str, float]:
    keys = [f"task{i % 7}/domain{i}/csv" for i in range(n_keys)]
    evidence = [Evidence(k, "tool_1", i, True, "bench") for i, k in enumerate(keys)]
    n_queries = min(n_keys, 100_000)
    queries = keys[:: max(1, n_keys // n_queries)][:n_queries]

    def dict_set() -> None:
        d: dict[str, str] = {}
        for e in evidence:
            d[e.key] = e.value

    reference = {k: "tool_1" for k in keys}

    def dict_get() -> None:
        get = reference.get
        for k in queries:
            get(k)

    def tepa_observe() -> None:
        memory = TEPA()
        observe = memory.observe
        for e in evidence:
            observe(e)

    filled = TEPA()
    for e in evidence:
        filled.observe(e)

    def tepa_retrieve() -> None:
        retrieve = filled.retrieve
        for k in queries:
            retrieve(k)

    scan = AppendScan()
    for e in evidence:
        scan.observe(e)
    scan_queries = queries[:5]

    result = {
        "dict_set": per_op(dict_set, n_keys),
        "dict_get": per_op(dict_get, n_queries),
        "tepa_observe": per_op(tepa_observe, n_keys, repeats=2),
        "tepa_retrieve": per_op(tepa_retrieve, n_queries),
        "scan_retrieve": per_op(lambda: [scan.retrieve(k) for k in scan_queries], len(scan_queries), repeats=1),
    }
    filled.reset()
    scan.log.clear()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    memory = TEPA()
    for e in evidence:
        memory.observe(e)
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    result["bytes_per_precedent"] = (after - before) / len(memory)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,100000,1000000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = {n: measure(n) for n in sizes}
    print(f"{'keys':>9} {'observe/dict set':>17} {'retrieve/dict get':>18} {'scan/dict get':>14} "
          f"{'observe µs':>11} {'retrieve µs':>12} {'bytes/precedent':>16}")
    for n, r in rows.items():
        print(f"{n:>9} {r['tepa_observe'] / r['dict_set']:>16.1f}x {r['tepa_retrieve'] / r['dict_get']:>17.1f}x "
              f"{r['scan_retrieve'] / r['dict_get']:>13.0f}x {r['tepa_observe'] * 1e6:>11.2f} "
              f"{r['tepa_retrieve'] * 1e6:>12.2f} {r['bytes_per_precedent']:>16.0f}")
    first, last = rows[sizes[0]], rows[sizes[-1]]
    print(f"flatness {sizes[-1]} vs {sizes[0]} keys: observe {last['tepa_observe'] / first['tepa_observe']:.2f}x, "
          f"retrieve {last['tepa_retrieve'] / first['tepa_retrieve']:.2f}x")


if __name__ == "__main__":
    main()
