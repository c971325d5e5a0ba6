"""The RL study on both engines, side by side: ``tepa-bench rl`` with ``--engine sb3`` and ``--engine rllib``.

    python benchmarks/rl_engines.py [--size quick|medium|default] [--workers 2] [--out DIR] [--fresh] [--readme]
    python benchmarks/rl_engines.py --report-only [--out DIR] [--readme]   # the report of runs already in OUT

runs the same built-in size (default ``quick``: 10 agents x 2 environments x 2
training seeds, 2,048 steps per unit) on each engine, one after the other, with the
same training and held-out seeds, into one results store (``OUT/rl_store.db``: the
engines' units live side by side; a rerun resumes each), and prints one markdown
report: per environment and agent the final drift and overall success under each
engine, and per agent the time split under each (environment + memory steps per
second for the same environment and memory, the policy's forward passes, the PPO
updates, the evaluations, the seconds per unit), with each engine's wall time. ``--readme`` writes
the report into the ``rl-engines`` block of ``docs/rl.md``.

The wall times are a measurement of the machine that ran them, with the number of
workers given (both engines get the same); a resumed run reports the units it
trained and those it found in the store, and its wall time covers only the former
(``--fresh`` removes the store first).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from tepa_envs.agents.evaluation.cli.app import main as cli_main
from tepa_envs.agents.evaluation.outputs.blocks import write_block
from tepa_envs.agents.evaluation.studies.rl_study import SIZES

ENGINES: tuple[str, ...] = ("sb3", "rllib")
BLOCK = "rl-engines"
"""The generated block in ``docs/rl.md``."""


def run_engine(engine: str, size: str, workers: int, out: Path) -> dict[str, Any]:
    """``tepa-bench rl --size SIZE --engine ENGINE`` into ``out/ENGINE`` (store ``out/rl_store.db``); its rl.json."""
    args = ["rl", "--size", size, "--engine", engine, "--workers", str(workers), "--out", str(out / engine),
            "--store", str(out / "rl_store.db"), "--quiet"]
    started = time.perf_counter()
    status = cli_main(args)
    if status != 0:
        raise SystemExit(f"tepa-bench {' '.join(args)} exited {status}")
    data: dict[str, Any] = json.loads((out / engine / "rl.json").read_text(encoding="utf-8"))
    data["command_s"] = time.perf_counter() - started
    return data


def read_engine(engine: str, out: Path) -> dict[str, Any]:
    """The rl.json an earlier run wrote into ``out/ENGINE``."""
    path = out / engine / "rl.json"
    if not path.is_file():
        raise SystemExit(f"{path} not found: run without --report-only first")
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _score(row: dict[str, Any], score: str) -> str:
    est = row["success"].get(score)
    return "-" if est is None else f"{est['mean']:.2f} [{est['ci_low']:.2f}, {est['ci_high']:.2f}]"


def _timing(runs: dict[str, dict[str, Any]], engine: str, agent: str, key: str) -> float:
    rows = [env["agents"][agent]["timing"][key] for env in runs[engine]["envs"]]
    return sum(rows) / len(rows)


def report(runs: dict[str, dict[str, Any]], conditions: dict[str, Any]) -> str:
    """The markdown report of both engines' runs (see the module docstring); ``conditions``:
    ``workers``, ``cores``, ``load`` (the 1-minute load average when the runs started)."""
    first = runs[ENGINES[0]]
    spec, agents = first["spec"], first["agents"]
    lines = [f"Size `{spec['name']}`: {len(first['train_seeds'])} training seeds, {spec['timesteps']:,} training "
             f"steps per unit, {spec['eval_episodes']} held-out episodes, the same seeds on both engines; "
             f"`--workers {conditions['workers']}` on a machine with {conditions['cores']} cores (load average "
             f"{conditions['load']:.1f} when the runs started: other jobs shared it), Python "
             f"{conditions['python']}.", ""]
    for engine in ENGINES:
        data = runs[engine]
        versions = ", ".join(f"{k} {v}" for k, v in data["versions"].items())
        lines.append(f"* `{engine}`: {data['units']['trained']} units trained ({data['units']['skipped']} from "
                     f"the store) in {data['wall_s']:.0f} s of wall time; the units' own times sum to "
                     f"{data['unit_s']:.0f} s; {versions}.")
    lines += ["", "Final drift score and overall success, mean [95 % bootstrap CI across training seeds]:", ""]
    header = "| env | agent | " + " | ".join(f"drift {e}" for e in ENGINES) + " | " + \
             " | ".join(f"overall {e}" for e in ENGINES) + " |"
    lines += [header, "|---|---|" + "---|" * (2 * len(ENGINES))]
    for k, env in enumerate(first["envs"]):
        for agent in agents:
            cells = [_score(runs[e]["envs"][k]["agents"][agent], "drift") for e in ENGINES]
            cells += [_score(runs[e]["envs"][k]["agents"][agent], "overall") for e in ENGINES]
            lines.append(f"| {env['label']} | {agent} | " + " | ".join(cells) + " |")
    lines += ["", "Time split per unit (mean over the environments and seeds; env+memory steps/s = training "
              "steps / seconds in environment and memory steps, the same environments and memories under "
              "both engines; forward = rollout collection less those seconds):", "",
              "| agent | path | " + " | ".join(f"env+memory steps/s {e}" for e in ENGINES) + " | "
              + " | ".join(f"forward s {e}" for e in ENGINES) + " | " + " | ".join(f"update s {e}" for e in ENGINES)
              + " | " + " | ".join(f"eval s {e}" for e in ENGINES) + " | " + " | ".join(f"unit s {e}" for e in ENGINES)
              + " |", "|---|---|" + "---|" * (5 * len(ENGINES))]
    for agent in agents:
        by_engine = {e: "/".join(sorted({env["agents"][agent]["path"] for env in runs[e]["envs"]})) for e in ENGINES}
        paths = (by_engine[ENGINES[0]] if len(set(by_engine.values())) == 1
                 else ", ".join(f"{p} ({e})" for e, p in by_engine.items()))
        cells = [f"{_timing(runs, e, agent, 'env_steps_per_s'):,.0f}" for e in ENGINES]
        cells += [f"{_timing(runs, e, agent, key):.1f}" for key in ("policy_s", "update_s", "eval_s", "total_s")
                  for e in ENGINES]
        lines.append(f"| {agent} | {paths} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=tuple(SIZES), default="quick", help="a built-in size (default quick)")
    parser.add_argument("--workers", type=int, default=2, help="workers for each engine (default 2)")
    parser.add_argument("--out", default="results/rl_engines", help="output directory (default results/rl_engines)")
    parser.add_argument("--fresh", action="store_true", help="remove the store first (no unit resumed)")
    parser.add_argument("--report-only", action="store_true", help="run nothing: report the runs already in --out")
    parser.add_argument("--readme", action="store_true", help="write the rl-engines block of docs/rl.md")
    parser.add_argument("--root", default=".", help="the checkout holding docs/ (default .)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.report_only:
        runs = {engine: read_engine(engine, out) for engine in ENGINES}
        conditions = json.loads((out / "conditions.json").read_text(encoding="utf-8"))
    else:
        if args.fresh:
            for name in ("rl_store.db", "rl_store.db-wal", "rl_store.db-shm"):
                (out / name).unlink(missing_ok=True)
        conditions = {"workers": args.workers, "cores": os.cpu_count(), "load": os.getloadavg()[0],
                      "python": platform.python_version()}
        (out / "conditions.json").write_text(json.dumps(conditions), encoding="utf-8")
        runs = {engine: run_engine(engine, args.size, args.workers, out) for engine in ENGINES}
    text = report(runs, conditions)
    (out / "rl_engines.md").write_text(text, encoding="utf-8")
    print(text)
    if args.readme:
        page = write_block(BLOCK, text, Path(args.root))
        print(f"wrote the {BLOCK} block of {page}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
