"""FactConsolidation at 262k tokens (18,332 facts, 100 questions): TEPA against append-and-scan.

Two measurements per split, each the best of ``--repeats`` runs on one core,
both reported as a ratio against an append-and-scan memory in the same run:

* episode: a full ``TEPA/FactConsolidation-v0`` episode with ``MemoryAgent``
  (the facts streamed in chunks through the environment and written to memory,
  then the 100 questions answered, multi-hop by chain retrieval);
* memory: the same work without the environment and the agent (observe the
  18,332 evidence records, then answer the questions hop by hop).

Generating and parsing the data is timed separately (it happens once per seed).

    python benchmarks/facts_262k.py [--repeats 3] [--seed 0]
"""

from __future__ import annotations

import argparse
import gc
import time
from typing import Callable

import gymnasium as gym

import tepa_envs  # noqa: F401
from tepa_envs.agents import TEPA
from tepa_envs.agents.evaluation.facts import score_method
from tepa_envs.core import Evidence, LifecycleState, Record
from tepa_envs.facts.env import EpisodeData, parse_facts, prepare_record
from tepa_envs.facts.data import generate_records
from tepa_envs.facts.metric import substring_exact_match


class AppendAndScan:
    """Reference memory: appends every assertion; a query scans the log from the newest end."""

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


def best_of(fn: Callable[[], float], repeats: int) -> tuple[float, float]:
    """(best seconds, the score fn returned) over ``repeats`` runs."""
    best, score = float("inf"), 0.0
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        score = fn()
        best = min(best, time.perf_counter() - start)
    return best, score


def memory_only(make: Callable[[], object], data: EpisodeData, repeats: int) -> tuple[float, float, float]:
    """Best (ingest seconds, answer seconds) over ``repeats``, and the substring EM.

    Ingest observes every fact; answering follows each question's key and chain.
    """
    best_ingest = best_answer = float("inf")
    em = 0.0
    for _ in range(repeats):
        gc.collect()
        memory = make()
        start = time.perf_counter()
        for evidence in data.evidence:
            if evidence is not None:
                memory.observe(evidence)
        middle = time.perf_counter()
        hits = 0.0
        for question in data.questions:
            subject, _, relation = question.key.partition("|")
            answer = ""
            for rel in (relation, *question.chain):
                records = memory.retrieve(f"{subject}|{rel}", question.text)
                if not records:
                    answer = ""
                    break
                answer = subject = records[0].value
            hits += substring_exact_match(answer, question.answers)
        end = time.perf_counter()
        best_ingest, best_answer = min(best_ingest, middle - start), min(best_answer, end - middle)
        em = hits / len(data.questions)
    return best_ingest, best_answer, em


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    start = time.perf_counter()
    records = generate_records("262k", args.seed)
    generation = time.perf_counter() - start
    start = time.perf_counter()
    parsed = parse_facts(records["sh"]["context"])
    data = {split: prepare_record(records[split], parsed) for split in ("sh", "mh")}
    parsing = time.perf_counter() - start
    print(f"FactConsolidation 262k: {len(parsed[0]):,} facts, 100 questions per split, seed {args.seed}")
    print(f"  once per seed (cached): generate records {generation:.2f} s, parse facts and questions "
          f"{parsing:.2f} s")

    methods: dict[str, Callable[[], object]] = {"tepa": TEPA, "append-and-scan": AppendAndScan}
    for split in ("sh", "mh"):
        env = gym.make("TEPA/FactConsolidation-v0", split=split, length="262k")
        env.reset(seed=args.seed)  # warm the environment's data cache outside the timings
        episode = {name: best_of(lambda make=make: score_method(env, make(), args.seed)[0], args.repeats)
                   for name, make in methods.items()}
        memory = {name: memory_only(make, data[split], args.repeats) for name, make in methods.items()}
        n_queries = sum(1 + len(q.chain) for q in data[split].questions)
        (tepa_s, tepa_em), (scan_s, scan_em) = episode["tepa"], episode["append-and-scan"]
        print(f"  {split.upper()}-262k ({n_queries} key lookups)")
        print(f"    episode (env + MemoryAgent): tepa {tepa_s:.3f} s (EM {tepa_em:.2f}), "
              f"append-and-scan {scan_s:.3f} s (EM {scan_em:.2f}); ratio tepa/scan {tepa_s / scan_s:.2f}")
        (t_in, t_ans, t_em), (s_in, s_ans, s_em) = memory["tepa"], memory["append-and-scan"]
        print(f"    memory ingest  : tepa {t_in:.3f} s, append-and-scan {s_in:.3f} s; ratio {t_in / s_in:.2f}")
        print(f"    memory answers : tepa {t_ans * 1e3:.2f} ms ({t_ans / n_queries * 1e6:.1f} us/lookup, "
              f"EM {t_em:.2f}), append-and-scan {s_ans * 1e3:.2f} ms ({s_ans / n_queries * 1e6:.1f} us/lookup, "
              f"EM {s_em:.2f}); ratio {t_ans / s_ans:.3f}")
        print(f"    memory total   : ratio tepa/scan {(t_in + t_ans) / (s_in + s_ans):.2f}")
        env.close()


if __name__ == "__main__":
    main()
