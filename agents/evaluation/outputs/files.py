"""Output files written so that a reader can tell a complete run from a torn one.

Every file is written to a temporary name in its own directory, fsynced, then
renamed over the old one (:func:`write_text_atomic`, :func:`write_bytes_atomic`):
a killed run never leaves a truncated file. A run's directory gets
``manifest.json`` last (:func:`write_manifest`): the run id, seeds, methods,
package/Python/NumPy versions and the sha256 of every file the run wrote. The old
manifest is removed before the first file of a new run replaces anything
(:func:`begin_run`), so a directory holding files of two runs has no manifest, and
a file changed after the manifest no longer matches its hash:
:func:`verify_manifest` is ``True`` only for a complete run.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import platform
import sys
import tempfile
import uuid
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy

import tepa_envs

MANIFEST = "manifest.json"
MANIFEST_VERSION = 1


class OutputDirError(ValueError):
    """The output location cannot hold the run's files (a file, under a file, not writable)."""


class ManifestError(ValueError):
    """A directory is not a complete run: no manifest, or a file differs from it."""


def _create_temp(directory: Path, name: str) -> tuple[int, str]:
    """A new file beside ``name`` in ``directory``, created with mode 0o666 so the
    umask gives it the permissions a plain ``open(path, "w")`` would."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = os.path.join(directory, f".{name}.{uuid.uuid4().hex[:12]}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {os.path.join(directory, name)}")


def _fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable (POSIX; a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, fsync, then rename over it.

    A reader sees the old file or the new one, never a part of either; the new
    file gets the permissions a plain ``open(path, "w")`` would give it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _create_temp(path.parent, path.name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to a temporary file beside ``path``, fsync, then rename over it."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path: Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=2) + "\n")


def write_figure_atomic(fig: Any, path: Path) -> None:
    """Render a matplotlib figure as PNG in memory, close it, and write it atomically."""
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="png")
    finally:
        plt.close(fig)
    write_bytes_atomic(Path(path), buffer.getvalue())


def prepare_output_dir(path: str | os.PathLike[str]) -> Path:
    """Create ``path`` if needed and check that it is a writable directory, before any work.

    Raises :class:`OutputDirError` (a ``ValueError``) with a one-line reason."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise OutputDirError(f"{out} is a file, not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocker = next((p for p in out.parents if p.exists() and not p.is_dir()), None)
        where = f"{blocker} is a file" if blocker is not None else "a path component is not a directory"
        raise OutputDirError(f"cannot create directory {out}: {where}") from None
    except OSError as exc:
        raise OutputDirError(f"cannot create directory {out}: {exc.strerror or exc}") from None
    if not out.is_dir():
        raise OutputDirError(f"{out} is not a directory")
    try:
        fd, probe = tempfile.mkstemp(dir=out, prefix=".tepa-write-check.", suffix=".tmp")
    except OSError as exc:
        raise OutputDirError(f"directory {out} is not writable: {exc.strerror or exc}") from None
    os.close(fd)
    os.unlink(probe)
    return out


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def versions() -> dict[str, str]:
    """The versions a run's numbers depend on: this package, Python, NumPy."""
    try:
        package = version("tepa-envs")
    except PackageNotFoundError:  # pragma: no cover - imported from a checkout that is not installed
        package = getattr(tepa_envs, "__version__", "unknown")
    return {"tepa-envs": package, "python": platform.python_version(), "numpy": numpy.__version__}


def begin_run(directory: Path) -> None:
    """Remove ``directory``'s manifest before a new run replaces any of its files, so a
    run killed half-way leaves no manifest that vouches for a mix of two runs."""
    manifest = Path(directory) / MANIFEST
    try:
        manifest.unlink()
    except FileNotFoundError:
        return
    _fsync_dir(Path(directory))


def write_manifest(directory: Path, files: Iterable[str], *, seeds: Sequence[int], methods: Sequence[str],
                   run_id: str | None = None, **extra: Any) -> Path:
    """Write ``directory/manifest.json`` last: run id, seeds, methods, versions and the
    sha256 and size of every file in ``files`` (names relative to ``directory``)."""
    directory = Path(directory)
    names = list(dict.fromkeys(files))
    for name in names:
        if name == MANIFEST or Path(name).is_absolute() or ".." in Path(name).parts:
            raise ValueError(f"manifest files must be relative names inside the directory, got {name!r}")
    manifest = {
        "manifest_version": MANIFEST_VERSION,
        "run_id": run_id or uuid.uuid4().hex,
        "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": list(sys.argv),
        "seeds": [int(s) for s in seeds],
        "methods": [str(m) for m in methods],
        "versions": versions(),
        **extra,
        "files": {name: {"sha256": sha256_file(directory / name), "bytes": (directory / name).stat().st_size}
                  for name in names},
    }
    path = directory / MANIFEST
    write_json_atomic(path, manifest)
    return path


def check_manifest(directory: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest of a complete run in ``directory``; :class:`ManifestError` naming what
    is wrong when it is missing, unreadable, or a listed file is missing or changed."""
    directory = Path(directory)
    path = directory / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        raise ManifestError(f"{path} is missing: the run did not finish (or was never run here)") from None
    except (OSError, ValueError) as exc:
        raise ManifestError(f"{path} is unreadable: {exc}") from None
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or not files:
        raise ManifestError(f"{path} lists no files")
    for name, entry in files.items():
        target = directory / name
        if not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str):
            raise ManifestError(f"{path}: bad entry for {name!r}")
        if not target.is_file():
            raise ManifestError(f"{target} is listed in the manifest but missing")
        if sha256_file(target) != entry["sha256"]:
            raise ManifestError(f"{target} changed after the manifest was written (sha256 differs)")
    return manifest


def verify_manifest(directory: str | os.PathLike[str]) -> bool:
    """Whether ``directory`` holds a complete run: its manifest exists and every file it
    lists is present with the recorded sha256 (:func:`check_manifest` says why not)."""
    try:
        check_manifest(directory)
    except ManifestError:
        return False
    return True


__all__ = [
    "MANIFEST", "ManifestError", "OutputDirError", "begin_run", "check_manifest", "prepare_output_dir",
    "sha256_file", "verify_manifest", "write_bytes_atomic", "write_figure_atomic", "write_json_atomic",
    "write_manifest", "write_text_atomic",
]
