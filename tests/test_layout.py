"""The layout rules the README states, checked on the source (``ast``, no imports run).

* Dependencies point one way: ``tepa_envs`` <- ``agents`` <- ``wrappers``. No module
  under ``tepa_envs/`` imports ``tepa_envs.agents`` or ``tepa_envs.wrappers``; no
  module under ``agents/`` imports ``tepa_envs.wrappers``.
* Contracts are declared, not discovered: the library (``tepa_envs/``, ``agents/``,
  ``wrappers/``) makes no ``getattr``/``hasattr`` call with a literal attribute name,
  except on the targets of :data:`ALLOWED_PROBES`, none of them an environment, a
  memory or a reader, each with its reason. What an environment, a memory or a reader
  may offer is declared (``tepa_envs.core.contracts``, ``agents/memories/protocol.py``,
  ``agents/readers/protocol.py``) and checked with ``isinstance`` when it is optional.
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
#: ``(file, target expression, attribute)`` -> why a literal-name probe of that target is
#: not a probe of a contract: modules and features of the platform or of a third party,
#: and per-thread caches. Nothing here is an environment, a memory or a reader.
ALLOWED_PROBES: dict[tuple[str, str, str], str] = {
    ("tepa_envs/core/render.py", "_local", "canvas"): "threading.local cache: empty in a new thread",
    ("agents/readers/lm_cache.py", "self._local", "conn"): "threading.local cache: empty in a new thread",
    ("tepa_envs/file_ops/sandbox_paths.py", "_buffers", "buf"): "threading.local cache: empty in a new thread",
    ("tepa_envs/file_ops/sandbox_paths.py", "os", "O_PATH"): "os flag that exists on Linux only",
    ("tepa_envs/file_ops/sandbox_paths.py", "os", "geteuid"): "os function that exists on POSIX only",
    ("tepa_envs/file_ops/sandbox.py", "os", "geteuid"): "os function that exists on POSIX only",
    ("agents/evaluation/engine/spec.py", "os", "O_NONBLOCK"): "os flag that exists on POSIX only",
    ("agents/evaluation/engine/spec.py", "os", "O_CLOEXEC"): "os flag that exists on POSIX only",
    ("agents/evaluation/engine/spec.py", "os", "O_BINARY"): "os flag that exists on Windows only",
    ("agents/evaluation/outputs/files.py", "os", "O_CLOEXEC"): "os flag that exists on POSIX only",
    ("agents/evaluation/outputs/files.py", "os", "O_BINARY"): "os flag that exists on Windows only",
    ("agents/evaluation/engine/spec.py", "tepa_envs", "__version__"): "a checkout that is not installed",
    ("agents/evaluation/outputs/files.py", "tepa_envs", "__version__"): "a checkout that is not installed",
    ("agents/evaluation/engine/pool.py", "module", "__file__"): "entries of sys.modules: built-in modules have none",
    ("agents/evaluation/engine/pool.py", "atexit", "_run_exitfuncs"): "CPython internal, absent elsewhere",
    ("agents/evaluation/engine/pool.py", "atexit", "_clear"): "CPython internal, absent elsewhere",
    ("agents/evaluation/engine/pool.py", "weakref.finalize", "_registry"): "CPython internal, absent elsewhere",
    ("agents/memories/batched.py", "np", "bitwise_count"): "numpy function new in numpy 2.0",
    ("agents/readers/local_lm.py", "model.config", "tie_word_embeddings"):
        "a Hugging Face model config (third party): not every architecture has the field",
    ("wrappers/rllib.py", "config", "worker_index"): "RLlib's EnvContext (third party): a plain dict has none",
}


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


def literal_probes(path: Path) -> list[tuple[int, tuple[str, str, str]]]:
    """``(line, (file, target expression, attribute))`` of every ``getattr``/``hasattr``
    call in ``path`` whose attribute name is a string literal."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("hasattr", "getattr") and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            where = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
            found.append((node.lineno, (where, ast.unparse(node.args[0]), node.args[1].value)))
    return found


def library_probes() -> list[tuple[int, tuple[str, str, str]]]:
    return [probe for folder in sorted(PACKAGES) for path, _ in modules(folder) for probe in literal_probes(path)]


def test_no_literal_name_probes_outside_the_allowlist():
    """An environment, a memory or a reader is never asked whether it has a member: the
    member is declared on its contract (with a default when it is optional) or its
    capability is a ``runtime_checkable`` Protocol checked with ``isinstance``."""
    offending = [f"{site[0]}:{line} {site[1]}.{site[2]}" for line, site in library_probes()
                 if site not in ALLOWED_PROBES]
    assert offending == [], "declare the member on the contract instead of probing for it"


def test_every_allowed_probe_is_still_made_and_says_why():
    made = {site for _, site in library_probes()}
    assert [site for site in ALLOWED_PROBES if site not in made] == []  # a stale entry: remove it
    assert all(reason.strip() for reason in ALLOWED_PROBES.values())


def test_the_probe_scan_sees_every_literal_name_probe(tmp_path):
    source = ("def f(env, memory, reader):\n"
              "    keys = getattr(env.unwrapped, 'known_keys', None)\n"
              "    if hasattr(memory, \"audit_log\"):\n"
              "        pass\n"
              "    return getattr(reader, 'context', ''), getattr(env, name), getattr(os, 'O_CLOEXEC', 0)\n")
    path = tmp_path / "probe.py"
    path.write_text(source)
    sites = [(line, site[1:]) for line, site in literal_probes(path)]
    assert sorted(sites) == [(2, ("env.unwrapped", "known_keys")), (3, ("memory", "audit_log")),
                             (5, ("os", "O_CLOEXEC")), (5, ("reader", "context"))]
    flagged = [site for _, site in literal_probes(path) if site not in ALLOWED_PROBES]
    assert len(flagged) == 4  # an allowlist entry names its file: the same probe elsewhere is flagged
