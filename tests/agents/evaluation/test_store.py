"""The SQLite results store: schema round-trip, one row per (cell, seed), WAL, and
stores it must refuse (a newer schema, not a store) with one line and exit status 2."""

import json
import sqlite3

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tepa_envs.agents.evaluation.cli import commands, main
from tepa_envs.agents.evaluation.engine.evaluate import evaluate
from tepa_envs.agents.evaluation.engine.jobs import Job, MethodSpec
from tepa_envs.agents.evaluation.engine.runner import run_job, run_traced_job
from tepa_envs.agents.evaluation.engine.spec import Cell, canonical_json, single_group_spec
from tepa_envs.agents.evaluation.engine.store import (
    STORE_SCHEMA_VERSION, Store, StoreError, decode_phase, decode_success, encode_phase, encode_success,
    immediate_transaction,
)
from tepa_envs.agents.evaluation.engine.sweep import run_batch, run_episode_job

SMALL = {"phase_lengths": [5, 5, 5, 5]}
ENV = "TEPA/RegimeDrift-v0"


@given(st.lists(st.booleans(), min_size=1, max_size=300))
@settings(max_examples=50, deadline=None)
def test_success_bits_round_trip(bits):
    success = np.array(bits, dtype=bool)
    assert np.array_equal(decode_success(encode_success(success), success.size), success)


@given(st.lists(st.integers(0, 5), min_size=1, max_size=300))
@settings(max_examples=50, deadline=None)
def test_phase_run_lengths_round_trip(phases):
    phase = np.array(phases)
    assert np.array_equal(decode_phase(encode_phase(phase)), phase)


def test_schema_round_trip(tmp_path):
    """Cells and episodes written, closed, reopened: the same cells, the same episodes
    bit for bit, and the same Evaluation as the in-memory harness."""
    path = tmp_path / "r.db"
    methods = ["tepa", "no-memory", MethodSpec("tepa count", "tepa", {"failed_candidate": "count"})]
    spec = single_group_spec(ENV, SMALL, methods, range(3), {"follow_prob": 0.95})
    with Store.open(path) as store:
        assert store.schema_version() == STORE_SCHEMA_VERSION
        ids = store.add_cells(spec.cells)
        assert store.add_cells(spec.cells) == ids  # idempotent
        jobs = [(ids[i], Job.resolve(c.env_id, c.method, s, env_kwargs=c.env_kwargs, reader_kwargs=c.reader_kwargs))
                for i, c in enumerate(spec.cells) for s in spec.seeds]
        episodes, error = run_batch(jobs)
        assert error is None and store.add_episodes(episodes) == len(jobs)
        assert store.add_episodes(episodes) == 0  # already stored: kept, not duplicated
    with Store.open(path, create=False) as store:
        cells = store.cells()
        assert [c.cell_id for c in cells] == [c.cell_id for c in spec.cells]
        assert [c.method for c in cells] == methods and [c.label for c in cells] == [c.label for c in spec.cells]
        assert all(c.env_kwargs == SMALL and c.reader_kwargs == {"follow_prob": 0.95} for c in cells)
        rows = store.connection.execute(
            "SELECT cell, seed, n_tasks, successes, success, phase, trials, detection, wall_s FROM episodes "
            "ORDER BY cell, seed").fetchall()
        assert rows == sorted((e.cell, e.seed, e.n_tasks, e.successes, e.success, e.phase, e.trials, e.detection,
                               e.wall_s) for e in episodes)
        for cell, seed, n_tasks, successes, blob, phase, trials, detection, _ in rows:
            job = jobs[[(j[0], j[1].seed) for j in jobs].index((cell, seed))][1]
            success, expected_phase, expected_trials = run_job(job)
            assert np.array_equal(decode_success(blob, n_tasks), success) and successes == success.sum()
            assert np.array_equal(decode_phase(phase), expected_phase)
            assert json.loads(trials) == expected_trials
            assert json.loads(detection) == run_traced_job(job)[3]  # the episode's drift metrics
        evaluation = store.evaluation(ENV, SMALL, {"follow_prob": 0.95}, [(c.id, c.label) for c in cells], [0, 1, 2])
    reference = evaluate(ENV, methods, range(3), env_kwargs=SMALL, reader_kwargs={"follow_prob": 0.95})
    assert list(evaluation.runs) == list(reference.runs) and evaluation.seeds == reference.seeds
    assert np.array_equal(evaluation.phase, reference.phase)
    for label, run in reference.runs.items():
        assert np.array_equal(evaluation.runs[label].success, run.success)
        assert evaluation.runs[label].trials == run.trials
        assert evaluation.runs[label].metrics == run.metrics and len(run.metrics) == 3


def test_one_row_per_cell_and_seed_and_wal(tmp_path):
    with Store.open(tmp_path / "r.db") as store:
        assert store.connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        (cell,) = store.add_cells([Cell(ENV, SMALL, "tepa")])
        episode = run_episode_job((cell, Job.resolve(ENV, "tepa", 0, env_kwargs=SMALL)))
        store.add_episodes([episode])
        with pytest.raises(sqlite3.IntegrityError):
            store.connection.execute("INSERT INTO episodes (cell, seed, n_tasks, successes, success, phase, trials, "
                                     "wall_s, code_version) VALUES (?, 0, 1, 0, x'00', '[]', '{}', 0, 'x')", (cell,))
        assert store.count() == 1 and store.integrity_check() == "ok"
        version = store.connection.execute("SELECT code_version FROM episodes").fetchone()[0]
        assert version.startswith(Cell(ENV, SMALL, "tepa").version)


def test_cell_identity_is_the_sha256_of_canonical_json():
    import hashlib

    cell = Cell(ENV, {"phase_lengths": [5, 5, 5, 5], "n_keys": 2}, "tepa", {"follow_prob": 0.9}, "0.1.0")
    text = ('{"env_id":"TEPA/RegimeDrift-v0","env_kwargs":{"n_keys":2,"phase_lengths":[5,5,5,5]},'
            '"method":{"spec":"tepa"},"reader_kwargs":{"follow_prob":0.9},"version":"0.1.0"}')
    assert canonical_json(cell.identity()) == text
    assert cell.cell_id == hashlib.sha256(text.encode()).hexdigest()
    # key order does not matter; values, the method and the version do
    assert Cell(ENV, {"n_keys": 2, "phase_lengths": [5, 5, 5, 5]}, "tepa", {"follow_prob": 0.9},
                "0.1.0").cell_id == cell.cell_id
    assert Cell(ENV, {"n_keys": 2, "phase_lengths": [5, 5, 5, 5]}, "tepa", {"follow_prob": 0.9},
                "0.2.0").cell_id != cell.cell_id
    assert Cell(ENV, cell.env_kwargs, "lww", cell.reader_kwargs, "0.1.0").group_id == cell.group_id


# ------------------------------------------------------------------ stores that must be refused
def _newer_store(tmp_path):
    path = tmp_path / "newer.db"
    with Store.open(path) as store:
        store.connection.execute("UPDATE schema_version SET version = ?", (STORE_SCHEMA_VERSION + 1,))
    return path


def _foreign_sqlite(tmp_path):
    path = tmp_path / "other.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    return path


def _text_file(tmp_path):
    path = tmp_path / "notes.db"
    path.write_text("not a database at all, just some text\n" * 50)
    return path


@pytest.mark.parametrize("make, needle", [(_newer_store, "newer than"), (_foreign_sqlite, "not a tepa-bench store"),
                                          (_text_file, "not a tepa-bench store")])
def test_a_store_that_is_not_ours_or_newer_is_refused(tmp_path, make, needle):
    path = make(tmp_path)
    with pytest.raises(StoreError, match=needle):
        Store.open(path)


def no_work(*args, **kwargs):
    raise AssertionError("work started before the store was checked")


@pytest.mark.parametrize("command", ["sweep", "report", "run"])
def test_a_newer_store_is_one_line_exit_2_before_any_work(tmp_path, monkeypatch, capsys, command):
    path = _newer_store(tmp_path)
    monkeypatch.setattr(commands, "execute", no_work)
    monkeypatch.setattr(commands, "evaluate_through_store", no_work)
    spec = tmp_path / "spec.toml"
    spec.write_text('seeds = 2\nmethods = ["tepa"]\n[[env]]\nid = "TEPA/RegimeDrift-v0"\n')
    args = {"sweep": ["sweep", str(spec), "--store", str(path), "--quiet"],
            "report": ["report", str(path), "--out", str(tmp_path / "out")],
            "run": ["run", ENV, "--methods", "tepa", "--seeds", "2", "--store", str(path), "--quiet"]}[command]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tepa-bench: error:") and "newer than" in err and "\n" not in err


def test_report_of_a_missing_store_is_a_usage_error(tmp_path, capsys):
    assert main(["report", str(tmp_path / "missing.db"), "--out", str(tmp_path / "out")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "missing.db").exists()


def test_a_report_uses_the_seeds_every_method_finished(tmp_path, capsys):
    path = tmp_path / "r.db"
    spec = single_group_spec(ENV, SMALL, ["tepa", "no-memory"], range(3))
    with Store.open(path) as store:
        tepa, nomem = store.add_cells(spec.cells)
        episodes, _ = run_batch([(tepa, Job.resolve(ENV, "tepa", s, env_kwargs=SMALL)) for s in range(3)]
                                + [(nomem, Job.resolve(ENV, "no-memory", s, env_kwargs=SMALL)) for s in (0, 2)])
        store.add_episodes(episodes)
    assert main(["report", str(path), "--out", str(tmp_path / "out")]) == 0
    assert "1 episodes left out" in capsys.readouterr().err
    assert json.loads((tmp_path / "out" / "results.json").read_text())["seeds"] == [0, 2]


def test_a_store_without_a_complete_seed_has_nothing_to_report(tmp_path, capsys):
    path = tmp_path / "r.db"
    with Store.open(path) as store:
        store.add_cells(single_group_spec(ENV, SMALL, ["tepa"], range(3)).cells)
    assert main(["report", str(path), "--out", str(tmp_path / "out")]) == 2
    assert "nothing to report" in capsys.readouterr().err


class _InterruptedAfter(sqlite3.Connection):
    """A connection on which a Ctrl-C lands just after ``statement`` went through."""

    statement = ""

    def execute(self, sql, *args):
        cursor = super().execute(sql, *args)
        if sql == self.statement:
            raise KeyboardInterrupt
        return cursor


@pytest.mark.parametrize("statement", ["BEGIN IMMEDIATE", "INSERT INTO t VALUES (1)", "COMMIT"])
def test_a_ctrl_c_anywhere_in_a_transaction_leaves_the_connection_usable(tmp_path, statement):
    db = sqlite3.connect(tmp_path / "s.db", isolation_level=None, factory=_InterruptedAfter)
    db.execute("CREATE TABLE t (x)")
    db.statement = statement
    with pytest.raises(KeyboardInterrupt):
        with immediate_transaction(db):
            db.execute("INSERT INTO t VALUES (1)")
    assert not db.in_transaction
    db.statement = ""
    with immediate_transaction(db):  # the next transaction starts: nothing was left open
        db.execute("INSERT INTO t VALUES (2)")
    rows = [x for (x,) in db.execute("SELECT x FROM t ORDER BY x")]
    assert rows == ([1, 2] if statement == "COMMIT" else [2])


def test_a_transaction_an_interrupted_block_left_open_is_rolled_back_by_the_next(tmp_path):
    db = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    db.execute("CREATE TABLE t (x)")
    db.execute("BEGIN IMMEDIATE")  # as a Ctrl-C inside a block's ROLLBACK guard would leave it
    db.execute("INSERT INTO t VALUES (1)")
    with immediate_transaction(db):
        db.execute("INSERT INTO t VALUES (2)")
    assert not db.in_transaction and [x for (x,) in db.execute("SELECT x FROM t")] == [2]


def test_a_block_inside_another_on_one_connection_is_refused_and_the_outer_rolls_back(tmp_path):
    db = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    db.execute("CREATE TABLE t (x)")
    with pytest.raises(RuntimeError, match="inside another"):
        with immediate_transaction(db):
            db.execute("INSERT INTO t VALUES (1)")
            with immediate_transaction(db):
                db.execute("INSERT INTO t VALUES (2)")
    assert not db.in_transaction and db.execute("SELECT count(*) FROM t").fetchone()[0] == 0
    with immediate_transaction(db):  # usable afterwards
        db.execute("INSERT INTO t VALUES (3)")
