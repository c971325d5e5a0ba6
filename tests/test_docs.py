"""The documentation is checked like code (issue 25).

* every ``python`` code block of README.md and of the pages under docs/ runs, in
  page order and in one namespace per page (a block preceded by
  ``<!-- not-run: REASON -->`` is skipped, and must say why);
* every generated block (``<!-- begin:NAME -->``) lives in exactly one file and is closed;
* the architecture page's tree matches the folders;
* the doctests of the public entry points run (``make_memory`` through
  docs/api/memories.md, ``evaluate``, ``load_profile``, the block writer);
* the site builds in strict mode (when the ``docs`` extra is installed).
"""

from __future__ import annotations

import contextlib
import doctest
import importlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md"] + sorted(DOCS.rglob("*.md"))
BLOCK = re.compile(r"(?:<!-- not-run: (?P<reason>[^\n]*?) -->\n)?```python\n(?P<code>.*?)```", re.S)


def python_blocks(page: Path) -> list[tuple[str | None, str, int]]:
    """(not-run reason or None, code, line) of every python block of a page."""
    text = page.read_text(encoding="utf-8")
    return [(m.group("reason"), m.group("code"), text.count("\n", 0, m.start("code")) + 1)
            for m in BLOCK.finditer(text)]


@pytest.mark.parametrize("page", [p for p in PAGES if python_blocks(p)], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_python_block_runs(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a block that writes files writes them here
    namespace: dict[str, object] = {"__name__": "__docs__"}
    ran = 0
    for reason, code, line in python_blocks(page):
        if reason is not None:
            assert len(reason.strip()) > 10, f"{page.name}:{line}: a not-run block must say why"
            continue
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile("\n" * (line - 1) + code, str(page), "exec"), namespace)
        ran += 1
    assert ran or all(reason for reason, _, _ in python_blocks(page))


def test_every_generated_block_is_in_exactly_one_file_and_closed():
    seen: dict[str, list[str]] = {}
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for name in re.findall(r"<!-- begin:([a-z0-9-]+) -->", text):
            seen.setdefault(name, []).append(page.relative_to(ROOT).as_posix())
            assert f"<!-- end:{name} -->" in text, f"{page}: <!-- begin:{name} --> is never closed"
    assert seen, "no generated block found"
    assert {name: files for name, files in seen.items() if len(files) > 1} == {}


# --------------------------------------------------------------------- architecture tree
def tree_paths() -> list[str]:
    """Every path the architecture page's tree names (folders end with '/')."""
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    (tree,) = re.findall(r"```text\n(.*?)```", text, re.S)
    paths: list[str] = []
    stack: list[tuple[int, str]] = []
    for line in tree.splitlines():
        indent = len(line) - len(line.lstrip())
        names_part = re.split(r"\s{2,}", line.strip())[0]
        names = [n.strip() for n in names_part.split(",")]
        if not all(re.fullmatch(r"[\w.-]+/?", n) and (n.endswith("/") or "." in n) for n in names):
            continue  # a continuation of a description
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1] if stack else ""
        for name in names:
            paths.append(parent + name)
        if names[-1].endswith("/"):
            stack.append((indent, parent + names[-1]))
    return paths


def test_the_architecture_tree_matches_the_folders():
    paths = tree_paths()
    missing = [p for p in paths if not (ROOT / p).exists()]
    assert missing == [], f"the tree names paths that do not exist: {missing}"
    folders = {p for p in paths if p.endswith("/")}
    packages = sorted(f"{d.parent.relative_to(ROOT).as_posix()}/" for top in ("tepa_envs", "agents", "wrappers")
                      for d in (ROOT / top).rglob("__init__.py") if "__pycache__" not in d.parts)
    assert [p for p in packages if p not in folders] == [], "package folders the tree leaves out"
    listed = {p for p in paths if p.endswith(".py")}
    for folder in {p.rsplit("/", 1)[0] + "/" for p in listed}:
        modules = {f"{folder}{m.name}" for m in (ROOT / folder).glob("*.py") if m.name != "__init__.py"}
        assert sorted(modules - listed) == [], f"{folder}: the tree lists some of its modules but not these"


# ------------------------------------------------------------------------------ doctests
DOCTEST_MODULES = ("tepa_envs.agents.evaluation.engine.evaluate", "tepa_envs.agents.readers.profile",
                   "tepa_envs.agents.evaluation.outputs.blocks", "tepa_envs.agents.evaluation.outputs.readme")


@pytest.mark.parametrize("module", DOCTEST_MODULES)
def test_doctests_of_public_entry_points(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0, result


def test_doctests_of_the_api_pages():
    for page in sorted((DOCS / "api").glob("*.md")):
        result = doctest.testfile(str(page), module_relative=False, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, (page, result)


# ------------------------------------------------------------------------------ the site
def test_the_site_builds_in_strict_mode(tmp_path):
    pytest.importorskip("mkdocs", reason="the docs extra (mkdocs-material, mkdocstrings) is not installed")
    pytest.importorskip("mkdocstrings", reason="the docs extra (mkdocs-material, mkdocstrings) is not installed")
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                            cwd=ROOT, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, result.stderr[-3000:]


# ------------------------------------------------------------------ the one block writer
def test_blocks_are_found_wherever_they_live_and_only_once(tmp_path):
    from tepa_envs.agents.evaluation.outputs.blocks import BlockError, write_block, write_blocks

    (tmp_path / "docs" / "results").mkdir(parents=True)
    (tmp_path / "README.md").write_text("intro\n<!-- begin:a -->\nold a\n<!-- end:a -->\n")
    page = tmp_path / "docs" / "results" / "page.md"
    page.write_text("# page\n\nprose kept\n<!-- begin:b -->\nold b\n<!-- end:b -->\nmore prose\n")
    written = write_blocks({"a": "new a\n", "b": "new b\n"}, tmp_path)
    assert written == {"a": tmp_path / "README.md", "b": page}
    assert page.read_text() == "# page\n\nprose kept\n<!-- begin:b -->\nnew b\n<!-- end:b -->\nmore prose\n"
    (tmp_path / "docs" / "copy.md").write_text("<!-- begin:b -->\nx\n<!-- end:b -->\n")
    with pytest.raises(BlockError, match="exactly one file"):
        write_block("b", "newer\n", tmp_path)
    with pytest.raises(BlockError, match="no file"):
        write_block("nowhere", "x\n", tmp_path)


def test_a_single_setting_run_keeps_the_other_settings_findings_rows():
    """`tepa-bench readme` after a one-setting `reproduce` once deleted the other settings' rows."""
    from tepa_envs.agents.evaluation.outputs.blocks import merge_rows

    old = ("| setting | phase | TEPA |\n|---|---|---|\n| controlled | full reversal | 0.869 |\n"
           "| executable | full reversal | 0.865 |\n| preference | overall | 0.866 |\n\nSecondary studies:\n\n"
           "| study | phase |\n|---|---|\n| controlled, n_keys = 1 | x |\n| preference, main_profile_share = 0.5 | y |\n")
    new = ("| setting | phase | TEPA |\n|---|---|---|\n| executable | full reversal | 0.900 |\n\nSecondary studies:\n\n"
           "| study | phase |\n|---|---|\n")
    merged = merge_rows(old, new, {"setting": {"executable"}, "study": set()})
    assert merged.splitlines()[2:5] == ["| controlled | full reversal | 0.869 |", "| executable | full reversal | 0.900 |",
                                        "| preference | overall | 0.866 |"]
    assert "| controlled, n_keys = 1 | x |" in merged and "| preference, main_profile_share = 0.5 | y |" in merged
