"""Output files written so that a reader can tell a complete run from a torn one.

Every file is written to a temporary name in its own directory, fsynced, then
renamed over the old one (:func:`write_text_atomic`, :func:`write_bytes_atomic`):
a killed run never leaves a truncated file. A run's directory gets
``manifest.json`` last (:func:`write_manifest`): the run id, seeds, methods,
package/Python/NumPy versions and the sha256 of every file the run wrote, computed
from the bytes this process wrote as it wrote them (not read back from disk: a file
another process put there since does not match, so the manifest vouches only for
this run's bytes). The old manifest is removed before the first file of a new run
replaces anything (:func:`begin_run`), so a directory holding files of two runs
has no manifest, and a file changed after the manifest no longer matches its hash:
:func:`verify_manifest` is ``True`` only for a complete run.

Two runs cannot share a directory: :func:`lock_output_dir` takes ``.tepa-bench.lock``
in it for the run (an advisory ``flock`` held on an open descriptor, so the kernel
drops it when the process dies, however it dies: a stale lock file of a dead process
is simply taken over); a second run is refused with :class:`OutputDirLocked` naming
the holder's pid. The holder also removes leftover hidden temporary files of an
earlier killed run (``.NAME.<12 hex>.tmp``).
"""

from __future__ import annotations

from tepa_envs.error import TepaError
import hashlib
import io
import json
import os
import platform
import re
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy

import tepa_envs

MANIFEST = "manifest.json"
MANIFEST_VERSION = 1


class OutputDirError(TepaError, ValueError):
    """The output location cannot hold the run's files (a file, under a file, not writable)."""


class OutputDirLocked(OutputDirError):
    """Another live run holds the output directory's lock."""


class ManifestError(TepaError, ValueError):
    """A directory is not a complete run: no manifest, or a file differs from it."""


LOCK_NAME = ".tepa-bench.lock"
"""The lock file a run holds in its output directory (removed when the run ends)."""

_TEMP_NAME = re.compile(r"\..+\.[0-9a-f]{12}\.tmp|\.tepa-write-check\..*\.tmp")
"""The hidden temporary files :func:`write_bytes_atomic` and :func:`prepare_output_dir` create."""

_written_lock = threading.Lock()
_written: dict[str, tuple[str, int]] = {}
"""sha256 and size of the bytes this process last wrote to each path (absolute), as it wrote them."""


def _key(path: str | os.PathLike[str]) -> str:
    return os.path.normcase(os.path.abspath(os.path.realpath(path)))


def written_digest(path: str | os.PathLike[str]) -> tuple[str, int] | None:
    """sha256 (hex) and size of the bytes this process last wrote to ``path`` with
    :func:`write_bytes_atomic`, or ``None`` when it wrote none there."""
    with _written_lock:
        return _written.get(_key(path))


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
    data = bytes(data)
    digest = hashlib.sha256(data).hexdigest()
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
    with _written_lock:
        _written[_key(path)] = (digest, len(data))
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
    run killed half-way leaves no manifest that vouches for a mix of two runs; when this
    process holds the lock of ``directory`` or of a directory above it, also remove the
    hidden temporary files an earlier killed run left there."""
    if _holds_lock_over(Path(directory)):
        remove_stale_temp_files(Path(directory))
    manifest = Path(directory) / MANIFEST
    try:
        manifest.unlink()
    except FileNotFoundError:
        return
    _fsync_dir(Path(directory))


def remove_stale_temp_files(directory: Path) -> list[str]:
    """Remove the hidden temporary files of :func:`write_bytes_atomic` and
    :func:`prepare_output_dir` in ``directory`` (left by a killed run; only call this
    while holding the directory's lock); the names removed."""
    removed: list[str] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        if _TEMP_NAME.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
            try:
                os.unlink(entry.path)
                removed.append(entry.name)
            except OSError:
                pass
    return removed


# ----------------------------------------------------------------------------- the run's lock
_held_lock = threading.Lock()
_held: dict[str, tuple[int, int]] = {}  # directory key -> (fd, pid that took it)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def _holds_lock_over(directory: Path) -> bool:
    key = _key(directory)
    with _held_lock:
        return any((key == held or key.startswith(held.rstrip(os.sep) + os.sep)) and pid == os.getpid()
                   for held, (_, pid) in _held.items())


def _read_holder(fd: int, *, wait_s: float = 0.5) -> str:
    """``pid N`` of the lock's holder; a holder that took the lock a moment ago may not
    have written its pid yet, so an empty file is read again for up to ``wait_s``."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            text = os.read(fd, 200).decode("utf-8", "replace").strip()
        except OSError:
            return "unknown"
        pid = text.split()[0] if text.split() else ""
        if pid.isdigit():
            return f"pid {pid}"
        if time.monotonic() >= deadline:
            return "another process"
        time.sleep(0.02)


def lock_output_dir(directory: str | os.PathLike[str]) -> Path:
    """Take ``directory``'s run lock (``.tepa-bench.lock``, holding this process's pid) for the
    rest of the run, or until :func:`release_output_dir`; taking it again in the same process
    is a no-op. :class:`OutputDirLocked` names the pid of a live holder; the lock of a dead
    process is taken over. Then the hidden temporary files a killed run left are removed."""
    directory = Path(directory)
    key = _key(directory)
    with _held_lock:
        held = _held.get(key)
        if held is not None and held[1] == os.getpid():
            return directory / LOCK_NAME
        _held.pop(key, None)  # a forked child does not own its parent's lock
    path = directory / LOCK_NAME
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock (Windows): the pid in the file decides
        fcntl = None  # type: ignore[assignment]
    for _ in range(20):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:
            raise OutputDirError(f"cannot create the lock {path}: {exc.strerror or exc}") from None
        try:
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    raise OutputDirLocked(f"{directory} is in use by another tepa-bench run ({_read_holder(fd)}, "
                                          f"lock {path}); wait for it to end or choose another --out") from None
            else:  # pragma: no cover
                holder = _read_holder(fd)
                pid = int(holder.split()[1]) if holder.startswith("pid ") else None
                if pid is not None and pid != os.getpid() and _pid_alive(pid):
                    raise OutputDirLocked(f"{directory} is in use by another tepa-bench run ({holder}, "
                                          f"lock {path}); wait for it to end or choose another --out")
            try:  # the file may have been removed by the holder that just released it: take a fresh one
                same = os.path.samestat(os.fstat(fd), os.stat(path))
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, f"{os.getpid()}\n".encode())
        except BaseException:
            try:
                os.close(fd)
            except OSError:
                pass
            raise
        with _held_lock:
            _held[key] = (fd, os.getpid())
        remove_stale_temp_files(directory)
        return path
    raise OutputDirLocked(f"{directory}: could not take the lock {path} (it keeps being replaced)")


def release_output_dir(directory: str | os.PathLike[str] | None = None) -> None:
    """Release the run lock of ``directory`` (every lock this process holds when ``None``)
    and remove its lock file."""
    with _held_lock:
        keys = list(_held) if directory is None else [_key(directory)]
        taken = [(k, _held.pop(k)) for k in keys if k in _held]
    for key, (fd, pid) in taken:
        if pid != os.getpid():  # a forked child's copy: the parent releases it
            continue
        try:
            os.unlink(os.path.join(key, LOCK_NAME))  # unlinked while still locked: no one takes a dying file
        except OSError:
            pass
        try:
            os.close(fd)
        except OSError:
            pass


def _file_entry(path: Path) -> dict[str, Any]:
    """sha256 and size of the bytes this process wrote to ``path`` (:func:`written_digest`);
    a file it did not write is hashed as it is on disk."""
    known = written_digest(path)
    if known is not None:
        return {"sha256": known[0], "bytes": known[1]}
    return {"sha256": sha256_file(path), "bytes": path.stat().st_size}


def write_manifest(directory: Path, files: Iterable[str], *, seeds: Sequence[int], methods: Sequence[str],
                   run_id: str | None = None, **extra: Any) -> Path:
    """Write ``directory/manifest.json`` last: run id, seeds, methods, versions and the
    sha256 and size of every file in ``files`` (names relative to ``directory``), from the
    bytes this process wrote to them (:func:`written_digest`), not from what is on disk now."""
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
        "files": {name: _file_entry(directory / name) for name in names},
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
    "LOCK_NAME", "MANIFEST", "ManifestError", "OutputDirError", "OutputDirLocked", "begin_run", "check_manifest",
    "lock_output_dir", "prepare_output_dir", "release_output_dir", "remove_stale_temp_files", "sha256_file",
    "verify_manifest", "written_digest", "write_bytes_atomic", "write_figure_atomic", "write_json_atomic",
    "write_manifest", "write_text_atomic",
]
