"""No import cycle anywhere in the library: the graph of module-level imports (those run
when a module is imported; ``if TYPE_CHECKING:`` blocks excluded; a module's own parent
packages, which Python initialises first, excluded) has no cycle."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROOMS = {"tepa_envs": ROOT / "tepa_envs", "tepa_envs.agents": ROOT / "agents", "tepa_envs.wrappers": ROOT / "wrappers"}


def modules() -> dict[str, Path]:
    found = {}
    for package, folder in ROOMS.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            name = ".".join((package, *parts))
            if package == "tepa_envs" and parts and parts[0] in ("agents", "wrappers"):
                continue
            found[name] = path
    return found


def _runtime_imports(tree: ast.Module) -> list[ast.stmt]:
    """Module-level import statements, including those inside module-level ``try``/``if``
    blocks other than ``if TYPE_CHECKING:``."""
    out: list[ast.stmt] = []
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        elif isinstance(node, ast.If) and not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
            stack += node.body + node.orelse
        elif isinstance(node, ast.Try):
            stack += node.body + [s for h in node.handlers for s in h.body] + node.orelse + node.finalbody
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    edges: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        for node in _runtime_imports(ast.parse(path.read_text())):
            targets = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] + [f"{node.module}.{a.name}" for a in node.names] if node.module else [])
            # a module's own ancestor packages are initialised before it by Python itself: not an edge
            edges[name] |= {t for t in targets if t in known and t != name and not name.startswith(f"{t}.")}
    return edges


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[node] = 2
        path.pop()
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_graph_is_not_empty():
    edges = graph()
    assert len(edges) > 100 and sum(map(len, edges.values())) > 200


def test_no_import_cycle_in_the_library():
    assert find_cycle(graph()) is None, " -> ".join(find_cycle(graph()) or [])


def test_the_detector_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


OPTIONAL_GATES = {
    ("tepa_envs.agents.readers.factory", "tepa_envs.agents.readers.local_lm"),
    ("tepa_envs.agents.readers.factory", "tepa_envs.agents.readers.openai_reader"),
    ("tepa_envs.wrappers", "tepa_envs.wrappers.sb3"),
    ("tepa_envs.facts.extraction", "tepa_envs.facts.wordnet"),
    ("tepa_envs.agents.evaluation.studies.facts", "tepa_envs.agents.readers.local_lm"),
}
"""Function-local imports of the library that gate an optional dependency (a language model,
Stable-Baselines3, a lexical database): loaded only when that part is asked for."""


def test_function_local_imports_only_gate_optional_dependencies():
    local = set()
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for sub in ast.walk(node):
                    if isinstance(sub, ast.ImportFrom) and sub.module and sub.module.startswith("tepa_envs"):
                        local.add((name, sub.module))
    assert local <= OPTIONAL_GATES, sorted(local - OPTIONAL_GATES)
