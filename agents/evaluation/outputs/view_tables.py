"""The reader-free view metrics as table cells and terminal tables
(definitions: :mod:`~tepa_envs.agents.evaluation.analysis.view_quality`)."""

from __future__ import annotations

from typing import Any, Mapping

from tepa_envs.agents.evaluation.analysis.results import Summary
from tepa_envs.agents.evaluation.outputs.tables import markdown_table, terminal_table

VIEW_HEADER: tuple[str, ...] = ("method", "view acc.", "stale", "empty", "buried", "keeps refuted 1/2+",
                                "uses to fix", "never")
"""The columns of a view table (:func:`view_cells` gives a row's cells after the method)."""


def _share(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def view_cells(views: Mapping[str, Any], phase: str = "overall") -> list[str]:
    """One method's pooled view metrics on ``phase``, as the cells after its name."""
    row = views["phases"].get(phase)
    if row is None:
        return ["–"] * (len(VIEW_HEADER) - 1)
    uses = views["uses_to_correct_view"]
    mean = "–" if uses["mean"] is None else f"{uses['mean']:.1f}"
    return [_share(row["correct_share"]), _share(row["stale_share"]), _share(row["empty_share"]),
            _share(row["buried_share"]), f"{_share(row['persistence_1'])}/{_share(row['persistence_2'])}",
            mean, str(uses["never"])]


def views_of(results: Summary) -> dict[str, Mapping[str, Any]]:
    """Method -> pooled view metrics, for the methods that have them."""
    return {m: d["views"] for m, d in results.drift_metrics.items() if "views" in d}


def format_view_table(results: Summary, phase: str = "overall") -> str:
    """What each memory showed, scored against the oracle (no reader involved), one row per method."""
    views = views_of(results)
    if not views:
        return "view metrics: none recorded"
    rows = [[m, *view_cells(views[m], phase)] for m in results.methods if m in views]
    lines = [f"what the memory showed, scored without a reader ({phase}, {len(results.seeds)} seeds; "
             "analysis/view_quality.py)",
             "view acc.: correct value first; keeps refuted: a stale value first after 1 / 2+ failures",
             "since it last worked; uses to fix: presentations of a changed key before its first correct",
             "view; never: changes never shown correctly", terminal_table(VIEW_HEADER, rows)]
    return "\n".join(lines)


def view_markdown(results: Summary, phase: str = "overall") -> str:
    """:func:`format_view_table` as a markdown table."""
    views = views_of(results)
    return markdown_table(VIEW_HEADER, [[m, *view_cells(views[m], phase)] for m in results.methods if m in views])


__all__ = ["VIEW_HEADER", "format_view_table", "view_cells", "view_markdown", "views_of"]
