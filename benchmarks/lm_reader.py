"""The real language-model reader: speed, and how it reads against the simulated one.

Two measurements (``python benchmarks/lm_reader.py speed|study|readme``):

* ``speed``: seconds per decision of :class:`LocalLMReader` (SmolLM2-135M on one
  thread) on prompts from real episodes, decisions/s with the decision cache
  (the same prompts again: rendered, keyed, looked up), and the simulated
  :class:`EvidenceReader` on the same records as the reference; every figure
  also as a ratio to the reference measured in the same run.
* ``study``: methods x seeds episodes of the controlled-drift and preference
  environments read by the simulated reader and by the local model in each of
  the ``--readers`` variants (:data:`READERS`: greedy with the template as
  documented, where TEPA's records show their validity; greedy with validities
  hidden, so that TEPA's records read exactly like every other memory's; and, on
  request, options sampled at temperature 1, so the model explores) on the same
  seeds: success per method, and the follow rate (how
  often the model chose the value the memory's top record names, among the
  decisions where the memory showed one). Episodes run in a worker pool, one
  model per worker, seed by seed; every finished episode is appended to
  ``--out``'s JSON lines, so a long study can be stopped and reported as far as
  it got. With ``--cache`` the variants share one decision cache: a prompt that
  two variants render alike (every prompt of a memory without validities) asks
  the model once.
* ``readme``: the table of a study's JSON lines into README.md's
  ``<!-- begin:lm-reader -->`` block.

    python benchmarks/lm_reader.py speed [--decisions 40]
    python benchmarks/lm_reader.py study --seeds 2 [--workers 2] [--readers local-lm,local-lm-hidden]
                                         [--cache FILE] [--out lm_study.jsonl]
    python benchmarks/lm_reader.py readme lm_study.jsonl [--speed lm_speed.json]

The README's tables come from ``benchmarks/lm/lm_study.jsonl`` and
``benchmarks/lm/lm_speed.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import tepa_envs  # noqa: F401
from tepa_envs.agents import MemoryAgent, run_episode
from tepa_envs.agents.evaluation.engine.executor import run_jobs
from tepa_envs.agents.evaluation.outputs.blocks import BlockError, write_block
from tepa_envs.agents.evaluation.outputs.files import write_text_atomic
from tepa_envs.agents.readers.evidence_reader import EvidenceReader
from tepa_envs.agents.readers.lm_cache import DecisionCache
from tepa_envs.agents.readers.local_lm import LocalLMReader
from tepa_envs.agents.readers.prompt import shows_validity

ENVS = ("TEPA/RegimeDrift-v0", "TEPA/PreferenceStream-v0")
METHODS = ("no-memory", "append-only", "lww", "reactive-forgetting", "tepa", "tepa-full", "oracle-reset")
READERS: dict[str, dict[str, Any]] = {
    "local-lm": {},
    "local-lm-hidden": {"validity": "hidden"},
    "local-lm-t1": {"temperature": 1.0},
}
"""The local-model variants a study can run: their :class:`LocalLMReader` kwargs."""
READER_LABELS = {"local-lm": "SmolLM2-135M", "local-lm-hidden": "SmolLM2-135M, validity hidden",
                 "local-lm-t1": "SmolLM2-135M, sampled (temperature 1)"}
ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------ speed
def collect_decisions(n: int) -> list[tuple[str, tuple[str, ...], tuple[Any, ...], bool]]:
    """(task text, choices, records, validity) of the first ``n`` decisions with a shown
    record, from controlled-drift episodes of TEPA and append-only (simulated reader)."""
    found: list[tuple[str, tuple[str, ...], tuple[Any, ...], bool]] = []

    class Recorder(EvidenceReader):
        def bind_memory(self, memory: object) -> None:
            self.validity = shows_validity(memory)

        def begin_task(self, info: Any) -> None:
            self.context = info.get("context", "")

        def choose(self, records, choices, stated=None):  # type: ignore[no-untyped-def]
            if records:
                found.append((self.context, tuple(choices), tuple(records), self.validity))
            return super().choose(records, choices, stated)

    for seed in range(100):
        for method in ("tepa", "append-only"):
            run_episode(gym.make(ENVS[0]), MemoryAgent(method, Recorder()), seed=seed)
            if len(found) >= n:
                return found[:n]
    return found


def speed(args: argparse.Namespace) -> dict[str, Any]:
    decisions = collect_decisions(args.decisions)
    with tempfile.TemporaryDirectory() as tmp:
        cache_path = Path(tmp) / "decisions.sqlite"
        reader = LocalLMReader(cache=DecisionCache(cache_path))
        started = time.perf_counter()
        reader.runtime  # noqa: B018 - load (or convert) the model before timing decisions
        load_s = time.perf_counter() - started
        reader.choose(decisions[0][2], decisions[0][1])  # the shared prefix's keys and values
        started = time.perf_counter()
        for context, choices, records, validity in decisions:
            reader.context, reader.validity = context, validity
            reader.choose(records, choices)
        model_s = (time.perf_counter() - started) / len(decisions)
        cached = LocalLMReader(cache=DecisionCache(cache_path))
        started = time.perf_counter()
        for _ in range(5):
            for context, choices, records, validity in decisions:
                cached.context, cached.validity = context, validity
                cached.choose(records, choices)
        cached_s = (time.perf_counter() - started) / (5 * len(decisions))
        assert cached.stats.model_calls == 0
    simulated = EvidenceReader()
    started = time.perf_counter()
    for _ in range(200):
        for _, choices, records, _ in decisions:
            simulated.choose(records, choices)
    simulated_s = (time.perf_counter() - started) / (200 * len(decisions))
    result = {"decisions": len(decisions), "load_s": load_s, "model_s_per_decision": model_s,
              "model_decisions_per_s": 1 / model_s, "cached_decisions_per_s": 1 / cached_s,
              "simulated_decisions_per_s": 1 / simulated_s, "cache_speedup": model_s / cached_s,
              "model_vs_simulated": model_s / simulated_s, "cached_vs_simulated": cached_s / simulated_s,
              "load_average": os.getloadavg()[0]}
    print(json.dumps(result, indent=2))
    if args.out:
        write_text_atomic(Path(args.out), json.dumps(result, indent=2) + "\n")
    return result


# ------------------------------------------------------------------------------ study
def study_job(job: tuple[str, str, int, str, str | None]) -> dict[str, Any]:
    env_id, method, seed, reader_name, cache = job
    reader: Any = (EvidenceReader() if reader_name == "simulated"
                   else LocalLMReader(cache=cache if cache else False, **READERS[reader_name]))
    env = gym.make(env_id)
    try:
        started = time.perf_counter()
        result = run_episode(env, MemoryAgent(method, reader), seed=seed)
    finally:
        env.close()
    row: dict[str, Any] = {"env": env_id, "method": method, "seed": seed, "reader": reader_name,
                           "success": float(result.success.mean()), "elapsed_s": time.perf_counter() - started}
    stats = getattr(reader, "stats", None)
    if stats is not None:
        row.update(decisions=stats.decisions, shown=stats.shown, follow=stats.follow,
                   model_calls=stats.model_calls, cache_hits=stats.cache_hits)
    return row


def study(args: argparse.Namespace) -> None:
    out = Path(args.out)
    done = {(r["env"], r["method"], r["seed"], r["reader"]) for r in read_rows(out)} if out.exists() else set()
    envs = args.envs.split(",") if args.envs else ENVS
    methods = args.methods.split(",") if args.methods else METHODS
    readers = ["simulated", *args.readers.split(",")]
    unknown = sorted(set(readers) - {"simulated", *READERS})
    if unknown:
        sys.exit(f"unknown reader(s) {', '.join(unknown)}; valid: {', '.join(READERS)}")
    jobs = [(env, m, s, reader, args.cache) for s in range(args.seeds) for env in envs for reader in readers
            for m in methods if (env, m, s, reader) not in done]
    jobs.sort(key=lambda j: (j[3] != "simulated", j[2]))  # the cheap episodes first, then seed by seed
    started = time.perf_counter()
    for row in run_jobs_streaming(jobs, args.workers):
        with open(out, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")
        print(f"{time.perf_counter() - started:7.0f}s {row['env']} {row['method']} seed {row['seed']} "
              f"{row['reader']}: success {row['success']:.3f}", flush=True)


def run_jobs_streaming(jobs: list[Any], workers: int):  # type: ignore[no-untyped-def]
    """Each job's row as soon as its batch is done (batches of ``workers`` jobs)."""
    for start in range(0, len(jobs), workers):
        yield from run_jobs(jobs[start:start + workers], study_job, workers)


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The study's rows, one per (env, method, seed, reader): a row written twice (two
    study processes on one file) counts once, the last written."""
    rows: dict[tuple[str, str, int, str], dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            rows[row["env"], row["method"], row["seed"], row["reader"]] = row
    return list(rows.values())


# ------------------------------------------------------------------------------ README table
def _follow(rows: list[dict[str, Any]]) -> str:
    shown = sum(r["shown"] for r in rows)
    return f"{sum(r['follow'] for r in rows) / shown:.2f} ({shown})" if shown else "— (0)"


def task_stream(env_id: str, seed: int) -> tuple[tuple[str, str], ...]:
    """The (task text, correct value) of every task of ``env_id``'s episode ``seed``, acting 0
    throughout: two seeds with the same stream give a greedy reader the same episode."""
    env = gym.make(env_id)
    try:
        _, info = env.reset(seed=seed)
        stream, done = [], False
        while not done:
            stream.append((str(info.get("context", "")), str(info.get("oracle", {}).get("correct", ""))))
            _, _, terminated, truncated, info = env.step(0)
            done = terminated or truncated
    finally:
        env.close()
    return tuple(stream)


def _env_table(env: str, env_rows: list[dict[str, Any]], variants: list[str], seeds: list[int]) -> list[str]:
    methods = [m for m in METHODS if any(r["method"] == m for r in env_rows)]
    pick = {(m, v): [r for r in env_rows if r["method"] == m and r["reader"] == v and r["seed"] in seeds]
            for m in methods for v in ("simulated", *variants)}
    decisions = sum(r["decisions"] for v in variants for m in methods for r in pick[m, v])
    calls = sum(r["model_calls"] for v in variants for m in methods for r in pick[m, v])
    streams = len({task_stream(env, seed) for seed in seeds})
    lines = [f"`{env}`, seeds {', '.join(map(str, seeds))} ({len(seeds)} seed(s), {streams} distinct task "
             f"stream(s) among them; {decisions:,} decisions: "
             f"{calls:,} new model calls, the rest read from the shared decision cache, where the same model "
             "had answered the identical prompt before). Success is the mean over seeds; follow rate: the share "
             "of decisions where the model chose the value the memory's top record names (in brackets, how many "
             "decisions showed one):\n"]
    header = ["method", "simulated reader"]
    for v in variants:
        header += [READER_LABELS[v], "follow rate"]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    for m in methods:
        cells = [m, f"{np.mean([r['success'] for r in pick[m, 'simulated']]):.3f}"]
        for v in variants:
            cells += [f"{np.mean([r['success'] for r in pick[m, v]]):.3f}", _follow(pick[m, v])]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    return lines


def table(rows: list[dict[str, Any]], speed_result: dict[str, Any] | None) -> str:
    """Per environment: success of every method with the simulated reader and the local-model
    variants, and the model's follow rate. A variant's seeds are those on which every method
    finished with it and with the simulated reader; variants with the same seeds share a table."""
    lines = []
    for env in ENVS:
        env_rows = [r for r in rows if r["env"] == env]
        have = {(r["method"], r["reader"], r["seed"]) for r in env_rows}
        methods = [m for m in METHODS if any(r["method"] == m for r in env_rows)]
        groups: dict[tuple[int, ...], list[str]] = {}
        for v in READERS:
            seeds = tuple(sorted(s for s in {r["seed"] for r in env_rows}
                                 if all((m, v, s) in have and (m, "simulated", s) in have for m in methods)))
            if seeds:
                groups.setdefault(seeds, []).append(v)
        for seeds, variants in groups.items():
            lines += _env_table(env, env_rows, variants, list(seeds))
    if speed_result:
        s = speed_result
        lines.append(f"Speed ({s['decisions']} controlled-drift decisions, one thread, load average "
                     f"{s['load_average']:.1f} on 2 cores while measured): {s['model_s_per_decision']:.2f} s per "
                     f"model decision ({s['model_vs_simulated']:,.0f}× the simulated reader's time); from the "
                     f"cache {s['cached_decisions_per_s']:,.0f} decisions/s ({s['cache_speedup']:,.0f}× faster "
                     f"than the model, {s['cached_vs_simulated']:.0f}× the simulated reader's time).")
        lines.append("")
    return "\n".join(lines)


def readme(args: argparse.Namespace) -> None:
    rows = read_rows(Path(args.rows))
    speed_result = json.loads(Path(args.speed).read_text()) if args.speed else None
    try:  # the lm-reader block, wherever it lives (README.md or a page under docs/)
        write_block("lm-reader", table(rows, speed_result), ROOT)
    except BlockError as error:
        sys.exit(str(error))
    print(table(rows, speed_result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("speed")
    p.add_argument("--decisions", type=int, default=40)
    p.add_argument("--out", default="lm_speed.json")
    p.set_defaults(func=speed)
    p = sub.add_parser("study")
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--envs", help="comma-separated environment ids (default: controlled drift, preference)")
    p.add_argument("--methods", help="comma-separated methods (default: the seven of the paper's comparisons)")
    p.add_argument("--readers", default="local-lm,local-lm-hidden",
                   help="comma-separated local-model variants besides the simulated reader: " + ", ".join(READERS))
    p.add_argument("--cache", help="decision cache file (default: none, every decision asks the model)")
    p.add_argument("--out", default="lm_study.jsonl")
    p.set_defaults(func=study)
    p = sub.add_parser("readme")
    p.add_argument("rows")
    p.add_argument("--speed")
    p.set_defaults(func=readme)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
