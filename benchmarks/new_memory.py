"""Held-out report of the ``two-strike`` memory (issue 31, item 3).

``two-strike`` (:mod:`tepa_envs.agents.memories.two_strike`) was developed on seeds
0-199 of the suite's scenarios and frozen; this script runs it, TEPA (the reference),
LWW and the other methods on seeds it was never run on (default 10,000-10,299) and on
two scenarios written after it was frozen (:data:`NEW_SCENARIOS`: noisy outcomes with
random per-key change points on eight keys; four values recurring on four keys), and
reports for every scenario:

* **view accuracy**, reader-free: the share of tasks where the first value the memory
  shows is the correct one, with the memory-blind behaviour reader
  (:data:`BLIND`: its actions never depend on the memory, so every memory sees the
  same evidence), scored by :func:`~tepa_envs.agents.evaluation.analysis.view_quality.view_metrics`;
* **closed-loop success** under every shipped reader profile (``default``, ``ideal``,
  ``never-explore``, ``smollm2-135m``), and the in-loop view accuracy beside it;

each as a mean over seeds with the paired bootstrap 95 % CI of ``two-strike`` minus the
best other non-oracle method of the run, and ``oracle-view`` (the ceiling) beside it.

Writes ``benchmarks/new_memory/results.json`` and prints the markdown table; ``--readme``
writes it into the generated block of ``docs/results/two-strike.md``.
``--methods`` narrows the comparison set (every registered non-oracle method by
default; the "best" is the best of the methods run). Usage::

    python benchmarks/new_memory.py                 # every method, 300 held-out seeds
    python benchmarks/new_memory.py --seeds 50 --methods tepa,lww,lww-validation,temporal-recency
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

import tepa_envs  # noqa: F401
from tepa_envs.agents.evaluation.outputs.blocks import write_block
from tepa_envs.agents.evaluation import evaluate
from tepa_envs.agents.evaluation.studies.suite import SUITE_SCENARIOS
from tepa_envs.agents.memories.registry import METHOD_NAMES
from tepa_envs.agents.readers.profile import load_profile

METHOD = "two-strike"
ORACLES = ("oracle-reset", "oracle-view")
PROFILES = ("default", "ideal", "never-explore", "smollm2-135m")
BLIND = {"follow_prob": 0.0, "follow_validity": 0.0, "follow_conflict": 0.0, "stated_prob": 1.0}
"""The memory-blind behaviour reader: explores uniformly whatever the memory shows."""
FIRST_SEED = 10_000
ROOT = Path(__file__).resolve().parents[1]
OUT = Path(__file__).parent / "new_memory"

NEW_SCENARIOS: dict[str, tuple[str, dict[str, Any]]] = {
    # Written after two-strike was frozen (issue 31): kwargs of registered ids.
    "NoisyPoisson8": ("TEPA/RegimeDrift-v0", {"n_keys": 8, "schedule": {
        "segments": [{"length": 60, "name": "stable"},
                     *({"length": 60, "hazard": 1 / 60, "name": f"random_{i}"} for i in (1, 2, 3))],
        "p_hit": 0.85, "p_false": 0.15}}),
    "Recurring4x4": ("TEPA/RegimeDrift-v0", {"n_keys": 4, "n_tools": 4, "schedule": {"segments": [
        {"length": 40, "name": "a"}, {"length": 40, "change": "switch", "name": "b"},
        {"length": 40, "change": "return", "to": 0, "name": "a_again"},
        {"length": 40, "change": "switch", "name": "c"},
        {"length": 40, "change": "return", "to": 1, "name": "b_again"},
        {"length": 40, "change": "return", "to": 0, "name": "a_third"}]}}),
}


def _scenarios() -> dict[str, tuple[str, dict[str, Any]]]:
    suite = {env_id.split("/")[1].removesuffix("-v0"): (env_id, {}) for env_id in SUITE_SCENARIOS}
    return {**suite, **NEW_SCENARIOS}


def _paired(a: np.ndarray, b: np.ndarray, n: int = 2000) -> tuple[float, float, float]:
    d = a - b
    rng = np.random.default_rng(0)
    means = d[rng.integers(0, len(d), (n, len(d)))].mean(axis=1)
    return float(d.mean()), float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def _per_seed(env_id: str, kwargs: dict[str, Any], methods: list[str], seeds: list[int],
              reader: dict[str, Any], workers: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    evaluation = evaluate(env_id, methods, seeds, env_kwargs=kwargs, reader_kwargs=reader, metrics=True,
                          workers=workers)
    out = {}
    for method, run in evaluation.runs.items():
        views = np.array([m["views"]["phases"]["overall"]["correct_share"] for m in run.metrics])
        out[method] = (run.success.mean(axis=1), views)
    return out


def _cell(data: dict[str, tuple[np.ndarray, np.ndarray]], axis: int, contenders: list[str]) -> dict[str, Any]:
    means = {m: float(data[m][axis].mean()) for m in data}
    others = [m for m in contenders if m != METHOD]
    best = max(others, key=lambda m: means[m])
    diff, low, high = _paired(data[METHOD][axis], data[best][axis])
    return {"means": means, "best_other": best, "diff": diff, "ci_low": low, "ci_high": high,
            "within_ci_of_best": bool(high >= 0.0), "leads": bool(low > 0.0)}


def run(seeds: list[int], methods: list[str], workers: int) -> dict[str, Any]:
    contenders = [m for m in dict.fromkeys([METHOD, "tepa", "lww", *methods]) if m not in ORACLES]
    everything = [*contenders, "oracle-view"]
    results: dict[str, Any] = {"method": METHOD, "seeds": [seeds[0], seeds[-1]], "n_seeds": len(seeds),
                               "methods": contenders, "scenarios": {}}
    for name, (env_id, kwargs) in _scenarios().items():
        started = time.perf_counter()
        row: dict[str, Any] = {"env_id": env_id, "kwargs": kwargs, "written_after_freeze": name in NEW_SCENARIOS}
        blind = _per_seed(env_id, kwargs, everything, seeds, BLIND, workers)
        row["view_accuracy"] = _cell(blind, 1, contenders)
        for profile in PROFILES:
            data = _per_seed(env_id, kwargs, everything, seeds, load_profile(profile).reader_kwargs(), workers)
            row[profile] = {"success": _cell(data, 0, contenders), "view_in_loop": _cell(data, 1, contenders)}
        results["scenarios"][name] = row
        print(f"{name}: {time.perf_counter() - started:.0f} s", flush=True)
    return results


def _fmt(cell: dict[str, Any]) -> str:
    mark = "**" if cell["within_ci_of_best"] else ""
    return (f"{mark}{cell['means'][METHOD]:.3f}{mark} ({cell['diff']:+.3f} vs {cell['best_other']}) · "
            f"{cell['means']['tepa']:.3f} · {cell['means']['lww']:.3f} · {cell['means']['oracle-view']:.3f}")


def markdown(results: dict[str, Any]) -> str:
    intro = (f"`two-strike` on held-out seeds {results['seeds'][0]}-{results['seeds'][1]} "
             f"({results['n_seeds']} seeds; developed on 0-199, frozen before this run). Each cell: two-strike "
             "(its paired difference to the best other non-oracle method of the run) · TEPA · LWW · oracle-view; "
             "**bold**: two-strike is best or within the 95 % paired-bootstrap CI of the best. View accuracy is "
             "reader-free (memory-blind behaviour reader); success is closed loop. Scenarios marked † were "
             "written after the method was frozen.")
    lines = [intro, "",
             "| scenario | view accuracy | " + " | ".join(f"success, {p}" for p in PROFILES) + " |",
             "|---|---|" + "---|" * len(PROFILES)]
    losses = []
    for name, row in results["scenarios"].items():
        mark = " †" if row["written_after_freeze"] else ""
        cells = [_fmt(row["view_accuracy"])] + [_fmt(row[p]["success"]) for p in PROFILES]
        lines.append(f"| {name}{mark} | " + " | ".join(cells) + " |")
        for label, cell in [("view accuracy", row["view_accuracy"]),
                            *((f"success ({p})", row[p]["success"]) for p in PROFILES),
                            *((f"in-loop view accuracy ({p})", row[p]["view_in_loop"]) for p in PROFILES)]:
            if not cell["within_ci_of_best"]:
                losses.append(f"- {name}, {label}: {cell['means'][METHOD]:.3f} vs {cell['best_other']} "
                              f"{cell['means'][cell['best_other']]:.3f} ({cell['diff']:+.3f}, CI "
                              f"[{cell['ci_low']:+.3f}, {cell['ci_high']:+.3f}])")
    lines += ["", "Where it loses (outside the CI of the best):", ""] + (losses or ["- nowhere"])
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=300, help="held-out seeds from 10,000 (default 300)")
    parser.add_argument("--methods", default="", help="comma-separated comparison methods (default: all non-oracle)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--readme", action="store_true",
                        help="write the table of --out's results.json into its generated block (docs/results/two-strike.md)"
                             " without running anything")
    args = parser.parse_args()
    if args.readme:
        results = json.loads((args.out / "results.json").read_text())
        where = write_block("two-strike", markdown(results) + "\n", ROOT)
        print(f"wrote the two-strike block in {where}")
        return
    methods = [m for m in args.methods.split(",") if m] or [m for m in METHOD_NAMES if m not in ORACLES]
    results = run(list(range(FIRST_SEED, FIRST_SEED + args.seeds)), methods, args.workers)
    args.out.mkdir(parents=True, exist_ok=True)
    results["markdown"] = markdown(results)
    (args.out / "results.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    print(results["markdown"])


if __name__ == "__main__":
    main()
