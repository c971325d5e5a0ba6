"""The README's Speed table, generated from the JSON the benchmark scripts write.

    python benchmarks/speed_table.py --run        # run every benchmark (--runs 5), then write the table
    python benchmarks/speed_table.py              # write the table from benchmarks/speed/*.json
    python benchmarks/speed_table.py --check      # exit 1 when the README's table differs

The README marks the table with ``<!-- begin:speed -->`` and ``<!-- end:speed -->``
(the marker mechanism of ``tepa-bench readme``); only what lies between them is
replaced. Each row reads one JSON file of ``benchmarks/speed/``, written by the
script the row names with ``--json``; a row whose file is missing is left out.
Every figure is a ratio to a reference timed in the same run, the median over
the runs with its spread (min–max).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tepa_envs.agents.evaluation.outputs.blocks import BlockError, read_block, write_block

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "speed"
NAME = "speed"

#: script -> extra arguments of ``--run`` (each also gets ``--json benchmarks/speed/<script>.json``)
SCRIPTS: dict[str, list[str]] = {
    "env_throughput.py": ["--runs", "5"],
    "vector_throughput.py": ["--runs", "5"],
    "memory_ops.py": ["--runs", "5"],
    "memory_observation_throughput.py": ["--runs", "7"],
    "ppo_throughput.py": ["--runs", "5", "--part", "both"],
}


def _r(ratio: dict[str, float], digits: int = 2) -> str:
    """A ratio as ``median× (min–max)``."""
    return f"{ratio['median']:.{digits}f}× ({ratio['min']:.{digits}f}–{ratio['max']:.{digits}f})"


def _m(ratio: dict[str, float], digits: int = 1) -> str:
    return f"{ratio['median']:.{digits}f}×"


def env_row(data: dict[str, Any]) -> str:
    r = data["ratios"]
    loops = ", ".join(f"{m} {_m(r[f'agent loop ({m})'], 2)}" for m in ("no-memory", "tepa", "append-only"))
    return (f"RegimeDrift-v0 through `gym.make`: {_r(r['TEPA/RegimeDrift-v0'])} CartPole-v1 steps/s; the whole "
            f"agent loop (env + memory + reader), tasks/s as a multiple of CartPole-v1 steps/s: {loops}")


def vector_row(data: dict[str, Any]) -> str:
    r = data["ratios"]
    n = data["num_envs"]
    return (f"{n} envs: native vector env {_r(r['native / sync'], 1)} `SyncVectorEnv`; with batched TEPA "
            f"memories (`MemoryObservationV`) {_r(r['batched tepa / sync tepa'], 1)} `SyncVectorEnv` of per-env "
            f"`MemoryObservation(TEPA)` and {_r(r['batched tepa / native'])} the native env without memory "
            f"(batched LWW {_m(r['batched lww / native'], 2)}, append-only "
            f"{_m(r['batched append-only / native'], 2)}, no-memory {_m(r['batched no-memory / native'], 2)})")


def memory_ops_row(data: dict[str, Any]) -> str:
    sizes = list(data["sizes"])
    rows = [data["sizes"][s] for s in sizes]
    label = " / ".join(_size(int(s)) for s in sizes)

    def across(name: str, digits: int = 1) -> str:
        return " / ".join(f"{row['ratios'][name]['median']:.{digits}f}" for row in rows) + "×"

    def spread(name: str) -> str:
        low = min(row["ratios"][name]["min"] for row in rows)
        high = max(row["ratios"][name]["max"] for row in rows)
        return f"{low:.1f}–{high:.1f}"

    def us(name: str) -> str:
        return " / ".join(f"{row['us'][name]['median']:.2f}" for row in rows)

    flat = data.get("flatness", {})
    bytes_per = " / ".join(f"{row['bytes_per_precedent']:.0f}" for row in rows)
    return (f"TEPA at {label} distinct keys: observe (a key's first evidence) {across('tepa_observe/dict_set')} "
            f"a dict set ({spread('tepa_observe/dict_set')} over runs), {across('tepa_observe/floor_set')} the "
            f"floor (a Python method doing one dict set, itself {across('floor_set/dict_set')} a dict set); a "
            f"second evidence {across('tepa_observe_again/dict_set')} a dict set; retrieve "
            f"{across('tepa_retrieve/dict_get')} a dict get ({spread('tepa_retrieve/dict_get')}), "
            f"{across('tepa_retrieve/floor_get')} the floor; {us('tepa_observe')} µs per observe, "
            f"{us('tepa_retrieve')} µs per retrieve (CPU); "
            + (f"{_size(flat['to'])} vs {_size(flat['from'])}: {flat['observe']:.2f}× (observe), "
               f"{flat['retrieve']:.2f}× (retrieve); " if flat else "")
            + f"{bytes_per} bytes per precedent; LWW "
            f"observe {across('lww_observe/dict_set')} a dict set, append-only {across('append_only_observe/dict_set')}"
            f"; an append-and-scan memory answers a query at {_size(int(sizes[-1]))} keys in "
            f"{rows[-1]['scan_retrieve/dict_get']:,.0f}× a dict get")


def memory_observation_row(data: dict[str, Any]) -> str:
    r = data["ratios"]
    return (f"`MemoryObservation(gym.make(\"TEPA/RegimeDrift-v0\"), memory)`: TEPA {_r(r['tepa'])} the plain "
            f"env's steps/s, LWW {_m(r['lww'], 2)}, no-memory {_m(r['no-memory'], 2)}")


def ppo_row(data: dict[str, Any]) -> str:
    parts = []
    if "throughput" in data:
        t = data["throughput"]
        r = t["ratios"]
        steps = t["learn_steps_per_second"]
        parts.append(
            f"PPO at {t['n_envs']} envs (`n_steps` {t['n_steps']}, batch {t['batch_size']}): with TEPA features, "
            f"batched / per-env {_r(r['learn: batched / per-env, TEPA'])} timesteps/s of the whole `learn` "
            f"({_m(r['collect: batched / per-env, TEPA'])} for rollout collection alone; without memory "
            f"{_m(r['learn: batched / per-env, no memory'], 2)}); TEPA features cost "
            f"{_m(r['learn: per-env, TEPA / no memory'], 2)} (per-env) and "
            f"{_m(r['learn: batched, TEPA / no memory'], 2)} (batched) of the no-memory `learn` rate "
            f"({steps['batched, TEPA']['median']:,.0f} vs {steps['per-env, TEPA']['median']:,.0f} timesteps/s)")
    if "curve" in data:
        c = data["curve"]
        done = []
        for label, result in c["configs"].items():
            if result["reached"]:
                timesteps, seconds = result["reached"]
                done.append(f"{label} after {timesteps:,} timesteps ({seconds:.0f} CPU s of training)")
            else:
                best = result["best"]
                done.append(f"{label} not within {c['cap']:,} timesteps (best {best[2]:.3f})")
        same = c.get("same curve, TEPA")
        parts.append(f"the README's setting (4 envs) reaches full-reversal success {c['target']}: "
                     + "; ".join(done)
                     + ("; per-env and batched TEPA train the same policy (the same success curve)" if same else ""))
    return "; ".join(parts)


def _size(n: int) -> str:
    return f"{n // 10**6}M" if n >= 10**6 and n % 10**6 == 0 else f"{n // 1000}k" if n % 1000 == 0 else str(n)


ROWS = (("env_throughput.py", env_row), ("vector_throughput.py", vector_row), ("memory_ops.py", memory_ops_row),
        ("memory_observation_throughput.py", memory_observation_row), ("ppo_throughput.py", ppo_row))


def table(results: Path) -> str:
    lines = ["| benchmark | result: median over interleaved runs (min–max), each a ratio within one run |",
             "|---|---|"]
    for script, row in ROWS:
        path = results / (Path(script).stem + ".json")
        if path.exists():
            lines.append(f"| `{script}` | {row(json.loads(path.read_text()))} |")
    note = ("\nGenerated by `python benchmarks/speed_table.py` from `benchmarks/speed/*.json` (each written by "
            "its script with `--json`); times are CPU seconds of the benchmark process (`time.process_time`).\n")
    return "\n".join(lines) + "\n" + note


def update_readme(readme: Path, results: Path) -> bool:
    """Replace the speed block, in ``readme`` or a page of the ``docs/`` beside it;
    returns whether it changed."""
    try:
        before = read_block(NAME, readme.parent, readme)
        write_block(NAME, table(results), readme.parent, readme)
    except BlockError as error:
        raise SystemExit(str(error)) from None
    return before != table(results)


def run_all(results: Path) -> None:
    results.mkdir(parents=True, exist_ok=True)
    for script, extra in SCRIPTS.items():
        out = results / (Path(script).stem + ".json")
        print(f"running {script} {' '.join(extra)}", flush=True)
        subprocess.run([sys.executable, str(HERE / script), *extra, "--json", str(out)], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md")
    parser.add_argument("--run", action="store_true", help="run every benchmark first")
    parser.add_argument("--check", action="store_true", help="exit 1 when the README's table is not up to date")
    args = parser.parse_args()
    if args.run:
        run_all(args.results)
    if args.check:
        try:
            body = read_block(NAME, args.readme.parent, args.readme)
        except BlockError as error:
            raise SystemExit(str(error)) from None
        if body != table(args.results):
            raise SystemExit("the README's speed table is not the one benchmarks/speed/*.json give")
        return
    changed = update_readme(args.readme, args.results)
    print(f"{args.readme}: speed table {'updated' if changed else 'unchanged'}")


if __name__ == "__main__":
    main()
