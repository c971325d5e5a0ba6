"""The one writer of generated blocks in the README and the documentation pages.

A generated block is the text between ``<!-- begin:NAME -->`` and ``<!-- end:NAME -->``
in ``README.md`` or in any page under ``docs/``. Every generator (``tepa-bench readme``
and the ``benchmarks/*.py`` scripts with a ``readme`` step) writes through
:func:`write_blocks`, which finds the one file holding each marker, wherever the block
now lives, and replaces what lies between the markers and nothing else. A marker found
in no file, or in more than one, is an error naming the files.

>>> import tempfile, pathlib
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> (root / "docs").mkdir()
>>> _ = (root / "docs" / "page.md").write_text("x\\n<!-- begin:demo -->\\nold\\n<!-- end:demo -->\\n")
>>> write_block("demo", "new\\n", root).name
'page.md'
>>> (root / "docs" / "page.md").read_text()
'x\\n<!-- begin:demo -->\\nnew\\n<!-- end:demo -->\\n'
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Mapping

from tepa_envs.agents.evaluation.outputs.files import write_text_atomic
from tepa_envs.error import TepaError

#: a generated block: ``<!-- begin:NAME -->`` (its line), the body, ``<!-- end:NAME -->``
MARKER = re.compile(r"(<!-- begin:(?P<name>[a-z0-9-]+) -->\n)(?P<body>.*?)(<!-- end:(?P=name) -->)", re.S)


class BlockError(TepaError, ValueError):
    """A marker found in no file, or in more than one."""


def markdown_files(root: Path, readme: Path | None = None) -> list[Path]:
    """The files that may hold generated blocks: the README (``readme``, default
    ``root/README.md``) and every ``*.md`` under ``root/docs``."""
    root = Path(root)
    files = [Path(readme) if readme is not None else root / "README.md"]
    docs = root / "docs"
    if docs.is_dir():
        files += sorted(p for p in docs.rglob("*.md") if p.is_file())
    return [p for p in files if p.is_file()]


def blocks(text: str) -> dict[str, str]:
    """Every generated block of a text, by name: its body."""
    return {m.group("name"): m.group("body") for m in MARKER.finditer(text)}


def locate(name: str, files: Iterable[Path]) -> Path:
    """The unique file among ``files`` holding the block ``name``."""
    begin = f"<!-- begin:{name} -->\n"
    holders = [p for p in files if begin in p.read_text(encoding="utf-8")]
    if len(holders) != 1:
        where = ", ".join(str(p) for p in holders) or "no file"
        raise BlockError(f"<!-- begin:{name} --> must be in exactly one file; found in {where}")
    return holders[0]


def read_block(name: str, root: Path, readme: Path | None = None) -> str:
    """The body of the block ``name`` wherever it lives under ``root``."""
    path = locate(name, markdown_files(root, readme))
    return blocks(path.read_text(encoding="utf-8"))[name]


def write_blocks(bodies: Mapping[str, str], root: Path, readme: Path | None = None,
                 missing_ok: bool = False) -> dict[str, Path]:
    """Replace the body of each named block, in whichever file holds it; returns the
    file written for each name (a file is rewritten only when its text changed).

    ``missing_ok`` skips a name no file holds (``tepa-bench readme`` on a README
    without that table) instead of raising :class:`BlockError`."""
    files = markdown_files(root, readme)
    where: dict[str, Path] = {}
    for name in bodies:
        try:
            where[name] = locate(name, files)
        except BlockError:
            if not missing_ok or any(f"<!-- begin:{name} -->\n" in p.read_text(encoding="utf-8") for p in files):
                raise
    for path in dict.fromkeys(where.values()):
        text = path.read_text(encoding="utf-8")
        new_text = MARKER.sub(lambda m: (m.group(1) + bodies[m.group("name")] + m.group(4)
                                         if where.get(m.group("name")) == path else m.group(0)), text)
        if new_text != text:
            write_text_atomic(path, new_text)
    return where


def write_block(name: str, body: str, root: Path, readme: Path | None = None) -> Path:
    """Replace one block's body wherever it lives; returns the file holding it."""
    return write_blocks({name: body}, root, readme)[name]


def merge_rows(old: str, new: str, regenerated: set[str] | Mapping[str, set[str]]) -> str:
    """``new`` with the table rows of ``old`` that it did not regenerate put back.

    A row belongs to the setting named by the first word of its first cell
    (``controlled``, ``preference, main_profile_share = 0.5`` -> ``preference``);
    rows of ``old`` whose setting is not in ``regenerated`` are kept, in each table
    of ``new`` with the same header line, before the rows of later settings. So a
    generator run on one setting never removes another setting's rows. ``regenerated``
    may instead map a table's first column title to the settings regenerated in it.

    >>> old = "| setting | x |\\n|---|---|\\n| a | 1 |\\n| b | 2 |\\n"
    >>> print(merge_rows(old, "| setting | x |\\n|---|---|\\n| b | 3 |\\n", {"b"}), end="")
    | setting | x |
    |---|---|
    | a | 1 |
    | b | 3 |
    """
    def tables(text: str) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if line.startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
                rows = []
                for row in lines[i + 2:]:
                    if not row.startswith("|"):
                        break
                    rows.append(row)
                out[line] = rows
        return out

    def setting(row: str) -> str:
        return row.strip("| ").split("|")[0].strip().split(",")[0].split()[0]

    def renewed(header: str) -> set[str]:
        if isinstance(regenerated, Mapping):
            return set(regenerated.get(header.strip("| ").split("|")[0].strip(), set()))
        return set(regenerated)

    before = tables(old)
    kept = {header: [r for r in rows if setting(r) not in renewed(header)] for header, rows in before.items()}
    lines = new.splitlines(keepends=True)
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i].rstrip("\n")
        out.append(lines[i])
        if line in kept and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            out.append(lines[i + 1])
            i += 2
            rows: list[str] = []
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(lines[i].rstrip("\n"))
                i += 1
            order = list(dict.fromkeys([setting(r) for r in before[line]] + [setting(r) for r in rows]))
            merged = sorted(kept[line] + rows, key=lambda r: order.index(setting(r)))
            out.extend(r + "\n" for r in merged)
            continue
        i += 1
    return "".join(out)
