"""Low-level, link-proof path handling for :mod:`tepa_envs.file_ops.sandbox`.

Every path argument is untrusted. :func:`split_path` admits only relative paths
of plain names (ASCII letters, digits, ``_``, ``-``, ``.`` and inner spaces; no
leading dot). The other functions take a directory file descriptor (the
sandbox root, or one opened from it) and walk names component by component with
``O_NOFOLLOW``, so a symlink anywhere on a path, even one swapped in between a
check and its use, is never followed. :func:`kind_refusal` names why an entry
(symlink, hard link, FIFO, socket, device) may not be used, and
:func:`atomic_write` writes through a temporary file renamed over its target.
An entry on another device than the sandbox root (below a mount point, or a
bind mount of another filesystem, inside the sandbox) is refused:
:func:`check_device` compares the ``st_dev`` of the entry a tool finally uses,
from the ``stat`` it takes anyway. :func:`empty_tree` deletes a directory
without recursion, without following links and without entering another mount
(:func:`mount_of`: ``statx``'s mount id on Linux, which also tells a bind mount
of the same filesystem apart, else the device), and reports what it could not
remove.
Every refusal is a :class:`SandboxError`. POSIX only (needs ``dir_fd`` support).
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import stat as stat_module
import struct
import sys
import threading
from collections.abc import Iterator
from typing import NamedTuple, Union

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
    # An exact copy: a str subclass cannot lie through len(), split() or ``in``.
    path = str.__str__(check_str("a sandbox path", path))
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


# ------------------------------------------------------------------ mounts
class Mount(NamedTuple):
    """Which mount a file is on: ``statx``'s mount id when the kernel reports it
    (Linux 5.8+; tells bind mounts of the same filesystem apart), and the device."""

    mnt_id: int | None
    dev: int

    def same(self, other: Mount) -> bool:
        if self.mnt_id is not None and other.mnt_id is not None:
            return self.mnt_id == other.mnt_id
        return self.dev == other.dev


def _load_statx():  # pragma: no cover - depends on the platform
    if not sys.platform.startswith("linux"):
        return None
    try:
        statx = ctypes.CDLL(None, use_errno=True).statx
    except (OSError, AttributeError):
        return None
    statx.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.c_char_p]
    statx.restype = ctypes.c_int
    return statx


_STATX = _load_statx()
_AT_EMPTY_PATH, _STATX_MNT_ID = 0x1000, 0x1000
_STATX_FIELDS = struct.Struct("=I132xIIQ")  # stx_mask ... stx_dev_major, stx_dev_minor, stx_mnt_id
_buffers = threading.local()  # the call releases the GIL: one buffer per thread


def mount_of(fd: int) -> Mount:
    """The mount of the file open at ``fd``. OS errors propagate."""
    if _STATX is not None:
        buf = getattr(_buffers, "buf", None)
        if buf is None:
            buf = _buffers.buf = ctypes.create_string_buffer(256)
        if _STATX(fd, b"", _AT_EMPTY_PATH, _STATX_MNT_ID, buf) == 0:
            mask, dev_major, dev_minor, mnt_id = _STATX_FIELDS.unpack_from(buf)
            return Mount(mnt_id if mask & _STATX_MNT_ID else None, os.makedev(dev_major, dev_minor))
        err = ctypes.get_errno()
        if err not in (errno.ENOSYS, errno.EINVAL, errno.EPERM):  # EPERM: a seccomp filter
            raise OSError(err, os.strerror(err))
    return Mount(None, os.fstat(fd).st_dev)


def check_device(path: object, st_dev: int, dev: int | None) -> None:
    """Refuse an entry whose device ``st_dev`` is not the sandbox root's ``dev``: it
    is below a mount point inside the sandbox. Checking the entry a tool finally
    uses suffices (walking down, every entry below a mount point is on that
    mount's device, unless a deeper mount brings the root's back)."""
    if dev is not None and st_dev != dev:
        raise SandboxError(path, "on another device (below a mount point inside the sandbox)")


# ----------------------------------------------------------------- walking
def open_component(path: object, dir_fd: int, name: str, dev: int | None = None) -> int:
    """A new descriptor of directory ``name`` inside ``dir_fd`` (never through a link;
    refused when it is on another device than ``dev``)."""
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError as exc:
        raise SandboxError(path, f"no such directory {name!r}") from exc
    except OSError as exc:
        raise component_refusal(path, dir_fd, name, exc) from exc
    if dev is not None:
        try:
            check_device(path, os.fstat(fd).st_dev, dev)
        except BaseException:
            os.close(fd)
            raise
    return fd


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
                raise component_refusal(path, fd, name, exc) from exc
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


def open_dir(path: object, root_fd: int, parts: tuple[str, ...], dev: int | None = None) -> int:
    """A new descriptor of the directory ``parts`` (``()`` is the root itself),
    refused when it is on another device than ``dev``."""
    if not parts:
        return os.dup(root_fd)
    parent_fd = open_parent(path, root_fd, parts)
    try:
        return open_component(path, parent_fd, parts[-1], dev)
    finally:
        os.close(parent_fd)


# ----------------------------------------------------------------- reading
def open_for_read(path: object, parent_fd: int, name: str) -> int:
    """A read descriptor of entry ``name`` of ``parent_fd``, refused if it is a link."""
    try:
        return os.open(name, _READ_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        raise os_refusal(path, exc) from exc


def read_capped(path: object, fd: int, max_bytes: int, dev: int | None = None) -> bytes:
    """Read the regular file open at ``fd`` (which this closes), refusing any other
    kind, a file on another device than ``dev`` and anything beyond ``max_bytes``,
    even if the file grows while read."""
    try:
        info = os.fstat(fd)
        reason = kind_refusal(info.st_mode, info.st_nlink, allow_dir=False)
        if reason:
            raise SandboxError(path, reason)
        check_device(path, info.st_dev, dev)
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
        except OSError as exc:  # ENOSPC (no inode left), EMFILE, EACCES, ...
            raise os_refusal(path, exc) from exc
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
            raise os_refusal(path, exc) from exc
        raise


def make_component(path: object, dir_fd: int, name: str) -> bool:
    """Create directory ``name`` in ``dir_fd``; ``False`` if an entry already exists."""
    try:
        os.mkdir(name, 0o700, dir_fd=dir_fd)
    except FileExistsError:
        return False
    except OSError as exc:
        raise os_refusal(path, exc) from exc
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


# ---------------------------------------------------------------- removing
class _Level(NamedTuple):
    """A directory :func:`empty_tree` is inside: its name, identity and the entries left to look at."""

    name: str
    ident: tuple[int, int]
    pending: list[str]


def _relative(levels: list[_Level], name: str) -> str:
    return "/".join([level.name for level in levels[1:]] + [name])


def _ident(info: os.stat_result) -> tuple[int, int]:
    return info.st_dev, info.st_ino


def _make_traversable(dir_fd: int, name: str, info: os.stat_result) -> None:
    """Best effort: give the directory entry ``name`` (which we own) ``u+rwx`` so it
    can be listed and emptied, without following a link swapped in for it."""
    mode = stat_module.S_IMODE(info.st_mode) | stat_module.S_IRWXU
    if os.chmod in os.supports_follow_symlinks:  # pragma: no cover - BSD/macOS: lchmod
        os.chmod(name, mode, dir_fd=dir_fd, follow_symlinks=False)
        return
    o_path = getattr(os, "O_PATH", 0)
    if not o_path:  # pragma: no cover - no safe way to chmod by name here
        return
    fd = os.open(name, o_path | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        if _ident(os.fstat(fd)) == _ident(info):  # still the directory we looked at
            os.chmod(f"/proc/self/fd/{fd}", mode)  # the descriptor itself, never a link
    finally:
        os.close(fd)


def empty_tree(root_fd: int, mount: Mount | None = None) -> list[tuple[str, str]]:
    """Remove everything inside the directory open at ``root_fd`` (which stays open).

    Iterative (any depth, two descriptors at a time), never follows a link (entries
    are opened with ``O_NOFOLLOW`` and links unlinked themselves), never enters a
    directory on another mount or device than ``root_fd`` (a mount point or bind
    mount is left in place), and gives directories it owns ``u+rwx`` before
    entering them. Climbing back up uses ``..`` checked against the identity
    recorded on the way down. Returns ``(relative path, reason)`` for every entry
    it could not remove (their ancestors stay too)."""
    left: list[tuple[str, str]] = []
    root_info = os.fstat(root_fd)
    root_mount = mount if mount is not None else mount_of(root_fd)
    euid = os.geteuid() if hasattr(os, "geteuid") else -1
    if root_info.st_uid == euid and stat_module.S_IMODE(root_info.st_mode) & 0o700 != 0o700:
        try:
            os.chmod(root_fd, stat_module.S_IMODE(root_info.st_mode) | 0o700)
        except OSError:
            pass
    try:
        cur = os.dup(root_fd)
    except OSError as exc:
        return [(".", os.strerror(exc.errno or 0))]
    levels = [_Level("", _ident(root_info), [])]
    failed = [0]  # entries left behind per level
    try:
        try:
            levels[0].pending.extend(os.listdir(cur))
        except OSError as exc:
            return [(".", os.strerror(exc.errno or 0))]
        while True:
            level = levels[-1]
            if level.pending:
                name = level.pending.pop()
                try:
                    info = os.stat(name, dir_fd=cur, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    left.append((_relative(levels, name), os.strerror(exc.errno or 0)))
                    failed[-1] += 1
                    continue
                if not stat_module.S_ISDIR(info.st_mode):
                    try:
                        os.unlink(name, dir_fd=cur)
                    except FileNotFoundError:
                        pass
                    except OSError as exc:  # EBUSY: a bind-mounted file
                        left.append((_relative(levels, name), os.strerror(exc.errno or 0)))
                        failed[-1] += 1
                    continue
                child = _enter_for_removal(cur, name, info, root_info.st_dev, root_mount, euid)
                if isinstance(child, str):
                    left.append((_relative(levels, name), child))
                    failed[-1] += 1
                    continue
                try:
                    pending = os.listdir(child)
                except OSError as exc:
                    os.close(child)
                    left.append((_relative(levels, name), os.strerror(exc.errno or 0)))
                    failed[-1] += 1
                    continue
                os.close(cur)
                cur = child
                levels.append(_Level(name, _ident(info), pending))
                failed.append(0)
                continue
            if len(levels) == 1:
                return left
            done, had_failures = levels.pop(), failed.pop()
            parent = _climb(root_fd, cur, levels)
            os.close(cur)
            cur = parent
            if cur < 0:  # the tree was moved under us: stop rather than guess
                left.append((_relative(levels, done.name), "moved during removal"))
                return left
            if had_failures:
                failed[-1] += 1
                continue
            try:
                os.rmdir(done.name, dir_fd=cur)
            except FileNotFoundError:
                pass
            except OSError as exc:
                left.append((_relative(levels, done.name), os.strerror(exc.errno or 0)))
                failed[-1] += 1
    finally:
        if cur >= 0:
            os.close(cur)


def _enter_for_removal(dir_fd: int, name: str, info: os.stat_result, root_dev: int, root_mount: Mount,
                       euid: int) -> int | str:
    """A descriptor of subdirectory ``name`` to empty, or why it is not entered."""
    if info.st_dev != root_dev:
        return "on another device (a mount point): not entered"
    if info.st_uid == euid and stat_module.S_IMODE(info.st_mode) & 0o700 != 0o700:
        try:
            _make_traversable(dir_fd, name, info)
        except OSError:
            pass
    try:
        child = os.open(name, DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        return os.strerror(exc.errno or 0)
    try:
        if _ident(os.fstat(child)) != _ident(info):
            raise SandboxError(name, "replaced while being removed")
        if not mount_of(child).same(root_mount):
            raise SandboxError(name, "on another mount (a bind mount): not entered")
    except (OSError, SandboxError) as exc:
        os.close(child)
        return exc.reason if isinstance(exc, SandboxError) else os.strerror(exc.errno or 0)
    return child


def _climb(root_fd: int, cur: int, levels: list[_Level]) -> int:
    """A descriptor of the directory of ``levels[-1]``: ``..`` of ``cur`` when it is
    the one recorded on the way down, else walked again from the root by name; -1
    if neither is."""
    want = levels[-1].ident
    try:
        fd = os.open("..", DIR_FLAGS, dir_fd=cur)
    except OSError:
        fd = -1
    if fd >= 0:
        try:
            if _ident(os.fstat(fd)) == want:
                return fd
        except OSError:
            pass
        os.close(fd)
    try:
        fd = os.dup(root_fd)
    except OSError:
        return -1
    for level in levels[1:]:
        try:
            next_fd = os.open(level.name, DIR_FLAGS, dir_fd=fd)
        except OSError:
            os.close(fd)
            return -1
        os.close(fd)
        fd = next_fd
        try:
            same = _ident(os.fstat(fd)) == level.ident
        except OSError:
            same = False
        if not same:
            os.close(fd)
            return -1
    return fd


def remove_root(root: str, root_fd: int) -> list[tuple[str, str]]:
    """Empty the directory open at ``root_fd`` with :func:`empty_tree`, close the
    descriptor, and remove the directory entry ``root`` when it still is that
    directory. Returns what was left behind (``"."`` is the directory itself)."""
    try:
        root_info = os.fstat(root_fd)
        left = empty_tree(root_fd)
    except OSError as exc:
        root_info, left = None, [(".", os.strerror(exc.errno or 0))]
    finally:
        os.close(root_fd)
    if left or root_info is None:
        return left
    parent, name = os.path.split(root)
    try:
        parent_fd = os.open(parent or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        return [(".", os.strerror(exc.errno or 0))]
    try:
        info = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
        if _ident(info) != _ident(root_info):
            return [(".", "the directory was replaced; the replacement is left alone")]
        os.rmdir(name, dir_fd=parent_fd)
    except FileNotFoundError:
        pass
    except OSError as exc:
        return [(".", os.strerror(exc.errno or 0))]
    finally:
        os.close(parent_fd)
    return []
