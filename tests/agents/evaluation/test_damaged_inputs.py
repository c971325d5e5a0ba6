"""Damaged inputs (issue 29, items 6, 7 and 9): deep or endless specs and command-line
JSON, and every kind of store damage, refused in one line naming the file, exit 2,
before any work; ``tepa-bench store check`` lists the problems."""

import json
import os
import shutil
import sqlite3
import sys

import numpy as np
import pytest

import tepa_envs.agents.evaluation.cli.commands as commands
from tepa_envs.agents.evaluation.cli import main
from tepa_envs.agents.evaluation.engine.jobs import Job
from tepa_envs.agents.evaluation.engine.spec import MAX_SPEC_BYTES, SpecError, load_spec, single_group_spec
from tepa_envs.agents.evaluation.engine.store import Store, StoreError, decode_success
from tepa_envs.agents.evaluation.engine.sweep import run_batch

ENV = "TEPA/RegimeDrift-v0"
SMALL = {"phase_lengths": [5, 5, 5, 5]}  # 20 tasks: a success blob of 3 bytes


def no_work(*args, **kwargs):
    raise AssertionError("work started before the input was checked")


def one_line_exit_2(capsys, argv, *needles):
    assert main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.startswith("tepa-bench: error:") and "\n" not in err, err
    for needle in needles:
        assert needle in err, err
    return err


# ------------------------------------------------------------------ specs and command-line JSON
def _spec(tmp_path, text):
    path = tmp_path / "deep.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("make, needle", [
    (lambda: "x = " + "[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply"),
    (lambda: ('seeds = 2\nmethods = ["tepa"]\n[[env]]\nid = "TEPA/RegimeDrift-v0"\nkwargs = {x = '
              + "[" * 900 + "]" * 900 + "}\n"), "nested too deeply"),
    (lambda: ('seeds = 2\nmethods = ["tepa"]\n[[env]]\nid = "TEPA/RegimeDrift-v0"\nkwargs = {x = '
              + "[" * 100 + "]" * 100 + "}\n"), "deeper than 64 levels"),
    (lambda: "# " + "x" * MAX_SPEC_BYTES + "\n", "byte limit"),
])
def test_deep_or_huge_specs_are_one_line_exit_2(tmp_path, monkeypatch, capsys, make, needle):
    monkeypatch.setattr(commands, "execute", no_work)
    path = _spec(tmp_path, make())
    one_line_exit_2(capsys, ["sweep", str(path), "--store", str(tmp_path / "s.db"), "--dry-run"], str(path), needle)
    one_line_exit_2(capsys, ["sweep", str(path), "--store", str(tmp_path / "s.db"), "--quiet"], needle)
    assert not (tmp_path / "s.db").exists()


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_an_endless_spec_is_refused_unread(tmp_path, capsys):
    one_line_exit_2(capsys, ["sweep", "/dev/zero", "--store", str(tmp_path / "s.db"), "--dry-run"],
                    "/dev/zero", "not a regular file")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_a_fifo_spec_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "spec.toml"
    os.mkfifo(fifo)
    with pytest.raises(SpecError, match="not a regular file"):
        load_spec(fifo)


@pytest.mark.parametrize("option", ["--env-kwargs", "--reader-kwargs"])
@pytest.mark.parametrize("depth", [100, 5000])
def test_deep_command_line_json_is_one_line_exit_2(monkeypatch, capsys, option, depth):
    monkeypatch.setattr(commands, "evaluate_through_store", no_work)
    text = '{"x": ' + "[" * depth + "]" * depth + "}"
    one_line_exit_2(capsys, ["run", ENV, "--methods", "tepa", option, text, "--quiet"], option)


# ------------------------------------------------------------------ stores
@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A sound store: tepa and no-memory on 3 seeds, 20 tasks each (cells 1 and 2)."""
    path = tmp_path_factory.mktemp("template") / "good.db"
    spec = single_group_spec(ENV, SMALL, ["tepa", "no-memory"], range(3))
    with Store.open(path) as store:
        ids = store.add_cells(spec.cells)
        store.add_sweep(spec, ["test"])
        episodes, error = run_batch([(i, Job.resolve(ENV, c.method, s, env_kwargs=SMALL))
                                     for i, c in zip(ids, spec.cells) for s in range(3)])
        assert error is None
        store.add_episodes(episodes)
    assert not os.path.exists(f"{path}-wal")
    return path


def _sql(*statements):
    def damage(path):
        db = sqlite3.connect(path)
        for statement in statements:
            db.execute(statement)
        db.commit()
        db.close()
    return damage


def _bytes_at(offset_of, data):
    def damage(path):
        size = os.path.getsize(path)
        with open(path, "r+b") as handle:
            handle.seek(offset_of(size))
            handle.write(data)
    return damage


def _truncate(path):
    size = os.path.getsize(path)
    with open(path, "r+b") as handle:
        handle.truncate(size // 2)


def _text(path):
    path.write_text("not a database at all\n" * 100)


def _future(path):
    _sql("UPDATE schema_version SET version = 99")(path)


def _recreate_episodes_without(column):
    columns = ["cell", "seed", "n_tasks", "successes", "success", "phase", "trials", "detection", "wall_s",
               "code_version"]
    kept = ", ".join(c for c in columns if c != column)
    return _sql(f"CREATE TABLE e2 AS SELECT {kept} FROM episodes", "DROP TABLE episodes",
                "ALTER TABLE e2 RENAME TO episodes")


def _detection(edit):
    def damage(path):
        db = sqlite3.connect(path)
        text = db.execute("SELECT detection FROM episodes WHERE cell = 1 AND seed = 0").fetchone()[0]
        data = json.loads(text)
        edit(data)
        db.execute("UPDATE episodes SET detection = ? WHERE cell = 1 AND seed = 0", (json.dumps(data),))
        db.commit()
        db.close()
    return damage


def _padding_bit(path):
    db = sqlite3.connect(path)
    blob = bytearray(db.execute("SELECT success FROM episodes WHERE cell = 1 AND seed = 0").fetchone()[0])
    blob[-1] |= 0x01  # 20 tasks: the last 4 bits of the third byte are padding
    db.execute("UPDATE episodes SET success = ? WHERE cell = 1 AND seed = 0", (bytes(blob),))
    db.commit()
    db.close()


E = "UPDATE episodes SET {} WHERE cell = 1 AND seed = 0"
DAMAGE = {
    # the file
    "random bytes mid-file": _bytes_at(lambda size: (size // 4096 // 2) * 4096, os.urandom(8192)),
    "random header": _bytes_at(lambda size: 0, os.urandom(100)),
    "truncated": _truncate,
    "a text file": _text,
    "a future schema": _future,
    # tables and columns
    "no episodes table": _sql("DROP TABLE episodes"),
    "no cells table": _sql("DROP TABLE cells"),
    "no sweeps table": _sql("DROP TABLE sweeps"),
    "no schema version row": _sql("DELETE FROM schema_version"),
    "schema version as text": _sql("UPDATE schema_version SET version = 'one'"),
    "episodes lack detection": _recreate_episodes_without("detection"),
    "episodes lack phase": _recreate_episodes_without("phase"),
    # episodes
    "n_tasks 10^12": _sql(E.format("n_tasks = 1000000000000")),
    "n_tasks 0": _sql(E.format("n_tasks = 0")),
    "n_tasks negative": _sql(E.format("n_tasks = -20")),
    "n_tasks as text": _sql(E.format("n_tasks = 'twenty'")),
    "seed as text": _sql(E.format("seed = 'zero'")),
    "seed negative": _sql(E.format("seed = -1")),
    "seed as a blob": _sql(E.format("seed = x'00'")),
    "1-byte success blob": _sql(E.format("success = x'ff'")),
    "empty success blob": _sql(E.format("success = x''")),
    "success as text": _sql(E.format("success = 'abc'")),
    "success bits past n_tasks": _padding_bit,
    "successes over n_tasks": _sql(E.format("successes = 21")),
    "non-JSON phase": _sql(E.format("phase = 'not json'")),
    "phase an object": _sql(E.format("phase = '{}'")),
    "phase runs short of n_tasks": _sql(E.format("phase = '[[0,5],[1,5]]'")),
    "phase run of strings": _sql(E.format("phase = '[[\"a\",20]]'")),
    "phase nested 100k deep": _sql(E.format("phase = '" + "[" * 100_000 + "]" * 100_000 + "'")),
    "phase count zero": _sql(E.format("phase = '[[0,0],[1,20]]'")),
    "non-JSON trials": _sql(E.format("trials = '{'")),
    "trials a list": _sql(E.format("trials = '[]'")),
    "trials negative": _sql(E.format("trials = '{\"recall\": -3}'")),
    "non-JSON detection": _sql(E.format("detection = 'nope'")),
    "detection a list": _sql(E.format("detection = '[1, 2]'")),
    "detection lacks regret": _detection(lambda d: d.pop("regret")),
    "detection delays as text": _detection(lambda d: d.update(delays="soon")),
    "detection tasks not n_tasks": _detection(lambda d: d.update(tasks=7)),
    "detection count negative": _detection(lambda d: d.update(changes=-1)),
    "wall_s as text": _sql(E.format("wall_s = 'slow'")),
    "wall_s negative": _sql(E.format("wall_s = -1.0")),
    "code_version a blob": _sql(E.format("code_version = x'00'")),
    "episode of no cell": _sql(E.format("cell = 99")),
    "group with two task counts": _sql("UPDATE episodes SET n_tasks = 24, phase = '[[0,24]]' "
                                       "WHERE cell = 2 AND seed = 1"),
    # cells
    "non-JSON env_kwargs": _sql("UPDATE cells SET env_kwargs = '{oops' WHERE id = 1"),
    "env_kwargs a list": _sql("UPDATE cells SET env_kwargs = '[]' WHERE id = 2"),
    "reader_kwargs nested deep": _sql("UPDATE cells SET reader_kwargs = '{\"a\":" + "[" * 5000 + "]" * 5000
                                      + "}' WHERE id = 1"),
    "method_identity without spec": _sql("UPDATE cells SET method_identity = '{}' WHERE id = 1"),
    "cell_id not a digest": _sql("UPDATE cells SET cell_id = 'x' WHERE id = 1"),
    "a method twice in a group": _sql("UPDATE cells SET method = 'tepa' WHERE id = 2"),
    "a group mixing environments": _sql("UPDATE cells SET env_id = 'TEPA/PreferenceStream-v0' WHERE id = 2"),
    "env_id a number": _sql("UPDATE cells SET env_id = 3 WHERE id = 1"),
    # sweeps
    "non-JSON statistics": _sql("UPDATE sweeps SET statistics = 'nope'"),
    "n_perm 10^12": _sql("UPDATE sweeps SET statistics = '{\"alpha\": 0.05, \"n_perm\": 1000000000000}'"),
    "alpha 5": _sql("UPDATE sweeps SET statistics = '{\"alpha\": 5}'"),
    "baselines a string": _sql("UPDATE sweeps SET statistics = '{\"baselines\": \"lww\"}'"),
}


@pytest.fixture
def damaged(template, tmp_path, request):
    path = tmp_path / "damaged.db"
    shutil.copy(template, path)
    DAMAGE[request.param](path)
    return path


@pytest.mark.parametrize("damaged", list(DAMAGE), indirect=True)
def test_every_kind_of_store_damage_is_one_line_exit_2(damaged, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(commands, "execute", no_work)
    out = tmp_path / "out"
    one_line_exit_2(capsys, ["report", str(damaged), "--out", str(out)], str(damaged))
    assert not (out / "results.json").exists() and not (out / "manifest.json").exists()
    spec = tmp_path / "spec.toml"
    spec.write_text('seeds = 2\nmethods = ["tepa"]\n[[env]]\nid = "TEPA/RegimeDrift-v0"\n')
    one_line_exit_2(capsys, ["sweep", str(spec), "--store", str(damaged), "--quiet"], str(damaged))
    one_line_exit_2(capsys, ["sweep", str(spec), "--store", str(damaged), "--dry-run"], str(damaged))
    assert main(["store", "check", str(damaged)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tepa-bench: error: {damaged}")


# what SQL does not check (so a sweep, which does not read them, is not slowed down by a Python
# pass over millions of rows): `report` checks them on every row it uses, `store check` on all
DEEP_DAMAGE = {
    "successes not the bits": _sql(E.format("successes = successes + 1")),
    "view metrics damaged": _detection(lambda d: d.update(views={"phases": 3})),
    "view metric a string": _detection(lambda d: d["views"]["phases"].update(x={"n": "many"})),
}


@pytest.mark.parametrize("kind", list(DEEP_DAMAGE))
def test_damage_only_decoding_finds_is_refused_by_report_and_store_check(template, tmp_path, capsys, kind):
    path = tmp_path / "r.db"
    shutil.copy(template, path)
    DEEP_DAMAGE[kind](path)
    one_line_exit_2(capsys, ["report", str(path), "--out", str(tmp_path / "out")], str(path), "cell 1, seed 0")
    assert not (tmp_path / "out" / "results.json").exists()
    assert main(["store", "check", str(path)]) == 2
    assert "cell 1, seed 0" in capsys.readouterr().err


def test_a_sound_store_passes_the_check_and_reports(template, tmp_path, capsys):
    assert main(["store", "check", str(template)]) == 0
    assert "sound" in capsys.readouterr().out
    assert main(["report", str(template), "--out", str(tmp_path / "out")]) == 0


def test_a_one_byte_success_blob_is_refused_not_averaged(template, tmp_path, capsys):
    """Item 9: a 1-byte ``success`` for a 20-task episode moved TEPA's success with exit 0."""
    path = tmp_path / "r.db"
    shutil.copy(template, path)
    _sql(E.format("success = x'ff'"))(path)
    one_line_exit_2(capsys, ["report", str(path), "--out", str(tmp_path / "out")], str(path), "success")
    # the rows a report uses are checked even when the store is opened unchecked
    from tepa_envs.agents.evaluation.outputs.store_report import write_report
    with Store.open(path, create=False, check=False) as store:
        with pytest.raises(StoreError, match="success blob is 1 bytes; 20 tasks need 3"):
            write_report(store, tmp_path / "out2")
    assert not (tmp_path / "out2" / "results.json").exists()


def test_decode_success_checks_the_length_before_allocating():
    with pytest.raises(ValueError, match="n_tasks"):
        decode_success(b"\x00", 10 ** 12)
    with pytest.raises(ValueError, match="need 2"):
        decode_success(b"\x00", 10)
    assert decode_success(b"\xf0", 4).tolist() == [True] * 4
    assert np.asarray(decode_success(b"\x80\x00", 9)).sum() == 1


def test_store_check_lists_several_problems(template, tmp_path, capsys):
    path = tmp_path / "r.db"
    shutil.copy(template, path)
    _sql(E.format("success = x'ff'"), "UPDATE episodes SET phase = 'x' WHERE cell = 2 AND seed = 2")(path)
    assert main(["store", "check", str(path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and "seed 0" in err[1] and "phase" in err[2]


def test_a_store_that_is_a_fifo_or_device_is_refused(tmp_path, capsys):
    if sys.platform.startswith("win"):
        pytest.skip("no device files")
    one_line_exit_2(capsys, ["report", "/dev/zero", "--out", str(tmp_path / "out")], "/dev/zero",
                    "not a regular file")
