"""The suite's outputs: the leaderboard (markdown, the README's ``suite-leaderboard``
block), the heatmap, and the files of a suite directory, written atomically.

``suite.json`` is the dict :func:`~tepa_envs.agents.evaluation.analysis.leaderboard.analyse`
returns (layout in :mod:`~tepa_envs.agents.evaluation.studies.suite`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from tepa_envs.agents.evaluation.analysis.leaderboard import BASELINE, OVERALL
from tepa_envs.agents.evaluation.analysis.statistics import EXACT_MAX_SEEDS, smallest_p_value
from tepa_envs.agents.evaluation.outputs.drift_tables import metrics_markdown
from tepa_envs.agents.evaluation.outputs.files import begin_run, write_figure_atomic, write_json_atomic
from tepa_envs.agents.evaluation.outputs.files import write_manifest, write_text_atomic
from tepa_envs.agents.evaluation.outputs.report import ceil_2sig
from tepa_envs.agents.evaluation.outputs.tables import markdown_table, terminal_table


def _f(x: float, digits: int = 3) -> str:
    return f"{x:.{digits}f}"


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
           markdown_table(["method", "mean rank [95% CI]", "best or within CI of best",
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
            "≈: the 95 % CI of the paired difference to the best reaches 0):\n\n", markdown_table(header, rows)]
    if all("metrics" in s for s in scenarios):
        out += ["\n**What each memory showed** (view accuracy · keeps refuted 2+, over the whole stream: the "
                "share of tasks whose memory showed the correct value first, and the share where a value that "
                "failed twice since it last worked was still shown first; scored against the oracle without "
                "the reader, on the evidence this reader produced):\n\n",
                markdown_table(header, [[m + (" (oracle)" if m in oracles else "")]
                                        + [_view_cell(s["metrics"].get(m, {})) for s in scenarios]
                                        for m in methods])]
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
                f"below {BASELINE}):\n\n", markdown_table(header, rows)]
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
               f"{ceil_2sig(min(1.0, floor))}"
               + ("; with so few seeds nothing can be significant" if floor >= data["alpha"] else "") + ").\n")
    if "notify_levels" in data:
        out.append(notify_markdown(data))
    return "".join(out)


def _ci(cell: dict[str, float], signed: bool = False) -> str:
    mean = f"{cell['mean']:+.3f}" if signed else _f(cell["mean"])
    return f"{mean} [{cell['ci_low']:+.3f}, {cell['ci_high']:+.3f}]" if signed else \
        f"{mean} ({_f(cell['ci_low'], 2)}–{_f(cell['ci_high'], 2)})"


def notify_markdown(data: dict[str, Any]) -> str:
    """The notification-level table: overall success over the scenarios per method and level,
    and each method's paired difference to the best non-oracle method at ``known``."""
    table, oracles = data["notify_levels"], set(data["oracles"])
    levels = table["levels"]
    gaps = table.get("to_best_known")
    header = ["method", *levels] + ([f"{lv} − best at known [95% CI]" for lv in levels if lv != "known"]
                                    if gaps else [])
    rows = []
    for m in table["methods"]:
        row = [m + (" (oracle)" if m in oracles else "")]
        for lv in levels:
            text = _ci(table["success"][lv][m])
            row.append(f"**{text}**" if table["best"].get(lv) == m else text)
        if gaps:
            row += [_ci(gaps[lv][m], signed=True) for lv in levels if lv != "known"]
        rows.append(row)
    scenarios = len(table["per_scenario"])
    best_known = table["best"].get("known")
    note = (f"best non-oracle at `known`: {best_known}; the difference is paired by seed (the same worlds at "
            "every level)." if best_known else "")
    return ("\n**By change notification** (overall success averaged over the "
            f"{scenarios} scenarios, 95 % bootstrap CI over seeds; **bold**: best non-oracle at that level; "
            "rows `… on_notify=…` are a method's named option that acts on the notification, every other "
            "method ignores it; `none` tells nothing, `known` flags every true change of the presented key "
            "when it is first presented, `detected` raises the flag from a noisy detector at the environment's "
            "default delay and false-alarm rate; per-scenario cells in `suite.json`):\n\n"
            + markdown_table(header, rows) + "\n" + note + "\n")


def _view_cell(metrics: dict[str, Any]) -> str:
    row = metrics.get("views", {}).get("phases", {}).get(OVERALL)
    if row is None:
        return "—"
    keeps = "—" if row["persistence_2"] is None else _f(row["persistence_2"], 2)
    return f"{_f(row['correct_share'], 2)} · {keeps}"


def format_suite(data: dict[str, Any]) -> str:
    """The leaderboard for the terminal, no line over 100 columns: the rank table and overall
    success per scenario (the full leaderboard is ``leaderboard.md``)."""
    scenarios, oracles = data["scenarios"], set(data["oracles"])
    ranks = data["ranks"]
    contenders = [m for m in data["methods"] if m not in oracles]
    ordered = sorted(contenders, key=lambda m: (ranks[m]["mean_rank"], contenders.index(m)))
    rank_rows = [[m, f"{_f(ranks[m]['mean_rank'], 2)} [{_f(ranks[m]['ci_low'], 2)}, {_f(ranks[m]['ci_high'], 2)}]",
                  f"{sum(s['best'] == m or m in s['within_ci_of_best'] for s in scenarios)}/{len(scenarios)}"]
                 for m in ordered]
    success_rows = [[m + (" (oracle)" if m in oracles else "")]
                    + [_f(s["success"][m][OVERALL]["mean"]) + ("*" if s["best"] == m else "") for s in scenarios]
                    for m in data["methods"]]
    parts = [
        f"rank over {len(scenarios)} scenarios (non-oracle; 1 = best overall success; 95 % bootstrap CI)",
        terminal_table(["method", "mean rank [95% CI]", "best or within CI"], rank_rows),
        f"overall success per scenario ({len(data['seeds'])} seeds; *: best non-oracle)",
        terminal_table(["method", *(s["short"] for s in scenarios)], success_rows)]
    if "notify_levels" in data:
        table = data["notify_levels"]
        parts += [f"overall success by change notification (mean over {len(scenarios)} scenarios; "
                  "*: best non-oracle)",
                  terminal_table(["method", *table["levels"]],
                                 [[m + (" (oracle)" if m in oracles else "")]
                                  + [_f(table["success"][lv][m]["mean"]) + ("*" if table["best"].get(lv) == m else "")
                                     for lv in table["levels"]] for m in table["methods"]])]
    return "\n\n".join(parts)


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
    extra: dict[str, Any] = {} if elapsed_s is None else {"elapsed_s": round(elapsed_s, 1)}
    write_manifest(out, files, seeds=data["seeds"], methods=data["methods"], setting="suite",
                   scenarios=[s["env_id"] for s in data["scenarios"]], alpha=data["alpha"], **extra)
    return files


def readme_table(directory: Path) -> str:
    """The README's ``suite-leaderboard`` block from a suite directory (``suite.json``)."""
    return leaderboard_markdown(json.loads((Path(directory) / "suite.json").read_text()))


def readme_metrics(directory: Path) -> str:
    """The README's ``suite-metrics`` block from a suite directory (``suite.json``)."""
    return metrics_markdown(json.loads((Path(directory) / "suite.json").read_text()))


__all__ = ["format_suite", "leaderboard_markdown", "notify_markdown", "plot_heatmap", "readme_metrics", "readme_table",
           "write_suite"]
