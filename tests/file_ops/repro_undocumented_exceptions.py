"""Reproduce: sandbox operations fail with exceptions other than ``SandboxError``.

``write("a", "\\ud800")`` raised ``UnicodeEncodeError``; a write into a 0500
directory (as a non-root user) raised ``PermissionError``; out of inodes,
``OSError(ENOSPC)``; at the open-file limit ``write``, ``list`` and ``read``
raised ``OSError(EMFILE)``. Every failure must be a ``SandboxError`` (the OS error
chained as its cause) that leaves the sandbox as it was.

    python tests/file_ops/repro_undocumented_exceptions.py   # exit status 0: fixed, 1: reproduced
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _repro_util import NOBODY, can_drop_privileges, directory_for, main, mounted, run_as, tree  # noqa: E402

from tepa_envs.file_ops.sandbox import Sandbox, SandboxError  # noqa: E402


class Skip(Exception):
    """This part cannot run here (e.g. it needs root)."""


def _outcome(operation) -> str:
    """``"ok"``, ``"SandboxError"`` (with the errno of the chained OSError, if any), or the other exception."""
    try:
        operation()
        return "ok"
    except SandboxError as exc:
        cause = exc.__cause__
        return "SandboxError" + (f" from {errno.errorcode.get(cause.errno, cause.errno)}"
                                 if isinstance(cause, OSError) else "")
    except Exception as exc:  # noqa: BLE001 - the report
        return f"{type(exc).__name__}: {exc}"


def _state(sandbox: Sandbox) -> tuple:
    return tree(sandbox.root), sandbox.bytes_used, sandbox.files_used


def _check(label: str, outcomes: dict[str, str], unchanged: bool) -> list[str]:
    problems = [f"{label}: {name} raised {outcome}" for name, outcome in outcomes.items()
                if outcome != "ok" and not outcome.startswith("SandboxError")]
    if not unchanged:
        problems.append(f"{label}: a failed operation changed the sandbox")
    return problems


def unencodable_text(parent_dir: str) -> list[str]:
    sandbox = Sandbox(parent_dir=parent_dir)
    sandbox.reset()
    try:
        before = _state(sandbox)
        outcomes = {"write('a', '\\ud800')": _outcome(lambda: sandbox.write("a", "\ud800")),
                    "write('dir/a', 'ok \\udcff')": _outcome(lambda: sandbox.write("dir/a", "ok \udcff"))}
        problems = _check("unencodable text", outcomes, _state(sandbox) == before)
        problems += [f"unencodable text: {name} succeeded" for name, o in outcomes.items() if o == "ok"]
        return problems
    finally:
        sandbox.close()


FD_LIMIT_SCRIPT = r"""
import errno, json, os, resource, sys
from tepa_envs.file_ops.sandbox import Sandbox
sys.path.insert(0, sys.argv[2])
from repro_undocumented_exceptions import _outcome, _state
s = Sandbox(parent_dir=sys.argv[1])
s.reset()
s.write("keep.txt", "kept")
s.write("dir/inner.txt", "inner")
before = _state(s)
resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
fillers = []
try:
    while True:
        fillers.append(os.open(os.devnull, os.O_RDONLY))
except OSError as exc:
    assert exc.errno == errno.EMFILE, exc
ops = {"write": lambda: s.write("new.txt", "x"), "overwrite": lambda: s.write("keep.txt", "changed"),
       "write nested": lambda: s.write("dir/sub/new.txt", "x"), "list": lambda: s.list("."),
       "list dir": lambda: s.list("dir"), "read": lambda: s.read("keep.txt"),
       "read nested": lambda: s.read("dir/inner.txt"), "stat": lambda: s.stat("dir/inner.txt"),
       "move": lambda: s.move("keep.txt", "moved.txt"), "delete": lambda: s.delete("keep.txt")}
outcomes = {name: _outcome(op) for name, op in ops.items()}
for fd in fillers:
    os.close(fd)
unchanged = _state(s) == before
works = s.read("keep.txt") == "kept" and s.write("later.txt", "y") == 1
s.close()
print(json.dumps({"outcomes": outcomes, "unchanged": unchanged, "works": works}))
"""


def open_file_limit(parent_dir: str) -> list[str]:
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run([sys.executable, "-c", FD_LIMIT_SCRIPT, parent_dir, here],
                         capture_output=True, text=True, timeout=120, cwd=parent_dir)
    if out.returncode != 0:
        return [f"open-file limit: the subprocess failed: {out.stderr.strip().splitlines()[-1:]}"]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    problems = _check("at the open-file limit", result["outcomes"], result["unchanged"])
    if not result["works"]:
        problems.append("at the open-file limit: the sandbox did not work again once descriptors were freed")
    return problems


def no_inodes_left(parent_dir: str) -> list[str]:
    """Needs root (mounts a tmpfs with 64 inodes)."""
    target = tempfile.mkdtemp(prefix="tepa-repro-tmpfs-", dir=parent_dir)
    with mounted(["-t", "tmpfs", "-o", "size=1m,nr_inodes=64", "tmpfs"], target) as ok:
        if not ok:
            raise Skip("mounting a tmpfs needs root")
        sandbox = Sandbox(parent_dir=target)
        sandbox.reset()
        try:
            sandbox.write("keep.txt", "kept")
            before = _state(sandbox)
            fillers = []
            try:
                while True:
                    fillers.append(os.path.join(target, f"filler{len(fillers)}"))
                    os.close(os.open(fillers[-1], os.O_CREAT | os.O_WRONLY, 0o600))
            except OSError as exc:
                fillers.pop()
                assert exc.errno == errno.ENOSPC, exc
            outcomes = {"write": _outcome(lambda: sandbox.write("new.txt", "x")),
                        "overwrite": _outcome(lambda: sandbox.write("keep.txt", "changed")),
                        "write nested": _outcome(lambda: sandbox.write("dir/new.txt", "x")),
                        "reset of another sandbox": _outcome(lambda: Sandbox(parent_dir=target).reset())}
            unchanged = _state(sandbox) == before
            for path in fillers:
                os.unlink(path)
            works = sandbox.write("later.txt", "y") == 1
        finally:
            sandbox.close()
    os.rmdir(target)
    problems = _check("out of inodes", outcomes, unchanged)
    if not works:
        problems.append("out of inodes: the sandbox did not work again once inodes were freed")
    return problems


def _read_only_dir_as_nobody(parent_dir: str) -> dict:
    sandbox = Sandbox(parent_dir=parent_dir)
    sandbox.reset()
    sandbox.write("ro/x.txt", "x")
    os.chmod(os.path.join(sandbox.root, "ro"), 0o500)
    before = _state(sandbox)
    outcomes = {"write into a 0500 directory": _outcome(lambda: sandbox.write("ro/y.txt", "y")),
                "overwrite in a 0500 directory": _outcome(lambda: sandbox.write("ro/x.txt", "changed")),
                "write nested in a 0500 directory": _outcome(lambda: sandbox.write("ro/sub/y.txt", "y")),
                "delete in a 0500 directory": _outcome(lambda: sandbox.delete("ro/x.txt"))}
    unchanged = _state(sandbox) == before
    os.chmod(os.path.join(sandbox.root, "ro"), 0o700)
    sandbox.close()
    return {"outcomes": outcomes, "unchanged": unchanged}


def read_only_directory(parent_dir: str) -> list[str]:
    """Needs root, to run the scenario as ``nobody`` (root ignores permissions)."""
    if not can_drop_privileges():
        raise Skip("needs root to fork a child running as nobody")
    with directory_for(NOBODY) as base:
        status, result = run_as(NOBODY, lambda: _read_only_dir_as_nobody(base))
    if status != "ok":
        return [f"0500 directory: {result.strip().splitlines()[-1]}"]
    return _check("0500 directory (as nobody)", result["outcomes"], result["unchanged"])


PARTS = [unencodable_text, open_file_limit, no_inodes_left, read_only_directory]


def reproduce(parent_dir: str) -> list[str]:
    problems: list[str] = []
    for part in PARTS:
        try:
            problems += part(parent_dir)
        except Skip as skip:
            print(f"skipped {part.__name__}: {skip}")
    return problems


if __name__ == "__main__":
    main("undocumented exceptions escape", reproduce)
