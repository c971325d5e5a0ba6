"""What ``pip install`` puts on disk: every module of ``tepa_envs/``, ``agents/`` and
``wrappers/`` at its import path in the wheel, and a clear message when the source
checkout is imported without being installed. What the sdist carries: the examples,
docs, tests and benchmarks its README and tests use, and the license (PEP 639)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: source folder -> where its modules live in the wheel
FOLDERS = {"tepa_envs": "tepa_envs", "agents": "tepa_envs/agents", "wrappers": "tepa_envs/wrappers"}
BUILD_FILES = ("setup.py", "pyproject.toml", "README.md", "LICENSE")


def copy_sources(destination: Path) -> Path:
    """The files the build reads, copied so the build never writes into the working tree."""
    for name in BUILD_FILES:
        shutil.copy2(ROOT / name, destination / name)
    for folder in FOLDERS:
        shutil.copytree(ROOT / folder, destination / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
    return destination


def build_wheel(source: Path, out: Path) -> set[str]:
    """The file names in the wheel built from ``source``."""
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "-q", "-w", str(out)],
        cwd=source, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    (wheel,) = out.glob("tepa_envs-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def missing_modules(source: Path, names: set[str]) -> list[str]:
    """``.py`` files under the source folders that are not at their import path in the wheel."""
    missing = []
    for folder, target in FOLDERS.items():
        for path in sorted((source / folder).rglob("*.py")):
            relative = path.relative_to(source / folder).as_posix()
            if f"{target}/{relative}" not in names:
                missing.append(f"{folder}/{relative}")
    return missing


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory) -> set[str]:
    source = copy_sources(tmp_path_factory.mktemp("src"))
    return build_wheel(source, tmp_path_factory.mktemp("dist"))


def test_every_module_is_in_the_wheel_at_its_import_path(wheel_names):
    assert missing_modules(ROOT, wheel_names) == []


def test_the_wheel_holds_only_the_tepa_envs_package(wheel_names):
    tops = {name.split("/", 1)[0] for name in wheel_names}
    assert {top for top in tops if not top.endswith(".dist-info")} == {"tepa_envs"}, tops


def test_a_sub_package_left_out_of_the_build_is_caught(tmp_path):
    """The check above fails when a new sub-package is left out: here setup.py lists
    today's sub-packages by hand, without discovery, and ``agents/newpkg`` is added."""
    from setuptools import find_packages

    source = tmp_path / "src"
    source.mkdir()
    copy_sources(source)
    listed = find_packages(str(source), include=["tepa_envs", "tepa_envs.*"])
    for folder in ("agents", "wrappers"):
        listed += [f"tepa_envs.{folder}"] + [f"tepa_envs.{folder}.{n}" for n in find_packages(str(source / folder))]
    (source / "setup.py").write_text(f"from setuptools import setup\n\nsetup(packages={sorted(listed)!r})\n")
    (source / "agents" / "newpkg").mkdir()
    (source / "agents" / "newpkg" / "__init__.py").write_text("")
    (source / "agents" / "newpkg" / "module.py").write_text("X = 1\n")
    names = build_wheel(source, tmp_path / "dist")
    assert missing_modules(source, names) == ["agents/newpkg/__init__.py", "agents/newpkg/module.py"]


HIDE_EDITABLE_INSTALL = """
import sys
sys.meta_path[:] = [f for f in sys.meta_path if not str(getattr(f, "__module__", "")).startswith("__editable__")]
sys.path[:] = [p for p in sys.path if "__editable__" not in p]
sys.path.insert(0, {root!r})
import tepa_envs
assert tepa_envs.__file__.startswith({root!r}), tepa_envs.__file__
try:
    import {module}
except ModuleNotFoundError as exc:
    print(exc)
else:
    print("imported")
"""


@pytest.mark.parametrize("module", ["tepa_envs.agents", "tepa_envs.wrappers.shared_memory"])
def test_an_uninstalled_checkout_says_to_install_it(tmp_path, module):
    code = HIDE_EDITABLE_INSTALL.format(root=str(ROOT), module=module)
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    message = result.stdout.strip()
    assert "pip install -e ." in message and str(ROOT) in message, message
    assert message.startswith(module.split(".shared_memory")[0] + " is not importable"), message


def test_the_install_hint_does_not_hide_real_misses():
    import tepa_envs.agents  # noqa: F401  (installed: the finder is never consulted for it)

    with pytest.raises(ModuleNotFoundError, match="No module named 'tepa_envs.agents.no_such_module'"):
        __import__("tepa_envs.agents.no_such_module")
    with pytest.raises(ModuleNotFoundError, match="No module named 'tepa_envs.no_such_module'"):
        __import__("tepa_envs.no_such_module")


# ---------------------------------------------------------------------------------- sdist
#: top-level folders of a working checkout that are not sources (never copied for the build)
NOT_SOURCES = {".git", "results", "build", "dist", ".mypy_cache", ".pytest_cache", ".hypothesis", ".benchmarks"}
#: what the sdist must carry beyond the packages: the README's image is in docs/, tests/examples run examples/
SDIST_FOLDERS = ("examples", "docs", "tests", "benchmarks")


def _skip_non_sources(directory: str, names: list[str]) -> set[str]:
    skipped = set(shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")(directory, names))
    if Path(directory).resolve() == ROOT:
        skipped |= NOT_SOURCES & set(names)
    return skipped


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> tuple[set[str], str]:
    """The member names of the sdist built from a copy of the checkout (relative to its
    top folder) and its PKG-INFO, built with ``setuptools.build_meta`` as pip would."""
    source = tmp_path_factory.mktemp("sdist-src") / "tepa-envs"
    shutil.copytree(ROOT, source, ignore=_skip_non_sources)
    out = tmp_path_factory.mktemp("sdist")
    code = "import sys; from setuptools import build_meta; print(build_meta.build_sdist(sys.argv[1]))"
    result = subprocess.run([sys.executable, "-c", code, str(out)], cwd=source, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    (archive,) = out.glob("tepa_envs-*.tar.gz")
    with tarfile.open(archive) as tar:
        top = archive.name.removesuffix(".tar.gz")
        names = {name.removeprefix(f"{top}/") for name in tar.getnames()}
        pkg_info = tar.extractfile(f"{top}/PKG-INFO").read().decode()  # type: ignore[union-attr]
    return names, pkg_info


@pytest.mark.parametrize("folder", SDIST_FOLDERS)
def test_the_sdist_carries_the_folders_its_readme_and_tests_use(sdist, folder):
    names, _ = sdist
    expected = {path.relative_to(ROOT).as_posix() for path in (ROOT / folder).rglob("*")
                if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"}
    assert expected and sorted(expected - names) == []


def test_the_sdist_and_wheel_carry_the_mit_license(sdist, wheel_names):
    names, pkg_info = sdist
    assert "LICENSE" in names
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert "License-Expression: MIT" in pkg_info.splitlines(), pkg_info
    assert "License-File: LICENSE" in pkg_info.splitlines(), pkg_info
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in wheel_names), sorted(wheel_names)


def test_the_license_uses_the_pep639_fields():
    """``license = "MIT"`` with ``license-files`` (the table form is deprecated), and a
    build backend that understands them (setuptools >= 77)."""
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["license"] == "MIT"
    assert pyproject["project"]["license-files"] == ["LICENSE"]
    (setuptools,) = [r for r in pyproject["build-system"]["requires"] if r.startswith("setuptools")]
    assert setuptools.replace(" ", "") == "setuptools>=77"
