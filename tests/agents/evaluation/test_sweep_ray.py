"""``--backend ray``: the same sweep on a local Ray gives the same bytes as the local pool.

Runs when Ray is importable (the ``test`` extra installs it, so CI runs it); one
local Ray with 2 CPUs and no dashboard, started by the CLI in a subprocess."""

import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tepa_envs.agents.evaluation.cli import main

pytest.importorskip("ray", reason="Ray is not installed (pip install \"tepa-envs[ray]\")")



def write_spec(tmp_path, text):
    path = tmp_path / "spec.toml"
    path.write_text(text)
    return path


def report_files(directory: Path) -> dict[str, bytes]:
    """Every results file under ``directory`` (not the manifests: they carry a run id and a date),
    results.json with its one wall-clock field, documented as not reproducible, blanked."""
    files = {}
    for path in sorted(directory.rglob("*")):
        if path.is_file() and path.name != "manifest.json":
            data = path.read_bytes()
            if path.name == "results.json":
                data = re.sub(rb'"elapsed_s": [0-9.e+-]+', b'"elapsed_s": 0', data)
            files[str(path.relative_to(directory))] = data
    return files


def episode_rows(store: Path) -> list[tuple]:
    """Every stored episode but its wall time and code version, by cell identity and seed."""
    db = sqlite3.connect(store)
    try:
        return db.execute("SELECT c.cell_id, e.seed, e.n_tasks, e.successes, e.success, e.phase, e.trials, "
                          "e.detection FROM episodes e JOIN cells c ON c.id = e.cell ORDER BY c.cell_id, e.seed"
                          ).fetchall()
    finally:
        db.close()


SPEC = """
seeds = 8
methods = ["tepa", "no-memory", "append-only"]
[statistics]
n_perm = 500
[reader]
grid = {follow_prob = [0.9, 0.99]}
[[env]]
id = "TEPA/RegimeDrift-v0"
kwargs = {phase_lengths = [6, 6, 6, 6]}
grid = {n_keys = [1, 2]}
[[env]]
id = "TEPA/PreferenceStream-v0"
kwargs = {phase_lengths = [6, 6, 6, 6]}
methods = ["tepa", "no-memory"]
"""


def test_ray_and_the_local_pool_give_byte_identical_results(tmp_path):
    spec = write_spec(tmp_path, SPEC)
    assert main(["sweep", str(spec), "--store", str(tmp_path / "local.db"), "--workers", "2", "--quiet",
                 "--out", str(tmp_path / "local")]) == 0
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "tepa_envs.agents.evaluation.cli", "sweep", str(spec), "--store",
                           "ray.db", "--backend", "ray", "--workers", "2", "--batch", "5", "--out", "ray",
                           "--quiet"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    elapsed = time.perf_counter() - started
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "a local Ray (2 CPUs)" in proc.stdout
    print(f"Ray sweep of 160 episodes, Ray start-up included: {elapsed:.1f}s")
    assert episode_rows(tmp_path / "ray.db") == episode_rows(tmp_path / "local.db")
    local, ray = report_files(tmp_path / "local"), report_files(tmp_path / "ray")
    assert local == ray and len([n for n in local if n.endswith("results.json")]) == 6
