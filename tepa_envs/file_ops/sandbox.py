"""A contained directory with the file tools a language agent calls.

Every path argument is untrusted. Paths are relative, made of plain names
(ASCII letters, digits, ``_``, ``-``, ``.`` and inner spaces; no leading dot),
and every operation walks them component by component from a directory file
descriptor of the sandbox root with ``O_NOFOLLOW``, so a symlink anywhere on a
path, even one swapped in between a check and its use, is never followed.
Symlinks, hard links (``st_nlink > 1``), FIFOs, sockets and device files are
refused; writes go to a temporary file that is renamed over its target, so a
write never goes through a link and a failed write leaves nothing behind.
POSIX only (needs ``dir_fd`` support). The link-proof path walking lives in
:mod:`tepa_envs.file_ops.sandbox_paths`; this module keeps the lifecycle, the quotas and
the tools.
"""

from __future__ import annotations

import itertools
import os
import shutil
import stat as stat_module
import tempfile
import weakref
from dataclasses import dataclass

from tepa_envs.file_ops import sandbox_paths as paths
from tepa_envs.core import check_positive_int
from tepa_envs.error import ResetNeeded
from tepa_envs.file_ops.sandbox_paths import MAX_COMPONENT_CHARS, MAX_DEPTH, MAX_PATH_CHARS, PathArg, SandboxError

__all__ = ["FileInfo", "MAX_COMPONENT_CHARS", "MAX_DEPTH", "MAX_PATH_CHARS", "PathArg", "Sandbox", "SandboxError"]


@dataclass(frozen=True, slots=True)
class FileInfo:
    """What :meth:`Sandbox.stat` reports: ``kind`` is ``"file"`` or ``"dir"``."""

    path: str
    kind: str
    size: int
    mtime_ns: int


def _remove_tree(root: str, root_fd: int, owner_pid: int) -> None:
    """Finalizer: close the root descriptor and delete the directory (never follows
    links). A forked child exiting leaves its parent's directory alone."""
    if os.getpid() != owner_pid:
        return
    try:
        os.close(root_fd)
    except OSError:
        pass
    shutil.rmtree(root, ignore_errors=True)


class Sandbox:
    """One private temporary directory with ``read``/``write``/``list``/``move``/``delete``/``stat``.

    The directory is created by :meth:`reset` and removed by :meth:`close`, when
    the object is garbage-collected, or when the interpreter exits. A closed
    sandbox (before the first :meth:`reset`, or after :meth:`close`) raises
    Gymnasium's ``ResetNeeded`` when used; :class:`SandboxError` is kept for
    paths and operations the sandbox refuses.

    Args:
        max_file_bytes: largest file that may be written or read (default 1 MiB).
        max_total_bytes: bytes all files written through the sandbox may hold (default 64 MiB).
        max_files: files plus directories the sandbox may hold (default 4096).
        parent_dir: where the temporary directory is made (default: the system's).
    """

    def __init__(self, *, max_file_bytes: int = 1 << 20, max_total_bytes: int = 64 << 20,
                 max_files: int = 4096, parent_dir: str | None = None) -> None:
        if not {os.open, os.stat, os.rename, os.unlink, os.mkdir, os.rmdir} <= os.supports_dir_fd:
            raise RuntimeError("Sandbox needs dir_fd support for os.open/stat/rename/unlink (POSIX)")
        self.max_file_bytes = check_positive_int("max_file_bytes", max_file_bytes)
        self.max_total_bytes = check_positive_int("max_total_bytes", max_total_bytes)
        self.max_files = check_positive_int("max_files", max_files)
        if parent_dir is not None and not os.path.isdir(parent_dir):
            raise ValueError(f"parent_dir must be an existing directory, got {parent_dir!r}")
        self.parent_dir = parent_dir
        self._root: str | None = None
        self._root_fd = -1
        self._finalizer: weakref.finalize | None = None
        self._sizes: dict[tuple[str, ...], int] = {}
        self._dirs: set[tuple[str, ...]] = set()
        self._total = 0
        self._tmp_counter = itertools.count()

    # ------------------------------------------------------------ lifecycle
    def reset(self) -> None:
        """Start over in a fresh, empty private directory (the old one is removed)."""
        self.close()
        root = tempfile.mkdtemp(prefix="tepa-sandbox-", dir=self.parent_dir)
        try:
            root_fd = os.open(root, paths.DIR_FLAGS)
        except OSError:
            shutil.rmtree(root, ignore_errors=True)
            raise
        self._root, self._root_fd = root, root_fd
        self._finalizer = weakref.finalize(self, _remove_tree, root, root_fd, os.getpid())
        self._sizes.clear()
        self._dirs.clear()
        self._total = 0

    def close(self) -> None:
        """Remove the directory and everything in it. Safe to call twice."""
        if self._finalizer is not None:
            self._finalizer()
        self._finalizer = None
        self._root, self._root_fd = None, -1
        self._sizes.clear()
        self._dirs.clear()
        self._total = 0

    def __getstate__(self) -> dict[str, object]:
        """A pickled sandbox carries its quotas and the files written through it,
        never its directory or descriptor: an unpickled copy gets its own directory."""
        state = {k: v for k, v in self.__dict__.items()
                 if k not in ("_root", "_root_fd", "_finalizer", "_sizes", "_dirs", "_total", "_tmp_counter")}
        state["_open"] = self._root is not None
        state["_saved_dirs"] = sorted(self._dirs, key=len)
        state["_saved_files"] = {parts: self.read_bytes("/".join(parts)) for parts in self._sizes}
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        saved_dirs = state.pop("_saved_dirs")
        saved_files = state.pop("_saved_files")
        was_open = state.pop("_open")
        self.__dict__.update(state)
        self._root, self._root_fd, self._finalizer = None, -1, None
        self._sizes, self._dirs, self._total = {}, set(), 0
        self._tmp_counter = itertools.count()
        if was_open:
            self.reset()
            for parts in saved_dirs:  # type: ignore[attr-defined]
                self._make_dir(parts)
            for parts, data in saved_files.items():  # type: ignore[attr-defined]
                self.write("/".join(parts), data)

    @property
    def closed(self) -> bool:
        return self._root is None

    @property
    def root(self) -> str:
        """Absolute path of the directory, for inspection only."""
        if self._root is None:
            raise ResetNeeded("the sandbox is closed; call reset() first")
        return self._root

    @property
    def bytes_used(self) -> int:
        return self._total

    @property
    def files_used(self) -> int:
        return len(self._sizes) + len(self._dirs)

    # ---------------------------------------------------------------- tools
    def write(self, path: PathArg, data: str | bytes) -> int:
        """Create or replace a regular file (parents are created); returns bytes written."""
        parts = paths.split_path(path)
        if isinstance(data, str):
            data = data.encode("utf-8")
        elif isinstance(data, (bytearray, memoryview)):
            data = bytes(data)
        elif not isinstance(data, bytes):
            raise TypeError(f"data must be str or bytes, got {type(data).__name__}")
        if len(data) > self.max_file_bytes:
            raise SandboxError(path, f"{len(data)} bytes exceed the per-file quota of {self.max_file_bytes}")
        fd, depth = paths.walk_existing(path, self._require_open(path), parts)
        created: list[tuple[str, ...]] = []
        try:
            if depth == len(parts) - 1:
                info = self._lstat(fd, parts[-1])
                reason = info and paths.kind_refusal(info.st_mode, info.st_nlink, allow_dir=False)
                if reason:
                    raise SandboxError(path, reason)
            old = self._sizes.get(parts)
            new_entries = (len(parts) - 1 - depth) + (old is None)
            if self.files_used + new_entries > self.max_files:
                raise SandboxError(path, f"would exceed the quota of {self.max_files} files")
            total = self._total - (old or 0) + len(data)
            if total > self.max_total_bytes:
                raise SandboxError(path, f"would use {total} bytes, over the total quota of {self.max_total_bytes}")
            for i in range(depth, len(parts) - 1):
                if paths.make_component(path, fd, parts[i]):
                    created.append(parts[: i + 1])
                next_fd = paths.open_component(path, fd, parts[i])
                os.close(fd)
                fd = next_fd
            paths.atomic_write(path, fd, parts[-1], data, self._tmp_counter)
        except BaseException:
            os.close(fd)
            if created:
                paths.remove_dirs(self._require_open(path), created)
            raise
        os.close(fd)
        self._dirs.update(created)
        self._sizes[parts] = len(data)
        self._total = total
        return len(data)

    def read_bytes(self, path: PathArg) -> bytes:
        """The content of a regular file."""
        parts = paths.split_path(path)
        parent_fd = self._open_parent(path, parts)
        try:
            self._check_entry(path, parent_fd, parts[-1], allow_dir=False)
            fd = paths.open_for_read(path, parent_fd, parts[-1])
        finally:
            os.close(parent_fd)
        return paths.read_capped(path, fd, self.max_file_bytes)

    def read(self, path: PathArg) -> str:
        """The content of a regular file as UTF-8 text."""
        data = self.read_bytes(path)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SandboxError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None

    def list(self, path: PathArg = ".") -> list[str]:
        """Sorted names in a directory; directories end with ``/``."""
        parts = paths.split_path(path, allow_root=True)
        fd = paths.open_dir(path, self._require_open(path), parts)
        try:
            with os.scandir(fd) as entries:
                names = [e.name + ("/" if e.is_dir(follow_symlinks=False) else "")
                         for e in entries if not e.name.startswith(paths.TMP_PREFIX)]
        finally:
            os.close(fd)
        return sorted(names)

    def stat(self, path: PathArg) -> FileInfo:
        """Kind, size and modification time of a regular file or directory."""
        parts = paths.split_path(path, allow_root=True)
        if not parts:
            info = os.fstat(self._require_open(path))
            return FileInfo(".", "dir", info.st_size, info.st_mtime_ns)
        parent_fd = self._open_parent(path, parts)
        try:
            info = self._check_entry(path, parent_fd, parts[-1], allow_dir=True)
        finally:
            os.close(parent_fd)
        kind = "dir" if stat_module.S_ISDIR(info.st_mode) else "file"
        return FileInfo("/".join(parts), kind, info.st_size, info.st_mtime_ns)

    def move(self, source: PathArg, destination: PathArg) -> None:
        """Rename a file or directory inside the sandbox; the destination must not exist."""
        src, dst = paths.split_path(source), paths.split_path(destination)
        if dst[: len(src)] == src:
            raise SandboxError(destination, f"cannot move {'/'.join(src)!r} into itself")
        src_fd = self._open_parent(source, src)
        try:
            dst_fd = self._open_parent(destination, dst)
            try:
                self._check_entry(source, src_fd, src[-1], allow_dir=True)
                if self._lstat(dst_fd, dst[-1]) is not None:
                    raise SandboxError(destination, "destination exists")
                try:
                    os.rename(src[-1], dst[-1], src_dir_fd=src_fd, dst_dir_fd=dst_fd)
                except OSError as exc:
                    raise paths.os_refusal(source, exc) from None
            finally:
                os.close(dst_fd)
        finally:
            os.close(src_fd)
        self._rekey(src, dst)

    def delete(self, path: PathArg) -> None:
        """Remove a regular file or an empty directory."""
        parts = paths.split_path(path)
        parent_fd = self._open_parent(path, parts)
        try:
            info = self._check_entry(path, parent_fd, parts[-1], allow_dir=True)
            try:
                if stat_module.S_ISDIR(info.st_mode):
                    os.rmdir(parts[-1], dir_fd=parent_fd)
                else:
                    os.unlink(parts[-1], dir_fd=parent_fd)
            except OSError as exc:
                raise paths.os_refusal(path, exc) from None
        finally:
            os.close(parent_fd)
        self._total -= self._sizes.pop(parts, 0)
        self._dirs.discard(parts)

    # -------------------------------------------------------------- helpers
    def _require_open(self, path: object) -> int:
        if self._root is None:
            raise ResetNeeded("the sandbox is closed; call reset() first")
        return self._root_fd

    def _open_parent(self, path: object, parts: tuple[str, ...]) -> int:
        """A descriptor of the existing directory holding ``parts[-1]``."""
        return paths.open_parent(path, self._require_open(path), parts)

    def _lstat(self, dir_fd: int, name: str) -> os.stat_result | None:
        """The entry itself, or ``None``: the one look every tool takes at its
        target before using it by name (tests swap a link in right after it)."""
        return paths.lstat_entry(dir_fd, name)

    def _check_entry(self, path: object, dir_fd: int, name: str, *, allow_dir: bool) -> os.stat_result:
        return paths.require_entry(path, self._lstat(dir_fd, name), allow_dir=allow_dir)

    def _make_dir(self, parts: tuple[str, ...]) -> None:
        paths.make_dir(self._require_open(parts), parts)
        self._dirs.add(parts)

    def _rekey(self, src: tuple[str, ...], dst: tuple[str, ...]) -> None:
        n = len(src)
        self._sizes = {(dst + k[n:] if k[:n] == src else k): v for k, v in self._sizes.items()}
        self._dirs = {dst + k[n:] if k[:n] == src else k for k in self._dirs}

    def __repr__(self) -> str:
        state = "closed" if self._root is None else f"{self.files_used} entries, {self.bytes_used} bytes"
        return f"Sandbox({state})"
