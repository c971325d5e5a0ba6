"""The results store: one SQLite row per finished episode, committed as it arrives.

A store is one SQLite file (the standard library's ``sqlite3``) in WAL mode with
``synchronous=NORMAL``: a committed episode survives the process being killed at
any moment (``kill -9``), and the file is never left corrupt; after a power
failure the last few commits may be lost but the file is still consistent.
Only the sweep's driver process writes it; workers send their episodes back.

Tables (:data:`STORE_SCHEMA_VERSION` 1)

``schema_version(version)``
    One row: the layout version. A store written by a newer tepa-envs is refused.
``cells(id, cell_id, group_id, env_id, env_kwargs, method, method_identity, reader_kwargs, version)``
    One row per cell (:class:`~tepa_envs.agents.evaluation.engine.spec.Cell`): ``cell_id``
    and ``group_id`` are sha256 hex digests of the canonical JSON identity;
    ``env_kwargs``/``reader_kwargs`` the JSON text as given (key order kept);
    ``method`` the label results are reported under; ``id`` gives the order in
    which cells first entered the store (the method order of a report).
``sweeps(id, started_utc, name, command, spec, statistics)``
    One row per ``tepa-bench sweep``/``run`` started on the store; ``statistics``
    (JSON: alpha, n_perm, baselines) of the latest one are a report's defaults.
``episodes(cell, seed, n_tasks, successes, success, phase, trials, detection, wall_s, code_version)``
    One row per finished episode, primary key (so UNIQUE) ``(cell, seed)``:
    ``success`` is ``numpy.packbits`` of the per-task success (big-endian bit
    order, ``n_tasks`` bits), ``successes`` their count, ``phase`` the per-task
    phase as run-length JSON ``[[phase, count], ...]``, ``trials`` a JSON object
    of trials run per kind, ``detection`` the episode's drift metrics as a JSON
    object (``json.dumps(..., sort_keys=True)`` of
    :func:`~tepa_envs.agents.evaluation.analysis.drift_metrics.episode_metrics`: tasks,
    changes, delays, undetected, recoveries, unrecovered, unjudged, stale
    retrievals, correct-value losses, false revocations and their source, regret;
    what :func:`~tepa_envs.agents.evaluation.engine.runner.run_job_with_metrics` returns),
    ``NULL`` when the episode has none (an environment they do not apply to, such
    as ``TEPA/FactConsolidation-v0``, or a row written before tepa-envs recorded them: the column was always ``NULL``
    then, so schema version 1 stays and older stores read as episodes without
    metrics), ``wall_s`` the episode's wall-clock seconds and ``code_version`` the
    package version (``+g<commit>`` when run from a git checkout) that ran it.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from tepa_envs.agents.evaluation.analysis.evaluation import Evaluation, MethodRuns
from tepa_envs.agents.evaluation.engine.spec import (
    Cell,
    Statistics,
    SweepSpec,
    canonical_json,
    method_from_identity,
    method_identity,
    package_version,
)

STORE_SCHEMA_VERSION = 1
"""Layout version of the store; bumped when a table or column is removed, renamed or changes meaning."""

_SCHEMA = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE cells (
    id INTEGER PRIMARY KEY,
    cell_id TEXT NOT NULL UNIQUE,
    group_id TEXT NOT NULL,
    env_id TEXT NOT NULL,
    env_kwargs TEXT NOT NULL,
    method TEXT NOT NULL,
    method_identity TEXT NOT NULL,
    reader_kwargs TEXT NOT NULL,
    version TEXT NOT NULL
);
CREATE INDEX cells_group ON cells (group_id);
CREATE TABLE sweeps (
    id INTEGER PRIMARY KEY,
    started_utc TEXT NOT NULL,
    name TEXT NOT NULL,
    command TEXT NOT NULL,
    spec TEXT NOT NULL,
    statistics TEXT NOT NULL
);
CREATE TABLE episodes (
    cell INTEGER NOT NULL REFERENCES cells (id),
    seed INTEGER NOT NULL,
    n_tasks INTEGER NOT NULL,
    successes INTEGER NOT NULL,
    success BLOB NOT NULL,
    phase TEXT NOT NULL,
    trials TEXT NOT NULL,
    detection TEXT,
    wall_s REAL NOT NULL,
    code_version TEXT NOT NULL,
    PRIMARY KEY (cell, seed)
) WITHOUT ROWID;
"""


class StoreError(ValueError):
    """A store that cannot be used: one line (missing, not a store, a newer schema)."""


# ------------------------------------------------------------------- episode encoding
def encode_success(success: np.ndarray) -> bytes:
    return np.packbits(np.asarray(success, dtype=bool)).tobytes()


def decode_success(blob: bytes, n_tasks: int) -> np.ndarray:
    return np.unpackbits(np.frombuffer(blob, dtype=np.uint8), count=n_tasks).astype(bool)


def encode_phase(phase: np.ndarray) -> str:
    phase = np.asarray(phase)
    runs: list[list[int]] = []
    for value in phase.tolist():
        if runs and runs[-1][0] == value:
            runs[-1][1] += 1
        else:
            runs.append([int(value), 1])
    return json.dumps(runs, separators=(",", ":"))


def decode_phase(text: str) -> np.ndarray:
    runs = json.loads(text)
    return np.repeat(np.array([r[0] for r in runs], dtype=np.int64), [r[1] for r in runs])


@dataclass(frozen=True)
class Episode:
    """One finished episode as a worker sends it to the driver (small and picklable)."""

    cell: int  # the store's cells.id
    seed: int
    n_tasks: int
    successes: int
    success: bytes
    phase: str
    trials: str
    detection: str | None
    wall_s: float


def _git_commit(start: str) -> str:
    """The commit checked out in the git work tree holding ``start`` ('' when none), read
    from ``.git`` directly (no subprocess: the driver may already have workers)."""
    directory = os.path.abspath(start)
    while True:
        git = os.path.join(directory, ".git")
        if os.path.isfile(git):  # a worktree or submodule: "gitdir: PATH"
            try:
                with open(git) as handle:
                    text = handle.read().strip()
            except OSError:
                return ""
            git = os.path.join(directory, text.partition("gitdir:")[2].strip())
        if os.path.isdir(git):
            break
        parent = os.path.dirname(directory)
        if parent == directory:
            return ""
        directory = parent
    try:
        with open(os.path.join(git, "HEAD")) as handle:
            head = handle.read().strip()
        if not head.startswith("ref:"):
            return head
        ref = head.partition("ref:")[2].strip()
        common = git
        if os.path.isfile(os.path.join(git, "commondir")):
            with open(os.path.join(git, "commondir")) as handle:
                common = os.path.join(git, handle.read().strip())
        for root in (git, common):
            path = os.path.join(root, ref)
            if os.path.isfile(path):
                with open(path) as handle:
                    return handle.read().strip()
        with open(os.path.join(common, "packed-refs")) as handle:
            for line in handle:
                parts = line.split()
                if len(parts) == 2 and parts[1] == ref:
                    return parts[0]
    except OSError:
        return ""
    return ""


def code_version() -> str:
    """The package version, with ``+g<commit>`` (12 hex digits) when the package is
    imported from a git checkout."""
    version = package_version()
    commit = _git_commit(os.path.dirname(os.path.abspath(__file__)))
    if len(commit) >= 12 and all(c in "0123456789abcdef" for c in commit.lower()):
        return f"{version}+g{commit[:12].lower()}"
    return version


@dataclass
class StoredCell:
    """A row of ``cells``, decoded."""

    id: int
    cell_id: str
    group_id: str
    env_id: str
    env_kwargs: dict[str, Any]
    method: Any  # str | MethodSpec
    label: str
    reader_kwargs: dict[str, Any]
    version: str


class Store:
    """A results store on SQLite; :meth:`open` it (a context manager closes it)."""

    def __init__(self, connection: sqlite3.Connection, path: str) -> None:
        self.connection, self.path = connection, path
        self._code_version: str | None = None

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, path: str | os.PathLike[str], *, create: bool = True) -> Store:
        """Open (with ``create``, create) the store at ``path`` (``":memory:"`` for a
        throw-away one); :class:`StoreError` when it is not a store this version reads."""
        path = str(path)
        if path != ":memory:":
            target = Path(path)
            if target.is_dir():
                raise StoreError(f"store {path} is a directory, not a SQLite file")
            if not target.exists():
                if not create:
                    raise StoreError(f"store {path} does not exist")
                if not target.parent.is_dir():
                    raise StoreError(f"cannot create store {path}: {target.parent} is not a directory")
        try:
            if path == ":memory:":
                connection = sqlite3.connect(":memory:", isolation_level=None)
            else:
                mode = "rwc" if create else "rw"
                connection = sqlite3.connect(f"file:{Path(path).absolute().as_posix()}?mode={mode}", uri=True,
                                             isolation_level=None, timeout=30)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open store {path}: {exc}") from None
        store = cls(connection, path)
        try:
            store._prepare()
        except StoreError:
            connection.close()
            raise
        except sqlite3.DatabaseError as exc:
            connection.close()
            raise StoreError(f"{path} is not a tepa-bench store: {exc}") from None
        return store

    def _prepare(self) -> None:
        db = self.connection
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "schema_version" in tables:
            row = db.execute("SELECT max(version) FROM schema_version").fetchone()
            version = row[0] if row else None
            if not isinstance(version, int):
                raise StoreError(f"{self.path} has no store schema version: not a tepa-bench store")
            if version > STORE_SCHEMA_VERSION:
                raise StoreError(f"{self.path} has store schema version {version}, newer than "
                                 f"{STORE_SCHEMA_VERSION} which this tepa-envs reads; upgrade tepa-envs")
        elif tables:
            raise StoreError(f"{self.path} is a SQLite file but not a tepa-bench store "
                             f"(tables: {', '.join(sorted(tables))})")
        if self.path != ":memory:":
            mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":  # pragma: no cover - e.g. a file system without shared memory
                raise StoreError(f"cannot put {self.path} in WAL mode (got {mode})")
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("PRAGMA foreign_keys = ON")
        if "schema_version" not in tables:
            db.execute("BEGIN IMMEDIATE")
            try:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute("INSERT INTO schema_version (version) VALUES (?)", (STORE_SCHEMA_VERSION,))
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ writing (the driver only)
    def schema_version(self) -> int:
        return int(self.connection.execute("SELECT max(version) FROM schema_version").fetchone()[0])

    def add_cells(self, cells: Sequence[Cell]) -> list[int]:
        """The ``cells.id`` of every cell, inserting the new ones (in order)."""
        db = self.connection
        db.execute("BEGIN IMMEDIATE")
        try:
            ids = []
            for cell in cells:
                cell_id = cell.cell_id
                row = db.execute("SELECT id FROM cells WHERE cell_id = ?", (cell_id,)).fetchone()
                if row is None:
                    cursor = db.execute(
                        "INSERT INTO cells (cell_id, group_id, env_id, env_kwargs, method, method_identity, "
                        "reader_kwargs, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (cell_id, cell.group_id, cell.env_id, json.dumps(cell.env_kwargs), cell.label,
                         canonical_json(method_identity(cell.method)), json.dumps(cell.reader_kwargs),
                         cell.version))
                    row = (cursor.lastrowid,)
                ids.append(int(row[0]))
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:  # not when a Ctrl-C lands just after the COMMIT went through
                db.execute("ROLLBACK")
            raise
        return ids

    def add_sweep(self, spec: SweepSpec, command: Sequence[str]) -> int:
        started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        cursor = self.connection.execute(
            "INSERT INTO sweeps (started_utc, name, command, spec, statistics) VALUES (?, ?, ?, ?, ?)",
            (started, spec.name, json.dumps(list(command)), json.dumps(spec.to_json()),
             json.dumps(spec.statistics.to_json())))
        return int(cursor.lastrowid)

    def code_version(self) -> str:
        """The ``code_version`` written with this process's episodes."""
        if self._code_version is None:
            self._code_version = code_version()
        return self._code_version

    def add_episodes(self, episodes: Iterable[Episode]) -> int:
        """Insert finished episodes in one transaction (an episode already stored is
        kept: results are deterministic); the number inserted."""
        version = self.code_version()
        rows = [(e.cell, e.seed, e.n_tasks, e.successes, e.success, e.phase, e.trials, e.detection, e.wall_s,
                 version) for e in episodes]
        if not rows:
            return 0
        db = self.connection
        db.execute("BEGIN IMMEDIATE")
        try:
            before = db.total_changes
            db.executemany("INSERT OR IGNORE INTO episodes (cell, seed, n_tasks, successes, success, phase, "
                           "trials, detection, wall_s, code_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            inserted = db.total_changes - before
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:  # not when a Ctrl-C lands just after the COMMIT went through
                db.execute("ROLLBACK")
            raise
        return inserted

    # ------------------------------------------------------------------ reading
    def finished(self, cells: Iterable[int]) -> set[tuple[int, int]]:
        """The ``(cell, seed)`` pairs already stored among ``cells``."""
        done: set[tuple[int, int]] = set()
        for cell in cells:
            done.update((cell, seed) for (seed,) in
                        self.connection.execute("SELECT seed FROM episodes WHERE cell = ?", (cell,)))
        return done

    def count(self) -> int:
        return int(self.connection.execute("SELECT count(*) FROM episodes").fetchone()[0])

    def cells(self) -> list[StoredCell]:
        out = []
        for row in self.connection.execute(
                "SELECT id, cell_id, group_id, env_id, env_kwargs, method, method_identity, reader_kwargs, "
                "version FROM cells ORDER BY id"):
            method = method_from_identity(json.loads(row[6]))
            out.append(StoredCell(row[0], row[1], row[2], row[3], json.loads(row[4]), method, row[5],
                                  json.loads(row[7]), row[8]))
        return out

    def groups(self) -> dict[str, list[StoredCell]]:
        """Cells by group id: groups in order of their first cell, cells in store order."""
        groups: dict[str, list[StoredCell]] = {}
        for cell in self.cells():
            groups.setdefault(cell.group_id, []).append(cell)
        return groups

    def statistics(self) -> Statistics:
        """The statistics of the latest sweep started on this store (defaults when none)."""
        row = self.connection.execute("SELECT statistics FROM sweeps ORDER BY id DESC LIMIT 1").fetchone()
        return Statistics() if row is None else Statistics.from_json(json.loads(row[0]))

    def seeds_of(self, cell: int) -> list[int]:
        return [s for (s,) in self.connection.execute("SELECT seed FROM episodes WHERE cell = ? ORDER BY seed",
                                                      (cell,))]

    def rows(self, cell: int, seeds: Sequence[int] | None = None) -> list[tuple[Any, ...]]:
        """``(seed, n_tasks, success, phase, trials, wall_s, detection)`` of ``cell``'s episodes, by seed."""
        rows = self.connection.execute(
            "SELECT seed, n_tasks, success, phase, trials, wall_s, detection FROM episodes WHERE cell = ? "
            "ORDER BY seed", (cell,)).fetchall()
        if seeds is not None:
            wanted = set(seeds)
            rows = [r for r in rows if r[0] in wanted]
        return rows

    def evaluation(self, env_id: str, env_kwargs: dict[str, Any], reader_kwargs: dict[str, Any],
                   cells: Sequence[tuple[int, str]], seeds: Sequence[int]) -> Evaluation:
        """The :class:`~tepa_envs.agents.evaluation.analysis.evaluation.Evaluation` of ``cells``
        (``(cells.id, label)`` pairs, in report order) on ``seeds`` (every cell must
        have all of them); ``elapsed_s`` is the sum of the episodes' wall times. Each
        method's ``metrics`` are the episodes' ``detection`` (``None`` where ``NULL``)."""
        seeds = [int(s) for s in seeds]
        runs: dict[str, MethodRuns] = {}
        phase: np.ndarray | None = None
        wall = 0.0
        for cell, label in cells:
            rows = self.rows(cell, seeds)
            if [r[0] for r in rows] != sorted(seeds):
                missing = sorted(set(seeds) - {r[0] for r in rows})
                raise StoreError(f"{self.path}: method {label} lacks seeds {missing[:5]}"
                                 f"{'…' if len(missing) > 5 else ''}")
            by_seed = {r[0]: r for r in rows}
            ordered = [by_seed[s] for s in seeds]
            if phase is None:
                phase = decode_phase(ordered[0][3])
            success = np.stack([decode_success(r[2], r[1]) for r in ordered])
            trials = [json.loads(r[4]) for r in ordered]
            wall += sum(r[5] for r in ordered)
            metrics = [None if r[6] is None else json.loads(r[6]) for r in ordered]
            runs[label] = MethodRuns(label, success, trials, metrics)
        assert phase is not None
        return Evaluation(env_id, dict(env_kwargs), dict(reader_kwargs), seeds, phase, runs, wall)

    def integrity_check(self) -> str:
        return str(self.connection.execute("PRAGMA integrity_check").fetchone()[0])


__all__ = ["Episode", "STORE_SCHEMA_VERSION", "Store", "StoreError", "StoredCell", "code_version",
           "decode_phase", "decode_success", "encode_phase", "encode_success"]
