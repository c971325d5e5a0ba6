"""Low-level, link-proof path handling for :mod:`tepa_envs.file_ops.sandbox`.

Every path argument is untrusted. :func:`split_path` admits only relative paths
of plain names (ASCII letters, digits, ``_``, ``-``, ``.`` and inner spaces; no
leading dot). The other functions take a directory file descriptor (the
sandbox root, or one opened from it) and walk names component by component with
``O_NOFOLLOW``, so a symlink anywhere on a path, even one swapped in between a
check and its use, is never followed. :func:`kind_refusal` names why an entry
(symlink, hard link, FIFO, socket, device) may not be used, and
:func:`atomic_write` writes through a temporary file renamed over its target.
Every refusal is a :class:`SandboxError`. POSIX only (needs ``dir_fd`` support).
"""

from __future__ import annotations

import errno
import os
import re
import stat as stat_module
from collections.abc import Iterator
from typing import Union

from tepa_envs.core.checks import check_str
from tepa_envs.error import SandboxError

PathArg = Union[str, "os.PathLike[str]"]

_NAME = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9._ -]*[A-Za-z0-9._-])?")
TMP_PREFIX = ".tmp-"
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_TMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
MAX_COMPONENT_CHARS = 255
MAX_PATH_CHARS = 1024
MAX_DEPTH = 32


# ---------------------------------------------------------------- checking
def split_path(path: object, *, allow_root: bool = False) -> tuple[str, ...]:
    """The validated components of ``path``; ``()`` for ``"."`` when ``allow_root``."""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    path = check_str("a sandbox path", path)
    if "\x00" in path:
        raise SandboxError(path, "contains a NUL byte")
    if path == "." and allow_root:
        return ()
    if not path:
        raise SandboxError(path, "empty path")
    if len(path) > MAX_PATH_CHARS:
        raise SandboxError(path, f"longer than {MAX_PATH_CHARS} characters")
    if path.startswith("/"):
        raise SandboxError(path, "absolute paths are not allowed")
    if "\\" in path:
        raise SandboxError(path, "backslashes are not allowed")
    parts = tuple(path.split("/"))
    if len(parts) > MAX_DEPTH:
        raise SandboxError(path, f"deeper than {MAX_DEPTH} levels")
    for part in parts:
        if part == "..":
            raise SandboxError(path, "'..' would leave the sandbox")
        if part == ".":
            raise SandboxError(path, "'.' components are not allowed")
        if not part:
            raise SandboxError(path, "empty path component")
        if len(part) > MAX_COMPONENT_CHARS:
            raise SandboxError(path, f"a component is longer than {MAX_COMPONENT_CHARS} characters")
        if not _NAME.fullmatch(part):
            raise SandboxError(path, f"component {part!r} is not a plain name "
                                     "(letters, digits, '_', '-', '.', inner spaces; no leading dot)")
    return parts


def lstat_entry(dir_fd: int, name: str) -> os.stat_result | None:
    """The entry ``name`` of ``dir_fd`` itself (links not followed), or ``None`` if absent."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def kind_refusal(mode: int, nlink: int, *, allow_dir: bool) -> str | None:
    """Why an entry of this mode may not be used, or ``None`` when it may."""
    if stat_module.S_ISLNK(mode):
        return "symbolic links are not followed"
    if stat_module.S_ISDIR(mode):
        return None if allow_dir else "is a directory"
    if stat_module.S_ISFIFO(mode):
        return "FIFOs are not allowed"
    if stat_module.S_ISSOCK(mode):
        return "sockets are not allowed"
    if stat_module.S_ISCHR(mode) or stat_module.S_ISBLK(mode):
        return "device files are not allowed"
    if not stat_module.S_ISREG(mode):
        return "not a regular file"
    if nlink != 1:
        return f"hard-linked files are not allowed ({nlink} links)"
    return None


def require_entry(path: object, info: os.stat_result | None, *, allow_dir: bool) -> os.stat_result:
    """``info`` when it names a usable entry; otherwise the refusal for ``path``."""
    if info is None:
        raise SandboxError(path, "no such file or directory")
    reason = kind_refusal(info.st_mode, info.st_nlink, allow_dir=allow_dir)
    if reason:
        raise SandboxError(path, reason)
    return info


def os_refusal(path: object, exc: OSError) -> SandboxError:
    """The :class:`SandboxError` that explains an OS error met on ``path``."""
    if exc.errno == errno.ELOOP:
        return SandboxError(path, "symbolic links are not followed")
    if exc.errno == errno.ENOTDIR:
        return SandboxError(path, "a path component is not a directory (or is a link)")
    return SandboxError(path, os.strerror(exc.errno or 0) or str(exc))


# ----------------------------------------------------------------- walking
def open_component(path: object, dir_fd: int, name: str) -> int:
    """A new descriptor of directory ``name`` inside ``dir_fd`` (never through a link)."""
    try:
        return os.open(name, DIR_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        raise SandboxError(path, f"no such directory {name!r}") from None
    except OSError as exc:
        raise component_refusal(path, dir_fd, name, exc) from None


def component_refusal(path: object, dir_fd: int, name: str, exc: OSError) -> SandboxError:
    """Name why directory component ``name`` could not be entered."""
    info = lstat_entry(dir_fd, name) if exc.errno in (errno.ENOTDIR, errno.ELOOP) else None
    if info is not None:
        reason = kind_refusal(info.st_mode, info.st_nlink, allow_dir=True)
        return SandboxError(path, f"{name!r}: {reason or 'not a directory'}")
    return os_refusal(path, exc)


def walk_existing(path: object, root_fd: int, parts: tuple[str, ...]) -> tuple[int, int]:
    """Open the directories of ``parts[:-1]`` one by one without following links.
    Returns a new descriptor of the deepest existing one and how many were opened."""
    fd, owned = root_fd, False
    depth = 0
    try:
        for depth, name in enumerate(parts[:-1]):
            try:
                next_fd = os.open(name, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                break
            except OSError as exc:
                raise component_refusal(path, fd, name, exc) from None
            if owned:
                os.close(fd)
            fd, owned = next_fd, True
        else:
            depth = len(parts) - 1
    except BaseException:
        if owned:
            os.close(fd)
        raise
    return (fd if owned else os.dup(fd)), depth


def open_parent(path: object, root_fd: int, parts: tuple[str, ...]) -> int:
    """A descriptor of the existing directory holding ``parts[-1]``."""
    fd, depth = walk_existing(path, root_fd, parts)
    if depth < len(parts) - 1:
        os.close(fd)
        raise SandboxError(path, f"no such directory {parts[depth]!r}")
    return fd


def open_dir(path: object, root_fd: int, parts: tuple[str, ...]) -> int:
    """A new descriptor of the directory ``parts`` (``()`` is the root itself)."""
    if not parts:
        return os.dup(root_fd)
    parent_fd = open_parent(path, root_fd, parts)
    try:
        return open_component(path, parent_fd, parts[-1])
    finally:
        os.close(parent_fd)


# ----------------------------------------------------------------- reading
def open_for_read(path: object, parent_fd: int, name: str) -> int:
    """A read descriptor of entry ``name`` of ``parent_fd``, refused if it is a link."""
    try:
        return os.open(name, _READ_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        raise os_refusal(path, exc) from None


def read_capped(path: object, fd: int, max_bytes: int) -> bytes:
    """Read the regular file open at ``fd`` (which this closes), refusing any other
    kind and anything beyond ``max_bytes``, even if the file grows while read."""
    try:
        info = os.fstat(fd)
        reason = kind_refusal(info.st_mode, info.st_nlink, allow_dir=False)
        if reason:
            raise SandboxError(path, reason)
        if info.st_size > max_bytes:
            raise SandboxError(path, f"{info.st_size} bytes exceed the per-file quota of {max_bytes}")
        data = os.read(fd, info.st_size + 1)
        while len(data) > info.st_size and len(data) <= max_bytes:
            chunk = os.read(fd, max_bytes + 1 - len(data))
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise SandboxError(path, f"file grew beyond the per-file quota of {max_bytes}")
    return data


# ----------------------------------------------------------------- writing
def atomic_write(path: object, parent_fd: int, name: str, data: bytes, tmp_ids: Iterator[int]) -> None:
    """Write ``data`` to a fresh temporary file (named from ``tmp_ids``) in
    ``parent_fd`` and rename it over ``name``; on failure nothing is left behind."""
    while True:
        tmp = f"{TMP_PREFIX}{os.getpid()}-{next(tmp_ids)}"
        try:
            fd = os.open(tmp, _TMP_FLAGS, 0o600, dir_fd=parent_fd)
            break
        except FileExistsError:
            continue
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        # rename() replaces the directory entry itself: a link swapped in at
        # ``name`` is replaced, never written through.
        os.rename(tmp, name, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
    except BaseException as exc:
        try:
            os.unlink(tmp, dir_fd=parent_fd)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise os_refusal(path, exc) from None
        raise


def make_component(path: object, dir_fd: int, name: str) -> bool:
    """Create directory ``name`` in ``dir_fd``; ``False`` if an entry already exists."""
    try:
        os.mkdir(name, 0o700, dir_fd=dir_fd)
    except FileExistsError:
        return False
    except OSError as exc:
        raise os_refusal(path, exc) from None
    return True


def make_dir(root_fd: int, parts: tuple[str, ...]) -> None:
    """Create the directory ``parts`` whose parent exists (OS errors propagate)."""
    parent_fd = open_parent(parts, root_fd, parts)
    try:
        os.mkdir(parts[-1], 0o700, dir_fd=parent_fd)
    finally:
        os.close(parent_fd)


def remove_dirs(root_fd: int, created: list[tuple[str, ...]]) -> None:
    """Best effort: remove the (empty) directories ``created``, newest first."""
    for parts in reversed(created):
        try:
            parent_fd = open_parent(parts, root_fd, parts)
        except (SandboxError, OSError):
            continue
        try:
            os.rmdir(parts[-1], dir_fd=parent_fd)
        except OSError:
            pass
        finally:
            os.close(parent_fd)
