"""The layout rules the README states, checked on the source (``ast``, no imports run).

* Dependencies point one way: ``tepa_envs`` <- ``agents`` <- ``wrappers``. No module
  under ``tepa_envs/`` imports ``tepa_envs.agents`` or ``tepa_envs.wrappers``; no
  module under ``agents/`` imports ``tepa_envs.wrappers``.
* The task contract is declared, not discovered: no ``hasattr``/``getattr`` probes
  for its members by name.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: source folder -> the package it installs as
PACKAGES = {"tepa_envs": "tepa_envs", "agents": "tepa_envs.agents", "wrappers": "tepa_envs.wrappers"}
FORBIDDEN_IMPORTS = {
    "tepa_envs": ("tepa_envs.agents", "tepa_envs.wrappers"),
    "agents": ("tepa_envs.wrappers",),
}
CONTRACT_MEMBERS = frozenset({
    "choices", "to_action", "stated_value", "trial", "trials_spent", "reader_params", "memory_kwargs",
    "on_phase_boundary", "trial_budget_spent", "offers_trials",
})


def modules(folder: str) -> list[tuple[Path, str]]:
    """``(path, dotted module name)`` of every module under ``folder``."""
    found = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found.append((path, ".".join([PACKAGES[folder], *parts])))
    return found


def imported_names(path: Path, module: str) -> list[tuple[int, str]]:
    """Every module an import statement in ``path`` names (relative ones resolved), with
    ``from package import name`` also yielding ``package.name``, and the string
    arguments of ``importlib.import_module``/``__import__`` calls."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:max(0, len(base) - (node.level - 1))]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names.append((node.lineno, target))
            names += [(node.lineno, f"{target}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in ("import_module", "__import__"):
                names.append((node.lineno, node.args[0].value))
    return names


def is_within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


@pytest.mark.parametrize("folder", sorted(FORBIDDEN_IMPORTS))
def test_dependencies_point_one_way(folder):
    offending = [f"{path.relative_to(ROOT)}:{line} imports {name}"
                 for path, module in modules(folder)
                 for line, name in imported_names(path, module)
                 if any(is_within(name, banned) for banned in FORBIDDEN_IMPORTS[folder])]
    assert offending == []


def test_the_import_scan_sees_relative_and_dynamic_imports(tmp_path):
    source = ("from .. import agents\nfrom ...wrappers import x\nimport tepa_envs.agents.memories\n"
              "from tepa_envs import wrappers\nimportlib.import_module('tepa_envs.agents')\n")
    path = tmp_path / "probe.py"
    path.write_text(source)
    names = [name for _, name in imported_names(path, "tepa_envs.core.probe")]
    assert "tepa_envs.agents" in names and "tepa_envs.wrappers" in names
    assert "tepa_envs.wrappers.x" not in names  # three dots from tepa_envs.core leave the project
    assert "tepa_envs.agents.memories" in names


def contract_probes(path: Path) -> list[str]:
    """``hasattr``/``getattr`` calls whose attribute name is a contract member's literal."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("hasattr", "getattr") and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant) and node.args[1].value in CONTRACT_MEMBERS):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.func.id}(..., {node.args[1].value!r})")
    return found


@pytest.mark.parametrize("folder", sorted(PACKAGES))
def test_no_attribute_probes_for_the_task_contract(folder):
    assert [probe for path, _ in modules(folder) for probe in contract_probes(path)] == []
