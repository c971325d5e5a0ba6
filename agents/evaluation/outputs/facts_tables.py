"""FactConsolidation's tables: the terminal table of ``tepa-bench reproduce facts`` and
the README's ``facts`` block, from the rows of
:func:`~tepa_envs.agents.evaluation.studies.facts.reproduce_facts`.

Every number is named by its size (split and length, e.g. ``SH-262k``, in its column)
and by its origin: each cell reads ``official / generated (paper)``, the official
MemoryAgentBench row's score, the generated record's score and the paper's number for
that size, ``-`` (``—``) where a row of that origin is absent; every coverage and
breakdown line starts with the origin and size it is about."""

from __future__ import annotations

from typing import Any, Sequence

from tepa_envs.agents.evaluation.analysis.leaderboard import ORACLES
from tepa_envs.agents.evaluation.analysis.paper import FACTS_ENV_ID
from tepa_envs.agents.evaluation.analysis.settings import front_end_differences
from tepa_envs.agents.evaluation.outputs.tables import markdown_table, terminal_table

BREAKDOWN = ("correct", "question understanding", "hop extraction", "stale hop value (memory)",
             "stale hop value (gold follows an older fact)")
"""Where a question's chain broke, in the order the tables list them
(:func:`~tepa_envs.agents.evaluation.studies.facts.diagnose` sorts the questions)."""
ORIGINS: dict[str, str] = {"synthetic": "generated", "real": "official"}
"""A row's ``source`` as the tables name it: ``generated`` (the shaped generator) or
``official`` (a MemoryAgentBench row)."""
CELL = "official / generated (paper)"


READER_NOTES = {
    "newest": "the reader resolves conflicts by fact order (every memory that shows the newest value scores alike)",
    "memory-order": "each hop uses the record the memory ranks first by what it states (state, score, validity, "
                    "support; equals in the order stored): the memory must resolve conflicts",
    "local-lm": "the packaged SmolLM2-135M reads each hop's records (first questions of each cell only)",
    "first-record": "each hop uses the memory's first record (rows written before question readers were named)",
}


def _reader(row: dict[str, Any]) -> str:
    return row.get("reader", "first-record")


def _origin(row: dict[str, Any]) -> str:
    return row.get("origin") or ORIGINS[row.get("source", "synthetic")]


def _where(row: dict[str, Any]) -> str:
    """``generated SH-262k (18,332 facts)``: the origin and size of a row."""
    facts = f" ({row['n_facts']:,} facts)" if row.get("n_facts") else ""
    return f"{_origin(row)} {row['split'].upper()}-{row['length']}{facts}"


def _coverage(rows: Sequence[dict[str, Any]], percent: str) -> str:
    seen: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in rows:
        seen.setdefault((_origin(row), row["split"], row["length"]), row)
    return ", ".join(f"{_where(row)} {format(row['coverage'], percent)}" for row in seen.values()
                     if row.get("coverage") is not None)


def _cell_text(real: dict[str, Any] | None, synthetic: dict[str, Any] | None, dash: str) -> str:
    paper = (real or synthetic or {}).get("paper")
    text = (f"{real['score']:.2f}" if real else dash) + " / " + (f"{synthetic['score']:.2f}" if synthetic else dash)
    return text + (f" ({paper:.2f})" if paper is not None else "")


def _layout(rows: Sequence[dict[str, Any]]):
    readers = list(dict.fromkeys(_reader(row) for row in rows))
    methods = list(dict.fromkeys(row["method"] for row in rows))
    cells = list(dict.fromkeys((row["split"], row["length"]) for row in rows))
    lookup = {(_reader(row), row.get("source", "synthetic"), row["split"], row["length"], row["method"]): row
              for row in rows}
    return readers, methods, cells, lookup


def _subset_note(rows: Sequence[dict[str, Any]], reader: str) -> str:
    counts = sorted({row.get("n_questions", 0) for row in rows if _reader(row) == reader})
    return f" ({'/'.join(str(c) for c in counts)} questions a cell)" if reader == "local-lm" and counts else ""


def format_facts_table(rows: Sequence[dict[str, Any]]) -> str:
    """A terminal table per question reader (no line over 100 columns): one line per method,
    per split and length ``official / generated (paper)``; then the front-end coverage of every cell."""
    if not rows:
        raise ValueError("no rows to format")
    readers, methods, cells, lookup = _layout(rows)
    lines = [f"FactConsolidation, substring exact match, one answer per question; per size: {CELL}.",
             "One front-end for every method (induced fact frames, question chains through the memory); "
             "'-' where there is no row of that origin and size."]
    for reader in readers:
        table = [[method] + [_cell_text(lookup.get((reader, "real", split, length, method)),
                                        lookup.get((reader, "synthetic", split, length, method)), "-")
                             for split, length in cells]
                 for method in methods
                 if any((reader, src, s, n, method) in lookup for src in ("real", "synthetic") for s, n in cells)]
        lines += ["", f"question reader {reader}{_subset_note(rows, reader)}: {READER_NOTES.get(reader, '')}",
                  terminal_table(["method", *(f"{s.upper()}-{n}" for s, n in cells)], table)]
    lines.append("")
    lines.append("facts keyed by the front-end: " + _coverage(rows, ".1%"))
    for (reader, source, split, length, method), row in lookup.items():
        if method == "tepa" and split == "mh" and row.get("breakdown"):
            lines.append(f"where tepa's chains break ({reader}), {_where(row)}: " + ", ".join(
                f"{kind} {n}" for kind, n in row["breakdown"].items() if n))
    differences = front_end_differences(FACTS_ENV_ID, [m for m in methods])
    if differences:
        lines.append("per-method arguments: " + "; ".join(
            f"{m}: {', '.join(f'{k}={v}' for k, v in kwargs.items())}" for m, kwargs in differences.items()))
    lines.append("append-only-bm25: append-only with the paper's lexical BM25 top-k retrieval (its own front-end).")
    return "\n".join(lines)


def facts_markdown(rows: Sequence[dict[str, Any]], focus: str = "tepa") -> str:
    """The README's table: a row per method, a column per question reader and split and
    length, ``real / synthetic (paper)``; then the front-end's coverage and where
    ``focus``'s chains break."""
    if not rows:
        raise ValueError("no rows to format")
    readers, methods, cells, lookup = _layout(rows)
    columns = [(reader, split, length) for reader in readers for split, length in cells]
    table_rows = []
    for method in methods:
        if method in ORACLES:
            table_rows.append([method, *(["n/a"] * len(columns))])
            continue
        entries = [_cell_text(lookup.get((reader, "real", split, length, method)),
                              lookup.get((reader, "synthetic", split, length, method)), "—")
                   for reader, split, length in columns]
        table_rows.append([method, *entries])
    headers = ["method", *(f"{reader}: {s.upper()}-{n} official / generated" for reader, s, n in columns)]
    table = markdown_table(headers, table_rows)
    lines = ["", f"Each cell: {CELL} at the column's size (— where there is no row of that origin and size). "
             "n/a: the oracle bounds (`oracle-reset`, `oracle-view`) act on the true value of the key "
             "a task presents, and a FactConsolidation question presents none (the reader answers the "
             "question text), so they show nothing here and bound nothing. "
             "Question readers: " + "; ".join(
        f"`{reader}`{_subset_note(rows, reader)}: {READER_NOTES.get(reader, '')}" for reader in readers) + ".",
        "", "Fact sentences keyed by the front-end: " + _coverage(rows, ".0%") + "."]
    for (reader, source, split, length, method), row in lookup.items():
        if method == focus and split == "mh" and row.get("breakdown"):
            counts = row["breakdown"]
            lines.append(f"Where {focus}'s chains break ({reader}), {_where(row)}: " + ", ".join(
                f"{kind} {counts[kind]}" for kind in BREAKDOWN if counts.get(kind)) + ".")
    return table + "\n".join(lines) + "\n"


__all__ = ["BREAKDOWN", "CELL", "ORIGINS", "READER_NOTES", "facts_markdown", "format_facts_table"]
