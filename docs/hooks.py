"""MkDocs hook: a link tree in which mkdocstrings finds the installed package layout.

``agents/`` and ``wrappers/`` install as ``tepa_envs.agents`` and ``tepa_envs.wrappers``
(``[tool.setuptools.package-dir]``), which a static reader of the checkout cannot see.
When MkDocs loads this hook (before any plugin starts), ``build/docs-src/tepa_envs/`` is made of links to every entry of
``tepa_envs/`` plus ``agents`` and ``wrappers``; ``mkdocs.yml`` points mkdocstrings there.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREE = ROOT / "build" / "docs-src" / "tepa_envs"


def link_tree() -> Path:
    if TREE.exists() or TREE.is_symlink():
        shutil.rmtree(TREE)
    TREE.mkdir(parents=True)
    package = ROOT / "tepa_envs"
    for entry in package.iterdir():
        if entry.name != "__pycache__":
            os.symlink(entry, TREE / entry.name)
    for folder in ("agents", "wrappers"):
        os.symlink(ROOT / folder, TREE / folder)
    return TREE


link_tree()  # at import: mkdocstrings may set up its search paths before any hook event runs
