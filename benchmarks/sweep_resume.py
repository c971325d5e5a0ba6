"""Resume after kill -9 at random moments: every resumed sweep ends identical to an uninterrupted one.

    python benchmarks/sweep_resume.py [--kills 10] [--seeds 40] [--workers 2] [--seed 0]

The sweep (every shipped method on ``TEPA/RegimeDrift-v0`` with ``n_keys`` 1 and 2,
``--seeds`` seeds) runs once uninterrupted into a reference store. Then the same
sweep is started ``--kills`` times in a subprocess into a second store, each time
killed with SIGKILL at a random moment (uniform over the uninterrupted sweep's
wall time scaled to the episodes still to run, and at least one new episode
stored first); after every kill
``PRAGMA integrity_check`` must be ``ok`` and no (cell, seed) may appear twice.
A last run finishes the sweep. The stored episodes (all but wall time and code
version) and the reports (``results.json`` but its ``elapsed_s``, ``results.csv``,
``success.png``) must equal the reference's byte for byte. Exit status 1 otherwise.
"""

from __future__ import annotations

import argparse
import random
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SPEC = """
name = "resume"
seeds = {seeds}
methods = ["all"]
[statistics]
n_perm = 2000
[[env]]
id = "TEPA/RegimeDrift-v0"
grid = {{n_keys = [1, 2]}}
"""


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "tepa_envs.agents.evaluation.cli", *args]


def count(store: Path) -> int:
    if not store.exists():
        return 0
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=10)
    try:
        return db.execute("SELECT count(*) FROM episodes").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        db.close()


def rows(store: Path) -> list[tuple]:
    db = sqlite3.connect(store)
    try:
        return db.execute("SELECT c.cell_id, e.seed, e.n_tasks, e.successes, e.success, e.phase, e.trials, "
                          "e.detection FROM episodes e JOIN cells c ON c.id = e.cell ORDER BY c.cell_id, e.seed"
                          ).fetchall()
    finally:
        db.close()


def report_files(directory: Path) -> dict[str, bytes]:
    files = {}
    for path in sorted(directory.rglob("*")):
        if path.is_file() and path.name != "manifest.json":
            data = path.read_bytes()
            if path.name == "results.json":
                data = re.sub(rb'"elapsed_s": [0-9.e+-]+', b'"elapsed_s": 0', data)
            files[str(path.relative_to(directory))] = data
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0, help="seed of the kill moments")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        spec = tmp / "spec.toml"
        spec.write_text(SPEC.format(seeds=args.seeds))
        reference, store = tmp / "reference.db", tmp / "killed.db"
        started = time.perf_counter()
        subprocess.run(cli("sweep", str(spec), "--store", str(reference), "--workers", str(args.workers), "--quiet"),
                       check=True, capture_output=True)
        duration = time.perf_counter() - started
        subprocess.run(cli("report", str(reference), "--out", str(tmp / "reference")), check=True,
                       capture_output=True)
        total = count(reference)
        print(f"uninterrupted: {total:,} episodes in {duration:.1f}s (process start-up included)")
        failures = 0
        for kill in range(args.kills):
            before = count(store)
            if before == total:
                print(f"kill {kill + 1}: nothing left to interrupt")
                break
            delay = rng.uniform(0.0, duration * (total - before) / total)  # within what is left
            proc = subprocess.Popen(cli("sweep", str(spec), "--store", str(store), "--workers", str(args.workers),
                                        "--quiet"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + delay
            while proc.poll() is None and (time.monotonic() < deadline or count(store) <= before):
                time.sleep(0.01)
            finished = proc.poll() is not None
            if not finished:
                proc.send_signal(signal.SIGKILL)
            proc.wait()
            db = sqlite3.connect(store)
            integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
            stored, distinct = db.execute("SELECT count(*), count(DISTINCT cell || '/' || seed) FROM episodes"
                                          ).fetchone()
            db.close()
            ok = integrity == "ok" and stored == distinct
            failures += not ok
            what = "finished before the kill" if finished else f"killed after {delay:.1f}s"
            print(f"kill {kill + 1}: {what}; {stored:,} of {total:,} episodes stored (+{stored - before}); "
                  f"integrity_check {integrity}; duplicates {stored - distinct}")
        subprocess.run(cli("sweep", str(spec), "--store", str(store), "--workers", str(args.workers), "--quiet",
                           "--out", str(tmp / "resumed")), check=True, capture_output=True)
        same_rows = rows(store) == rows(reference)
        same_files = report_files(tmp / "resumed") == report_files(tmp / "reference")
        print(f"resumed: {count(store):,} episodes; stored episodes identical to the uninterrupted sweep: {same_rows}; "
              f"reports identical: {same_files}")
        return 0 if failures == 0 and same_rows and same_files else 1


if __name__ == "__main__":
    sys.exit(main())
