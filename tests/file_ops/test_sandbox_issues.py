"""The sandbox's reported issues, each run from its reproduction script (``repro_*.py``
next to this file, runnable on its own), plus focused tests of the fixes.

Parts that need root (a child dropping to ``nobody``, ``mount``) are skipped otherwise.
"""

from __future__ import annotations

import errno
import importlib.util
import os
import pickle
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from types import ModuleType

import pytest

from tepa_envs.file_ops import sandbox as module
from tepa_envs.file_ops import sandbox_paths
from tepa_envs.file_ops.sandbox import MAX_DEPTH, Sandbox, SandboxError

HERE = Path(__file__).resolve().parent


def _load(name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _run_part(module_name: str, part: str, parent: Path) -> None:
    module = _load(module_name)
    try:
        problems = getattr(module, part)(str(parent))
    except getattr(module, "Skip", ()) as skip:
        pytest.skip(str(skip))
    assert problems == []


# ------------------------------------------------------------------ the reproductions
def test_lying_objects_cannot_bypass_the_quotas(tmp_path: Path):
    _run_part("repro_lying_objects", "reproduce", tmp_path)


def test_threads_cannot_bypass_the_quotas_or_desynchronize_the_accounting(tmp_path: Path):
    _run_part("repro_thread_quota", "reproduce", tmp_path)


@pytest.mark.parametrize("part", ["unencodable_text", "open_file_limit", "no_inodes_left", "read_only_directory"])
def test_every_failure_is_a_sandbox_error_and_changes_nothing(tmp_path: Path, part: str):
    _run_part("repro_undocumented_exceptions", part, tmp_path)


@pytest.mark.parametrize("part", ["locked_subdirectory", "foreign_entry", "deep_tree", "deep_by_moves",
                                  "bind_mount"])
def test_close_removes_everything_it_may_and_reports_the_rest(tmp_path: Path, part: str):
    _run_part("repro_close_leftovers", part, tmp_path)


def test_every_state_legal_operations_reach_pickles(tmp_path: Path):
    _run_part("repro_pickle_depth", "reproduce", tmp_path)


@pytest.mark.parametrize("part", ["sigkill", "sigterm", "sigterm_without_opt_in", "tepa_bench_clean",
                                  "vector_terminate", "vector_dropped", "vector_exit"])
def test_sandboxes_of_dead_processes_are_removed(tmp_path: Path, part: str):
    _run_part("repro_leaks", part, tmp_path)


def test_every_reproduction_script_runs_standalone():
    """The scripts are what the issues quote: check they import and report (the cheap one)."""
    out = subprocess.run([sys.executable, str(HERE / "repro_lying_objects.py")], capture_output=True, text=True,
                         timeout=120, cwd=HERE)
    assert out.returncode == 0 and "fixed" in out.stdout, out.stdout + out.stderr


# ------------------------------------------------------------------ failures roll back
FAULTED = ("open", "stat", "fstat", "dup", "mkdir", "rename", "unlink", "rmdir", "write", "read", "scandir",
           "listdir")
OPERATIONS = {
    "write new nested": lambda s: s.write("new/deeper/file.txt", "hello"),
    "write new": lambda s: s.write("top.txt", b"top"),
    "overwrite": lambda s: s.write("keep.txt", "changed!"),
    "read": lambda s: s.read("dir/inner.txt"),
    "list": lambda s: s.list("dir"),
    "list root": lambda s: s.list(),
    "stat": lambda s: s.stat("dir/inner.txt"),
    "move file": lambda s: s.move("keep.txt", "dir/moved.txt"),
    "move dir": lambda s: s.move("dir", "renamed"),
    "delete file": lambda s: s.delete("keep.txt"),
    "delete dir": lambda s: s.delete("empty"),
}


def _state(sandbox: Sandbox) -> tuple:
    tree = _load("_repro_util").tree
    return tree(sandbox.root), sandbox.bytes_used, sandbox.files_used, dict(sandbox._sizes), set(sandbox._dirs)


@pytest.mark.parametrize("err", [errno.EIO, errno.ENOSPC, errno.EMFILE, errno.EACCES],
                         ids=["EIO", "ENOSPC", "EMFILE", "EACCES"])
def test_an_os_error_at_any_call_is_a_sandbox_error_that_changes_nothing(tmp_path: Path, err: int,
                                                                         monkeypatch: pytest.MonkeyPatch):
    """Fault injection: the n-th OS call of an operation fails, for every n until the
    operation completes; each failure is a SandboxError chaining the OSError, and
    the sandbox (disk and accounting) is as before."""
    sandbox = Sandbox(parent_dir=str(tmp_path))
    for name, operation in OPERATIONS.items():
        sandbox.reset()
        sandbox.write("keep.txt", "kept")
        sandbox.write("dir/inner.txt", "inner")
        sandbox.write("empty/x", "x")
        sandbox.delete("empty/x")
        before = _state(sandbox)
        calls = {"n": 0, "fail_at": 0}

        def faulty(real):
            def call(*args, **kwargs):
                calls["n"] += 1
                if calls["n"] == calls["fail_at"]:
                    raise OSError(err, os.strerror(err))
                return real(*args, **kwargs)
            return call

        for fail_at in range(1, 100):
            calls.update(n=0, fail_at=fail_at)
            with monkeypatch.context() as patch:
                for fn in FAULTED:
                    patch.setattr(os, fn, faulty(getattr(os, fn)))
                patch.setattr(sandbox_paths, "mount_of", faulty(sandbox_paths.mount_of))
                try:
                    operation(sandbox)
                    failed = None
                except SandboxError as exc:
                    failed = exc
            if failed is None:
                assert calls["n"] < fail_at, f"{name}: call {fail_at} failed and the operation still succeeded"
                break
            cause = failed.__cause__
            while cause is not None and not isinstance(cause, OSError):
                cause = cause.__cause__
            assert isinstance(cause, OSError) and cause.errno == err, f"{name}: call {fail_at}: {failed!r}"
            assert _state(sandbox) == before, f"{name}: call {fail_at} failing changed the sandbox"
        else:
            pytest.fail(f"{name} never completed")
        assert fail_at > 1, f"{name}: no OS call was intercepted"
    sandbox.close()
    assert os.listdir(tmp_path) == []


# ------------------------------------------------------------------ focused checks
def test_close_raises_a_sandbox_error_listing_leftovers_but_is_closed(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch):
    sandbox = Sandbox(parent_dir=str(tmp_path))
    sandbox.reset()
    sandbox.write("a/b.txt", "x")
    sandbox.write("c.txt", "y")
    root = sandbox.root
    real_unlink = os.unlink

    def unlink(name, *args, **kwargs):
        if name == "b.txt":
            raise PermissionError(errno.EPERM, "Operation not permitted")
        return real_unlink(name, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", unlink)
    with pytest.raises(SandboxError, match=r"could not remove 1 entries.*a/b\.txt \(Operation not permitted\)") \
            as excinfo:
        sandbox.close()
    assert excinfo.value.left == [("a/b.txt", "Operation not permitted")]
    assert sandbox.closed and sorted(os.listdir(root)) == ["a"]
    sandbox.close()  # closed: nothing more to report
    monkeypatch.undo()
    _load("_repro_util").force_remove(root)


def test_reset_warns_about_what_the_old_directory_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    sandbox = Sandbox(parent_dir=str(tmp_path))
    sandbox.reset()
    sandbox.write("stuck.txt", "x")
    old = sandbox.root
    real_unlink = os.unlink

    def unlink(name, *args, **kwargs):
        if name == "stuck.txt":
            raise PermissionError(errno.EPERM, "Operation not permitted")
        return real_unlink(name, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", unlink)
    with pytest.warns(RuntimeWarning, match="stuck.txt"):
        sandbox.reset()
    assert sandbox.root != old and sandbox.list() == []
    monkeypatch.undo()
    sandbox.close()
    _load("_repro_util").force_remove(old)


def test_moves_keep_every_path_within_the_limits(tmp_path: Path):
    sandbox = Sandbox(parent_dir=str(tmp_path))
    sandbox.reset()
    deep = "/".join(f"d{i}" for i in range(MAX_DEPTH - 1))
    sandbox.write(f"{deep}/f.txt", "x")
    sandbox.write("x/y.txt", "y")
    with pytest.raises(SandboxError, match=f"deeper than {MAX_DEPTH} levels"):
        sandbox.move("x", f"{deep}/x")
    sandbox.move("x/y.txt", f"{deep}/y.txt")  # a file one level up fits exactly
    assert sandbox.read(f"{deep}/y.txt") == "y"
    copy = pickle.loads(pickle.dumps(sandbox))
    assert copy.read(f"{deep}/y.txt") == "y"
    copy.close()
    sandbox.close()


def test_reclaim_tells_dead_owners_from_live_ones(tmp_path: Path):
    """Reused pid (same pid, another start time), a live owner, another pid namespace,
    an unparseable name and someone else's directory."""
    pid, start, namespace = module._owner_tag()
    parent = os.getppid()
    parent_start = module._proc_stat(parent)[1] if module._proc_stat(parent) else 0
    names = {
        "reused": f"tepa-sandbox-{parent}-{parent_start + 12345}-{namespace}-aaaa",
        "mine": f"tepa-sandbox-{pid}-{start}-{namespace}-bbbb",
        "live": f"tepa-sandbox-{parent}-{parent_start}-{namespace}-cccc",
        "other namespace": f"tepa-sandbox-{parent}-{parent_start + 1}-{namespace + 1}-dddd",
        "old format": "tepa-sandbox-x1y2z3ab",
        "my earlier self": f"tepa-sandbox-{pid}-{start + 1}-{namespace}-eeee",
    }
    for name in names.values():
        os.makedirs(tmp_path / name / "sub")
        (tmp_path / name / "sub" / "f.txt").write_text("x")
    foreign = f"tepa-sandbox-{parent}-{parent_start + 99}-{namespace}-ffff"  # a dead owner, not our user
    if os.geteuid() == 0:
        os.mkdir(tmp_path / foreign)
        os.chown(tmp_path / foreign, 65534, 65534)
    found = module.reclaim_orphans(str(tmp_path))
    dead = {names["reused"], names["my earlier self"]}
    assert sorted(os.path.basename(o.path) for o in found) == sorted(dead)
    assert all(isinstance(o, module.Orphan) and o.removed for o in found)
    kept = (set(names.values()) - dead) | ({foreign} if os.geteuid() == 0 else set())
    assert set(os.listdir(tmp_path)) == kept
    assert module.owner_alive(pid, start, namespace) is True
    assert module.owner_alive(parent, parent_start + 12345, namespace) is False
    assert module.owner_alive(parent, parent_start, namespace + 1) is None


def test_a_zombie_owner_is_dead(tmp_path: Path):
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 60
    while module._proc_stat(child.pid)[0] != "Z" and time.monotonic() < deadline:
        time.sleep(0.01)  # exits, and stays a zombie until reaped
    _, _, namespace = module._owner_tag()
    info = module._proc_stat(child.pid)
    assert info is not None and module.owner_alive(child.pid, info[1], namespace) is False
    child.wait()


def test_no_sigterm_handler_is_installed_unless_the_program_opts_in(tmp_path: Path):
    script = r"""
import signal, sys, threading
import gymnasium as gym
import tepa_envs
from tepa_envs.file_ops import install_sigterm_cleanup, remove_sigterm_cleanup
from tepa_envs.file_ops.sandbox import Sandbox
mine = lambda signum, frame: None
def name(handler):
    if handler == signal.SIG_DFL:
        return "default"
    return "mine" if handler is mine else getattr(handler, "__name__", str(handler))
seen = []
s = Sandbox(parent_dir=sys.argv[1])
s.reset()
env = gym.make("TEPA/FileOps-v0", sandbox_dir=sys.argv[1])
env.reset(seed=0)
env.step(0)
seen.append(name(signal.getsignal(signal.SIGTERM)))  # the default: nothing installed
env.close()
opted = gym.make("TEPA/FileOps-v0", sandbox_dir=sys.argv[1], cleanup_on_sigterm=True)
opted.reset(seed=0)
seen.append(name(signal.getsignal(signal.SIGTERM)))  # the env argument opts in at reset
opted.close()
remove_sigterm_cleanup()
seen.append(name(signal.getsignal(signal.SIGTERM)))
seen.append(str(install_sigterm_cleanup()) + str(install_sigterm_cleanup()))  # installed once
remove_sigterm_cleanup()
signal.signal(signal.SIGTERM, mine)
seen.append(str(install_sigterm_cleanup()) + name(signal.getsignal(signal.SIGTERM)))  # the program's kept
remove_sigterm_cleanup()
seen.append(name(signal.getsignal(signal.SIGTERM)))
errors = []
thread = threading.Thread(target=lambda: errors.append(_try()))
def _try():
    try:
        install_sigterm_cleanup()
    except ValueError as exc:
        return "ValueError" if "main thread" in str(exc) else str(exc)
    return "installed"
thread.start(); thread.join()
seen += errors
s.close()
print(" ".join(seen))
"""
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
                         check=True, cwd=tmp_path, env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert out.stdout.split() == ["default", "_on_sigterm", "default", "TrueFalse", "Falsemine", "mine", "ValueError"]


def test_tepa_bench_opts_in_for_the_length_of_a_command_only(tmp_path: Path):
    script = r"""
import signal, sys
from tepa_envs.agents.evaluation.cli import app
seen = []
original = app.cmd_clean
def spy(args):
    seen.append(getattr(signal.getsignal(signal.SIGTERM), "__name__", "other"))
    return original(args)
app.cmd_clean = spy
seen.append(str(app.main(["clean", "--dir", sys.argv[1]])))
seen.append(str(signal.getsignal(signal.SIGTERM) == signal.SIG_DFL))
print(" ".join(seen))
"""
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
                         check=True, cwd=tmp_path)
    assert out.stdout.split()[-3:] == ["_on_sigterm", "0", "True"], out.stdout + out.stderr


def test_tepa_bench_clean_defaults_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    from tepa_envs.agents.evaluation.cli import main

    assert tempfile.gettempdir() in module.default_sandbox_dirs()
    assert main(["clean", "--dir", str(tmp_path)]) == 0
    assert "0 removed" in capsys.readouterr().out
    assert main(["clean", "--dir", str(tmp_path / "missing")]) == 2


def test_lock_serializes_tools_and_pickling_drops_it(tmp_path: Path):
    sandbox = Sandbox(parent_dir=str(tmp_path))
    sandbox.reset()
    sandbox.write("a.txt", "a")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        copy = pickle.loads(pickle.dumps(sandbox))
    assert copy._lock is not sandbox._lock and copy.read("a.txt") == "a"
    copy.close()
    sandbox.close()


def test_the_env_closes_even_when_its_sandbox_leaves_something(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from tepa_envs.file_ops.env import FileOpsEnv

    env = FileOpsEnv(phase_lengths=(2, 2, 2, 2), max_file_bytes=64, sandbox_dir=str(tmp_path))
    env.reset(seed=1)
    real_close = env.sandbox.close

    def close():
        real_close()
        raise SandboxError("root", "could not remove 1 entries: x (Permission denied)")

    monkeypatch.setattr(env.sandbox, "close", close)
    with pytest.raises(SandboxError, match="per-file quota") as excinfo:
        env.step(0)  # the export is over 64 bytes: the step fails and discards the sandbox
    if sys.version_info >= (3, 11):
        assert any("closing the sandbox" in note for note in excinfo.value.__notes__)
    with pytest.raises(SandboxError, match="could not remove"):
        env.close()
    assert env.sandbox.closed and os.listdir(tmp_path) == []
