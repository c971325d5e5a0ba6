"""The sandbox: file tools work inside it, and nothing outside is ever touched."""

from __future__ import annotations

import ctypes
import gc
import os
import pickle
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Callable

import pytest

from tepa_envs.error import ResetNeeded
from tepa_envs.file_ops.sandbox import FileInfo, Sandbox, SandboxError

CANARY = b"canary-secret\n"
FILE_QUOTA, TOTAL_QUOTA, FILES_QUOTA = 1024, 4096, 16


class World:
    """A sandbox next to an outside directory holding a canary, with hostile
    entries planted inside the sandbox the way an attacker with shell access would."""

    def __init__(self, base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.outside = base / "outside"
        self.outside.mkdir()
        self.canary = self.outside / "canary.txt"
        self.canary.write_bytes(CANARY)
        (base / "sandboxes").mkdir()
        self.sandbox = Sandbox(max_file_bytes=FILE_QUOTA, max_total_bytes=TOTAL_QUOTA,
                               max_files=FILES_QUOTA, parent_dir=str(base / "sandboxes"))
        self.sandbox.reset()
        self.root = Path(self.sandbox.root)
        self.sandbox.write("ok.txt", "fine")
        self.sandbox.write("sub/inner.txt", "inner")
        for i in range(3):
            self.sandbox.write(f"fill{i}.bin", b"f" * FILE_QUOTA)
        os.symlink(self.canary, self.root / "link_out")
        os.symlink("../../outside/canary.txt", self.root / "rel_link")
        os.symlink(self.outside, self.root / "dir_link")
        os.symlink(self.outside, self.root / "sub" / "deep_link")
        os.symlink("ok.txt", self.root / "inner_link")
        os.link(self.canary, self.root / "hard")
        os.mkfifo(self.root / "fifo")
        monkeypatch.chdir(self.root)  # AF_UNIX paths are short; bind relative to the sandbox
        self._socket = socket.socket(socket.AF_UNIX)
        self._socket.bind("sock")
        self.has_device = True
        try:
            os.mknod(self.root / "dev", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
        except PermissionError:
            self.has_device = False
        self.before = self.snapshot()

    def snapshot(self) -> tuple:
        canary = os.stat(self.canary)
        return (self.canary.read_bytes(), canary.st_ino, canary.st_mtime_ns, canary.st_nlink,
                sorted(os.listdir(self.outside)), sorted(os.listdir(self.root)),
                sorted(os.listdir(self.root / "sub")), self.sandbox.bytes_used, self.sandbox.files_used)

    def close(self) -> None:
        self._socket.close()
        self.sandbox.close()


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    w = World(tmp_path, monkeypatch)
    yield w
    w.close()


Attack = Callable[[Sandbox, World], object]
TRAVERSALS = [
    "../../outside/canary.txt", "sub/../../../outside/canary.txt", "./../../outside/canary.txt",
    "..", "../", "..\\..\\outside\\canary.txt", "%2e%2e/%2e%2e/outside/canary.txt",
    "\uff0e\uff0e/\uff0e\uff0e/outside/canary.txt", "\u2025/\u2025/outside/canary.txt",
    ".../canary.txt", "~/canary.txt", "sub//inner.txt", "sub/", "ok.txt\x00../../outside/canary.txt",
    "", "C:\\outside\\canary.txt", "file:///etc/passwd", "/".join(["d"] * 40) + "/x", "x" * 300,
]
ABSOLUTES: list[Callable[[World], str]] = [lambda w: str(w.canary), lambda w: "/etc/passwd",
                                           lambda w: "//etc/passwd", lambda w: str(w.root / "ok.txt")]
LINKS = ["link_out", "rel_link", "inner_link", "dir_link/canary.txt", "sub/deep_link/canary.txt", "hard"]
SPECIALS = ["fifo", "sock", "dev"]


def _cases() -> list[tuple[str, Attack]]:
    cases: list[tuple[str, Attack]] = []
    for p in TRAVERSALS:
        cases.append((f"read {p!r}", lambda s, w, p=p: s.read(p)))
        cases.append((f"write {p!r}", lambda s, w, p=p: s.write(p, "pwned")))
    for i, make in enumerate(ABSOLUTES):
        cases.append((f"read absolute#{i}", lambda s, w, m=make: s.read(m(w))))
        cases.append((f"write absolute#{i}", lambda s, w, m=make: s.write(m(w), "pwned")))
        cases.append((f"delete absolute#{i}", lambda s, w, m=make: s.delete(m(w))))
        cases.append((f"list absolute#{i}", lambda s, w, m=make: s.list(m(w))))
    for p in LINKS + SPECIALS:
        cases.append((f"read {p}", lambda s, w, p=p: s.read(p)))
        cases.append((f"write {p}", lambda s, w, p=p: s.write(p, "pwned")))
        cases.append((f"delete {p}", lambda s, w, p=p: s.delete(p)))
        cases.append((f"stat {p}", lambda s, w, p=p: s.stat(p)))
        cases.append((f"move {p}", lambda s, w, p=p: s.move(p, "moved")))
    cases += [
        ("write through dir link", lambda s, w: s.write("dir_link/new.txt", "pwned")),
        ("write through nested dir link", lambda s, w: s.write("sub/deep_link/new/x.txt", "pwned")),
        ("list dir link", lambda s, w: s.list("dir_link")),
        ("list nested dir link", lambda s, w: s.list("sub/deep_link")),
        ("list traversal", lambda s, w: s.list("../..")),
        ("list a symlink", lambda s, w: s.list("link_out")),
        ("list a FIFO", lambda s, w: s.list("fifo")),
        ("stat traversal", lambda s, w: s.stat("../../outside/canary.txt")),
        ("move out by traversal", lambda s, w: s.move("ok.txt", "../../outside/stolen.txt")),
        ("move out by dir link", lambda s, w: s.move("ok.txt", "dir_link/stolen.txt")),
        ("move out by absolute path", lambda s, w: s.move("ok.txt", str(w.outside / "stolen.txt"))),
        ("move in from outside", lambda s, w: s.move(str(w.canary), "taken.txt")),
        ("move in by traversal", lambda s, w: s.move("../../outside/canary.txt", "taken.txt")),
        ("move onto a symlink", lambda s, w: s.move("ok.txt", "link_out")),
        ("move dir into itself", lambda s, w: s.move("sub", "sub/again")),
        ("move the root", lambda s, w: s.move(".", "elsewhere")),
        ("delete the root", lambda s, w: s.delete(".")),
        ("delete dir link", lambda s, w: s.delete("dir_link")),
        ("delete non-empty dir", lambda s, w: s.delete("sub")),
        ("write over a directory", lambda s, w: s.write("sub", "pwned")),
        ("write under a file", lambda s, w: s.write("ok.txt/child", "pwned")),
        ("write a hidden temp name", lambda s, w: s.write(".tmp-0000", "pwned")),
        ("over the per-file quota", lambda s, w: s.write("big.bin", b"x" * (FILE_QUOTA + 1))),
        ("over the total quota", lambda s, w: s.write("more.bin", b"x" * FILE_QUOTA)),
        ("over the total quota by overwrite", lambda s, w: s.write("ok.txt", b"x" * FILE_QUOTA)),
        ("over the file-count quota", lambda s, w: s.write("/".join(f"d{i}" for i in range(11)) + "/f", "x")),
    ]
    return cases


CASES = _cases()


def test_attack_corpus_is_large():
    assert len(CASES) >= 30


@pytest.mark.parametrize("name, attack", CASES, ids=[c[0] for c in CASES])
def test_attack_is_refused_and_nothing_outside_changes(world: World, name: str, attack: Attack):
    if "dev" in name.split() and not world.has_device:
        pytest.skip("creating a device file needs CAP_MKNOD")
    with pytest.raises(SandboxError) as excinfo:
        attack(world.sandbox, world)
    assert excinfo.value.reason and "sandbox refused" in str(excinfo.value)
    assert isinstance(excinfo.value, ValueError)
    assert world.snapshot() == world.before


class SwapAfterCheck(Sandbox):
    """Swaps a symlink to the canary in right after the sandbox's own check of ``victim``."""

    def __init__(self, victim: str, target: Path, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.victim, self.target, self.swapped = victim, target, True  # armed by the test

    def _lstat(self, dir_fd: int, name: str):
        result = super()._lstat(dir_fd, name)
        if name == self.victim and not self.swapped and result is not None:
            self.swapped = True
            os.unlink(name, dir_fd=dir_fd)
            os.symlink(self.target, name, dir_fd=dir_fd)
        return result


@pytest.mark.parametrize("tool", ["read", "write", "delete", "move"])
def test_symlink_swapped_in_between_check_and_use_is_never_followed(world: World, tool: str):
    sandbox = SwapAfterCheck("victim.txt", world.canary, parent_dir=str(world.root.parent))
    sandbox.reset()
    try:
        sandbox.write("victim.txt", "mine")
        sandbox.swapped = False
        if tool == "read":
            with pytest.raises(SandboxError, match="symbolic link"):
                sandbox.read("victim.txt")
        elif tool == "write":
            sandbox.write("victim.txt", "pwned")  # replaces the link itself, not its target
            assert sandbox.read("victim.txt") == "pwned"
        elif tool == "delete":
            sandbox.delete("victim.txt")  # removes the link itself
        else:
            sandbox.move("victim.txt", "renamed.txt")
            assert os.path.islink(os.path.join(sandbox.root, "renamed.txt"))
            with pytest.raises(SandboxError):
                sandbox.read("renamed.txt")
        assert sandbox.swapped
    finally:
        sandbox.close()
    assert world.snapshot()[:5] == world.before[:5]


def _exchange() -> Callable[[str, str], None]:
    """Atomically exchange two directory entries (Linux renameat2 RENAME_EXCHANGE)."""
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        pytest.skip("renameat2 is not available")
    at_fdcwd, rename_exchange = -100, 2

    def exchange(a: str, b: str) -> None:
        if renameat2(at_fdcwd, a.encode(), at_fdcwd, b.encode(), rename_exchange) != 0:
            raise OSError(ctypes.get_errno(), "renameat2 failed")
    return exchange


def test_racing_swaps_of_directories_and_files_never_escape(world: World):
    """A thread keeps swapping a directory and a file for symlinks to the outside
    while every tool runs on paths through them."""
    exchange = _exchange()
    sandbox = world.sandbox
    sandbox.delete("fill0.bin")
    sandbox.write("race/file.txt", "mine")
    sandbox.write("swap.txt", "mine")
    root = str(world.root)
    os.symlink(world.outside, os.path.join(root, "race_link"))
    os.symlink(world.canary, os.path.join(root, "swap_link"))
    stop = threading.Event()

    def swapper() -> None:
        while not stop.is_set():
            exchange(os.path.join(root, "race"), os.path.join(root, "race_link"))
            exchange(os.path.join(root, "swap.txt"), os.path.join(root, "swap_link"))

    thread = threading.Thread(target=swapper)
    thread.start()
    outcomes = {"ok": 0, "refused": 0}
    tools = [lambda: sandbox.read("race/file.txt") == "mine" or pytest.fail("read outside content"),
             lambda: sandbox.read("swap.txt") == "mine" or pytest.fail("read outside content"),
             lambda: sandbox.write("race/file.txt", "mine"),
             lambda: sandbox.write("swap.txt", "mine"),
             lambda: sandbox.stat("race/file.txt"),
             lambda: sandbox.list("race")]
    try:
        for i in range(1800):
            try:
                tools[i % len(tools)]()
                outcomes["ok"] += 1
            except SandboxError:
                outcomes["refused"] += 1
    finally:
        stop.set()
        thread.join()
    assert outcomes["ok"] > 0 and outcomes["refused"] > 0
    assert world.snapshot()[:5] == world.before[:5]


def test_tools_work_inside(world: World):
    s = world.sandbox
    assert s.write("data/report 2025.csv", "a,b\n1,2\n") == 8
    assert s.read("data/report 2025.csv") == "a,b\n1,2\n"
    assert s.read_bytes("ok.txt") == b"fine"
    assert "data/" in s.list() and "ok.txt" in s.list(".")
    assert s.list("data") == ["report 2025.csv"]
    info = s.stat("data/report 2025.csv")
    assert isinstance(info, FileInfo) and (info.kind, info.size) == ("file", 8)
    assert s.stat("data").kind == "dir" and s.stat(".").kind == "dir"
    s.move("data", "archive")
    assert s.read("archive/report 2025.csv") == "a,b\n1,2\n"
    used = s.bytes_used
    s.write("archive/report 2025.csv", "x")
    assert s.bytes_used == used - 7
    s.delete("archive/report 2025.csv")
    s.delete("archive")
    assert s.bytes_used == used - 8
    with pytest.raises(SandboxError, match="no such"):
        s.read("archive/report 2025.csv")
    with pytest.raises(SandboxError, match="destination exists"):
        s.move("ok.txt", "sub/inner.txt")


def test_bad_types_and_quotas_are_rejected(tmp_path: Path):
    with pytest.raises(ValueError, match="max_files"):
        Sandbox(max_files=0)
    with pytest.raises(TypeError, match="max_total_bytes"):
        Sandbox(max_total_bytes=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="parent_dir"):
        Sandbox(parent_dir=str(tmp_path / "missing"))
    sandbox = Sandbox(parent_dir=str(tmp_path))
    with pytest.raises(ResetNeeded, match="closed"):
        sandbox.read("x")
    sandbox.reset()
    with pytest.raises(TypeError, match="path must be a str"):
        sandbox.read(b"../x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="data must be str or bytes"):
        sandbox.write("x", 3)  # type: ignore[arg-type]
    sandbox.close()


def test_failed_writes_leave_no_temporary_file(world: World):
    for attack in (lambda: world.sandbox.write("ok.txt/child", "x"),
                   lambda: world.sandbox.write("sub", "x")):
        with pytest.raises(SandboxError):
            attack()
        assert not [n for n in os.listdir(world.root) + os.listdir(world.root / "sub") if n.startswith(".")]


def test_directory_is_removed_at_close_collection_and_exit(tmp_path: Path):
    sandbox = Sandbox(parent_dir=str(tmp_path))
    sandbox.reset()
    first = sandbox.root
    sandbox.write("a/b.txt", "x")
    sandbox.reset()
    assert not os.path.exists(first) and os.path.isdir(sandbox.root)
    second = sandbox.root
    sandbox.close()
    sandbox.close()
    assert not os.path.exists(second) and sandbox.closed
    collected = Sandbox(parent_dir=str(tmp_path))
    collected.reset()
    third = collected.root
    del collected
    gc.collect()
    assert not os.path.exists(third)
    script = ("import sys; from tepa_envs.file_ops.sandbox import Sandbox; s = Sandbox(parent_dir=sys.argv[1]); "
              "s.reset(); s.write('x.txt', 'y'); print(s.root)")
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() and not os.path.exists(out.stdout.strip())
    assert os.listdir(tmp_path) == []


def test_a_pickled_copy_gets_its_own_directory_with_the_same_files(tmp_path: Path):
    sandbox = Sandbox(max_files=9, parent_dir=str(tmp_path))
    sandbox.reset()
    sandbox.write("a/b/c.txt", "deep")
    sandbox.write("top.bin", b"\x00\x01")
    copy = pickle.loads(pickle.dumps(sandbox))
    assert copy.root != sandbox.root and copy.max_files == 9
    assert copy.read("a/b/c.txt") == "deep" and copy.read_bytes("top.bin") == b"\x00\x01"
    assert (copy.bytes_used, copy.files_used) == (sandbox.bytes_used, sandbox.files_used) == (6, 4)
    copy.write("a/b/c.txt", "changed")
    copy.close()
    assert sandbox.read("a/b/c.txt") == "deep" and sandbox.list() == ["a/", "top.bin"]
    sandbox.close()
    closed_copy = pickle.loads(pickle.dumps(sandbox))
    assert closed_copy.closed and os.listdir(tmp_path) == []


def test_a_forked_child_exiting_leaves_the_parents_directory(tmp_path: Path):
    script = """
import os, sys
from tepa_envs.file_ops.sandbox import Sandbox
sandbox = Sandbox(parent_dir=sys.argv[1])
sandbox.reset()
sandbox.write("kept.txt", "parent's")
pid = os.fork()
if pid == 0:
    sys.exit(0)  # a normal exit runs the child's atexit finalizers
os.waitpid(pid, 0)
print(sandbox.read("kept.txt"))
"""
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "parent's"
    assert os.listdir(tmp_path) == []  # the parent's own exit removed it
