"""Memory operation cost at 1k, 100k and 1M distinct keys, as ratios to references timed in the same run.

    python benchmarks/memory_ops.py [--sizes 1000,100000,1000000] [--runs 5] [--json PATH]

Every figure is a ratio to a reference measured in the same run, and every run
times every subject once, interleaved (reference, floor, subjects, in each run),
so a machine that slows down during the benchmark slows both sides of a ratio.
Reported: the median ratio over ``--runs`` runs and its spread (min to max).
Times are CPU seconds of this process (``time.process_time``), with the garbage
collector paused while a loop is timed.

Subjects, at each size ``n`` (``n`` distinct keys ``task{i % 7}/domain{i}/csv``):

* ``observe``: TEPA's ``observe`` of ``n`` evidences, one per key (each the first
  sight of its key: a precedent is proposed and promoted);
* ``observe again``: a second evidence for every key (a support of its precedent);
* ``retrieve``: TEPA's ``retrieve`` of up to 100,000 of the keys;
* LWW's and append-only's ``observe`` and ``retrieve`` (the same trusted fast path);

against

* the reference: a plain ``dict`` set ``d[e.key] = e.value`` (observe) and get (retrieve);
* the floor: a Python method that does nothing but that one dict set / get
  (``Floor.observe`` / ``Floor.retrieve``), the least any memory with a Python
  ``observe`` method can cost.

Bytes per precedent: ``tracemalloc`` over a TEPA memory observing the first pass.
An append-and-scan memory is timed for contrast (5 queries at every size).
``--json PATH`` writes every figure (read by ``benchmarks/speed_table.py``).
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import time
import tracemalloc
from typing import Any, Callable

from tepa_envs.agents import TEPA
from tepa_envs.agents.memories.baselines import AppendOnly, LastWriteWins
from tepa_envs.core import Evidence

MAX_QUERIES = 100_000


class Floor:
    """The least a memory with Python methods can cost: one dict set per observe, one get per retrieve."""

    def __init__(self) -> None:
        self._values: dict[str, str] = {}

    def observe(self, evidence: Evidence) -> None:
        self._values[evidence.key] = evidence.value

    def retrieve(self, key: str) -> str | None:
        return self._values.get(key)


class AppendScan:
    """The naive contrast: append every evidence, scan the whole log per query."""

    def __init__(self) -> None:
        self.log: list[Evidence] = []

    def observe(self, evidence: Evidence) -> None:
        self.log.append(evidence)

    def retrieve(self, key: str) -> list[str]:
        return [e.value for e in self.log if e.key == key]


def timed(fn: Callable[[], Any]) -> float:
    """CPU seconds of one call of ``fn``, with the garbage collector paused."""
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        fn()
        return time.process_time() - start
    finally:
        gc.enable()


def one_run(evidence: list[Evidence], again: list[Evidence], queries: list[str]) -> dict[str, float]:
    """Seconds per operation of every subject and reference, each timed once, in a fixed order."""
    n, n_queries = len(evidence), len(queries)
    out: dict[str, float] = {}

    def observe_all(memory: Any, stream: list[Evidence]) -> Callable[[], None]:
        def run() -> None:
            observe = memory.observe
            for e in stream:
                observe(e)
        return run

    def retrieve_all(retrieve: Callable[[str], Any]) -> Callable[[], None]:
        def run() -> None:
            for k in queries:
                retrieve(k)
        return run

    reference: dict[str, str] = {}

    def dict_set() -> None:
        d = reference
        for e in evidence:
            d[e.key] = e.value

    def dict_get() -> None:
        get = reference.get
        for k in queries:
            get(k)

    out["dict_set"] = timed(dict_set) / n
    floor = Floor()
    out["floor_set"] = timed(observe_all(floor, evidence)) / n
    tepa = TEPA()
    out["tepa_observe"] = timed(observe_all(tepa, evidence)) / n
    out["tepa_observe_again"] = timed(observe_all(tepa, again)) / n
    lww, append_only = LastWriteWins(), AppendOnly()
    out["lww_observe"] = timed(observe_all(lww, evidence)) / n
    out["append_only_observe"] = timed(observe_all(append_only, evidence)) / n
    out["dict_get"] = timed(dict_get) / n_queries
    out["floor_get"] = timed(retrieve_all(floor.retrieve)) / n_queries
    out["tepa_retrieve"] = timed(retrieve_all(tepa.retrieve)) / n_queries
    out["lww_retrieve"] = timed(retrieve_all(lww.retrieve)) / n_queries
    out["append_only_retrieve"] = timed(retrieve_all(append_only.retrieve)) / n_queries
    return out


RATIOS = {  # name: (subject, reference)
    "tepa_observe/dict_set": ("tepa_observe", "dict_set"),
    "tepa_observe/floor_set": ("tepa_observe", "floor_set"),
    "tepa_observe_again/dict_set": ("tepa_observe_again", "dict_set"),
    "tepa_observe_again/floor_set": ("tepa_observe_again", "floor_set"),
    "tepa_retrieve/dict_get": ("tepa_retrieve", "dict_get"),
    "tepa_retrieve/floor_get": ("tepa_retrieve", "floor_get"),
    "floor_set/dict_set": ("floor_set", "dict_set"),
    "floor_get/dict_get": ("floor_get", "dict_get"),
    "lww_observe/dict_set": ("lww_observe", "dict_set"),
    "lww_retrieve/dict_get": ("lww_retrieve", "dict_get"),
    "append_only_observe/dict_set": ("append_only_observe", "dict_set"),
    "append_only_retrieve/dict_get": ("append_only_retrieve", "dict_get"),
}


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def bytes_per_precedent(evidence: list[Evidence]) -> float:
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    memory = TEPA()
    for e in evidence:
        memory.observe(e)
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return (after - before) / len(memory)


def measure(n_keys: int, runs: int) -> dict[str, Any]:
    keys = [f"task{i % 7}/domain{i}/csv" for i in range(n_keys)]
    evidence = [Evidence(k, "tool_1", i, True, "bench") for i, k in enumerate(keys)]
    again = [Evidence(k, "tool_1", n_keys + i, True, "bench") for i, k in enumerate(keys)]
    n_queries = min(n_keys, MAX_QUERIES)
    queries = keys[:: max(1, n_keys // n_queries)][:n_queries]
    for k in keys:
        hash(k)  # every key's hash computed (and cached) before anything is timed
    per_run = [one_run(evidence, again, queries) for _ in range(runs)]
    scan = AppendScan()
    for e in evidence:
        scan.observe(e)
    scan_seconds = timed(lambda: [scan.retrieve(k) for k in queries[:5]]) / 5
    scan_ratio = scan_seconds / statistics.median(r["dict_get"] for r in per_run)
    del scan
    return {
        "keys": n_keys,
        "queries": n_queries,
        "ratios": {name: spread([r[a] / r[b] for r in per_run]) for name, (a, b) in RATIOS.items()},
        "us": {name: spread([r[name] * 1e6 for r in per_run]) for name in per_run[0]},
        "scan_retrieve/dict_get": scan_ratio,
        "bytes_per_precedent": bytes_per_precedent(evidence),
    }


def conditions(runs: int) -> dict[str, Any]:
    try:
        with open("/proc/loadavg") as f:
            load = f.read().split()[:3]
    except OSError:
        load = None
    return {"python": platform.python_version(), "machine": platform.machine(), "runs": runs,
            "load_average_at_start": load, "clock": "time.process_time (CPU seconds of this process)"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,100000,1000000")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", metavar="PATH", help="write every figure to PATH")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    result: dict[str, Any] = {"benchmark": "memory_ops", "conditions": conditions(args.runs), "sizes": {}}
    for n in sizes:
        result["sizes"][str(n)] = measure(n, args.runs)

    def cell(row: dict[str, Any], name: str) -> str:
        r = row["ratios"][name]
        return f"{r['median']:.1f}x ({r['min']:.1f}-{r['max']:.1f})"

    print(f"median over {args.runs} interleaved runs (min-max); CPU time per operation")
    print(f"{'keys':>9}  {'observe/dict set':>20} {'observe/floor':>18} {'again/dict set':>18} "
          f"{'retrieve/dict get':>20} {'retrieve/floor':>18} {'observe µs':>10} {'retrieve µs':>11} {'B/prec':>7}")
    for n in sizes:
        row = result["sizes"][str(n)]
        print(f"{n:>9}  {cell(row, 'tepa_observe/dict_set'):>20} {cell(row, 'tepa_observe/floor_set'):>18} "
              f"{cell(row, 'tepa_observe_again/dict_set'):>18} {cell(row, 'tepa_retrieve/dict_get'):>20} "
              f"{cell(row, 'tepa_retrieve/floor_get'):>18} {row['us']['tepa_observe']['median']:>10.2f} "
              f"{row['us']['tepa_retrieve']['median']:>11.2f} {row['bytes_per_precedent']:>7.0f}")
    print(f"{'keys':>9}  {'floor/dict set':>20} {'floor/dict get':>18} {'LWW obs/set':>18} {'LWW ret/get':>20} "
          f"{'append obs/set':>18} {'scan/dict get':>14}")
    for n in sizes:
        row = result["sizes"][str(n)]
        print(f"{n:>9}  {cell(row, 'floor_set/dict_set'):>20} {cell(row, 'floor_get/dict_get'):>18} "
              f"{cell(row, 'lww_observe/dict_set'):>18} {cell(row, 'lww_retrieve/dict_get'):>20} "
              f"{cell(row, 'append_only_observe/dict_set'):>18} {row['scan_retrieve/dict_get']:>13.0f}x")
    first, last = result["sizes"][str(sizes[0])], result["sizes"][str(sizes[-1])]
    flat = {op: last["us"][f"tepa_{op}"]["median"] / first["us"][f"tepa_{op}"]["median"]
            for op in ("observe", "retrieve")}
    result["flatness"] = {"from": sizes[0], "to": sizes[-1], **flat}
    print(f"flatness {sizes[-1]} vs {sizes[0]} keys (µs per op): observe {flat['observe']:.2f}x, "
          f"retrieve {flat['retrieve']:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
