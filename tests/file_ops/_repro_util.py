"""Helpers shared by the ``repro_*.py`` scripts of the sandbox's issues (not a test module).

Each ``repro_<issue>.py`` defines ``reproduce(parent_dir) -> list[str]``: the
problems it found (empty when the issue is fixed), and runs standalone:

    python tests/file_ops/repro_<issue>.py   # exit status 0: fixed, 1: reproduced

``tests/file_ops/test_sandbox_issues.py`` runs every one of them.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from typing import Any

NOBODY = 65534


def tree(root: str) -> dict[str, object]:
    """What is under ``root`` on disk: relative path -> file bytes, ``"dir"`` or ``"link"``."""
    found: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                found[rel] = "link"
            elif os.path.isdir(path):
                found[rel] = "dir"
            else:
                with open(path, "rb") as f:
                    found[rel] = f.read()
    return found


def disk_usage(root: str) -> tuple[int, int]:
    """``(bytes in regular files, entries)`` under ``root``."""
    size = entries = 0
    for dirpath, dirnames, filenames in os.walk(root):
        entries += len(dirnames) + len(filenames)
        size += sum(os.lstat(os.path.join(dirpath, name)).st_size for name in filenames)
    return size, entries


def run_as(uid: int, work: Callable[[], Any]) -> tuple[str, Any]:
    """Run ``work()`` in a forked child that dropped to ``uid``; returns ``("ok",
    result)`` or ``("error", traceback text)``. The result must pickle."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        status = 0
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            try:
                outcome = ("ok", work())
            except BaseException:
                outcome = ("error", traceback.format_exc())
            with os.fdopen(write_end, "wb") as f:
                pickle.dump(outcome, f)
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    if not data:
        return "error", "the child wrote nothing"
    return pickle.loads(data)


def can_drop_privileges() -> bool:
    return hasattr(os, "fork") and hasattr(os, "geteuid") and os.geteuid() == 0


@contextlib.contextmanager
def directory_for(uid: int) -> Iterator[str]:
    """A fresh directory in the system's temporary directory owned by ``uid``."""
    path = tempfile.mkdtemp(prefix="tepa-repro-")
    os.chown(path, uid, uid)
    try:
        yield path
    finally:
        force_remove(path)


def force_remove(path: str) -> None:
    """Remove ``path`` whatever its depth and modes (as root, or as its owner)."""
    if not os.path.lexists(path):
        return
    _run(["chmod", "-R", "u+rwx", path])
    if not _run(["rm", "-rf", "--one-file-system", path]):
        shutil.rmtree(path, ignore_errors=True)


def nest_by_moves(sandbox: Any, depth: int) -> tuple[int, str | None]:
    """Nest the file ``.../t/f.txt`` ever deeper with legal moves: each round writes
    a fresh 30-directory chain and moves the current top directory under it. Returns
    the depth reached and the refusal that stopped it (``None`` if none did)."""
    sandbox.write("t/f.txt", "deep")
    top, reached, round_ = "t", 2, 0
    while reached < depth:
        chain = "/".join(f"c{round_}x{i}" for i in range(30))
        try:
            sandbox.write(f"{chain}/anchor.txt", "a")
            sandbox.move(top, f"{chain}/{top}")
        except Exception as exc:  # noqa: BLE001 - the refusal is the answer
            return reached, f"{type(exc).__name__}: {exc}"
        top, reached, round_ = f"c{round_}x0", reached + 30, round_ + 1
    return reached, None


def _run(command: list[str]) -> bool:
    try:
        return subprocess.run(command, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@contextlib.contextmanager
def mounted(args: list[str], target: str) -> Iterator[bool]:
    """``mount args... target`` for the block (``False`` when mounting fails, e.g.
    without root); always unmounted afterwards."""
    ok = sys.platform.startswith("linux") and _run(["mount", *args, target])
    try:
        yield ok
    finally:
        if ok and not _run(["umount", target]):
            _run(["umount", "-l", target])


def report(name: str, problems: list[str]) -> int:
    """Print the outcome of a reproduction script; its exit status."""
    if problems:
        print(f"{name}: REPRODUCED")
        for problem in problems:
            print(f"  - {problem[:400]}")
        return 1
    print(f"{name}: fixed (nothing reproduced)")
    return 0


def main(name: str, reproduce: Callable[[str], list[str]]) -> None:
    parent = tempfile.mkdtemp(prefix="tepa-repro-")
    try:
        status = report(name, reproduce(parent))
    finally:
        force_remove(parent)
    sys.exit(status)
