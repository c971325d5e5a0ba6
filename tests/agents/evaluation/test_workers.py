"""The worker pool: workers die with their parent (even ``kill -9``) and clean up,
never more workers than jobs, and a job's exception comes out as one line."""

import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import tepa_envs.agents.evaluation.engine.backends as backends
from tepa_envs.agents.evaluation.cli import main
from tepa_envs.agents.evaluation.engine.executor import run_jobs
from tepa_envs.agents.evaluation.engine.pool import JobError

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads /proc (Linux)")


def _stat(pid):
    try:
        with open(f"/proc/{pid}/stat") as handle:
            text = handle.read()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()  # fields from 'state' on


def children(pid):
    kids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(entry)
            if fields is not None and int(fields[1]) == pid:
                kids.append(int(entry))
    return kids


def running(pid):
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")  # a zombie has exited


def _kill_parent_and_wait_for_workers(tmp_path, env_id, prelude=""):
    """Start ``tepa-bench run ENV --methods all --seeds 200 --workers 2``, wait for its two
    workers, ``kill -9`` it; the workers' pids and how long they outlived it."""
    sandbox_parent = tmp_path / "tmp"
    sandbox_parent.mkdir()
    code = prelude + "from tepa_envs.agents.evaluation.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen([sys.executable, "-c", "import sys\n" + code, "run", env_id, "--methods", "all",
                             "--seeds", "200", "--workers", "2", "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "TMPDIR": str(sandbox_parent)}, cwd=tmp_path)
    workers = []
    try:
        deadline = time.monotonic() + 120
        while len(workers) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
            workers = children(proc.pid)
        assert len(workers) == 2, "the run never started its two workers"
        time.sleep(1.0)  # let them get into their episodes
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        killed = time.monotonic()
        while any(running(w) for w in workers) and time.monotonic() - killed < 10:
            time.sleep(0.05)
        return workers, time.monotonic() - killed, sandbox_parent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for worker in workers:  # never leave our own processes behind when the test fails
            if running(worker):
                os.kill(worker, signal.SIGKILL)


def test_workers_exit_promptly_when_the_parent_is_killed(tmp_path):
    workers, outlived, _ = _kill_parent_and_wait_for_workers(tmp_path, "TEPA/RegimeDrift-v0")
    assert not any(running(w) for w in workers) and outlived < 5.0, f"workers outlived their parent by {outlived:.1f}s"


def test_killed_workers_remove_their_sandboxes(tmp_path):
    workers, outlived, sandboxes = _kill_parent_and_wait_for_workers(tmp_path, "TEPA/FileOps-v0")
    assert outlived < 5.0
    time.sleep(0.2)
    assert [p.name for p in sandboxes.iterdir()] == [], "a worker's FileOps sandbox was left behind"


def test_workers_exit_without_prctl_through_the_portable_fallback(tmp_path):
    prelude = "import tepa_envs.agents.evaluation.engine.pool as h; h._PR_SET_PDEATHSIG = 0  # prctl(0): a no-op\n"
    workers, outlived, _ = _kill_parent_and_wait_for_workers(tmp_path, "TEPA/RegimeDrift-v0", prelude)
    assert not any(running(w) for w in workers) and outlived < 5.0


def _pid(job):
    return os.getpid()


def test_never_more_workers_than_jobs(monkeypatch):
    sizes = []
    real = backends.ProcessPoolExecutor

    def recording(max_workers=None, **kwargs):
        sizes.append(max_workers)
        return real(max_workers=max_workers, **kwargs)

    monkeypatch.setattr(backends, "ProcessPoolExecutor", recording)
    assert len(run_jobs([1, 2, 3], _pid, 64)) == 3
    assert sizes == [3]
    assert run_jobs([1], _pid, 64) == [os.getpid()]  # one job: no pool at all
    assert sizes == [3]


def _fails(job):
    if job == 2:
        {}["missing"]
    return job


@pytest.mark.parametrize("workers", [1, 2])
def test_a_job_error_is_one_picklable_line_with_the_raising_frame(workers):
    with pytest.raises(JobError) as info:
        run_jobs([0, 1, 2, 3], _fails, workers, describe=lambda job: f"job {job}")
    error = info.value
    assert error.exc_type == "KeyError" and error.index == 2 and error.job == "job 2"
    line = str(error)
    assert "\n" not in line and line.startswith("KeyError: 'missing'")
    assert f"test_workers.py:{_fails.__code__.co_firstlineno + 2}" in line
    assert "{}[\"missing\"]" in error.traceback_text
    assert str(pickle.loads(pickle.dumps(error))) == line


def test_a_user_methods_error_in_a_worker_is_one_line(tmp_path):
    (tmp_path / "broken_memory.py").write_text(textwrap.dedent("""
        class Broken:
            name = "broken"

            def observe(self, evidence):
                if evidence.t > 2:
                    raise KeyError("key")

            def retrieve(self, key, context=""):
                return []

            def reset(self):
                pass
    """))
    proc = subprocess.run([sys.executable, "-m", "tepa_envs.agents.evaluation.cli", "run", "TEPA/RegimeDrift-v0",
                           "--methods", "tepa,broken_memory:Broken", "--seeds", "4", "--workers", "2", "--quiet",
                           "--env-kwargs", '{"phase_lengths": [5, 5, 5, 5]}'],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 1
    lines = [line for line in proc.stderr.splitlines() if line.startswith("tepa-bench")]
    assert lines == [proc.stderr.strip().splitlines()[-1]] and "Traceback" not in proc.stderr
    assert lines[0].startswith("tepa-bench: error: KeyError: 'key'")
    assert "broken_memory.py:7" in lines[0] and "broken_memory:Broken" in lines[0]


def test_user_code_calling_exit_does_not_end_the_run_silently(tmp_path, capsys):
    (tmp_path / "exiting_memory.py").write_text(textwrap.dedent("""
        import sys

        class Exiting:
            name = "exiting"

            def observe(self, evidence):
                sys.exit(0)

            def retrieve(self, key, context=""):
                return []

            def reset(self):
                pass
    """))
    sys.path.insert(0, str(tmp_path))
    try:
        code = main(["run", "TEPA/RegimeDrift-v0", "--methods", "exiting_memory:Exiting", "--seeds", "2",
                     "--workers", "1", "--quiet", "--env-kwargs", '{"phase_lengths": [5, 5, 5, 5]}'])
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("exiting_memory", None)
    assert code == 1
    assert "SystemExit" in capsys.readouterr().err
