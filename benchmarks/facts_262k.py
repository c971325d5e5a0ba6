"""FactConsolidation at 262k tokens (18,332 facts, 100 questions per split): every method
through the shared front-end, against an append-and-scan memory.

Per split and method, the best of ``--repeats`` full ``TEPA/FactConsolidation-v0``
episodes on one core: the facts streamed in chunks and written to memory, then
the 100 questions answered by the reader (question -> chain of hops through the
memory, one answer each). Reported in seconds and as a ratio against an
append-and-scan memory run the same way in the same process (a list of every
assertion, each lookup a scan from the newest end). The front-end's own work,
done once per record and shared by every method (generating the record,
inducing the fact frames, building the question reader's index), is timed
separately. The process pins itself to one core (``--core``, default the first it
may use), so the figures are one-core figures whatever the machine;
``benchmarks/facts_sizes.py`` times every size the same way.

    python benchmarks/facts_262k.py [--repeats 3] [--seed 0] [--length 262k]
        [--methods tepa,lww,append-only] [--generator shaped|classic] [--data FILE] [--core 0]

``--data`` runs an official MemoryAgentBench file instead of the generator (the
record whose ``metadata.source`` names the split and length).
"""

from __future__ import annotations

import argparse
import gc
import os
import time

import gymnasium as gym

import tepa_envs  # noqa: F401
from tepa_envs.agents import METHOD_NAMES
from tepa_envs.agents.evaluation.engine.jobs import method_label
from tepa_envs.agents.evaluation.studies.facts import extra_rows, run_questions
from tepa_envs.core import Evidence, LifecycleState, Record

BUDGET_S = 2.0


class AppendAndScan:
    """Reference memory: appends every assertion; a lookup scans the log from the newest end."""

    name = "append-and-scan"

    def __init__(self) -> None:
        self.log: list[Evidence] = []

    def observe(self, evidence: Evidence) -> None:
        if evidence.outcome is not False:
            self.log.append(evidence)

    def retrieve(self, key: str, context: str = "") -> list[Record]:
        for evidence in reversed(self.log):
            if evidence.key == key:
                return [Record(key, evidence.value, 1, 0, LifecycleState.ACTIVE, evidence.t, evidence.t)]
        return []

    def reset(self) -> None:
        self.log = []


def pin(core: int | None) -> int:
    """Pin this process to one core (``None``: the first it may use); returns the core."""
    allowed = sorted(os.sched_getaffinity(0))
    chosen = allowed[0] if core is None else core
    if chosen not in allowed:
        raise ValueError(f"--core {chosen} is not among the cores this process may use: {allowed}")
    os.sched_setaffinity(0, {chosen})
    return chosen


def episode(env: gym.Env, method, seed: int, repeats: int) -> tuple[float, float]:
    """(best seconds, EM) of ``repeats`` episodes."""
    best, em = float("inf"), 0.0
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        rows = run_questions(env, method() if callable(method) and not isinstance(method, str) else method, seed)
        best = min(best, time.perf_counter() - start)
        em = sum(r["success"] for r in rows) / len(rows)
    return best, em


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--length", default="262k")
    parser.add_argument("--generator", default="shaped", choices=("shaped", "classic"))
    parser.add_argument("--data", default=None, help="an official MemoryAgentBench file instead of the generator")
    parser.add_argument("--methods", default=",".join(METHOD_NAMES),
                        help="comma-separated method names (default: every registered method)")
    parser.add_argument("--core", type=int, default=None, help="the core to pin to (default: the first allowed)")
    args = parser.parse_args()
    print(f"one core: CPU {pin(args.core)}")
    methods: list = [m for m in args.methods.split(",") if m]
    methods += list(extra_rows())

    for split in ("sh", "mh"):
        kwargs = {"split": split, "length": args.length}
        kwargs.update({"data_path": args.data} if args.data else {"generator": args.generator})
        start = time.perf_counter()
        env = gym.make("TEPA/FactConsolidation-v0", **kwargs)
        env.reset(seed=args.seed)  # generate (or load) and extract once, outside the timings
        front_end = time.perf_counter() - start
        start = time.perf_counter()
        run_questions(env, "no-memory", args.seed)  # builds the reader's index of the keys once
        index = time.perf_counter() - start
        data = env.unwrapped.data
        print(f"FactConsolidation {split.upper()}-{args.length}: {len(data.facts):,} facts, "
              f"{len(data.questions)} questions, {env.unwrapped.coverage():.1%} keyed; "
              f"front-end once per record: generate/load + induce frames {front_end:.2f} s, "
              f"question-reader index {index:.2f} s")
        reference, reference_em = episode(env, AppendAndScan, args.seed, args.repeats)
        print(f"  {'append-and-scan (reference)':30} {reference:7.3f} s   ratio 1.00   EM {reference_em:.2f}")
        for method in methods:
            seconds, em = episode(env, method, args.seed, args.repeats)
            flag = "" if seconds <= BUDGET_S else f"   over the {BUDGET_S:.0f} s budget"
            print(f"  {method_label(method):30} {seconds:7.3f} s   ratio {seconds / reference:5.2f}   "
                  f"EM {em:.2f}{flag}")
        env.close()


if __name__ == "__main__":
    main()
