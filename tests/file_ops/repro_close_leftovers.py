"""Reproduce: ``close()`` leaves the sandbox directory behind, or deletes what it must not.

A subdirectory at mode 000 (as a non-root owner): ``close()`` returned, ``closed``
was True, and the directory stayed. An entry ``close()`` cannot remove (another
user's directory) was left silently. Legal moves nested ~1,000 levels deep and
``close()`` raised ``RecursionError``; so did a deep tree made from outside. A bind
mount inside the sandbox let reads through, and ``close()`` deleted the mounted
directory's contents. (The tools refuse a bind mount of another device; one of
the same filesystem is only checked at ``close()``, which must leave it alone.)

    python tests/file_ops/repro_close_leftovers.py   # exit status 0: fixed, 1: reproduced
"""

from __future__ import annotations

import os
import pickle
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _repro_util import (NOBODY, can_drop_privileges, directory_for, force_remove, main, mounted,  # noqa: E402
                         nest_by_moves, run_as, tree)

from tepa_envs.file_ops.sandbox import Sandbox, SandboxError  # noqa: E402


class Skip(Exception):
    """This part cannot run here (e.g. it needs root)."""


def _close(sandbox: Sandbox) -> str:
    try:
        sandbox.close()
        return "returned"
    except SandboxError as exc:
        return f"SandboxError: {exc.reason}"
    except BaseException as exc:  # noqa: BLE001 - the report
        return f"{type(exc).__name__}: {str(exc)[:80]}"


def _locked_subdirectory_as_nobody(parent_dir: str) -> dict:
    sandbox = Sandbox(parent_dir=parent_dir)
    sandbox.reset()
    root = sandbox.root
    sandbox.write("locked/inner/x.txt", "x")
    sandbox.write("readonly/y.txt", "y")
    os.chmod(os.path.join(root, "locked", "inner"), 0o000)
    os.chmod(os.path.join(root, "locked"), 0o000)
    os.chmod(os.path.join(root, "readonly"), 0o500)
    outcome = _close(sandbox)
    return {"outcome": outcome, "closed": sandbox.closed, "exists": os.path.lexists(root)}


def locked_subdirectory(parent_dir: str) -> list[str]:
    """Needs root, to run the scenario as ``nobody`` (root ignores permissions)."""
    if not can_drop_privileges():
        raise Skip("needs root to fork a child running as nobody")
    with directory_for(NOBODY) as base:
        status, result = run_as(NOBODY, lambda: _locked_subdirectory_as_nobody(base))
    if status != "ok":
        return [f"mode 000 subdirectory: {result.strip().splitlines()[-1]}"]
    if result["exists"] or not result["closed"] or result["outcome"] != "returned":
        return [f"mode 000 subdirectory (as nobody): close() {result['outcome']}, closed={result['closed']}, "
                f"directory {'left behind' if result['exists'] else 'removed'}"]
    return []


def foreign_entry(parent_dir: str) -> list[str]:
    """An entry ``close()`` cannot remove must be reported. Needs root: root plants
    a root-owned directory in a sandbox owned by ``nobody``."""
    if not can_drop_privileges():
        raise Skip("needs root to fork a child running as nobody")
    with directory_for(NOBODY) as base:
        to_child_r, to_child_w = os.pipe()
        to_parent_r, to_parent_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                os.close(to_parent_r)
                os.close(to_child_w)
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
                sandbox = Sandbox(parent_dir=base)
                sandbox.reset()
                sandbox.write("mine/x.txt", "x")
                os.write(to_parent_w, sandbox.root.encode() + b"\n")
                os.read(to_child_r, 1)
                outcome = _close(sandbox)
                os.write(to_parent_w, pickle.dumps((outcome, sandbox.closed)))
            finally:
                os._exit(0)
        os.close(to_parent_w)
        os.close(to_child_r)
        root = os.read(to_parent_r, 4096).decode().strip()
        os.mkdir(os.path.join(root, "foreign"), 0o755)  # root's, in nobody's sandbox
        with open(os.path.join(root, "foreign", "f.txt"), "w") as f:
            f.write("root's")
        os.write(to_child_w, b"g")
        data = b""
        while chunk := os.read(to_parent_r, 65536):
            data += chunk
        os.close(to_parent_r)
        os.close(to_child_w)
        os.waitpid(pid, 0)
        outcome, closed = pickle.loads(data)
        left = sorted(tree(root)) if os.path.isdir(root) else []
    problems = []
    if not outcome.startswith("SandboxError") or "foreign" not in outcome or not closed:
        problems.append(f"an entry of another user: close() {outcome} (closed={closed}) with {left} left behind")
    if left != ["foreign", "foreign/f.txt"]:
        problems.append(f"an entry of another user: left behind {left}, expected only foreign/f.txt")
    return problems


def deep_tree(parent_dir: str) -> list[str]:
    """A tree 3,000 directories deep made from outside the sandbox, then ``close()``."""
    sandbox = Sandbox(parent_dir=parent_dir)
    sandbox.reset()
    root = sandbox.root
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(3000):
            os.mkdir("d", dir_fd=fd)
            next_fd = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        with open(os.open("f.txt", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd), "w") as f:
            f.write("bottom")
    finally:
        os.close(fd)
    outcome = _close(sandbox)
    problems = []
    if outcome != "returned" or os.path.lexists(root):
        problems.append(f"a 3,000-level tree: close() {outcome}, directory "
                        f"{'left behind' if os.path.lexists(root) else 'removed'}")
    force_remove(root)
    return problems


def deep_by_moves(parent_dir: str) -> list[str]:
    """Nest by legal moves as deep as the sandbox lets (up to 1,200 levels), then ``close()``."""
    sandbox = Sandbox(parent_dir=parent_dir)
    sandbox.reset()
    root = sandbox.root
    reached, _ = nest_by_moves(sandbox, 1200)
    outcome = _close(sandbox)
    problems = []
    if outcome != "returned" or os.path.lexists(root):
        problems.append(f"nested {reached} levels by legal moves: close() {outcome}, directory "
                        f"{'left behind' if os.path.lexists(root) else 'removed'}")
    force_remove(root)
    return problems


TOOLS = {
    "read m/secret.txt": lambda s: s.read("m/secret.txt"),
    "read m/sub/deep.txt": lambda s: s.read("m/sub/deep.txt"),
    "list m": lambda s: s.list("m"),
    "stat m": lambda s: s.stat("m"),
    "stat m/secret.txt": lambda s: s.stat("m/secret.txt"),
    "write m/new.txt": lambda s: s.write("m/new.txt", "planted"),
    "delete m/secret.txt": lambda s: s.delete("m/secret.txt"),
    "move m/secret.txt": lambda s: s.move("m/secret.txt", "stolen.txt"),
}


def _bind_mount_case(parent_dir: str, source_parent: str, label: str) -> list[str]:
    source = tempfile.mkdtemp(prefix="tepa-repro-bind-", dir=source_parent)
    problems: list[str] = []
    try:
        with open(os.path.join(source, "secret.txt"), "w") as f:
            f.write("outside")
        os.mkdir(os.path.join(source, "sub"))
        with open(os.path.join(source, "sub", "deep.txt"), "w") as f:
            f.write("outside, deeper")
        before = tree(source)
        sandbox = Sandbox(parent_dir=parent_dir)
        sandbox.reset()
        root = sandbox.root
        sandbox.write("keep.txt", "mine")
        sandbox.write("m/placeholder.txt", "x")
        sandbox.delete("m/placeholder.txt")
        with mounted(["--bind", source], os.path.join(root, "m")) as ok:
            if not ok:
                sandbox.close()
                raise Skip("mount --bind needs root")
            for name, tool in TOOLS.items() if label == "another device" else ():
                try:
                    tool(sandbox)
                    problems.append(f"bind mount from {label}: {name} went through")
                except SandboxError:
                    pass
                except Exception as exc:  # noqa: BLE001 - the report
                    problems.append(f"bind mount from {label}: {name} raised {type(exc).__name__}: {exc}")
            outcome = _close(sandbox)
            if tree(source) != before:
                problems.append(f"bind mount from {label}: close() changed the mounted directory: "
                                f"{sorted(tree(source))} left of {sorted(before)}")
            if not (outcome.startswith("SandboxError") and " m (" in outcome):
                problems.append(f"bind mount from {label}: close() {outcome}; expected a SandboxError naming m")
            if not sandbox.closed:
                problems.append(f"bind mount from {label}: the sandbox is not closed after close()")
        force_remove(root)
    finally:
        force_remove(source)
    return problems


def bind_mount(parent_dir: str) -> list[str]:
    """Needs root (``mount --bind``): a directory of another device (/dev/shm when
    it is one) and one of the same filesystem, bind-mounted inside the sandbox."""
    if not can_drop_privileges():
        raise Skip("mount --bind needs root")
    problems = []
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.stat(shm).st_dev != os.stat(parent_dir).st_dev:
        problems += _bind_mount_case(parent_dir, shm, "another device")
    problems += _bind_mount_case(parent_dir, parent_dir, "the same filesystem")
    return problems


PARTS = [locked_subdirectory, foreign_entry, deep_tree, deep_by_moves, bind_mount]


def reproduce(parent_dir: str) -> list[str]:
    problems: list[str] = []
    for part in PARTS:
        try:
            problems += part(parent_dir)
        except Skip as skip:
            print(f"skipped {part.__name__}: {skip}")
    return problems


if __name__ == "__main__":
    main("close() leaves the directory behind", reproduce)
