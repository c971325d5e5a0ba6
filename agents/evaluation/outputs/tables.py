"""The one markdown table renderer of the README blocks, the leaderboard and the metrics tables."""

from __future__ import annotations

from typing import Sequence


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub markdown table: the header, the ``|---|`` rule, one line per row; ends with a newline."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


__all__ = ["markdown_table"]
