"""One run per ``--out`` at a time, and manifests that vouch only for this run's bytes
(issue 29, item 8)."""

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

import tepa_envs.agents.evaluation.cli.commands as commands
from tepa_envs.agents.evaluation.cli import main
from tepa_envs.agents.evaluation.engine.jobs import Job
from tepa_envs.agents.evaluation.engine.spec import single_group_spec
from tepa_envs.agents.evaluation.engine.store import Store
from tepa_envs.agents.evaluation.engine.sweep import run_batch
from tepa_envs.agents.evaluation.outputs.files import (
    LOCK_NAME, OutputDirLocked, check_manifest, lock_output_dir, release_output_dir, verify_manifest,
    write_bytes_atomic, write_manifest,
)

pytestmark = pytest.mark.skipif(sys.platform.startswith("win"), reason="POSIX flock and signals")

ENV = "TEPA/RegimeDrift-v0"
SMALL = {"phase_lengths": [5, 5, 5, 5]}

HOLDER = textwrap.dedent("""
    import sys
    from tepa_envs.agents.evaluation.outputs.files import lock_output_dir
    lock_output_dir(sys.argv[1])
    print("locked", flush=True)
    sys.stdin.read()
""")


@pytest.fixture
def holder(tmp_path):
    """A live process holding the lock of ``tmp_path / 'out'``."""
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "locked"
        yield out, proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("store") / "r.db"
    spec = single_group_spec(ENV, SMALL, ["tepa", "no-memory"], range(2))
    with Store.open(path) as st:
        ids = st.add_cells(spec.cells)
        episodes, _ = run_batch([(i, Job.resolve(ENV, c.method, s, env_kwargs=SMALL))
                                 for i, c in zip(ids, spec.cells) for s in range(2)])
        st.add_episodes(episodes)
    return path


def no_work(*args, **kwargs):
    raise AssertionError("work started while another run held --out")


@pytest.mark.parametrize("command", ["run", "report", "suite", "reproduce", "sweep"])
def test_a_second_run_into_a_held_out_is_refused_naming_the_holder(holder, store, tmp_path, monkeypatch, capsys,
                                                                  command):
    out, proc = holder
    for name in ("evaluate_through_store", "write_report", "reproduce_setting", "reproduce_all", "execute"):
        monkeypatch.setattr(commands, name, no_work)
    import tepa_envs.agents.evaluation.cli.suite as suite
    monkeypatch.setattr(suite, "run_suite", no_work)
    spec = tmp_path / "spec.toml"
    spec.write_text('seeds = 2\nmethods = ["tepa"]\n[[env]]\nid = "TEPA/RegimeDrift-v0"\n')
    argv = {"run": ["run", ENV, "--methods", "tepa", "--seeds", "2", "--out", str(out), "--quiet"],
            "report": ["report", str(store), "--out", str(out)],
            "suite": ["suite", "--seeds", "2", "--out", str(out), "--quiet"],
            "reproduce": ["reproduce", "controlled", "--quick", "--out", str(out), "--quiet"],
            "sweep": ["sweep", str(spec), "--store", str(tmp_path / "s.db"), "--out", str(out), "--quiet"]}[command]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tepa-bench: error: --out:") and "\n" not in err
    assert f"pid {proc.pid}" in err and "in use" in err


def test_the_lock_of_a_killed_run_is_taken_over_and_released_at_the_end(holder, store, capsys):
    out, proc = holder
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert (out / LOCK_NAME).exists()  # a stale lock file: its flock died with the process
    assert main(["report", str(store), "--out", str(out)]) == 0
    assert verify_manifest(out)
    assert not (out / LOCK_NAME).exists()


def test_the_lock_is_reentrant_in_one_process_and_exclusive_across(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    lock_output_dir(out)
    lock_output_dir(out)
    try:
        proc = subprocess.run([sys.executable, "-c", HOLDER, str(out)], input="", capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode != 0 and OutputDirLocked.__name__ in proc.stderr and f"pid {os.getpid()}" in proc.stderr
    finally:
        release_output_dir(out)
    assert not (out / LOCK_NAME).exists()


def test_the_manifest_hashes_the_bytes_this_run_wrote_not_what_is_on_disk(tmp_path):
    out = tmp_path / "out"
    write_bytes_atomic(out / "results.json", b'{"run": "A"}\n')
    (out / "results.json").write_bytes(b'{"run": "B"}\n')  # another process overwrites it
    write_manifest(out, ["results.json"], seeds=[0], methods=["tepa"])
    assert not verify_manifest(out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["files"]["results.json"]["bytes"] == len(b'{"run": "A"}\n')
    write_bytes_atomic(out / "results.json", b'{"run": "A"}\n')
    assert check_manifest(out)["files"]["results.json"]


def test_a_run_removes_the_temporary_files_a_killed_run_left(store, tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    leftovers = [".results.json.0123456789ab.tmp", ".success.png.abcdefabcdef.tmp", ".tepa-write-check.x1y2.tmp"]
    for name in leftovers:
        (out / name).write_text("torn")
    (out / "notes.tmp").write_text("mine")  # not a tepa-bench temporary file: kept
    assert main(["report", str(store), "--out", str(out)]) == 0
    names = set(os.listdir(out))
    assert not names & set(leftovers) and "notes.tmp" in names
    assert verify_manifest(out)


def test_two_concurrent_runs_into_one_out_never_leave_a_manifest_for_the_other(tmp_path):
    """The issue's race: two `tepa-bench run --out same` started together. One refuses
    (exit 2, naming the holder) or they run one after the other; either way the
    manifest left verifies."""
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "tepa_envs.agents.evaluation.cli", "run", ENV, "--methods", "tepa",
            "--seeds", "2", "--env-kwargs", json.dumps(SMALL), "--workers", "1", "--quiet", "--out", str(out)]
    procs = [subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    codes = sorted(code for code, _ in results)
    assert codes in ([0, 0], [0, 2]), results
    for code, err in results:
        if code == 2:
            assert "in use by another tepa-bench run (pid" in err
    assert verify_manifest(out)
    assert not (out / LOCK_NAME).exists()
