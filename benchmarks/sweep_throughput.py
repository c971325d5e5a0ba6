"""Sweep throughput: a large sweep into a SQLite store, the store's overhead against
keeping episodes in memory, and Ray's overhead against the local process pool.

    python benchmarks/sweep_throughput.py scale [--episodes 100000] [--workers 2]
    python benchmarks/sweep_throughput.py store [--episodes 2000] [--pairs 7]
    python benchmarks/sweep_throughput.py ray [--episodes 10000] [--pairs 2]
    python benchmarks/sweep_throughput.py metrics [--episodes 950] [--pairs 7]

Every sweep is every shipped method on ``TEPA/RegimeDrift-v0`` with ``n_keys`` in
1, 2, 4, 8 (56 cells), seeds 0..N-1 with N = ceil(episodes / 56).

* ``scale``: one sweep into a fresh store; episodes/s, the store's bytes per
  episode, and the time ``tepa-bench report`` takes over it.
* ``store``: the same sweep engine writing to SQLite (WAL, a commit per batch)
  or keeping the episodes in a Python list, in alternating pairs; the ratio is
  SQLite episodes/s over in-memory episodes/s, pair by pair (median reported).
* ``ray``: the same sweep on a local Ray with ``--workers`` CPUs, batched tasks,
  against the local pool with as many processes, in alternating pairs; ratios of
  episodes/s with Ray's start-up excluded and included.
* ``metrics``: the cost of recording the drift metrics that every episode of a
  sweep, ``tepa-bench run`` and ``evaluate()`` now records: the same episodes (every
  shipped method on ``TEPA/RegimeDrift-v0`` with its default kwargs, seeds
  0..ceil(episodes / methods) - 1) run in this process by ``harness.run_job`` (no
  trace) and by ``harness.run_job_with_metrics`` (trace and ``episode_metrics``),
  in alternating pairs; the ratio is traced seconds over untraced, pair by pair
  (median reported), in wall-clock and in CPU seconds of the process.

Ratios are taken within one run, so a machine shared with other work moves both
sides of each pair alike.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tepa_envs.agents.evaluation.engine.backends import LocalBackend, RayBackend, ray_available
from tepa_envs.agents.evaluation.engine.jobs import build_jobs
from tepa_envs.agents.evaluation.engine.runner import run_job, run_job_with_metrics
from tepa_envs.agents.evaluation.engine.spec import SweepSpec, parse_spec
from tepa_envs.agents.evaluation.engine.store import Episode, Store
from tepa_envs.agents.evaluation.engine.sweep import SweepOutcome, execute
from tepa_envs.agents.evaluation.outputs.store_report import write_report
from tepa_envs.agents.memories.registry import METHOD_NAMES

N_KEYS = (1, 2, 4, 8)


def make_spec(episodes: int) -> SweepSpec:
    seeds = math.ceil(episodes / (len(METHOD_NAMES) * len(N_KEYS)))
    return parse_spec({"name": "benchmark", "seeds": seeds, "methods": ["all"],
                       "env": [{"id": "TEPA/RegimeDrift-v0", "grid": {"n_keys": list(N_KEYS)}}]}, "benchmark")


class MemorySink:
    """The store's interface, keeping the episodes in a list: the in-memory reference."""

    path = ":list:"

    def __init__(self) -> None:
        self.episodes: list[Episode] = []
        self.ids: dict[str, int] = {}

    def add_sweep(self, spec: Any, command: Any) -> int:
        return 0

    def add_cells(self, cells: Any) -> list[int]:
        return [self.ids.setdefault(c.cell_id, len(self.ids) + 1) for c in cells]

    def finished(self, cells: Any) -> set[tuple[int, int]]:
        return set()

    def code_version(self) -> str:
        return "memory"

    def add_episodes(self, episodes: Any) -> int:
        episodes = list(episodes)
        self.episodes.extend(episodes)
        return len(episodes)


class TimedStore(Store):
    """A store that adds up the seconds the driver spends committing episodes."""

    commit_s = 0.0

    def add_episodes(self, episodes: Any) -> int:
        started = time.perf_counter()
        try:
            return super().add_episodes(episodes)
        finally:
            self.commit_s += time.perf_counter() - started


def run_sqlite(spec: SweepSpec, backend: Any, directory: Path, name: str) -> tuple[SweepOutcome, Path]:
    outcome, path, _ = run_timed(spec, backend, directory, name)
    return outcome, path


def run_timed(spec: SweepSpec, backend: Any, directory: Path, name: str) -> tuple[SweepOutcome, Path, float]:
    path = directory / f"{name}.db"
    with TimedStore.open(path) as store:
        outcome = execute(store, spec, backend)
        return outcome, path, store.commit_s  # type: ignore[attr-defined]


def scale(args: argparse.Namespace) -> None:
    spec = make_spec(args.episodes)
    print(f"{len(spec.cells)} cells x {len(spec.seeds)} seeds = {spec.episodes:,} episodes, "
          f"{args.workers} local workers")
    with tempfile.TemporaryDirectory() as tmp:
        outcome, path = run_sqlite(spec, LocalBackend(args.workers), Path(tmp), "scale")
        size = path.stat().st_size
        print(f"sweep: {outcome.ran:,} episodes in {outcome.elapsed_s:.1f}s = {outcome.rate:.1f} episodes/s")
        print(f"store: {size:,} bytes = {size / outcome.ran:.1f} bytes/episode")
        started = time.perf_counter()
        with Store.open(path, create=False) as store:
            written = write_report(store, Path(tmp) / "report")
        print(f"report: {len(written)} groups from {outcome.ran:,} episodes in {time.perf_counter() - started:.1f}s")


def store_overhead(args: argparse.Namespace) -> None:
    spec = make_spec(args.episodes)
    print(f"{spec.episodes:,} episodes, {args.workers} local workers, {args.pairs} pairs (SQLite, in memory)")
    ratios, shares = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for pair in range(args.pairs):
            def sqlite_run() -> SweepOutcome:
                outcome, _, commit_s = run_timed(spec, LocalBackend(args.workers), Path(tmp), f"pair{pair}")
                shares.append(commit_s / outcome.elapsed_s)
                return outcome

            def memory_run() -> SweepOutcome:
                memory = MemorySink()
                outcome = execute(memory, spec, LocalBackend(args.workers))  # type: ignore[arg-type]
                assert len(memory.episodes) == spec.episodes
                return outcome

            if pair % 2 == 0:  # A B, then B A: a drift of the machine's speed cancels out
                sqlite_outcome, memory_outcome = sqlite_run(), memory_run()
            else:
                memory_outcome, sqlite_outcome = memory_run(), sqlite_run()
            ratio = sqlite_outcome.rate / memory_outcome.rate
            ratios.append(ratio)
            print(f"pair {pair}: SQLite {sqlite_outcome.rate:.1f} episodes/s, in memory {memory_outcome.rate:.1f} "
                  f"episodes/s, ratio {ratio:.3f}; committing took {100 * shares[-1]:.2f}% of the SQLite sweep")
    print(f"store overhead: SQLite / in-memory episodes/s = {statistics.median(ratios):.3f} (median of "
          f"{len(ratios)}; min {min(ratios):.3f}, max {max(ratios):.3f}); the driver spent "
          f"{100 * statistics.median(shares):.2f}% of the SQLite sweeps' wall time committing episodes")


def ray_overhead(args: argparse.Namespace) -> None:
    if not ray_available():
        sys.exit('Ray is not installed: pip install "tepa-envs[ray]"')
    spec = make_spec(args.episodes)
    print(f"{spec.episodes:,} episodes, {args.workers} CPUs each, {args.pairs} pairs (local pool, Ray)")
    steady, whole = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for pair in range(args.pairs):
            if pair % 2 == 0:  # A B, then B A
                local, _ = run_sqlite(spec, LocalBackend(args.workers), Path(tmp), f"local{pair}")
                ray, _ = run_sqlite(spec, RayBackend(args.workers), Path(tmp), f"ray{pair}")
            else:
                ray, _ = run_sqlite(spec, RayBackend(args.workers), Path(tmp), f"ray{pair}")
                local, _ = run_sqlite(spec, LocalBackend(args.workers), Path(tmp), f"local{pair}")
            local_whole, ray_whole = local.ran / local.elapsed_s, ray.ran / ray.elapsed_s
            steady.append(ray.rate / local.rate)
            whole.append(ray_whole / local_whole)
            print(f"pair {pair}: local pool {local.rate:.1f} episodes/s; Ray {ray.rate:.1f} episodes/s after "
                  f"{ray.startup_s:.1f}s start-up ({ray_whole:.1f} episodes/s with it)")
    print(f"Ray / local pool episodes/s: {statistics.median(steady):.3f} start-up excluded, "
          f"{statistics.median(whole):.3f} included (medians of {len(steady)})")


def metrics_overhead(args: argparse.Namespace) -> None:
    seeds = math.ceil(args.episodes / len(METHOD_NAMES))
    jobs = build_jobs("TEPA/RegimeDrift-v0", METHOD_NAMES, range(seeds))
    print(f"{len(jobs):,} episodes ({len(METHOD_NAMES)} methods x {seeds} seeds on TEPA/RegimeDrift-v0), "
          f"{args.pairs} pairs (run_job, run_job_with_metrics) in one process")
    for job in jobs[::seeds]:  # warm both paths (imports, caches) before timing
        run_job(job)
        run_job_with_metrics(job)

    def timed(function: Any) -> tuple[float, float]:
        """Wall-clock and CPU seconds of this process (the CPU time is not stretched by other work
        on a shared machine)."""
        started, cpu = time.perf_counter(), time.process_time()
        for job in jobs:
            function(job)
        return time.perf_counter() - started, time.process_time() - cpu

    ratios, cpu_ratios = [], []
    for pair in range(args.pairs):
        if pair % 2 == 0:  # A B, then B A
            plain, traced = timed(run_job), timed(run_job_with_metrics)
        else:
            traced, plain = timed(run_job_with_metrics), timed(run_job)
        ratios.append(traced[0] / plain[0])
        cpu_ratios.append(traced[1] / plain[1])
        print(f"pair {pair}: run_job {len(jobs) / plain[0]:.1f} episodes/s, with metrics "
              f"{len(jobs) / traced[0]:.1f} episodes/s; ratio {ratios[-1]:.3f} wall-clock, {cpu_ratios[-1]:.3f} CPU")
    for name, values in (("wall-clock", ratios), ("CPU", cpu_ratios)):
        print(f"drift metrics overhead: run_job_with_metrics / run_job {name} seconds = "
              f"{statistics.median(values):.3f} (median of {len(values)}; min {min(values):.3f}, "
              f"max {max(values):.3f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=("scale", "store", "ray", "metrics"))
    parser.add_argument("--episodes", type=int)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--pairs", type=int)
    args = parser.parse_args()
    default = {"scale": 100_000, "store": 2_000, "ray": 10_000, "metrics": 950}[args.what]
    args.episodes = args.episodes or default
    args.pairs = args.pairs or {"scale": 1, "store": 7, "ray": 2, "metrics": 7}[args.what]
    {"scale": scale, "store": store_overhead, "ray": ray_overhead, "metrics": metrics_overhead}[args.what](args)


if __name__ == "__main__":
    main()
