"""``tepa-bench suite``: every registered memory method on every drift scenario, and a leaderboard.

The scenarios (:data:`SUITE_SCENARIOS`) are ``TEPA/RegimeDrift-v0`` (the paper's
protocol), the registered drift scenarios (``tepa_envs.SCENARIOS``: noisy,
recurring, gradual, async, Poisson, many keys, Zipf, noisy many keys) and
``TEPA/PreferenceStream-v0`` (the paper's four phases on a simulated user who
states the current preference in most sessions' text, so the memory competes with
what the reader is told, with one-off wrong feedback). The methods are every name in
the registry (``METHOD_NAMES``, so a method registered there joins the suite) plus
any ``package.module:Class`` given with ``--methods``.

Every (scenario, method, seed) episode is one job of the harness's pool
(:func:`~tepa_envs.agents.evaluation.drift_metrics.run_traced_job`: the harness's episode
with the drift metrics recorded alongside, decisions unchanged), all scenarios in one pool,
so results do not depend on ``--workers``. Statistics, all paired by seed (two
methods on one seed see the same task stream, and on noisy scenarios the same
outcome draws):

* **Success** per scenario, method and phase (and ``overall``): mean over seeds
  with a 95 % percentile-bootstrap CI (:func:`~tepa_envs.agents.evaluation.statistics.bootstrap_cis`).
* **Comparisons**, one family, Holm–Bonferroni corrected over all of it
  (significant when the corrected p is below ``alpha``, default 0.05), each a
  two-sided paired sign-flip test with :data:`SUITE_N_PERM` Monte Carlo sign
  patterns and the paired difference with its bootstrap CI:
  every pair of non-oracle methods on each scenario's overall success, and each
  non-oracle method against ``no-memory`` on each *reversal phase* (a phase whose
  change applies to every key, :meth:`~tepa_envs.core.drift.DriftSchedule.reversal_phases`).
* **Best non-oracle** per scenario: the highest overall mean among the methods
  that are not told the true phase boundaries (``oracle-reset`` is). A method is
  **within the CI of the best** when the 95 % CI of its paired difference to the
  best (method − best, overall) reaches 0.
* **Mean rank** over scenarios (rank 1 = best overall success among non-oracle
  methods, ties averaged), with a 95 % bootstrap CI: seeds are resampled
  (:data:`RANK_BOOTSTRAP` resamples from ``numpy.random.default_rng(0)``), the
  same resample for every scenario, and the ranks recomputed.
* **Pairs not significantly different anywhere**: non-oracle pairs with no
  significant comparison on any scenario.
* **Drift metrics** per scenario and method (every method, oracles included):
  detection delay, false revocations per 1,000 tasks, stale retrievals, cumulative
  regret against the oracle that knows the correct value, and recovery time, as
  defined in :mod:`~tepa_envs.agents.evaluation.drift_metrics` and pooled over seeds
  by :func:`~tepa_envs.agents.evaluation.drift_metrics.pool_metrics`.

Written to ``--out`` (default ``results/suite``), each file atomically:
``suite.json`` (everything above; no timings, so it is byte-identical for any
``--workers``), ``leaderboard.md`` (:func:`leaderboard_markdown`, also the
README's ``suite-leaderboard`` block), ``metrics.md`` (the drift metrics, also the
README's ``suite-metrics`` block), ``heatmap.png`` (overall success, methods
× scenarios) and ``manifest.json`` last.

``suite.json`` layout (``suite_version`` 1): ``methods``, ``oracles``, ``seeds``,
``alpha``, ``n_perm``, ``n_comparisons``; ``scenarios``, one object each with
``env_id``, ``short``, ``kwargs`` (the registered ones), ``phases`` (in order, then
``overall``), ``reversal_phases``, ``success`` (method -> phase -> ``mean``,
``ci_low``, ``ci_high``), ``best``, ``within_ci_of_best``,
``not_significantly_below_best`` (Holm), ``below_no_memory_in_reversal`` (method ->
the reversal phases where it is significantly below ``no-memory``), ``metrics`` (method ->
:func:`~tepa_envs.agents.evaluation.drift_metrics.pool_metrics`);
``comparisons``, each with ``kind`` (``"pair"`` or ``"reversal"``), ``env_id``,
``phase``, ``method``, ``other``, ``diff`` (method − other) with ``ci_low``/``ci_high``,
``p_value``, ``p_at_floor``, ``p_holm``, ``significant``; ``ranks`` (method ->
``mean_rank``, ``ci_low``, ``ci_high``); ``pairs_never_significant``.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any, Callable, Sequence

import gymnasium as gym
import numpy as np

import tepa_envs
from tepa_envs.agents.evaluation.files import begin_run, write_figure_atomic, write_json_atomic, write_manifest
from tepa_envs.agents.evaluation.files import write_text_atomic
from tepa_envs.agents.evaluation.drift_metrics import metrics_markdown, pool_metrics, run_traced_job
from tepa_envs.agents.evaluation.harness import describe_job, method_label, run_jobs, validate_methods
from tepa_envs.agents.evaluation.pool import Progress
from tepa_envs.agents.evaluation.progress import progress_factory
from tepa_envs.agents.evaluation.report import _ceil_2sig
from tepa_envs.agents.evaluation.statistics import (
    EXACT_MAX_SEEDS, bootstrap_cis, holm_bonferroni, paired_permutation_tests, smallest_p_value,
)
from tepa_envs.agents.memories.registry import METHOD_NAMES

SUITE_SCENARIOS: tuple[str, ...] = ("TEPA/RegimeDrift-v0", *tepa_envs.SCENARIOS, "TEPA/PreferenceStream-v0")
"""The suite's scenarios, in the leaderboard's order."""
SHORT_NAMES: dict[str, str] = {env_id: env_id.removeprefix("TEPA/RegimeDrift-").removesuffix("-v0").lower()
                               for env_id in SUITE_SCENARIOS}
SHORT_NAMES["TEPA/RegimeDrift-v0"] = "paper"
SHORT_NAMES["TEPA/PreferenceStream-v0"] = "preference"
DEFAULT_SEEDS = 300
"""Seeds per scenario by default: the whole suite (every registered method, ten scenarios)
runs within 10 minutes on 2 cores, and a phase's 95 % CI half-width is about 0.01–0.03."""
SUITE_N_PERM = 200_000
"""Monte Carlo sign patterns per comparison: with about 1,500 comparisons in the family, the
smallest Holm-corrected p (m / (B + 1)) stays near 0.0075, well below alpha = 0.05."""
PERMUTATION_BLOCK = 64
"""Comparisons tested together (their null statistics take ``2**20 / n_seeds * 64 * 8`` bytes)."""
RANK_BOOTSTRAP = 2000
"""Bootstrap resamples of the mean-rank CI."""
ORACLES: tuple[str, ...] = ("oracle-reset",)
"""Methods told the true phase boundaries: shown, never the best, left out of ranks and pairs."""
BASELINE = "no-memory"
OVERALL = "overall"


@dataclass(frozen=True)
class Scenario:
    """A suite scenario: its phases (in order) and which of them are reversal phases."""

    env_id: str
    short: str
    phases: tuple[str, ...]
    reversal_phases: tuple[str, ...]
    kwargs: dict[str, Any]


def scenario(env_id: str) -> Scenario:
    """The phases of ``env_id`` (its schedule's segment names) and its reversal phases."""
    env = gym.make(env_id)
    try:
        unwrapped = env.unwrapped
        phases = tuple(unwrapped.schedule.names)  # type: ignore[attr-defined]
        drift = getattr(unwrapped, "drift", None)
        reversal = tuple(drift.reversal_phases()) if drift is not None else ()
    finally:
        env.close()
    return Scenario(env_id, SHORT_NAMES.get(env_id, env_id), phases, reversal, dict(gym.spec(env_id).kwargs))


# ------------------------------------------------------------------------------ running
def run_suite(methods: Sequence[str], seeds: Sequence[int], *, scenarios: Sequence[str] = SUITE_SCENARIOS,
              workers: int = 1, alpha: float = 0.05, n_perm: int = SUITE_N_PERM,
              progress: Progress | None = None) -> dict[str, Any]:
    """Run every method on every seed of every scenario and return the ``suite.json`` dict."""
    methods = list(methods)
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("no seeds given")
    infos = [scenario(env_id) for env_id in scenarios]
    for info in infos:
        validate_methods(info.env_id, {}, methods)
    jobs = [(info.env_id, {}, method, seed, {}) for info in infos for method in methods for seed in seeds]
    outputs = run_jobs(jobs, run_traced_job, workers, progress, describe=describe_job)
    per_seed: dict[tuple[str, str, str], np.ndarray] = {}
    metrics: dict[str, dict[str, Any]] = {}
    block = len(methods) * len(seeds)
    for s_index, info in enumerate(infos):
        phase = outputs[s_index * block][1]
        masks = {name: phase == i for i, name in enumerate(info.phases) if np.any(phase == i)}
        for m_index, method in enumerate(methods):
            start = s_index * block + m_index * len(seeds)
            success = np.stack([out[0] for out in outputs[start:start + len(seeds)]]).astype(np.float64)
            label = method_label(method)
            for name, mask in masks.items():
                per_seed[info.env_id, label, name] = success[:, mask].mean(axis=1)
            per_seed[info.env_id, label, OVERALL] = success.mean(axis=1)
            episodes = [out[3] for out in outputs[start:start + len(seeds)]]
            metrics.setdefault(info.env_id, {})[label] = pool_metrics(episodes)
    labels = [method_label(m) for m in methods]
    data = analyse(per_seed, infos, labels, seeds, alpha=alpha, n_perm=n_perm)
    for entry in data["scenarios"]:
        entry["metrics"] = metrics[entry["env_id"]]
    return data


def analyse(per_seed: dict[tuple[str, str, str], np.ndarray], infos: Sequence[Scenario], methods: Sequence[str],
            seeds: Sequence[int], *, alpha: float = 0.05, n_perm: int = SUITE_N_PERM) -> dict[str, Any]:
    """The statistics of the module docstring from per-seed success ``(env_id, method, phase)``."""
    contenders = [m for m in methods if m not in ORACLES]
    cells = list(per_seed)
    comparisons: list[dict[str, Any]] = []
    diffs: list[np.ndarray] = []
    for info in infos:
        for a, b in combinations(contenders, 2):
            comparisons.append({"kind": "pair", "env_id": info.env_id, "phase": OVERALL, "method": a, "other": b})
            diffs.append(per_seed[info.env_id, a, OVERALL] - per_seed[info.env_id, b, OVERALL])
        if BASELINE in contenders:
            for phase in info.reversal_phases:
                if (info.env_id, BASELINE, phase) not in per_seed:
                    continue
                for method in contenders:
                    if method == BASELINE:
                        continue
                    comparisons.append({"kind": "reversal", "env_id": info.env_id, "phase": phase,
                                        "method": method, "other": BASELINE})
                    diffs.append(per_seed[info.env_id, method, phase] - per_seed[info.env_id, BASELINE, phase])
    columns = [per_seed[c] for c in cells] + diffs
    cis = bootstrap_cis(np.column_stack(columns))
    estimates = dict(zip(cells, cis[:len(cells)]))
    if diffs:
        # Column blocks bound the memory of the null statistics (sign patterns x comparisons);
        # the tests share their sign patterns, so the p-values do not depend on the blocks.
        matrix = np.column_stack(diffs)
        tests = [test for start in range(0, matrix.shape[1], PERMUTATION_BLOCK)
                 for test in paired_permutation_tests(matrix[:, start:start + PERMUTATION_BLOCK], n_perm=n_perm)]
        adjusted = holm_bonferroni([t.p_value for t in tests])
        for comparison, est, test, p_holm in zip(comparisons, cis[len(cells):], tests, adjusted):
            comparison.update(diff=est.mean, ci_low=est.ci_low, ci_high=est.ci_high, p_value=test.p_value,
                              p_at_floor=test.at_floor, p_holm=float(p_holm), significant=bool(p_holm < alpha))
    pair_index = {(c["env_id"], c["method"], c["other"]): c for c in comparisons if c["kind"] == "pair"}

    def versus(env_id: str, method: str, other: str) -> dict[str, Any]:
        """``method − other`` on overall success (the stored comparison, flipped when needed)."""
        if (env_id, method, other) in pair_index:
            return pair_index[env_id, method, other]
        c = pair_index[env_id, other, method]
        return {**c, "method": method, "other": other, "diff": -c["diff"], "ci_low": -c["ci_high"],
                "ci_high": -c["ci_low"]}

    scenarios_out = []
    for info in infos:
        phases = [p for p in info.phases if (info.env_id, methods[0], p) in per_seed] + [OVERALL]
        success = {m: {p: {"mean": estimates[info.env_id, m, p].mean, "ci_low": estimates[info.env_id, m, p].ci_low,
                           "ci_high": estimates[info.env_id, m, p].ci_high} for p in phases} for m in methods}
        best = max(contenders, key=lambda m: success[m][OVERALL]["mean"]) if contenders else None
        within = [m for m in contenders if m != best and versus(info.env_id, m, best)["ci_high"] >= 0.0]
        not_worse = [m for m in contenders if m != best and not versus(info.env_id, m, best)["significant"]]
        below = {m: [c["phase"] for c in comparisons if c["kind"] == "reversal" and c["env_id"] == info.env_id
                     and c["method"] == m and c["significant"] and c["diff"] < 0] for m in contenders}
        scenarios_out.append({
            "env_id": info.env_id, "short": info.short, "kwargs": info.kwargs, "phases": phases,
            "reversal_phases": list(info.reversal_phases), "success": success, "best": best,
            "within_ci_of_best": within, "not_significantly_below_best": not_worse,
            "below_no_memory_in_reversal": {m: p for m, p in below.items() if p},
        })
    significant_pairs = {(c["method"], c["other"]) for c in comparisons if c["kind"] == "pair" and c["significant"]}
    never = [[a, b] for a, b in combinations(contenders, 2) if (a, b) not in significant_pairs]
    return {
        "suite_version": 1,
        "scenarios": scenarios_out,
        "methods": list(methods),
        "oracles": [m for m in methods if m in ORACLES],
        "seeds": [int(s) for s in seeds],
        "alpha": float(alpha),
        "n_perm": int(n_perm),
        "n_comparisons": len(comparisons),
        "comparisons": comparisons,
        "ranks": mean_ranks(per_seed, infos, contenders),
        "pairs_never_significant": never,
    }


def mean_ranks(per_seed: dict[tuple[str, str, str], np.ndarray], infos: Sequence[Scenario],
               methods: Sequence[str]) -> dict[str, dict[str, float]]:
    """Mean over scenarios of each method's rank on overall success (1 = best, ties averaged),
    with a 95 % bootstrap CI over seeds (one resample shared by every scenario)."""
    from scipy.stats import rankdata

    if not methods:
        return {}
    stacked = np.stack([np.column_stack([per_seed[info.env_id, m, OVERALL] for m in methods]) for info in infos])
    n = stacked.shape[1]  # scenarios x seeds x methods

    def ranks_of(means: np.ndarray) -> np.ndarray:  # (..., scenarios, methods) -> mean rank per method
        return rankdata(-means, axis=-1).mean(axis=-2)

    point = ranks_of(stacked.mean(axis=1))
    rng = np.random.default_rng(0)
    samples = np.empty((RANK_BOOTSTRAP, len(methods)))
    chunk = max(1, 2**20 // max(n, 1))
    for start in range(0, RANK_BOOTSTRAP, chunk):
        rows = min(chunk, RANK_BOOTSTRAP - start)
        idx = rng.integers(0, n, size=(rows, n))
        counts = np.zeros((rows, n))
        np.add.at(counts, (np.repeat(np.arange(rows), n), idx.ravel()), 1.0)
        means = np.einsum("rn,snm->rsm", counts, stacked) / n
        samples[start:start + rows] = ranks_of(means)
    low, high = np.quantile(samples, [0.025, 0.975], axis=0)
    return {m: {"mean_rank": float(point[i]), "ci_low": float(low[i]), "ci_high": float(high[i])}
            for i, m in enumerate(methods)}


# ----------------------------------------------------------------------------- outputs
def _f(x: float, digits: int = 3) -> str:
    return f"{x:.{digits}f}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def leaderboard_markdown(data: dict[str, Any]) -> str:
    """The leaderboard as markdown: the rank table, overall success per scenario with CIs,
    reversal-phase success, and the pairs not significantly different anywhere."""
    scenarios = data["scenarios"]
    methods, oracles = data["methods"], set(data["oracles"])
    contenders = [m for m in methods if m not in oracles]
    ranks = data["ranks"]
    ordered = sorted(contenders, key=lambda m: (ranks[m]["mean_rank"], contenders.index(m)))
    n_scen = len(scenarios)
    rows = []
    for m in ordered:
        wins = [s["short"] for s in scenarios if s["best"] == m or m in s["within_ci_of_best"]]
        below = [f"{s['short']} ({', '.join(s['below_no_memory_in_reversal'][m])})" for s in scenarios
                 if m in s["below_no_memory_in_reversal"]]
        rows.append([m, f"{_f(ranks[m]['mean_rank'], 2)} [{_f(ranks[m]['ci_low'], 2)}, {_f(ranks[m]['ci_high'], 2)}]",
                     f"{len(wins)}/{n_scen}", ", ".join(below) or "none"])
    out = ["**Rank table** (non-oracle methods; rank 1 = best overall success on a scenario, averaged over "
           f"the {n_scen} scenarios; 95 % bootstrap CI over seeds):\n\n",
           _table(["method", "mean rank [95% CI]", "best or within CI of best",
                   "significantly below no memory in a reversal phase"], rows)]
    header = ["method"] + [s["short"] for s in scenarios]
    rows = []
    for m in methods:
        row = [m + (" (oracle)" if m in oracles else "")]
        for s in scenarios:
            cell = s["success"][m][OVERALL]
            text = f"{_f(cell['mean'])} ({_f(cell['ci_low'], 2)}–{_f(cell['ci_high'], 2)})"
            if s["best"] == m:
                text = f"**{text}**"
            elif m in s["within_ci_of_best"]:
                text += " ≈"
            row.append(text)
        rows.append(row)
    out += ["\n**Overall success per scenario** (mean over seeds, 95 % CI; **bold**: best non-oracle; "
            "≈: the 95 % CI of the paired difference to the best reaches 0):\n\n", _table(header, rows)]
    reversal = [(s, p) for s in scenarios for p in s["reversal_phases"]]
    if reversal:
        header = ["method"] + [f"{s['short']}: {p}" for s, p in reversal]
        rows = []
        for m in methods:
            row = [m + (" (oracle)" if m in oracles else "")]
            for s, p in reversal:
                text = _f(s["success"][m][p]["mean"])
                if p in s["below_no_memory_in_reversal"].get(m, []):
                    text += " ↓"
                row.append(text)
            rows.append(row)
        out += ["\n**Reversal phases** (every key changes at the phase's start; mean success; ↓: significantly "
                f"below {BASELINE}):\n\n", _table(header, rows)]
    never = data["pairs_never_significant"]
    floor = data["n_comparisons"] * smallest_p_value(len(data["seeds"]), data["n_perm"])
    exact = len(data["seeds"]) <= EXACT_MAX_SEEDS
    out.append(f"\n**Pairs not significantly different on any scenario** ({len(never)}): "
               + ("; ".join(f"{a} – {b}" for a, b in never) if never else "none") + ".\n")
    out.append(f"\n{len(data['seeds'])} seeds per scenario, paired; {data['n_comparisons']} comparisons (every "
               f"non-oracle pair on each scenario's overall success, every method against {BASELINE} on each "
               "reversal phase), two-sided sign-flip tests "
               + ("(exact)" if exact else f"with {data['n_perm']:,} sign patterns")
               + f", Holm–Bonferroni over all of them, α = {data['alpha']} (smallest attainable corrected p "
               f"{_ceil_2sig(min(1.0, floor))}"
               + ("; with so few seeds nothing can be significant" if floor >= data["alpha"] else "") + ").\n")
    return "".join(out)


def plot_heatmap(data: dict[str, Any], path: Path) -> None:
    """Overall success, methods × scenarios, annotated; the best non-oracle per scenario boxed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scenarios, methods = data["scenarios"], data["methods"]
    grid = np.array([[s["success"][m][OVERALL]["mean"] for s in scenarios] for m in methods])
    fig, ax = plt.subplots(figsize=(1.2 * len(scenarios) + 3, 0.42 * len(methods) + 1.6), dpi=110)
    image = ax.imshow(grid, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(len(scenarios)), [s["short"] for s in scenarios], rotation=30, ha="right")
    ax.set_yticks(range(len(methods)), methods)
    for i, m in enumerate(methods):
        for j, s in enumerate(scenarios):
            ax.text(j, i, f"{grid[i, j]:.2f}", ha="center", va="center", fontsize=7,
                    color="black" if grid[i, j] > 0.6 else "white",
                    fontweight="bold" if s["best"] == m else "normal")
            if s["best"] == m:
                ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=1.5))
    fig.colorbar(image, ax=ax, label="overall success")
    ax.set_title(f"tepa-bench suite: overall success ({len(data['seeds'])} seeds; red: best non-oracle)")
    fig.tight_layout()
    write_figure_atomic(fig, path)


def write_suite(data: dict[str, Any], out: Path, *, elapsed_s: float | None = None) -> list[str]:
    """Write ``suite.json``, ``leaderboard.md``, ``heatmap.png`` and, last, ``manifest.json``."""
    begin_run(out)
    write_json_atomic(out / "suite.json", data)
    write_text_atomic(out / "leaderboard.md", leaderboard_markdown(data))
    write_text_atomic(out / "metrics.md", metrics_markdown(data))
    plot_heatmap(data, out / "heatmap.png")
    files = ["suite.json", "leaderboard.md", "metrics.md", "heatmap.png"]
    extra = {} if elapsed_s is None else {"elapsed_s": round(elapsed_s, 1)}
    write_manifest(out, files, seeds=data["seeds"], methods=data["methods"], setting="suite",
                   scenarios=[s["env_id"] for s in data["scenarios"]], alpha=data["alpha"], **extra)
    return files


def readme_table(directory: Path) -> str:
    """The README's ``suite-leaderboard`` block from a suite directory (``suite.json``)."""
    return leaderboard_markdown(json.loads((Path(directory) / "suite.json").read_text()))


def readme_metrics(directory: Path) -> str:
    """The README's ``suite-metrics`` block from a suite directory (``suite.json``)."""
    return metrics_markdown(json.loads((Path(directory) / "suite.json").read_text()))


# --------------------------------------------------------------------------------- CLI
def cmd_suite(args: argparse.Namespace) -> int:
    """``tepa-bench suite``: see the module docstring."""
    from tepa_envs.agents.evaluation import cli

    methods = cli._parse_methods(args.methods)
    unknown = [s for s in args.scenarios.split(",") if s and s not in SUITE_SCENARIOS] if args.scenarios else []
    if unknown:
        raise cli.UsageError(f"unknown scenario(s) {', '.join(unknown)}; valid: {', '.join(SUITE_SCENARIOS)}")
    scenarios = [s for s in args.scenarios.split(",") if s] if args.scenarios else list(SUITE_SCENARIOS)
    try:
        for env_id in scenarios:
            validate_methods(env_id, {}, methods)
    except (ValueError, TypeError) as exc:
        raise cli.UsageError(str(exc).splitlines()[0]) from None
    out = cli._output_dir(args.out)
    cli._log(args, f"suite: {len(methods)} methods x {len(scenarios)} scenarios x {args.seeds} seeds "
                   f"({args.workers} workers)")
    started = time.perf_counter()
    with progress_factory(quiet=args.quiet)("suite") as bar:
        data = run_suite(methods, range(args.seeds), scenarios=scenarios, workers=args.workers, alpha=args.alpha,
                         progress=bar)
    elapsed = time.perf_counter() - started
    write_suite(data, out, elapsed_s=elapsed)
    print(leaderboard_markdown(data))
    print(f"wrote {out}/suite.json, leaderboard.md, heatmap.png, manifest.json in {elapsed:.0f}s; "
          f"`tepa-bench readme {out.parent}` puts the leaderboard in the README")
    return 0


def add_parser(sub: Any, common: Callable[[argparse.ArgumentParser, int | None], None]) -> None:
    """Register ``tepa-bench suite`` on the CLI's subparsers (``common`` adds --seeds, --workers, ...)."""
    suite = sub.add_parser("suite", help="every registered method on every drift scenario, and a leaderboard")
    suite.add_argument("--methods", default="all",
                       help="comma-separated names or import paths 'package.module:ClassName'; 'all' (the "
                            "default) for every registered method, e.g. 'all,mypkg.mem:MyMemory'")
    suite.add_argument("--scenarios", default="",
                       help="comma-separated scenario ids (default: all of " + ", ".join(SUITE_SCENARIOS) + ")")
    common(suite, DEFAULT_SEEDS)
    suite.set_defaults(func=cmd_suite, out="results/suite")


__all__ = ["DEFAULT_SEEDS", "SUITE_SCENARIOS", "Scenario", "add_parser", "analyse", "cmd_suite",
           "leaderboard_markdown", "mean_ranks", "readme_metrics", "readme_table", "run_suite", "scenario",
           "write_suite"]
