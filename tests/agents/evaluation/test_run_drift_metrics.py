"""Drift metrics recorded by `tepa-bench run` / `report` / `sweep` and `evaluate()` (issue 12).

Every episode run through the harness records its drift metrics
(`engine.runner.run_job_with_metrics`, the suite's `run_traced_job`); `summarize()` pools
them per method into `Summary.drift_metrics`, written as `results.json`'s
`drift_metrics` and as `drift_metrics.csv`, and a results store keeps each
episode's metrics in its `detection` column.
"""

from __future__ import annotations

import csv
import json
import math
import sqlite3

import numpy as np
import pytest

from tepa_envs.agents.evaluation.analysis.drift_metrics import EpisodeTrace, metrics_apply, pool_metrics
from tepa_envs.agents.evaluation.analysis.results import Summary
from tepa_envs.agents.evaluation.analysis.summary import summarize
from tepa_envs.agents.evaluation.cli import main
from tepa_envs.agents.evaluation.engine.evaluate import evaluate
from tepa_envs.agents.evaluation.engine.jobs import Job
from tepa_envs.agents.evaluation.engine.runner import run_job, run_job_with_metrics, run_traced_job
from tepa_envs.agents.evaluation.engine.store import Store
from tepa_envs.agents.evaluation.outputs.report import DRIFT_CSV_COLUMNS

ENV = "TEPA/RegimeDrift-v0"
METHODS = ["tepa", "append-only", "no-memory"]
SEEDS = 4


def run_cli(*args: str) -> int:
    return main([*args, "--quiet"])


def results(directory) -> dict:
    return json.loads((directory / "results.json").read_text())


def expected_metrics(method: str, seeds: int = SEEDS, env_id: str = ENV) -> dict:
    """What the suite's path gives: pool_metrics of run_traced_job over the same jobs."""
    return pool_metrics([run_traced_job(Job.resolve(env_id, method, seed))[3] for seed in range(seeds)])


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """`tepa-bench run` of METHODS on ENV (default kwargs) through a kept store."""
    base = tmp_path_factory.mktemp("run")
    assert run_cli("run", ENV, "--methods", ",".join(METHODS), "--seeds", str(SEEDS), "--workers", "1",
                   "--out", str(base / "out"), "--store", str(base / "r.db")) == 0
    return base


def test_run_results_hold_the_pooled_metrics_of_the_traced_episodes(run_dir):
    data = results(run_dir / "out")
    assert list(data["drift_metrics"]) == METHODS
    for method in METHODS:
        assert data["drift_metrics"][method] == expected_metrics(method)


def test_run_metrics_are_the_suites(run_dir):
    from tepa_envs.agents.evaluation.studies.suite import run_suite

    suite = run_suite(METHODS, range(SEEDS), scenarios=(ENV,), workers=1, n_perm=100)
    (scenario,) = suite["scenarios"]
    assert results(run_dir / "out")["drift_metrics"] == scenario["metrics"]


def test_success_is_unchanged_by_recording_the_metrics(run_dir):
    data = results(run_dir / "out")
    for method in METHODS:
        plain = [run_job(Job.resolve(ENV, method, seed)) for seed in range(SEEDS)]
        traced = [run_job_with_metrics(Job.resolve(ENV, method, seed)) for seed in range(SEEDS)]
        for (s1, p1, t1), (s2, p2, t2, _) in zip(plain, traced):
            assert np.array_equal(s1, s2) and np.array_equal(p1, p2) and t1 == t2
        per_task = np.stack([p[0] for p in plain]).mean(axis=0)
        assert data["per_task_success"][method] == per_task.tolist()


def test_drift_metrics_csv_is_results_json_flattened(run_dir):
    data = results(run_dir / "out")
    with (run_dir / "out" / "drift_metrics.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert tuple(rows[0]) == DRIFT_CSV_COLUMNS and [r["method"] for r in rows] == METHODS
    for row in rows:
        x = data["drift_metrics"][row["method"]]
        assert row["env_id"] == ENV and int(row["changes"]) == x["changes"]
        assert int(row["undetected"]) == x["detection_delay"]["undetected"]
        assert float(row["stale_retrievals_per_1k"]) == pytest.approx(x["stale_retrievals_per_1k"], abs=1e-6)
        assert float(row["regret_mean"]) == pytest.approx(x["regret"]["mean"], abs=1e-6)
        assert float(row["regret_ci_high"]) == pytest.approx(x["regret"]["ci_high"], abs=1e-6)
        assert row["false_revocation_source"] == x["false_revocation_source"]
    manifest = json.loads((run_dir / "out" / "manifest.json").read_text())
    assert "drift_metrics.csv" in manifest["files"]


def test_evaluate_and_summarize_carry_the_metrics(run_dir):
    evaluation = evaluate(ENV, METHODS, range(SEEDS))
    for method in METHODS:
        metrics = evaluation.runs[method].metrics
        assert metrics == [run_traced_job(Job.resolve(ENV, method, seed))[3] for seed in range(SEEDS)]
    summary = summarize(evaluation)
    assert summary.drift_metrics == results(run_dir / "out")["drift_metrics"]
    assert Summary.from_json(json.loads(json.dumps(summary.to_json()))) == summary


def test_the_store_keeps_each_episodes_metrics_and_report_gives_the_runs(run_dir, tmp_path, capsys):
    with Store.open(run_dir / "r.db", create=False) as store:
        rows = store.connection.execute(
            "SELECT c.method, e.seed, e.detection FROM episodes e JOIN cells c ON c.id = e.cell").fetchall()
        cells = [(c.id, c.label) for c in store.cells()]
        evaluation = store.evaluation(ENV, {}, {}, cells, list(range(SEEDS)))
    assert len(rows) == len(METHODS) * SEEDS
    for method, seed, detection in rows:
        assert json.loads(detection) == run_traced_job(Job.resolve(ENV, method, seed))[3]
    for method in METHODS:
        assert evaluation.runs[method].metrics == [
            run_traced_job(Job.resolve(ENV, method, seed))[3] for seed in range(SEEDS)]
    capsys.readouterr()
    assert main(["report", str(run_dir / "r.db"), "--out", str(tmp_path / "report")]) == 0
    printed = capsys.readouterr().out
    assert "drift metrics, pooled over 4 seeds" in printed
    table = printed[printed.index("drift metrics, pooled"):].splitlines()
    header = next(i for i, line in enumerate(table) if line.startswith("method "))
    assert table[header].split()[:3] == ["method", "changes", "delay"] and set(table[header + 1]) == {"-"}
    assert [line.split()[0] for line in table[header + 2:header + 2 + len(METHODS)]] == METHODS
    assert results(tmp_path / "report")["drift_metrics"] == results(run_dir / "out")["drift_metrics"]
    assert ((tmp_path / "report" / "drift_metrics.csv").read_bytes()
            == (run_dir / "out" / "drift_metrics.csv").read_bytes())


def copy_store(source, target):
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)


def test_old_rows_without_metrics_give_none_and_no_crash(run_dir, tmp_path, capsys):
    old = tmp_path / "old.db"
    copy_store(run_dir / "r.db", old)
    with sqlite3.connect(old) as db:  # as a store written before the metrics were recorded
        db.execute("UPDATE episodes SET detection = NULL")
    capsys.readouterr()
    assert main(["report", str(old), "--out", str(tmp_path / "old")]) == 0
    assert "drift metrics: none recorded" in capsys.readouterr().out
    data = results(tmp_path / "old")
    assert data["drift_metrics"] == {}
    assert data["summary"] == results(run_dir / "out")["summary"]  # success is read as before
    assert (tmp_path / "old" / "drift_metrics.csv").read_text().splitlines() == [",".join(DRIFT_CSV_COLUMNS)]
    with Store.open(old, create=False) as store:
        evaluation = store.evaluation(ENV, {}, {}, [(c.id, c.label) for c in store.cells()], list(range(SEEDS)))
    assert all(run.metrics == [None] * SEEDS for run in evaluation.runs.values())
    assert summarize(evaluation).drift_metrics == {}


def test_a_method_with_one_episode_lacking_metrics_is_left_out(run_dir, tmp_path, capsys):
    mixed = tmp_path / "mixed.db"
    copy_store(run_dir / "r.db", mixed)
    with sqlite3.connect(mixed) as db:
        db.execute("UPDATE episodes SET detection = NULL WHERE seed = 2 AND cell = "
                   "(SELECT id FROM cells WHERE method = 'tepa')")
    capsys.readouterr()
    assert main(["report", str(mixed), "--out", str(tmp_path / "mixed")]) == 0
    assert "no drift metrics for: tepa" in capsys.readouterr().out
    data = results(tmp_path / "mixed")
    assert list(data["drift_metrics"]) == ["append-only", "no-memory"]
    assert data["drift_metrics"]["no-memory"] == results(run_dir / "out")["drift_metrics"]["no-memory"]


def test_results_without_drift_metrics_read_back_as_empty(run_dir):
    data = results(run_dir / "out")
    del data["drift_metrics"]
    assert Summary.from_json(data).drift_metrics == {}


def test_workers_do_not_change_the_metrics(tmp_path):
    outs = []
    for workers in ("1", "2"):
        out = tmp_path / f"w{workers}"
        assert run_cli("run", ENV, "--methods", "tepa,lww,no-memory", "--seeds", "3", "--workers", workers,
                       "--out", str(out)) == 0
        outs.append(out)
    first, second = (results(o) for o in outs)
    assert first["drift_metrics"] and first["drift_metrics"] == second["drift_metrics"]
    del first["elapsed_s"], second["elapsed_s"]
    assert json.dumps(first) == json.dumps(second)
    assert (outs[0] / "drift_metrics.csv").read_bytes() == (outs[1] / "drift_metrics.csv").read_bytes()


def test_sweep_stores_metrics_for_every_episode(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('name = "m"\nseeds = 2\nmethods = ["tepa", "no-memory"]\n\n'
                    '[[env]]\nid = "TEPA/RegimeDrift-v0"\ngrid = { n_keys = [1, 2] }\n')
    assert main(["sweep", str(spec), "--store", str(tmp_path / "s.db"), "--workers", "2", "--quiet",
                 "--out", str(tmp_path / "out")]) == 0
    with sqlite3.connect(tmp_path / "s.db") as db:
        detections = [d for (d,) in db.execute("SELECT detection FROM episodes")]
    assert len(detections) == 8 and all(json.loads(d)["tasks"] > 0 for d in detections)
    index = json.loads((tmp_path / "out" / "sweep.json").read_text())
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    for group in index["groups"]:
        assert f"{group['directory']}/drift_metrics.csv" in manifest["files"]
        assert list(results(tmp_path / "out" / group["directory"])["drift_metrics"]) == ["tepa", "no-memory"]


def test_environments_without_keyed_oracle_tasks_omit_the_metrics(tmp_path, capsys):
    """TEPA/FactConsolidation-v0 asks unkeyed questions (info["key"] == ""): the metrics would
    count every question as a change of one key, so they are left out, and the run succeeds."""
    out = tmp_path / "facts"
    capsys.readouterr()
    assert run_cli("run", "TEPA/FactConsolidation-v0", "--methods", "tepa,no-memory", "--seeds", "1",
                   "--workers", "1", "--out", str(out)) == 0
    assert "drift metrics: none recorded" in capsys.readouterr().out
    assert results(out)["drift_metrics"] == {}
    assert (out / "drift_metrics.csv").read_text().splitlines() == [",".join(DRIFT_CSV_COLUMNS)]
    *_, metrics = run_job_with_metrics(Job.resolve("TEPA/FactConsolidation-v0", "tepa", 0))
    assert metrics is None
    assert not metrics_apply(EpisodeTrace(keys=["", ""], correct=["a", "b"], shown=["", ""], chosen=["a", "b"]))
    assert not metrics_apply(EpisodeTrace())
    assert metrics_apply(EpisodeTrace(keys=["k"], correct=["a"], shown=[""], chosen=["a"]))


# ------------------------------------------------------------------ the numbers themselves
@pytest.fixture(scope="module")
def guard():
    """RegimeDrift-v0 with its default kwargs (deterministic outcomes, one key, 160 tasks), 5 seeds."""
    methods = ["tepa", "append-only", "no-memory", "oracle-reset"]
    return summarize(evaluate(ENV, methods, range(5)))


def test_numbers_no_memory_shows_nothing(guard):
    x = guard.drift_metrics["no-memory"]
    # it never shows a value: no stale retrieval, every change "detected" at once, no value to lose
    assert x["stale_retrievals_per_1k"] == 0.0 and x["correct_value_losses_per_1k"] == 0.0
    assert x["detection_delay"] == {"mean": 0.0, "median": 0.0, "detected": x["changes"], "undetected": 0}
    assert x["false_revocation_source"] == "correct-value losses" and x["false_revocations_per_1k"] == 0.0


def test_numbers_append_only_stays_stale_and_tepa_detects(guard):
    append, tepa = guard.drift_metrics["append-only"], guard.drift_metrics["tepa"]
    assert append["changes"] == tepa["changes"] > 0  # the changes are the environment's, not the method's
    assert len({x["changes"] for x in guard.drift_metrics.values()}) == 1
    assert append["stale_retrievals_per_1k"] > tepa["stale_retrievals_per_1k"] > 0
    assert append["detection_delay"]["undetected"] > tepa["detection_delay"]["undetected"]
    assert tepa["detection_delay"]["undetected"] == 0 and tepa["recovery"]["unrecovered"] == 0
    assert tepa["false_revocation_source"] == "audit log"
    assert append["regret"]["mean"] > tepa["regret"]["mean"] >= guard.drift_metrics["oracle-reset"]["regret"]["mean"]


def test_numbers_regret_is_the_tasks_not_solved_with_deterministic_outcomes(guard):
    n_tasks = len(guard.phase_of_task)
    assert n_tasks == 160
    for method, x in guard.drift_metrics.items():
        # regret counts wrong choices; with deterministic outcomes a task fails exactly when the choice is wrong
        solved = guard.estimate(method, "overall").mean
        assert math.isclose(x["regret"]["mean"], n_tasks * (1 - solved), abs_tol=1e-9), method
        assert math.isclose(x["regret"]["per_1k"], 1000 * (1 - solved), abs_tol=1e-9), method
        assert x["regret"]["ci_low"] <= x["regret"]["mean"] <= x["regret"]["ci_high"]


SLOTTED = '''
from tepa_envs.agents.memories.registry import make_memory


class SlottedMemory:
    """A memory that takes no instance attributes (lww inside)."""

    __slots__ = ("inner",)
    name = "slotted"

    def __init__(self):
        self.inner = make_memory("lww")

    def observe(self, evidence):
        self.inner.observe(evidence)

    def retrieve(self, key, context=""):
        return self.inner.retrieve(key, context)

    def reset(self):
        self.inner.reset()
'''


def test_a_memory_that_takes_no_instance_attributes_gets_its_metrics(tmp_path, monkeypatch):
    """Retrievals are observed in the episode loop, not patched on the memory: a memory
    with ``__slots__`` (here lww behind a slotted shell) has the same metrics as lww."""
    (tmp_path / "slotted_memory_module.py").write_text(SLOTTED)
    monkeypatch.syspath_prepend(str(tmp_path))
    method = "slotted_memory_module:SlottedMemory"
    success, phase, trials, metrics = run_job_with_metrics(Job.resolve(ENV, method, 0))
    plain = run_job(Job.resolve(ENV, method, 0))
    assert np.array_equal(success, plain[0]) and np.array_equal(phase, plain[1])
    assert np.array_equal(success, run_job(Job.resolve(ENV, "lww", 0))[0])
    assert metrics == run_job_with_metrics(Job.resolve(ENV, "lww", 0))[3]
    summary = summarize(evaluate(ENV, [method, "lww"], range(2)))
    assert summary.drift_metrics[method] == summary.drift_metrics["lww"]


def test_seeds_added_by_the_precision_rule_keep_their_drift_metrics():
    from tepa_envs.agents.evaluation.studies.protocol import merge

    merged = merge(evaluate(ENV, METHODS, range(2)), evaluate(ENV, METHODS, range(2, SEEDS)))
    whole = evaluate(ENV, METHODS, range(SEEDS))
    assert summarize(merged).drift_metrics == summarize(whole).drift_metrics
    assert set(summarize(merged).drift_metrics) == set(METHODS)
