"""A contained directory with the file tools a language agent calls.

Every path argument is untrusted. Paths are relative, made of plain names
(ASCII letters, digits, ``_``, ``-``, ``.`` and inner spaces; no leading dot),
and every operation walks them component by component from a directory file
descriptor of the sandbox root with ``O_NOFOLLOW``, so a symlink anywhere on a
path, even one swapped in between a check and its use, is never followed.
Symlinks, hard links (``st_nlink > 1``), FIFOs, sockets, device files and
anything on another device than the sandbox root (below a mount point inside
the sandbox, e.g. a bind mount of another filesystem) are refused; writes go
to a temporary file that is renamed over its target, so a write never goes
through a link and a failed write leaves nothing behind.
POSIX only (needs ``dir_fd`` support). The link-proof path walking lives in
:mod:`tepa_envs.file_ops.sandbox_paths`; this module keeps the lifecycle, the quotas and
the tools.

Guarantees:

* **Failures.** Every failure of a tool is a :class:`SandboxError` (a
  ``ValueError``), with the OS error chained as its cause (``ENOSPC``,
  ``EMFILE``, ``EACCES``, text that is not UTF-8-encodable, ...), and the
  sandbox is left as it was: files, directories and quota accounting. Only a
  bad argument type is a ``TypeError``, and a closed sandbox raises ``ResetNeeded``.
* **Quotas** are counted on the exact bytes written (content is converted to
  exact ``bytes`` with the base classes' methods, so a ``bytes``/``str``
  subclass cannot lie about its length) and hold under threads: every tool
  runs under a per-sandbox lock.
* **Limits.** No tool reaches a state deeper than ``MAX_DEPTH`` levels or with a
  path longer than ``MAX_PATH_CHARS``, so every reachable state pickles.
* **Removal** (:meth:`Sandbox.close`) is iterative, never follows a link, never
  enters another mount (by device and, on Linux 5.8+, by ``statx`` mount id, so
  a bind mount of the same filesystem is left alone too), gives directories it
  owns ``u+rwx`` first, and raises a :class:`SandboxError` naming whatever it
  could not remove (the sandbox is closed all the same). The tools themselves
  compare devices only: through a bind mount of the *same* filesystem they
  still read and write (a per-call mount-id check cost about 8% of a FileOps step).
* **Orphans.** A sandbox directory is named ``tepa-sandbox-<pid>-<start>-<ns>-<random>``
  after its owner (pid, start time from ``/proc/<pid>/stat``, pid namespace).
  Creating a sandbox removes the sandboxes in the same parent directory whose
  owner is dead (killed with ``SIGKILL``, say); :func:`reclaim_orphans` and
  ``tepa-bench clean`` do it on demand.
* **SIGTERM**, by opting in. Creating a sandbox installs no signal handler: a
  process-wide disposition is the program's choice, not an environment's. A
  program that may be sent ``SIGTERM`` while it holds sandboxes calls
  :func:`install_sigterm_cleanup` once, from its main thread (``tepa-bench``
  does, for the length of a command); the handler removes the process's
  sandboxes, restores ``SIG_DFL`` and re-raises the signal, so the process still
  dies of ``SIGTERM`` as before, and nothing else changes. (Raising
  ``SystemExit`` instead would not clean up a forked ``multiprocessing`` worker,
  which leaves by ``os._exit`` without ``atexit``.) It is installed only when
  ``SIGTERM`` has no handler; one installed by the program is left alone. Without
  it, the sandboxes of a process that dies of ``SIGTERM`` are left as a
  ``SIGKILL`` leaves them (see **Orphans**).
"""

from __future__ import annotations

import builtins
import itertools
import os
import re
import signal
import stat as stat_module
import tempfile
import threading
import warnings
import weakref
from dataclasses import dataclass

from tepa_envs.file_ops import sandbox_paths as paths
from tepa_envs.core import check_positive_int
from tepa_envs.error import ResetNeeded
from tepa_envs.file_ops.sandbox_paths import MAX_COMPONENT_CHARS, MAX_DEPTH, MAX_PATH_CHARS, PathArg, SandboxError

__all__ = ["FileInfo", "default_sandbox_parent", "MAX_COMPONENT_CHARS", "MAX_DEPTH", "MAX_PATH_CHARS", "Orphan", "PathArg", "Sandbox",
           "SandboxError", "default_sandbox_dirs", "install_sigterm_cleanup", "reclaim_orphans",
           "remove_sigterm_cleanup"]

PREFIX = "tepa-sandbox-"
_OWNED_NAME = re.compile(re.escape(PREFIX) + r"(\d+)-(\d+)-(\d+)-[A-Za-z0-9_]+")


@dataclass(frozen=True, slots=True)
class FileInfo:
    """What :meth:`Sandbox.stat` reports: ``kind`` is ``"file"`` or ``"dir"``."""

    path: str
    kind: str
    size: int
    mtime_ns: int


# ------------------------------------------------------------------ owners
def _proc_stat(pid: int) -> tuple[str, int] | None:
    """``(state, start time in clock ticks since boot)`` of ``pid`` from
    ``/proc/<pid>/stat``, or ``None`` when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read()
    except OSError:
        return None
    fields = text.rpartition(b")")[2].split()  # the command name may hold spaces and ')'
    try:
        return fields[0].decode("ascii", "replace"), int(fields[19])
    except (IndexError, ValueError):
        return None


def _pid_namespace() -> int:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


_owner_cache: dict[int, tuple[int, int, int]] = {}


def _owner_tag() -> tuple[int, int, int]:
    """``(pid, start time, pid namespace)`` of this process (0 where unknown)."""
    pid = os.getpid()
    tag = _owner_cache.get(pid)
    if tag is None:
        info = _proc_stat(pid)
        tag = (pid, info[1] if info else 0, _pid_namespace())
        _owner_cache.clear()  # a forked child forgets its parent's tag
        _owner_cache[pid] = tag
    return tag


def owner_alive(pid: int, start: int, namespace: int) -> bool | None:
    """Whether the process that made a sandbox still runs: ``False`` when it is gone
    (no such pid, a zombie, or the pid now belongs to a process started at another
    time), ``None`` when it cannot be told (another pid namespace)."""
    own_pid, own_start, own_namespace = _owner_tag()
    if namespace != own_namespace:
        return None
    if pid == own_pid:
        return start == own_start
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    except (OSError, OverflowError):
        return None
    info = _proc_stat(pid)
    if info is None:  # no /proc, or it exited just now: keep it this time
        return None
    state, started = info
    if state in ("Z", "X"):
        return False
    return not (start and started != start)


# --------------------------------------------------------------- lifecycle
_LIVE: dict[str, weakref.finalize] = {}  # this process's open sandboxes, for the SIGTERM handler


def _remove_tree(root: str, root_fd: int, owner_pid: int) -> None:
    """Finalizer (garbage collection, interpreter exit, SIGTERM): remove the
    directory (see :func:`sandbox_paths.remove_root`). A forked child exiting
    leaves its parent's directory alone."""
    if os.getpid() != owner_pid:
        return
    _LIVE.pop(root, None)
    left = paths.remove_root(root, root_fd)
    if left:
        try:
            warnings.warn(_leftover_message(root, left), RuntimeWarning, stacklevel=2)
        except Exception:  # pragma: no cover - at interpreter shutdown
            pass


def _leftover_message(root: str, left: list[tuple[str, str]]) -> str:
    shown = "; ".join(f"{rel} ({reason})" for rel, reason in left[:10])
    more = f"; and {len(left) - 10} more" if len(left) > 10 else ""
    return f"could not remove {len(left)} entries of {root}, left in place: {shown}{more}"


def _on_sigterm(signum: int, frame: object) -> None:
    """Remove this process's sandboxes, then die of SIGTERM as if no handler were installed."""
    for finalizer in list(_LIVE.values()):
        try:
            finalizer()
        except Exception:  # pragma: no cover - one failure must not keep the others
            pass
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def install_sigterm_cleanup() -> bool:
    """Opt in: on ``SIGTERM``, remove this process's sandboxes, then die of ``SIGTERM`` as
    if no handler were installed (see the module's guarantees).

    Installs the handler only when ``SIGTERM`` has none (its disposition is ``SIG_DFL``):
    a handler the program installed is left alone. Returns whether this call installed
    it (``False`` when it was installed already or another handler is). Python allows
    signal handlers in the main thread only: ``ValueError`` in any other thread.
    :func:`remove_sigterm_cleanup` undoes it."""
    if threading.current_thread() is not threading.main_thread():
        raise ValueError("install_sigterm_cleanup must be called from the main thread "
                         "(Python installs signal handlers there only)")
    if signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:  # ours already, or the program's own
        return False
    signal.signal(signal.SIGTERM, _on_sigterm)
    return True


def remove_sigterm_cleanup() -> None:
    """Restore ``SIG_DFL`` when the handler of :func:`install_sigterm_cleanup` is installed
    (any other handler is left alone); main thread only, as installing it."""
    if threading.current_thread() is not threading.main_thread():
        raise ValueError("remove_sigterm_cleanup must be called from the main thread")
    if signal.getsignal(signal.SIGTERM) is _on_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def default_sandbox_parent() -> str | None:
    """Where sandboxes go by default: the RAM-backed ``/dev/shm`` when it is usable
    and ``TMPDIR`` is not set, else the system's temporary directory (``None``)."""
    shm = "/dev/shm"
    if "TMPDIR" not in os.environ and os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK):
        return shm
    return None


def default_sandbox_dirs() -> list[str]:
    """The directories sandboxes are made in by default (what ``tepa-bench clean`` scans):
    FileOps' default (``/dev/shm`` when usable) and the system's temporary directory."""
    dirs = [default_sandbox_parent() or tempfile.gettempdir(), tempfile.gettempdir()]
    return list(dict.fromkeys(dirs))


@dataclass(frozen=True, slots=True)
class Orphan:
    """A sandbox directory whose owner process is gone, as :func:`reclaim_orphans` found
    it: ``left`` lists ``(relative path, reason)`` of what could not be removed."""

    path: str
    pid: int
    left: tuple[tuple[str, str], ...]

    @property
    def removed(self) -> bool:
        return not self.left


def reclaim_orphans(parent_dir: str | None = None) -> list[Orphan]:
    """Remove the sandboxes in ``parent_dir`` (default: the system's temporary
    directory) whose owner process is dead. Only directories this user owns,
    named by this module (``tepa-sandbox-<pid>-<start>-<ns>-...``), in this pid
    namespace are considered; a live owner's, or one that cannot be told, is kept.
    Each is first renamed to a name owned by this process, so two processes never
    remove the same one, and one left half-removed is retried once this process is
    gone."""
    parent = parent_dir or tempfile.gettempdir()
    try:
        parent_fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return []
    found: list[Orphan] = []
    try:
        with os.scandir(parent_fd) as entries:
            names = [e.name for e in entries if e.name.startswith(PREFIX)]
        euid = os.geteuid() if hasattr(os, "geteuid") else None
        for name in names:
            match = _OWNED_NAME.fullmatch(name)
            if match is None or not _ours(parent_fd, name, euid):
                continue
            pid, start, namespace = (int(g) for g in match.groups())
            if owner_alive(pid, start, namespace) is not False:
                continue
            orphan = _reclaim_one(parent, parent_fd, name, pid)
            if orphan is not None:
                found.append(orphan)
    finally:
        os.close(parent_fd)
    return found


def _ours(parent_fd: int, name: str, euid: int | None) -> bool:
    """Whether ``name`` is a directory (not a link) this user owns."""
    try:
        info = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    except OSError:
        return False
    return stat_module.S_ISDIR(info.st_mode) and (euid is None or info.st_uid == euid)


def _reclaim_one(parent: str, parent_fd: int, name: str, pid: int) -> Orphan | None:
    claimed = f"{PREFIX}{'-'.join(map(str, _owner_tag()))}-reclaim{os.urandom(4).hex()}"
    try:
        os.rename(name, claimed, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
    except OSError:  # another process claimed it first
        return None
    try:
        fd = os.open(claimed, paths.DIR_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        return Orphan(os.path.join(parent, name), pid, ((".", os.strerror(exc.errno or 0)),))
    left = paths.remove_root(os.path.join(parent, claimed), fd)
    return Orphan(os.path.join(parent, name), pid, tuple(left))


# ----------------------------------------------------------------- sandbox
class Sandbox:
    """One private temporary directory with ``read``/``write``/``list``/``move``/``delete``/``stat``.

    The directory is created by :meth:`reset` and removed by :meth:`close`, when
    the object is garbage-collected, when the interpreter exits, or on SIGTERM
    when the program opted in (:func:`install_sigterm_cleanup`; see the module's guarantees). A closed sandbox (before the first
    :meth:`reset`, or after :meth:`close`) raises Gymnasium's ``ResetNeeded``
    when used; :class:`SandboxError` is kept for paths and operations the
    sandbox refuses and for every failure of an operation. The tools are
    thread-safe (one lock per sandbox).

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
        self._lock = threading.RLock()
        self._root: str | None = None
        self._root_fd = -1
        self._dev: int | None = None  # the root's device: entries on another one are refused
        self._finalizer: weakref.finalize | None = None
        self._sizes: dict[tuple[str, ...], int] = {}
        self._dirs: set[tuple[str, ...]] = set()
        self._total = 0
        self._tmp_counter = itertools.count()

    # ------------------------------------------------------------ lifecycle
    def reset(self) -> None:
        """Start over in a fresh, empty private directory (the old one is removed).

        First removes the orphaned sandboxes of dead processes in the same parent
        directory. What the old directory or an orphan left behind is reported as
        a ``RuntimeWarning``; failing to make the new directory is a :class:`SandboxError`."""
        with self._lock:
            try:
                self.close()
            except SandboxError as exc:
                warnings.warn(str(exc), RuntimeWarning, stacklevel=2)
            parent = self.parent_dir or tempfile.gettempdir()
            try:
                orphans = reclaim_orphans(parent)
            except (OSError, ValueError):  # best effort: never keeps a sandbox from being made
                orphans = []
            for orphan in orphans:
                if orphan.left:
                    warnings.warn(_leftover_message(orphan.path, list(orphan.left)), RuntimeWarning, stacklevel=2)
            prefix = f"{PREFIX}{'-'.join(map(str, _owner_tag()))}-"
            try:
                root = tempfile.mkdtemp(prefix=prefix, dir=parent)
            except OSError as exc:
                raise SandboxError(parent, f"cannot create the sandbox directory: {os.strerror(exc.errno or 0)}") \
                    from exc
            root_fd = -1
            try:
                root_fd = os.open(root, paths.DIR_FLAGS)
                dev = os.fstat(root_fd).st_dev
            except OSError as exc:
                if root_fd >= 0:
                    os.close(root_fd)
                try:
                    os.rmdir(root)
                except OSError:
                    pass
                raise SandboxError(root, f"cannot open the sandbox directory: {os.strerror(exc.errno or 0)}") \
                    from exc
            self._root, self._root_fd, self._dev = root, root_fd, dev
            self._finalizer = weakref.finalize(self, _remove_tree, root, root_fd, os.getpid())
            _LIVE[root] = self._finalizer
            self._sizes.clear()
            self._dirs.clear()
            self._total = 0

    def close(self) -> None:
        """Remove the directory and everything in it. Safe to call twice.

        The sandbox is closed afterwards in any case; if anything could not be
        removed (a mount point inside it, a directory of another user, ...) a
        :class:`SandboxError` lists it (``left`` holds ``(relative path, reason)``)."""
        with self._lock:
            finalizer, root, root_fd = self._finalizer, self._root, self._root_fd
            self._finalizer = None
            self._root, self._root_fd, self._dev = None, -1, None
            self._sizes.clear()
            self._dirs.clear()
            self._total = 0
            if finalizer is None or root is None:
                return
            details = finalizer.detach()
            _LIVE.pop(root, None)
            if details is None:  # already run (e.g. by the SIGTERM handler)
                return
            owner_pid = details[2][2]
            if os.getpid() != owner_pid:  # a forked child: the parent's directory stays
                os.close(root_fd)
                return
            left = paths.remove_root(root, root_fd)
        if left:
            error = SandboxError(root, _leftover_message(root, left))
            error.left = left  # type: ignore[attr-defined]
            raise error

    def __getstate__(self) -> dict[str, object]:
        """A pickled sandbox carries its quotas and the files written through it,
        never its directory or descriptor: an unpickled copy gets its own directory."""
        with self._lock:
            state = {k: v for k, v in self.__dict__.items()
                     if k not in ("_root", "_root_fd", "_dev", "_finalizer", "_sizes", "_dirs", "_total",
                                  "_tmp_counter", "_lock")}
            state["_open"] = self._root is not None
            state["_saved_dirs"] = sorted(self._dirs, key=len)
            state["_saved_files"] = {parts: self.read_bytes("/".join(parts)) for parts in self._sizes}
            return state

    def __setstate__(self, state: dict[str, object]) -> None:
        saved_dirs = state.pop("_saved_dirs")
        saved_files = state.pop("_saved_files")
        was_open = state.pop("_open")
        self.__dict__.update(state)
        self._lock = threading.RLock()
        self._root, self._root_fd, self._dev, self._finalizer = None, -1, None, None
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
        root = self._root
        if root is None:
            raise ResetNeeded("the sandbox is closed; call reset() first")
        return root

    @property
    def bytes_used(self) -> int:
        return self._total

    @property
    def files_used(self) -> int:
        with self._lock:
            return len(self._sizes) + len(self._dirs)

    # ---------------------------------------------------------------- tools
    def write(self, path: PathArg, data: str | bytes) -> int:
        """Create or replace a regular file (parents are created); returns bytes written."""
        with self._lock:
            try:
                return self._write(path, data)
            except OSError as exc:
                raise paths.os_refusal(path, exc) from exc

    def read_bytes(self, path: PathArg) -> bytes:
        """The content of a regular file."""
        with self._lock:
            try:
                return self._read_bytes(path)
            except OSError as exc:
                raise paths.os_refusal(path, exc) from exc

    def read(self, path: PathArg) -> str:
        """The content of a regular file as UTF-8 text."""
        data = self.read_bytes(path)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SandboxError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc

    def list(self, path: PathArg = ".") -> list[str]:
        """Sorted names in a directory; directories end with ``/``."""
        with self._lock:
            try:
                return self._list(path)
            except OSError as exc:
                raise paths.os_refusal(path, exc) from exc

    def stat(self, path: PathArg) -> FileInfo:
        """Kind, size and modification time of a regular file or directory."""
        with self._lock:
            try:
                return self._stat(path)
            except OSError as exc:
                raise paths.os_refusal(path, exc) from exc

    def move(self, source: PathArg, destination: PathArg) -> None:
        """Rename a file or directory inside the sandbox; the destination must not
        exist, and nothing moved may end up deeper than ``MAX_DEPTH`` levels or
        with a path longer than ``MAX_PATH_CHARS``."""
        with self._lock:
            try:
                self._move(source, destination)
            except OSError as exc:
                raise paths.os_refusal(source, exc) from exc

    def delete(self, path: PathArg) -> None:
        """Remove a regular file or an empty directory."""
        with self._lock:
            try:
                self._delete(path)
            except OSError as exc:
                raise paths.os_refusal(path, exc) from exc

    # ----------------------------------------------------- tool internals
    # Each runs under the lock, changes the accounting only after the OS did its
    # part, and leaves an OSError to its tool to turn into a SandboxError.
    def _write(self, path: PathArg, data: str | bytes) -> int:
        parts = paths.split_path(path)
        if type(data) is bytes:
            pass
        elif isinstance(data, str):
            try:  # the base class's method: a str subclass cannot lie about its content
                data = str.encode(data, "utf-8")
            except UnicodeEncodeError as exc:
                raise SandboxError(path, f"text is not encodable as UTF-8 ({exc.reason} at index {exc.start})") \
                    from exc
        elif isinstance(data, (bytes, bytearray, memoryview)):
            data = bytes(memoryview(data))  # exact bytes: len() is the real size
        else:
            raise TypeError(f"data must be str or bytes, got {type(data).__name__}")
        if len(data) > self.max_file_bytes:
            raise SandboxError(path, f"{len(data)} bytes exceed the per-file quota of {self.max_file_bytes}")
        fd, depth = paths.walk_existing(path, self._require_open(path), parts)
        created: list[tuple[str, ...]] = []
        try:
            info = self._lstat(fd, parts[-1]) if depth == len(parts) - 1 else None
            if info is not None:
                reason = paths.kind_refusal(info.st_mode, info.st_nlink, allow_dir=False)
                if reason:
                    raise SandboxError(path, reason)
            # The file replaced, or else the deepest existing directory, is on the root's device.
            paths.check_device(path, (info or os.fstat(fd)).st_dev, self._dev)
            old = self._sizes.get(parts)
            new_entries = (len(parts) - 1 - depth) + (old is None)
            if len(self._sizes) + len(self._dirs) + new_entries > self.max_files:
                raise SandboxError(path, f"would exceed the quota of {self.max_files} files")
            total = self._total - (old or 0) + len(data)
            if total > self.max_total_bytes:
                raise SandboxError(path, f"would use {total} bytes, over the total quota of {self.max_total_bytes}")
            for i in range(depth, len(parts) - 1):
                if paths.make_component(path, fd, parts[i]):
                    created.append(parts[: i + 1])
                next_fd = paths.open_component(path, fd, parts[i], self._dev)
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

    # Devices: each tool checks the entry it finally uses (see paths.check_device),
    # from the stat it takes anyway.
    def _read_bytes(self, path: PathArg) -> bytes:
        parts = paths.split_path(path)
        parent_fd = self._open_parent(path, parts)
        try:
            self._check_entry(path, parent_fd, parts[-1], allow_dir=False)
            fd = paths.open_for_read(path, parent_fd, parts[-1])
        finally:
            os.close(parent_fd)
        return paths.read_capped(path, fd, self.max_file_bytes, self._dev)

    def _list(self, path: PathArg) -> builtins.list[str]:  # list: the method Sandbox.list here
        parts = paths.split_path(path, allow_root=True)
        fd = paths.open_dir(path, self._require_open(path), parts, self._dev)
        try:
            with os.scandir(fd) as entries:
                names = [e.name + ("/" if e.is_dir(follow_symlinks=False) else "")
                         for e in entries if not e.name.startswith(paths.TMP_PREFIX)]
        finally:
            os.close(fd)
        return sorted(names)

    def _stat(self, path: PathArg) -> FileInfo:
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

    def _move(self, source: PathArg, destination: PathArg) -> None:
        src, dst = paths.split_path(source), paths.split_path(destination)
        if dst[: len(src)] == src:
            raise SandboxError(destination, f"cannot move {'/'.join(src)!r} into itself")
        self._check_moved_limits(destination, src, dst)
        src_fd = self._open_parent(source, src)
        try:
            dst_fd = self._open_parent(destination, dst)
            try:
                self._check_entry(source, src_fd, src[-1], allow_dir=True)  # its device too
                if self._lstat(dst_fd, dst[-1]) is not None:
                    raise SandboxError(destination, "destination exists")
                try:
                    os.rename(src[-1], dst[-1], src_dir_fd=src_fd, dst_dir_fd=dst_fd)
                except OSError as exc:
                    raise paths.os_refusal(source, exc) from exc
            finally:
                os.close(dst_fd)
        finally:
            os.close(src_fd)
        self._rekey(src, dst)

    def _delete(self, path: PathArg) -> None:
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
                raise paths.os_refusal(path, exc) from exc
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
        """The entry's ``lstat`` when a tool may use it: a regular file (or a
        directory, with ``allow_dir``) on the root's device."""
        info = paths.require_entry(path, self._lstat(dir_fd, name), allow_dir=allow_dir)
        paths.check_device(path, info.st_dev, self._dev)
        return info

    def _make_dir(self, parts: tuple[str, ...]) -> None:
        with self._lock:
            paths.make_dir(self._require_open(parts), parts)
            self._dirs.add(parts)

    def _check_moved_limits(self, destination: object, src: tuple[str, ...], dst: tuple[str, ...]) -> None:
        """Refuse a move that would put a tracked entry beyond the path limits (the
        limits every path argument obeys, so every reachable state pickles)."""
        n, grow = len(src), len(dst) - len(src)
        chars = len("/".join(dst)) - len("/".join(src))
        if grow <= 0 and chars <= 0:
            return
        for key in itertools.chain(self._sizes, self._dirs):
            if key[:n] != src:
                continue
            if len(key) + grow > MAX_DEPTH:
                raise SandboxError(destination, f"would put {'/'.join(dst + key[n:])!r} deeper than "
                                                f"{MAX_DEPTH} levels")
            if len("/".join(key)) + chars > MAX_PATH_CHARS:
                raise SandboxError(destination, f"would make a path longer than {MAX_PATH_CHARS} characters")

    def _rekey(self, src: tuple[str, ...], dst: tuple[str, ...]) -> None:
        n = len(src)
        self._sizes = {(dst + k[n:] if k[:n] == src else k): v for k, v in self._sizes.items()}
        self._dirs = {dst + k[n:] if k[:n] == src else k for k in self._dirs}

    def __repr__(self) -> str:
        state = "closed" if self._root is None else f"{self.files_used} entries, {self.bytes_used} bytes"
        return f"Sandbox({state})"
