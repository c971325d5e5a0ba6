"""Results files are written atomically, a manifest written last tells a complete run
from a torn one, and a bad ``--out`` is refused before any work."""

import json
import os
import stat
from pathlib import Path

import pytest

import tepa_envs.agents.evaluation.cli.commands as commands
import tepa_envs.agents.evaluation.outputs.report as report
import tepa_envs.agents.evaluation.studies.reproduce as reproduce
from tepa_envs.agents.evaluation.studies.protocol import QUICK
from tepa_envs.agents.evaluation.analysis.paper import SETTINGS
from tepa_envs.agents.evaluation.analysis.summary import summarize
from tepa_envs.agents.evaluation.cli import main
from tepa_envs.agents.evaluation.engine.evaluate import evaluate
from tepa_envs.agents.evaluation.outputs.files import (
    MANIFEST, ManifestError, check_manifest, sha256_file, verify_manifest, write_manifest, write_text_atomic,
)

SMALL = '{"phase_lengths": [5, 5, 5, 5]}'


def run(out, seeds="2", *extra):
    return main(["run", "TEPA/RegimeDrift-v0", "--methods", "tepa,no-memory", "--seeds", seeds, "--workers", "1",
                 "--out", str(out), "--quiet", "--env-kwargs", SMALL, *extra])


@pytest.fixture(scope="module")
def summary():
    evaluation = evaluate("TEPA/RegimeDrift-v0", ["tepa", "no-memory"], range(2),
                          env_kwargs={"phase_lengths": [5, 5, 5, 5]})
    return summarize(evaluation, n_perm=100)


class Killed(BaseException):
    """Stands in for the process dying (not an Exception, like KeyboardInterrupt)."""


def die(*args, **kwargs):
    raise Killed()


@pytest.mark.parametrize("name, write", [
    ("results.json", lambda s, p: report.write_json(s, p)),
    ("results.csv", lambda s, p: report.write_csv(s, p)),
    ("drift_metrics.csv", lambda s, p: report.write_drift_csv(s, p)),
    ("success.png", lambda s, p: report.plot_success(s, p)),
])
def test_a_write_killed_before_the_rename_leaves_the_old_file_whole(tmp_path, monkeypatch, summary, name, write):
    path = tmp_path / name
    path.write_bytes(b"old complete file\n")
    monkeypatch.setattr(os, "fsync", die)  # the process dies after writing, before the rename
    with pytest.raises(Killed):
        write(summary, path)
    monkeypatch.undo()
    assert path.read_bytes() == b"old complete file\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no temporary file left behind
    write(summary, path)
    assert path.read_bytes() != b"old complete file\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_atomic_write_gives_the_permissions_of_a_plain_write(tmp_path):
    write_text_atomic(tmp_path / "a.txt", "x")
    (tmp_path / "b.txt").write_text("x")
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == stat.S_IMODE((tmp_path / "b.txt").stat().st_mode)


def test_run_writes_a_manifest_last_with_hashes_of_every_file(tmp_path):
    out = tmp_path / "out"
    assert run(out, "3") == 0
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["seeds"] == [0, 1, 2] and manifest["methods"] == ["tepa", "no-memory"]
    assert manifest["run_id"] and {"tepa-envs", "python", "numpy"} <= set(manifest["versions"])
    assert set(manifest["files"]) == {"results.json", "results.csv", "drift_metrics.csv", "success.png"}
    for name, entry in manifest["files"].items():
        assert entry["sha256"] == sha256_file(out / name)
    # the manifest was written after every file it lists
    assert all((out / MANIFEST).stat().st_mtime_ns >= (out / n).stat().st_mtime_ns for n in manifest["files"])
    assert verify_manifest(out) and check_manifest(out)["run_id"] == manifest["run_id"]
    assert run(out, "3") == 0
    assert json.loads((out / MANIFEST).read_text())["run_id"] != manifest["run_id"]


def test_a_file_changed_after_the_manifest_is_a_torn_run(tmp_path):
    out = tmp_path / "out"
    assert run(out) == 0
    with (out / "results.csv").open("a") as handle:
        handle.write("tampered\n")
    assert not verify_manifest(out)
    with pytest.raises(ManifestError, match="results.csv"):
        check_manifest(out)


def test_a_missing_manifest_or_listed_file_is_a_torn_run(tmp_path):
    out = tmp_path / "out"
    assert run(out) == 0
    (out / "success.png").unlink()
    with pytest.raises(ManifestError, match="success.png"):
        check_manifest(out)
    (out / MANIFEST).unlink()
    assert not verify_manifest(out)
    with pytest.raises(ManifestError, match="missing"):
        check_manifest(out)
    assert not verify_manifest(tmp_path / "never-written")


@pytest.mark.parametrize("killed_in", ["write_json", "write_csv", "plot_success"])
def test_a_reused_out_killed_while_writing_is_detected_as_torn(tmp_path, monkeypatch, killed_in):
    out = tmp_path / "out"
    assert run(out, "2") == 0
    assert verify_manifest(out)
    old = {p.name: p.read_bytes() for p in out.iterdir()}
    monkeypatch.setattr(report, killed_in, die)
    with pytest.raises(Killed):
        run(out, "3")
    monkeypatch.undo()
    # every file is whole (old or new), the new 3-seed JSON may sit next to the old 2-seed CSV and PNG...
    json.loads((out / "results.json").read_text())
    if killed_in != "write_json":
        assert json.loads((out / "results.json").read_text())["seeds"] == [0, 1, 2]
        assert (out / "success.png").read_bytes() == old["success.png"]
    # ...and the reader can tell: there is no manifest vouching for the mix
    assert not verify_manifest(out)


def test_write_manifest_refuses_paths_outside_the_directory(tmp_path):
    (tmp_path / "a.json").write_text("{}")
    with pytest.raises(ValueError):
        write_manifest(tmp_path, ["../a.json"], seeds=[0], methods=["tepa"])


def test_reproduce_writes_every_file_atomically_and_a_manifest_per_setting(tmp_path, monkeypatch):
    evaluation = evaluate("TEPA/RegimeDrift-v0", list(SETTINGS["controlled"].methods), range(2),
                          env_kwargs={"phase_lengths": [4, 4, 4, 4]})
    monkeypatch.setattr(reproduce, "evaluate_to_precision", lambda *a, **k: evaluation)
    for study in ("precision_report", "limits", "robustness", "ablation", "trial_cost", "key_noise", "n_keys",
                  "main_profile_share", "profile_rankings", "shared_traces"):
        monkeypatch.setattr(reproduce, study, lambda *a, study=study, **k: {"study": study})
    monkeypatch.setattr(reproduce, "reproduce_facts_rows", lambda workers, progress=None: [{"split": "x", "score": 1.0}])
    out = tmp_path / "results"
    reproduce.reproduce_all(["controlled", "facts"], QUICK, out, log=lambda m: None)
    manifest = check_manifest(out / "controlled")
    assert set(manifest["files"]) == {"results.json", "results.csv", "drift_metrics.csv", "success.png",
                                      "protocol.json", "robustness.json", "ablation.json", "trial_cost.json",
                                      "key_noise.json", "n_keys.json", "profiles.json", "shared_traces.json"}
    assert manifest["setting"] == "controlled" and manifest["seeds"] == [0, 1]
    assert set(check_manifest(out / "facts")["files"]) == {"results.json"}
    # a rerun killed half-way through its studies leaves the setting without a manifest
    monkeypatch.setattr(reproduce, "trial_cost", die)
    with pytest.raises(Killed):
        reproduce.reproduce_all(["controlled"], QUICK, out, log=lambda m: None)
    assert not verify_manifest(out / "controlled") and verify_manifest(out / "facts")


# ------------------------------------------------------------------ bad --out, before any work
def no_work(*args, **kwargs):
    raise AssertionError("work started before --out was checked")


def _file(tmp_path):
    path = tmp_path / "a-file"
    path.write_text("x")
    return path


def _under_file(tmp_path):
    return _file(tmp_path) / "sub" / "dir"


def _read_only(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only directories")
    path = tmp_path / "read-only"
    path.mkdir()
    path.chmod(0o555)
    return path


@pytest.mark.parametrize("make_out, needle", [(_file, "is a file"), (_under_file, "a-file is a file"),
                                              (_read_only, "not writable")])
@pytest.mark.parametrize("command", ["run", "reproduce"])
def test_bad_out_is_one_line_exit_2_before_any_work(tmp_path, monkeypatch, capsys, make_out, needle, command):
    out = make_out(tmp_path)
    for name in ("evaluate_through_store", "validate_methods", "reproduce_setting", "reproduce_all"):
        monkeypatch.setattr(commands, name, no_work)
    if command == "run":
        monkeypatch.setattr(commands, "validate_methods", lambda *a, **k: None)
        args = ["run", "TEPA/RegimeDrift-v0", "--methods", "tepa", "--seeds", "2", "--out", str(out), "--quiet"]
    else:
        args = ["reproduce", "controlled", "--quick", "--out", str(out), "--quiet"]
    try:
        assert main(args) == 2
    finally:
        if out.is_dir():
            out.chmod(0o755)
    err = capsys.readouterr().err.strip()
    assert err.startswith("tepa-bench: error: --out") and needle in err and "\n" not in err


def test_out_is_created_when_missing(tmp_path):
    out = tmp_path / "new" / "nested"
    assert run(out) == 0
    assert verify_manifest(out)
    assert Path(out, "results.json").is_file()
