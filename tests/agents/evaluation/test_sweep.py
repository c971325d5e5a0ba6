"""``tepa-bench sweep``: specs, bad specs refused before any work, dry runs, resume
after ``kill -9`` (identical results, no duplicate rows, an intact store), Ctrl-C,
and reports from a store identical to ``tepa-bench run``'s files."""

import json
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tepa_envs.agents.evaluation.cli.commands as commands
from tepa_envs.agents.evaluation.cli import main
from tepa_envs.agents.evaluation.engine.spec import SpecError, load_spec, parse_spec

SPEC = """
name = "small"
seeds = 6
methods = ["tepa", "no-memory", "append-only"]

[statistics]
n_perm = 500

[reader]
grid = {follow_prob = [0.9, 0.99]}

[[env]]
id = "TEPA/RegimeDrift-v0"
kwargs = {phase_lengths = [5, 5, 5, 5]}
grid = {n_keys = [1, 2]}

[[env]]
id = "TEPA/PreferenceStream-v0"
kwargs = {phase_lengths = [5, 5, 5, 5]}
methods = ["tepa", "no-memory"]
"""


def write_spec(tmp_path, text=SPEC, name="spec.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def without_elapsed(data: bytes) -> bytes:
    """results.json with its one wall-clock field (documented as not reproducible) blanked."""
    return re.sub(rb'"elapsed_s": [0-9.e+-]+', b'"elapsed_s": 0', data)


def report_files(directory: Path) -> dict[str, bytes]:
    """Every results file under ``directory`` (manifests aside: they carry a run id and a date)."""
    files = {}
    for path in sorted(directory.rglob("*")):
        if path.is_file() and path.name != "manifest.json":
            data = path.read_bytes()
            files[str(path.relative_to(directory))] = without_elapsed(data) if path.name == "results.json" else data
    return files


def episode_rows(store: Path) -> list[tuple]:
    db = sqlite3.connect(store)
    try:
        return db.execute("SELECT c.cell_id, e.seed, e.n_tasks, e.successes, e.success, e.phase, e.trials, "
                          "e.detection FROM episodes e JOIN cells c ON c.id = e.cell ORDER BY c.cell_id, e.seed"
                          ).fetchall()
    finally:
        db.close()


# ------------------------------------------------------------------ spec
def test_a_spec_expands_to_cells_times_seeds(tmp_path):
    spec = load_spec(write_spec(tmp_path))
    # RegimeDrift: 2 n_keys x 2 follow_prob x 3 methods; PreferenceStream: 2 follow_prob x 2 methods
    assert len(spec.cells) == 12 + 4 and spec.seeds == tuple(range(6)) and spec.episodes == 96
    assert len(spec.groups()) == 6 and spec.statistics.n_perm == 500
    first = spec.cells[0]
    assert (first.env_id, first.env_kwargs, first.label, first.reader_kwargs) == (
        "TEPA/RegimeDrift-v0", {"phase_lengths": [5, 5, 5, 5], "n_keys": 1}, "tepa", {"follow_prob": 0.9})
    # identities are stable: the same spec loaded again (another sweep) names the same cells
    assert [c.cell_id for c in load_spec(write_spec(tmp_path, name="again.toml")).cells] == \
        [c.cell_id for c in spec.cells]


def test_seeds_methods_tables_and_all(tmp_path):
    spec = parse_spec({"seeds": {"start": 100, "count": 3},
                       "methods": ["all", {"label": "tepa count", "spec": "tepa",
                                           "kwargs": {"failed_candidate": "count"}}],
                       "env": [{"id": "TEPA/RegimeDrift-v0", "kwargs": {"phase_lengths": [3, 3, 3, 3]}}]})
    assert spec.seeds == (100, 101, 102)
    assert spec.cells[-1].label == "tepa count" and len(spec.cells) > 10


def _bad(tmp_path, text):
    return write_spec(tmp_path, text)


BAD_SPECS = [
    ("unknown env", 'seeds = 2\nmethods = ["tepa"]\n[[env]]\nid = "TEPA/Nope-v0"\n', "unknown environment"),
    ("unknown method", 'seeds = 2\nmethods = ["tepa", "nope"]\n[[env]]\nid = "TEPA/RegimeDrift-v0"\n',
     "unknown method 'nope'"),
    ("unknown import path", 'seeds = 2\nmethods = ["no_such_module:Nope"]\n[[env]]\nid = "TEPA/RegimeDrift-v0"\n',
     "no_such_module"),
    ("empty grid", 'seeds = 2\nmethods = ["tepa"]\n[[env]]\nid = "TEPA/RegimeDrift-v0"\ngrid = {n_keys = []}\n',
     "empty grid"),
    ("empty methods", 'seeds = 2\nmethods = []\n[[env]]\nid = "TEPA/RegimeDrift-v0"\n', "methods is empty"),
    ("no env", 'seeds = 2\nmethods = ["tepa"]\n', "no [[env]]"),
    ("malformed TOML", 'seeds = 2\nmethods = ["tepa"\n[[env]]\n', "malformed TOML"),
    ("unknown kwarg", 'seeds = 2\nmethods = ["tepa"]\n[[env]]\nid = "TEPA/RegimeDrift-v0"\ngrid = {nkeys = [1]}\n',
     "unknown kwarg 'nkeys'"),
    ("bad kwarg value", 'seeds = 2\nmethods = ["tepa"]\n[[env]]\nid = "TEPA/RegimeDrift-v0"\n'
                        'grid = {n_keys = [0]}\n', "n_keys"),
    ("typo at top level", 'seed = 2\nmethods = ["tepa"]\n[[env]]\nid = "TEPA/RegimeDrift-v0"\n', "unknown key 'seed'"),
    ("no seeds", 'methods = ["tepa"]\n[[env]]\nid = "TEPA/RegimeDrift-v0"\n', "seeds is missing"),
    ("grid not a list", 'seeds = 2\nmethods = ["tepa"]\n[[env]]\nid = "TEPA/RegimeDrift-v0"\ngrid = {n_keys = 2}\n',
     "must be a list"),
    ("bad reader kwargs", 'seeds = 2\nmethods = ["tepa"]\n[reader]\nkwargs = {folow_prob = 0.9}\n'
                          '[[env]]\nid = "TEPA/RegimeDrift-v0"\n', "folow_prob"),
]


@pytest.mark.parametrize("case, text, needle", BAD_SPECS, ids=[c[0] for c in BAD_SPECS])
def test_a_bad_spec_is_one_line_exit_2_before_any_work(tmp_path, monkeypatch, capsys, case, text, needle):
    def no_work(*args, **kwargs):
        raise AssertionError("work started before the spec was checked")

    monkeypatch.setattr(commands, "execute", no_work)
    store = tmp_path / "r.db"
    assert main(["sweep", str(_bad(tmp_path, text)), "--store", str(store), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tepa-bench: error:") and needle in err and "\n" not in err, err
    assert not store.exists()  # not even the store was created


def test_spec_errors_name_the_file(tmp_path):
    with pytest.raises(SpecError, match=r"spec\.toml: .*unknown environment"):
        load_spec(write_spec(tmp_path, 'seeds = 2\nmethods = ["tepa"]\n[[env]]\nid = "X-v0"\n'))


def test_dry_run_prints_cells_and_episodes_and_runs_nothing(tmp_path, capsys):
    store = tmp_path / "r.db"
    assert main(["sweep", str(write_spec(tmp_path)), "--store", str(store), "--dry-run"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 17 and all("0/6 stored" in line for line in lines[:16])
    assert lines[-1] == "small: 16 cells x 6 seeds = 96 episodes in 6 groups; 0 already in " \
                        f"{store}, 96 to run"
    assert not store.exists()


# ------------------------------------------------------------------ run, resume, report
def test_sweep_then_report_rerun_skips_everything_and_workers_do_not_matter(tmp_path, capsys):
    spec, store = write_spec(tmp_path), tmp_path / "r.db"
    assert main(["sweep", str(spec), "--store", str(store), "--workers", "2", "--quiet", "--out",
                 str(tmp_path / "a")]) == 0
    assert "96 episodes in" in capsys.readouterr().out
    rows = episode_rows(store)
    assert len(rows) == 96 == len({(r[0], r[1]) for r in rows})
    assert main(["sweep", str(spec), "--store", str(store), "--quiet"]) == 0
    assert "nothing to run, all 96 episodes are already in" in capsys.readouterr().out
    assert episode_rows(store) == rows
    assert main(["report", str(store), "--out", str(tmp_path / "b")]) == 0
    a, b = report_files(tmp_path / "a"), report_files(tmp_path / "b")
    assert a == b and len([name for name in a if name.endswith("results.json")]) == 6
    index = json.loads((tmp_path / "b" / "sweep.json").read_text())
    assert [g["methods"] for g in index["groups"]][-1] == ["tepa", "no-memory"]
    for group in index["groups"]:
        results = json.loads((tmp_path / "b" / group["directory"] / "results.json").read_text())
        assert results["seeds"] == list(range(6)) and results["n_perm"] == 500
        assert results["env_kwargs"] == group["env_kwargs"] and results["reader_kwargs"] == group["reader_kwargs"]
    # one worker (in this process) gives the same bytes as two
    assert main(["sweep", str(spec), "--store", str(tmp_path / "one.db"), "--workers", "1", "--quiet",
                 "--out", str(tmp_path / "one")]) == 0
    assert report_files(tmp_path / "one") == a


def test_report_of_a_run_store_is_the_run(tmp_path):
    args = ["run", "TEPA/RegimeDrift-v0", "--methods", "tepa,no-memory,lww", "--seeds", "5", "--workers", "2",
            "--quiet", "--env-kwargs", '{"phase_lengths": [5, 5, 5, 5], "n_keys": 2}', "--alpha", "0.1"]
    assert main([*args, "--out", str(tmp_path / "run"), "--store", str(tmp_path / "r.db")]) == 0
    assert main(["report", str(tmp_path / "r.db"), "--out", str(tmp_path / "report")]) == 0
    assert report_files(tmp_path / "run") == report_files(tmp_path / "report")
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [
        "drift_metrics.csv", "manifest.json", "results.csv", "results.json", "success.png"]  # the temporary store is gone
    # a run without --store writes the same files (through a temporary store)
    assert main([*args, "--out", str(tmp_path / "plain")]) == 0
    assert report_files(tmp_path / "plain") == report_files(tmp_path / "run")
    assert sorted(p.name for p in (tmp_path / "plain").iterdir()) == [
        "drift_metrics.csv", "manifest.json", "results.csv", "results.json", "success.png"]


RESUME_SPEC = """
seeds = 60
methods = ["tepa", "no-memory", "append-only", "lww"]
[statistics]
n_perm = 500
[[env]]
id = "TEPA/RegimeDrift-v0"
kwargs = {phase_lengths = [8, 8, 8, 8]}
grid = {n_keys = [1, 2]}
"""


def _stored(store: Path) -> int:
    if not store.exists():
        return 0
    try:
        db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5)
        try:
            return db.execute("SELECT count(*) FROM episodes").fetchone()[0]
        finally:
            db.close()
    except sqlite3.OperationalError:
        return 0


def _default_sigint() -> None:
    # a signal ignored by the parent stays ignored across exec (as under nohup), and a library
    # an earlier test loaded may have left SIGINT ignored in this pytest process: start the
    # child the way a terminal starts it
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _sweep_process(spec, store, *extra):
    return subprocess.Popen([sys.executable, "-m", "tepa_envs.agents.evaluation.cli", "sweep", str(spec), "--store",
                             str(store), "--workers", "2", "--batch", "4", "--quiet", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=spec.parent,
                            preexec_fn=_default_sigint)


def _wait_for_rows(proc, store, at_least, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if _stored(store) >= at_least:
            return True
        time.sleep(0.02)
    return False


def test_resume_after_kill_9_gives_identical_results_and_an_intact_store(tmp_path):
    spec = write_spec(tmp_path, RESUME_SPEC)
    total = 2 * 4 * 60
    reference = tmp_path / "reference.db"
    assert main(["sweep", str(spec), "--store", str(reference), "--workers", "1", "--quiet", "--out",
                 str(tmp_path / "ref")]) == 0
    store = tmp_path / "killed.db"
    counts = []
    for kill, at_least in enumerate((40, 200)):
        proc = _sweep_process(spec, store)
        try:
            assert _wait_for_rows(proc, store, _stored(store) + at_least), "the sweep ended before it could be killed"
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        db = sqlite3.connect(store)
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        counts.append(db.execute("SELECT count(*) FROM episodes").fetchone()[0])
        db.close()
    assert 0 < counts[0] < counts[1] < total
    assert main(["sweep", str(spec), "--store", str(store), "--workers", "2", "--quiet", "--out",
                 str(tmp_path / "resumed")]) == 0
    rows = episode_rows(store)
    assert len(rows) == total == len({(r[0], r[1]) for r in rows})  # no duplicate (cell, seed)
    assert rows == episode_rows(reference)
    assert report_files(tmp_path / "resumed") == report_files(tmp_path / "ref")


def test_ctrl_c_stops_cleanly_and_says_how_to_resume(tmp_path):
    # longer episodes than RESUME_SPEC's: on a fast machine the short ones could all finish
    # between the 40th stored row and the signal
    spec = write_spec(tmp_path, RESUME_SPEC.replace("phase_lengths = [8, 8, 8, 8]", "phase_lengths = [48, 48, 48, 48]"))
    store = tmp_path / "r.db"
    proc = _sweep_process(spec, store)
    try:
        assert _wait_for_rows(proc, store, 40)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and f"Resume with: tepa-bench sweep {spec} --store {store}" in err
    stored = _stored(store)
    assert 40 <= stored < 480 and f"{stored:,} of 480 episodes are in" in err
    assert main(["sweep", str(spec), "--store", str(store), "--quiet"]) == 0
    assert _stored(store) == 480


def test_a_method_error_in_a_sweep_is_one_line_and_keeps_the_finished_episodes(tmp_path, capsys):
    (tmp_path / "broken_memory.py").write_text(
        "class Broken:\n    name = 'broken'\n    def observe(self, evidence):\n        if evidence.t > 2:\n"
        "            raise KeyError('key')\n    def retrieve(self, key, context=''):\n        return []\n"
        "    def reset(self):\n        pass\n")
    spec = write_spec(tmp_path, 'seeds = 3\nmethods = ["tepa", "broken_memory:Broken"]\n[[env]]\n'
                                'id = "TEPA/RegimeDrift-v0"\nkwargs = {phase_lengths = [5, 5, 5, 5]}\n')
    proc = subprocess.run([sys.executable, "-m", "tepa_envs.agents.evaluation.cli", "sweep", str(spec), "--store",
                           "r.db", "--workers", "2", "--batch", "1", "--quiet"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1].startswith("tepa-bench: error: KeyError: 'key'")
    assert "broken_memory.py:5" in proc.stderr and "Traceback" not in proc.stderr
    assert 1 <= _stored(tmp_path / "r.db") <= 3  # tepa's finished episodes were kept


def test_user_methods_by_import_path_run_from_the_working_directory(tmp_path):
    (tmp_path / "plain_memory.py").write_text(
        "from tepa_envs.agents.memories.baselines import LastWriteWins\n\n"
        "class Mine(LastWriteWins):\n    name = 'mine'\n")
    if not _has_lww():
        pytest.skip("LastWriteWins moved")
    spec = write_spec(tmp_path, 'seeds = 3\nmethods = ["plain_memory:Mine", "no-memory"]\n[[env]]\n'
                                'id = "TEPA/RegimeDrift-v0"\nkwargs = {phase_lengths = [5, 5, 5, 5]}\n')
    proc = subprocess.run([sys.executable, "-m", "tepa_envs.agents.evaluation.cli", "sweep", str(spec), "--store",
                           "r.db", "--workers", "2", "--quiet", "--out", "out"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "out" / "results.json").read_text())["methods"] == ["plain_memory:Mine",
                                                                                     "no-memory"]


def _has_lww():
    try:
        from tepa_envs.agents.memories.baselines import LastWriteWins  # noqa: F401
    except ImportError:
        return False
    return True


def test_the_documented_spec_example_parses(tmp_path):
    readme = (Path(__file__).resolve().parents[3] / "docs" / "sweeps.md").read_text()
    (block,) = re.findall(r"```toml\n(.*?)```", readme, flags=re.S)
    path = write_spec(tmp_path, block, name="drift-grid.toml")
    spec = load_spec(path, validate=False)  # its my_pkg.memory:MyMemory exists only in the example
    # RegimeDrift: 3 n_keys x 2 follow_prob x 6 methods; PreferenceStream: 2 follow_prob x 2 methods
    assert len(spec.cells) == 36 + 4 and spec.episodes == 40 * 200 and spec.name == "drift-grid"
    with pytest.raises(SpecError, match="my_pkg"):
        load_spec(path)
