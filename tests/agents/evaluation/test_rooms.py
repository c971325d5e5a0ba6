"""The evaluation's rooms point one way, checked on the source (``ast``, no imports run).

``agents/evaluation/`` is five sub-packages, each importing only the ones before it:
``analysis`` < ``engine`` < ``outputs`` < ``studies`` < ``cli``. Modules directly in
``agents/evaluation/`` (the package's face: ``__init__``, and ``files`` for a path the
README documents) may import any room, and no room imports them. Among all the modules under ``agents/evaluation/`` there is no
import cycle, counting function-local imports too.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("layout_rules", ROOT / "tests" / "test_layout.py")
_layout = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_layout)
imported_names = _layout.imported_names  # the import scan the top-level layout test uses
FOLDER = ROOT / "agents" / "evaluation"
PACKAGE = "tepa_envs.agents.evaluation"
ROOMS: tuple[str, ...] = ("analysis", "engine", "outputs", "studies", "cli")
"""The sub-packages in import order: each may import only those before it."""
FACES: tuple[str, ...] = (PACKAGE, f"{PACKAGE}.files")
"""The package's face: ``__init__`` (the public API) and ``files`` (a path the README documents)."""


def evaluation_modules(folder: Path = FOLDER, package: str = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> path of every module under ``folder``."""
    found = {}
    for path in sorted(folder.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(folder).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join([package, *parts])] = path
    return found


def room_of(module: str, package: str = PACKAGE) -> str | None:
    """The room a module of the package lives in; ``None`` for the package's face."""
    rest = module[len(package) + 1:].split(".") if module != package else []
    return rest[0] if len(rest) > 1 or (rest and rest[0] in ROOMS) else None


def imports_among(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of ``modules`` it imports (a ``from package import name``
    counts as importing ``package.name`` when that is a module, else ``package``)."""
    edges: dict[str, set[str]] = {}
    for module, path in modules.items():
        targets = set()
        for _, name in imported_names(path, module):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
        edges[module] = targets
    return edges


def order_violations(modules: dict[str, Path], package: str = PACKAGE) -> list[str]:
    edges = imports_among(modules)
    found = []
    for module, targets in edges.items():
        room = room_of(module, package)
        if room is None:
            continue
        for target in targets:
            other = room_of(target, package)
            if target == package or other is None:
                found.append(f"{module} imports the package face {target}")
            elif ROOMS.index(other) > ROOMS.index(room):
                found.append(f"{module} ({room}) imports {target} ({other}), a later room")
    return sorted(found)


def cycles(modules: dict[str, Path]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), each sorted."""
    edges = imports_among(modules)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return groups


def test_every_module_lives_in_a_room_or_is_the_face():
    stray = [m for m in evaluation_modules() if room_of(m) is None and m not in FACES]
    assert stray == [], f"modules outside the rooms {ROOMS}: {stray}"
    assert sorted({room_of(m) for m in evaluation_modules()} - {None}) == sorted(ROOMS)


def test_rooms_import_only_earlier_rooms():
    assert order_violations(evaluation_modules()) == []


def test_no_import_cycle_among_the_evaluation_modules():
    assert cycles(evaluation_modules()) == []


def test_no_function_local_imports_of_the_library():
    """Function-local imports of ``tepa_envs`` hid cycles; only optional third-party
    dependencies (Ray, matplotlib) are imported where they are used."""
    local = []
    for module, path in evaluation_modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    names = [a.name for a in inner.names] if isinstance(inner, ast.Import) else [inner.module or ""]
                    if (isinstance(inner, ast.ImportFrom) and inner.level) or any(n.partition(".")[0] == "tepa_envs" for n in names):
                        local.append(f"{module}:{inner.lineno} imports {', '.join(names)}")
    assert local == []


def _fake_rooms(tmp_path: Path, extra: dict[str, str]) -> dict[str, Path]:
    """A copy of the rooms' layout with one module per room, plus ``extra`` sources."""
    folder = tmp_path / "evaluation"
    sources = {f"{room}/__init__.py": "" for room in ROOMS}
    sources.update({f"{room}/m.py": "" for room in ROOMS})
    sources["__init__.py"] = ""
    sources.update(extra)
    for name, text in sources.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return evaluation_modules(folder, PACKAGE)


@pytest.mark.parametrize("room, imported", [("analysis", "engine"), ("engine", "outputs"), ("outputs", "studies"),
                                            ("studies", "cli"), ("analysis", "cli")])
def test_a_backward_import_is_caught(tmp_path, room, imported):
    modules = _fake_rooms(tmp_path, {f"{room}/m.py": f"from {PACKAGE}.{imported}.m import x\n"})
    assert order_violations(modules) == [f"{PACKAGE}.{room}.m ({room}) imports {PACKAGE}.{imported}.m "
                                         f"({imported}), a later room"]


def test_a_room_importing_the_face_and_a_cycle_are_caught(tmp_path):
    modules = _fake_rooms(tmp_path, {
        "engine/m.py": f"from {PACKAGE} import evaluate\n",
        "engine/a.py": f"def f():\n    from {PACKAGE}.engine import b\n",
        "engine/b.py": f"import {PACKAGE}.engine.a\n",
    })
    assert order_violations(modules) == [f"{PACKAGE}.engine.m imports the package face {PACKAGE}"]
    assert cycles(modules) == [[f"{PACKAGE}.engine.a", f"{PACKAGE}.engine.b"]]
