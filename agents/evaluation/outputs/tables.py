"""The table renderers: markdown (the README blocks, the leaderboard, the metrics tables) and
text for the terminal (every terminal table of ``tepa-bench``, no line wider than
:data:`TERMINAL_WIDTH`)."""

from __future__ import annotations

from typing import Sequence


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub markdown table: the header, the ``|---|`` rule, one line per row; ends with a newline."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


TERMINAL_WIDTH = 100
"""The widest line a terminal table prints."""


def terminal_table(header: Sequence[str], rows: Sequence[Sequence[str]], width: int = TERMINAL_WIDTH) -> str:
    """A text table no wider than ``width``: the first column left-aligned, the others right-aligned;
    columns that do not fit go to further blocks, each repeating the first column. Lines of
    a single column wider than ``width`` are the only ones longer.

    >>> print(terminal_table(["method", "a", "b"], [["tepa", "0.87", "0.88"]], width=14))
    method     a
    -----------
    tepa    0.87
    <BLANKLINE>
    method     b
    -----------
    tepa    0.88
    """
    table = [list(header)] + [list(row) for row in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    blocks: list[list[int]] = []
    used = widths[0]
    for i in range(1, len(header)):
        if not blocks or used + 2 + widths[i] > width:
            blocks.append([])
            used = widths[0]
        blocks[-1].append(i)
        used += 2 + widths[i]
    texts = []
    for block in blocks or [[]]:
        lines = []
        for r, row in enumerate(table):
            lines.append(f"{row[0]:<{widths[0]}}" + "".join(f"  {row[i]:>{widths[i]}}" for i in block))
            if r == 0:
                lines.append("-" * len(lines[0]))
        texts.append("\n".join(lines))
    return "\n\n".join(texts)


__all__ = ["TERMINAL_WIDTH", "markdown_table", "terminal_table"]
