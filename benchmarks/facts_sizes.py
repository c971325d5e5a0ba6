"""FactConsolidation at every size: each method's episode time per split and length, on one core.

For every configuration (single- and multi-hop at 6k, 32k, 64k and 262k tokens) of the
generated data (the shaped generator, ``--seed``), and of the official MemoryAgentBench
rows found in the data folder (``--data-dir``, else ``$TEPA_MAB_DATA`` or the shared
folder; the 6k rows in a checkout), every method's best of ``--repeats`` full
``TEPA/FactConsolidation-v0`` episodes, timed as ``benchmarks/facts_262k.py`` times
them: the facts streamed in chunks and written to memory, then the 100 questions
answered by the reader, under the evaluation's question reader (``newest``). Beside them, per
configuration, the front-end's work done once per record and shared by every method
(generating or loading the record and inducing its fact frames; building the question
reader's index) and an append-and-scan memory as a reference.

The process pins itself to one core (``--core``, default the first it may use), so the
figures are one-core figures whatever the machine. Writes every figure to ``--out``
(default ``benchmarks/results/facts_sizes.json``) and the table into the ``facts-sizes``
block of ``docs/results/fact-consolidation.md`` (``--no-readme`` leaves the docs alone).

    python benchmarks/facts_sizes.py [--repeats 3] [--seed 0] [--lengths 6k,32k,64k,262k]
        [--methods tepa,lww,...] [--core 0] [--data-dir DIR] [--out PATH] [--no-readme]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym

import tepa_envs  # noqa: F401
from tepa_envs.agents import METHOD_NAMES
from tepa_envs.agents.evaluation.engine.jobs import method_label
from tepa_envs.agents.evaluation.outputs.blocks import write_blocks
from tepa_envs.agents.evaluation.outputs.facts_tables import ORIGINS
from tepa_envs.agents.evaluation.studies.facts import data_folder, extra_rows, official_file, run_questions
from tepa_envs.facts.data import LENGTHS, SPLITS, check_length
from tepa_envs.facts.wordnet import wordnet

sys.path.insert(0, str(Path(__file__).resolve().parent))
from facts_262k import BUDGET_S, AppendAndScan, episode, pin  # noqa: E402  (the benchmark beside this one)

ROOT = Path(__file__).resolve().parents[1]
BLOCK = "facts-sizes"
REFERENCE = "append-and-scan (reference)"


def cpu_name() -> str:
    """The processor's model name (Linux), else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def configurations(lengths: list[str], data_dir: str | None) -> list[tuple[str, str, str, Path | None]]:
    """``(origin, split, length, path)``: every generated configuration, then every official
    row found in the data folder."""
    out: list[tuple[str, str, str, Path | None]] = [
        (ORIGINS["synthetic"], split, length, None) for length in lengths for split in SPLITS]
    folder = data_folder(data_dir)
    for length in lengths:
        for split in SPLITS:
            path = official_file(folder, split, length)
            if path is not None:
                out.append((ORIGINS["real"], split, length, path))
    return out


def time_configuration(origin: str, split: str, length: str, path: Path | None, methods: list,
                       seed: int, repeats: int) -> dict[str, Any]:
    """Every method's best episode time on one configuration, and the shared front-end's times."""
    kwargs: dict[str, Any] = {"split": split, "length": length}
    if path is not None:
        kwargs["data_path"] = path
    start = time.perf_counter()
    env = gym.make("TEPA/FactConsolidation-v0", **kwargs)
    env.reset(seed=seed)  # generate (or load) and induce the frames once, outside the timings
    front_end = time.perf_counter() - start
    start = time.perf_counter()
    run_questions(env, "no-memory", seed)  # builds the question reader's index once
    index = time.perf_counter() - start
    data = env.unwrapped.data
    seconds, em = {}, {}
    for method in [AppendAndScan, *methods]:
        label = REFERENCE if method is AppendAndScan else method_label(method)
        seconds[label], em[label] = episode(env, method, seed, repeats)
        print(f"  {origin} {split.upper()}-{length} {label:30} {seconds[label]:7.3f} s   EM {em[label]:.2f}",
              flush=True)
    env.close()
    return {"origin": origin, "split": split, "length": length, "n_facts": len(data.facts),
            "n_questions": len(data.questions), "data": None if path is None else path.name,
            "front_end_s": front_end, "index_s": index, "seconds": seconds, "em": em}


def markdown(result: dict[str, Any]) -> str:
    """The docs block: a row per method, a column per configuration (origin and size)."""
    rows = result["configurations"]
    methods = list(dict.fromkeys(m for row in rows for m in row["seconds"]))
    header = ["method", *(f"{r['split'].upper()}-{r['length']} {r['origin']}" for r in rows)]
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * len(rows)]
    for method in methods:
        cells = []
        for row in rows:
            value = row["seconds"].get(method)
            cells.append("" if value is None else f"{value:.2f}" + (" (over)" if value > BUDGET_S else ""))
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    lines.append("| *front-end once per record: load or generate + induce frames (0.00: done for the other split)* | "
                 + " | ".join(f"{r['front_end_s']:.2f}" for r in rows) + " |")
    lines.append("| *question reader's index, once per record* | "
                 + " | ".join(f"{r['index_s']:.2f}" for r in rows) + " |")
    lines.append("| *facts in the record* | " + " | ".join(f"{r['n_facts']:,}" for r in rows) + " |")
    over = sorted({(m, f"{r['split'].upper()}-{r['length']} {r['origin']}") for r in rows
                   for m, s in r["seconds"].items() if s > BUDGET_S})
    lines += ["", f"Seconds per episode (best of {result['repeats']}, one core: CPU {result['core']} of "
              f"{result['machine']}, Python {result['python']}); generated: the shaped generator, seed "
              f"{result['seed']}; official: the MemoryAgentBench row found in the data folder. "
              f"Budget {BUDGET_S:.0f} s per episode: "
              + ("every method within it at every size." if not over else
                 "over it: " + "; ".join(f"{m} at {where}" for m, where in over) + ".")]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lengths", default=",".join(LENGTHS))
    parser.add_argument("--methods", default=",".join(METHOD_NAMES),
                        help="comma-separated method names (default: every registered method)")
    parser.add_argument("--core", type=int, default=None, help="the core to pin to (default: the first allowed)")
    parser.add_argument("--data-dir", default=None, help="folder of official rows (default: $TEPA_MAB_DATA "
                                                         "or the shared folder beside a checkout)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "facts_sizes.json"))
    parser.add_argument("--no-readme", action="store_true")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        raise ValueError(f"--repeats must be >= 1, got {args.repeats}")
    lengths = [check_length(n) for n in args.lengths.split(",") if n]
    methods: list = [m for m in args.methods.split(",") if m] + list(extra_rows())
    core = pin(args.core)
    wordnet()  # the lexical database, loaded once per process: outside the timings
    started = time.perf_counter()
    rows = [time_configuration(*config, methods, args.seed, args.repeats)
            for config in configurations(lengths, args.data_dir)]
    result = {"repeats": args.repeats, "seed": args.seed, "core": core, "budget_s": BUDGET_S,
              "machine": cpu_name(), "python": platform.python_version(),
              "configurations": rows}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    table = markdown(result)
    print(table)
    if not args.no_readme:
        write_blocks({BLOCK: table}, ROOT)
    print(f"{time.perf_counter() - started:.0f} s; wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
