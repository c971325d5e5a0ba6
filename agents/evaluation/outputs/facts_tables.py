"""FactConsolidation's tables: the terminal table of ``tepa-bench reproduce facts`` and
the README's ``facts`` block, from the rows of
:func:`~tepa_envs.agents.evaluation.studies.facts.reproduce_facts`."""

from __future__ import annotations

from typing import Any, Sequence

from tepa_envs.agents.evaluation.analysis.paper import FACTS_ENV_ID
from tepa_envs.agents.evaluation.analysis.settings import front_end_differences
from tepa_envs.agents.evaluation.outputs.tables import markdown_table

BREAKDOWN = ("correct", "question understanding", "hop extraction", "stale hop value (memory)",
             "stale hop value (gold follows an older fact)")
"""Where a question's chain broke, in the order the tables list them
(:func:`~tepa_envs.agents.evaluation.studies.facts.diagnose` sorts the questions)."""


def format_facts_table(rows: Sequence[dict[str, Any]], method_width: int = 24) -> str:
    """A terminal table: one line per method, per split and length ``real / synthetic
    (paper)``; then the front-end coverage of every cell."""
    if not rows:
        raise ValueError("no rows to format")
    methods = list(dict.fromkeys(row["method"] for row in rows))
    cells = list(dict.fromkeys((row["split"], row["length"]) for row in rows))
    lookup = {(row.get("source", "synthetic"), row["split"], row["length"], row["method"]): row for row in rows}
    lines = ["FactConsolidation, substring exact match, one answer per question: real / synthetic (paper).",
             "One front-end for every method (induced fact frames, question chains through the memory); "
             "'-' where there is no real row.",
             "method".ljust(method_width) + "".join(f"{s.upper()}-{n}".rjust(22) for s, n in cells)]
    for method in methods:
        line = method.ljust(method_width)
        for split, length in cells:
            real = lookup.get(("real", split, length, method))
            synthetic = lookup.get(("synthetic", split, length, method))
            paper = (real or synthetic or {}).get("paper")
            text = (f"{real['score']:.2f}" if real else "-") + " / " + (f"{synthetic['score']:.2f}" if synthetic else "-")
            text += f" ({paper:.2f})" if paper is not None else ""
            line += text.rjust(22)
        lines.append(line)
    coverage = {(r.get("source", "synthetic"), r["split"], r["length"]): r.get("coverage") for r in rows}
    lines.append("facts keyed by the front-end: " + ", ".join(
        f"{source} {split.upper()}-{length} {value:.1%}" for (source, split, length), value in coverage.items()
        if value is not None))
    for (source, split, length, method), row in lookup.items():
        if method == "tepa" and split == "mh" and row.get("breakdown"):
            lines.append(f"where tepa's chains break, {source} {split.upper()}-{length}: " + ", ".join(
                f"{kind} {n}" for kind, n in row["breakdown"].items() if n))
    differences = front_end_differences(FACTS_ENV_ID, [m for m in methods])
    if differences:
        lines.append("per-method arguments: " + "; ".join(
            f"{m}: {', '.join(f'{k}={v}' for k, v in kwargs.items())}" for m, kwargs in differences.items()))
    lines.append("append-only-bm25: append-only with the paper's lexical BM25 top-k retrieval (its own front-end).")
    return "\n".join(lines)


def facts_markdown(rows: Sequence[dict[str, Any]], focus: str = "tepa") -> str:
    """The README's table: a row per method, per split and length ``real / synthetic
    (paper)``; then the front-end's coverage and where ``focus``'s chains break."""
    if not rows:
        raise ValueError("no rows to format")
    methods = list(dict.fromkeys(row["method"] for row in rows))
    cells = list(dict.fromkeys((row["split"], row["length"]) for row in rows))
    lookup = {(row.get("source", "synthetic"), row["split"], row["length"], row["method"]): row for row in rows}
    table_rows = []
    for method in methods:
        entries = []
        for split, length in cells:
            real = lookup.get(("real", split, length, method))
            synthetic = lookup.get(("synthetic", split, length, method))
            paper = (real or synthetic or {}).get("paper")
            text = (f"{real['score']:.2f}" if real else "—") + " / " + (f"{synthetic['score']:.2f}" if synthetic else "—")
            entries.append(text + (f" ({paper:.2f})" if paper is not None else ""))
        table_rows.append([method, *entries])
    table = markdown_table(["method", *(f"{s.upper()}-{n}" for s, n in cells)], table_rows)
    coverage = {(r.get("source", "synthetic"), r["split"], r["length"]): r.get("coverage") for r in rows}
    lines = ["", "Fact sentences keyed by the front-end: " + ", ".join(
        f"{source} {split.upper()}-{length} {value:.0%}" for (source, split, length), value in coverage.items()
        if value is not None) + "."]
    for (source, split, length, method), row in lookup.items():
        if method == focus and split == "mh" and row.get("breakdown"):
            counts = row["breakdown"]
            lines.append(f"Where {focus}'s chains break, {source} {split.upper()}-{length}: " + ", ".join(
                f"{kind} {counts[kind]}" for kind in BREAKDOWN if counts.get(kind)) + ".")
    return table + "\n".join(lines) + "\n"


__all__ = ["BREAKDOWN", "facts_markdown", "format_facts_table"]
