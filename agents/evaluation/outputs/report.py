"""Output of an evaluation: terminal tables, JSON, CSV and a PNG plot (files written atomically)."""

from __future__ import annotations

import csv
import io
import json
import math
import textwrap
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from tepa_envs.agents.evaluation.analysis.paper import Setting
from tepa_envs.agents.evaluation.analysis.results import Summary
from tepa_envs.agents.evaluation.analysis.statistics import EXACT_MAX_SEEDS, smallest_p_value
from tepa_envs.agents.evaluation.outputs.drift_tables import METRICS_HEADER, metrics_cells
from tepa_envs.agents.evaluation.outputs.files import write_figure_atomic, write_text_atomic
from tepa_envs.agents.evaluation.outputs.tables import TERMINAL_WIDTH, terminal_table

SHORT = {"stable": "stable", "light_drift": "light", "full_reversal": "reversal",
         "partial_return": "return", "overall": "overall"}


def _fmt(x: float | None, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    return f"{x:.{digits}f}"


def ceil_2sig(x: float) -> str:
    """``x`` in 1.2e-03 form, rounded up so that ``x`` is never above the printed number
    (beyond floating-point noise: 18 * (1 / 1000) prints as 1.8e-02)."""
    text = f"{x:.1e}"
    if float(text) < x * (1 - 1e-9):
        mantissa, exponent = text.split("e")
        text = f"{(float(mantissa) + 0.1) * 10.0 ** int(exponent):.1e}"
    return text


def format_p(p: float, at_floor: bool = False) -> str:
    """A p-value for a table: ``< bound`` when it is a Monte Carlo floor (not an estimate),
    4 decimals from 0.001 up, else 1.2e-04 form."""
    if at_floor and p < 1.0:
        return f"< {ceil_2sig(p)}"
    return f"{p:.4f}" if p >= 0.001 else f"{p:.1e}"


def format_table(results: Summary, setting: Setting | None = None) -> str:
    """Per-phase success with 95% CIs, MPI and the paper's number beside ours, then the
    paired comparisons with the test, the Holm family size and ``alpha`` they used."""
    phases = results.phases
    focus = setting.focus_phase if setting else "full_reversal"
    if focus not in phases:
        focus = "overall"
    header = ["method", *(SHORT.get(p, p) for p in phases), f"MPI({SHORT.get(focus, focus)})"]
    header += [f"paper {SHORT.get(focus, focus)}"] if setting else []
    rows = []
    for method in results.methods:
        row = results.estimates[method]
        cells = [method] + [f"{_fmt(row[p].mean)} [{_fmt(row[p].ci_low)},{_fmt(row[p].ci_high)}]" for p in phases]
        cells.append(_fmt(row[focus].mpi, 3))
        if setting:
            cells.append(_fmt(setting.paper.get(method, {}).get(focus)))
        rows.append(cells)
    lines = [terminal_table(header, rows)]
    lines.append("")
    lines.append(format_comparisons(results, setting, focus))
    trials = {m: t for m, t in results.trials_per_episode.items() if t.get("total")}
    if trials:
        lines.append("")
        lines.append("trial budget spent per episode: " + ", ".join(
            f"{m} {t['total']:.1f}" for m, t in trials.items()))
    return "\n".join(lines)


def describe_tests(results: Summary) -> list[str]:
    """How the comparisons' p-values were computed and read: test, Holm family, alpha, floor."""
    n, m, n_perm = len(results.seeds), len(results.comparisons), results.n_perm
    if n <= EXACT_MAX_SEEDS:
        test = f"exact over all 2^{n} sign patterns"
        floor = ""
    else:
        test = f"Monte Carlo, B = {n_perm:,} sign patterns"
        floor = (f"; p below the permutation floor printed as < 1/(B+1) = {ceil_2sig(1 / (n_perm + 1))}"
                 f" (Holm: < m/(B+1) = {ceil_2sig(min(1.0, m / (n_perm + 1)))})")
    lines = [f"paired differences (method − baseline, paired by seed and task; diff with 95% bootstrap CI; "
             f"two-sided paired sign-flip test, {test}; all phases in results.json)",
             f"Holm–Bonferroni over m = {m} tests, alpha = {results.alpha:g} (sig: p_holm < alpha){floor}"]
    smallest = min(1.0, m * smallest_p_value(n, n_perm)) if m else 0.0
    if m and smallest >= results.alpha:
        more = "more seeds" if n <= EXACT_MAX_SEEDS else "a larger n_perm"
        lines.append(f"note: with {n} seeds and {m} tests the smallest attainable Holm p is {smallest:.3g} "
                     f">= alpha = {results.alpha:g}, so no comparison can be significant; use {more}")
    return lines


def format_comparisons(results: Summary, setting: Setting | None, focus: str) -> str:
    lines = [part for line in describe_tests(results) for part in textwrap.wrap(line, TERMINAL_WIDTH)]
    header = ["method", "baseline", "phase", "diff [95% CI]", "p_holm", "sig"]
    with_paper = setting is not None and bool(setting.paper_diffs)
    rows = []
    for c in results.comparisons:
        paper = setting.paper_diffs.get((c.method, c.baseline, c.phase)) if setting else None
        if c.phase != focus and paper is None:
            continue
        cells = [c.method, c.baseline, SHORT.get(c.phase, c.phase), f"{c.diff:+.3f} [{c.ci_low:+.3f},{c.ci_high:+.3f}]",
                 format_p(c.p_holm, c.p_at_floor), "*" if c.significant else ""]
        if with_paper:
            cells.append(f"{paper[0]:+.3f} [{paper[1]:.3f},{paper[2]:.3f}]" if paper else "—")
        rows.append(cells)
    lines.append(terminal_table(header + (["paper"] if with_paper else []), rows))
    return "\n".join(lines)


def format_drift_table(results: Summary) -> str:
    """The drift metrics per method (``results.drift_metrics``), one row each: changes, detection
    delay mean [median], undetected changes, false revocations and stale retrievals per 1,000
    tasks, regret per episode mean (95 % CI), recovery mean [median], unrecovered / unjudged
    changes (the cells of the README's suite-metrics table,
    :func:`~tepa_envs.agents.evaluation.outputs.drift_tables.metrics_cells`)."""
    metrics = results.drift_metrics
    if not metrics:
        return ("drift metrics: none recorded (they need every task keyed with the environment's correct value, "
                "which TEPA/FactConsolidation-v0 lacks; a store written before they were recorded has none)")
    rows = [[m, *metrics_cells(metrics[m])] for m in results.methods if m in metrics]
    lines = [f"drift metrics, pooled over {len(results.seeds)} seeds (definitions:",
             "tepa_envs/agents/evaluation/analysis/drift_metrics.py; delay and recovery in tasks; per 1k: per",
             "1,000 tasks; regret: tasks per episode not choosing the correct value)",
             terminal_table(METRICS_HEADER, rows)]
    missing = [m for m in results.methods if m not in metrics]
    if missing:
        lines.append(f"no drift metrics for: {', '.join(missing)} (not recorded for all of their episodes)")
    return "\n".join(lines)


DRIFT_CSV_COLUMNS: tuple[str, ...] = (
    "env_id", "method", "changes", "delay_mean", "delay_median", "detected", "undetected",
    "false_revocations_per_1k", "false_revocation_source", "stale_retrievals_per_1k", "correct_value_losses_per_1k",
    "regret_mean", "regret_ci_low", "regret_ci_high", "regret_per_1k", "recovery_mean", "recovery_median",
    "recovered", "unrecovered", "unjudged", "view_accuracy", "stale_view_share", "empty_view_share",
    "buried_view_share", "persistence_1", "persistence_2", "uses_to_correct_view")
"""The columns of ``drift_metrics.csv``: ``results.json``'s ``drift_metrics.<method>`` flattened
(the view columns: its ``views`` on the ``overall`` phase, empty where not recorded)."""


def _view_values(x: Mapping[str, Any]) -> list[Any]:
    views = x.get("views")
    if views is None or "overall" not in views["phases"]:
        return [None] * 7
    row = views["phases"]["overall"]
    return [row["correct_share"], row["stale_share"], row["empty_share"], row["buried_share"],
            row["persistence_1"], row["persistence_2"], views["uses_to_correct_view"]["mean"]]


def _csv_number(x: Any) -> str:
    if x is None:
        return ""
    if isinstance(x, float):
        return f"{x:.6f}"
    return str(x)


def write_drift_csv(results: Summary, path: Path) -> None:
    """``drift_metrics.csv``: one row per method with drift metrics (only the header when
    none were recorded), written atomically."""
    with io.StringIO(newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(DRIFT_CSV_COLUMNS)
        for method in results.methods:
            x = results.drift_metrics.get(method)
            if x is None:
                continue
            d, g, r = x["detection_delay"], x["regret"], x["recovery"]
            values = [x["changes"], d["mean"], d["median"], d["detected"], d["undetected"],
                      x["false_revocations_per_1k"], x["false_revocation_source"], x["stale_retrievals_per_1k"],
                      x["correct_value_losses_per_1k"], g["mean"], g["ci_low"], g["ci_high"], g["per_1k"],
                      r["mean"], r["median"], r["recovered"], r["unrecovered"], r["unjudged"], *_view_values(x)]
            writer.writerow([results.env_id, method, *(_csv_number(v) for v in values)])
        text = handle.getvalue()
    write_text_atomic(Path(path), text)


RESULT_FILES: tuple[str, ...] = ("results.json", "results.csv", "drift_metrics.csv", "success.png")
"""The files :func:`write_results` writes, in order."""


def write_results(results: Summary, out: Path, setting: Setting | None = None) -> list[str]:
    """``results.json``, ``results.csv``, ``drift_metrics.csv`` and ``success.png`` in ``out``,
    each written atomically; the names written (for the run's manifest)."""
    write_json(results, out / "results.json")
    write_csv(results, out / "results.csv", setting)
    write_drift_csv(results, out / "drift_metrics.csv")
    plot_success(results, out / "success.png")
    return list(RESULT_FILES)


def write_json(results: Summary, path: Path) -> None:
    """``results.json``: ``results.to_json()``, laid out as docs/results_schema.md describes
    (written to a temporary file and renamed, so never truncated)."""
    write_text_atomic(Path(path), json.dumps(results.to_json(), indent=2, sort_keys=False,
                                             default=_json_default) + "\n")


def _json_default(obj: object) -> Any:
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"cannot serialise {type(obj).__name__}")


def write_csv(results: Summary, path: Path, setting: Setting | None = None) -> None:
    """``results.csv``: one row per method and phase (written atomically)."""
    with io.StringIO(newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["env_id", "method", "phase", "success", "ci_low", "ci_high", "mpi", "paper"])
        for method in results.methods:
            for phase in results.phases:
                cell = results.estimate(method, phase)
                paper = setting.paper.get(method, {}).get(phase) if setting else None
                writer.writerow([results.env_id, method, phase, f"{cell.mean:.6f}",
                                 f"{cell.ci_low:.6f}", f"{cell.ci_high:.6f}",
                                 "" if cell.mpi is None else f"{cell.mpi:.6f}",
                                 "" if paper is None else paper])
        text = handle.getvalue()
    write_text_atomic(Path(path), text)


PALETTES: tuple[str, ...] = ("tab20", "tab20b", "tab20c")
"""Matplotlib's qualitative colour maps a figure's methods take their colours from, in order
(60 colours): no two methods of one figure share a colour up to 60 methods."""
LINESTYLES: tuple[str, ...] = ("-", "--", "-.", ":")


def method_styles(methods: Sequence[str]) -> dict[str, tuple[tuple[float, ...], str]]:
    """Each method's ``(colour, linestyle)`` in a figure: distinct colours while the palettes
    last (:data:`PALETTES`, the even shades of each first, so neighbours in the legend
    differ in hue), then the colours again with the next linestyle, so no two methods
    of up to 240 share both."""
    import matplotlib

    colours: list[tuple[float, ...]] = []
    for name in PALETTES:
        palette = matplotlib.colormaps[name]
        shades = [tuple(float(c) for c in palette(k)) for k in range(palette.N)]
        colours += shades[0::2] + shades[1::2]
    return {method: (colours[i % len(colours)], LINESTYLES[(i // len(colours) + i) % len(LINESTYLES)])
            for i, method in enumerate(methods)}


def plot_success(results: Summary, path: Path, *, window: int = 5) -> None:
    """Success over the stream per method (moving average across seeds, 95% band), phase boundaries marked;
    a method whose mean success equals an earlier one's at every task says so in the legend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    phase_of_task = np.asarray(results.phase_of_task)
    n_seeds = len(results.seeds)
    fig, ax = plt.subplots(figsize=(11, 5.5), dpi=110)
    kernel = np.ones(window) / window
    styles = method_styles(results.methods)
    curves = {m: np.asarray(results.per_task_success[m], dtype=float) for m in results.methods}
    for index, method in enumerate(results.methods):
        mean = curves[method]
        same = next((m for m in results.methods[:index] if np.array_equal(curves[m], mean)), None)
        smooth = np.convolve(np.pad(mean, (window // 2, window - 1 - window // 2), mode="edge"), kernel, "valid")
        half = 1.96 * np.sqrt(np.clip(smooth * (1 - smooth), 0, None) / max(n_seeds * window, 1))
        x = np.arange(mean.size)
        colour, linestyle = styles[method]
        label = method if same is None else f"{method} (= {same}, drawn over it)"
        (line,) = ax.plot(x, smooth, label=label, linewidth=1.6, color=colour, linestyle=linestyle)
        ax.fill_between(x, np.clip(smooth - half, 0, 1), np.clip(smooth + half, 0, 1),
                        color=line.get_color(), alpha=0.12, linewidth=0)
    boundaries = np.flatnonzero(np.diff(phase_of_task)) + 1
    for b in boundaries:
        ax.axvline(b - 0.5, color="black", linestyle="--", linewidth=0.8)
    names = [SHORT.get(p, p) for p in results.phases if p != "overall"]
    starts = [0, *boundaries.tolist()]
    ends = [*boundaries.tolist(), phase_of_task.size]
    for name, start, end in zip(names, starts, ends):
        ax.text((start + end) / 2, 1.03, name, ha="center", va="bottom", fontsize=9)
    ax.set_ylim(0, 1.08)
    ax.set_xlim(0, phase_of_task.size - 1)
    ax.set_xlabel("task index")
    ax.set_ylabel(f"success (mean over {n_seeds} seeds, {window}-task moving average)")
    ax.set_title(results.env_id, pad=18)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
    fig.tight_layout()
    write_figure_atomic(fig, path)
