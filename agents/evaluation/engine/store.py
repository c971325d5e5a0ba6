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

import contextlib
import functools
import json
import math
import os
import re
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence, TypeVar

import numpy as np

from tepa_envs.error import TepaError
from tepa_envs.agents.evaluation.analysis.evaluation import Evaluation, MethodRuns
from tepa_envs.agents.evaluation.engine.spec import (
    MAX_N_PERM,
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


MAX_TASKS = 10_000_000
"""Largest ``n_tasks`` of a stored episode a store may hold (a row claiming more is damage)."""
MAX_WALL_S = 1e9
"""Largest ``wall_s`` of a stored episode (about 31 years)."""

_COLUMNS: dict[str, tuple[str, ...]] = {
    "schema_version": ("version",),
    "cells": ("id", "cell_id", "group_id", "env_id", "env_kwargs", "method", "method_identity", "reader_kwargs",
              "version"),
    "sweeps": ("id", "started_utc", "name", "command", "spec", "statistics"),
    "episodes": ("cell", "seed", "n_tasks", "successes", "success", "phase", "trials", "detection", "wall_s",
                 "code_version"),
}
"""The tables and columns of :data:`STORE_SCHEMA_VERSION` 1 (a store lacking one is damaged)."""


@contextlib.contextmanager
def immediate_transaction(db: sqlite3.Connection) -> Iterator[None]:
    """One ``BEGIN IMMEDIATE`` transaction: committed when the block ends, rolled back when
    it raises, a Ctrl-C landing just after the BEGIN included (not when one lands just after
    the COMMIT went through). A transaction already open on ``db`` is one an interrupted
    block left (every write of a store goes through this block, in autocommit mode): it
    is rolled back first; a block opened inside another on the same connection is a
    ``RuntimeError``."""
    if id(db) in _OPEN_BLOCKS:
        raise RuntimeError("immediate_transaction opened inside another on the same connection")
    if db.in_transaction:
        db.execute("ROLLBACK")
    _OPEN_BLOCKS.add(id(db))
    try:
        db.execute("BEGIN IMMEDIATE")
        yield
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    finally:
        _OPEN_BLOCKS.discard(id(db))


_OPEN_BLOCKS: set[int] = set()
"""The connections (by ``id``) inside an :func:`immediate_transaction` block now."""


class StoreError(TepaError, ValueError):
    """A store that cannot be used: one line (missing, not a store, a newer schema, damaged)."""


_F = TypeVar("_F", bound=Callable[..., Any])


def _guarded(method: _F) -> _F:
    """SQLite failing under a :class:`Store` method (a damaged file, a disk error) is a
    one-line :class:`StoreError` naming the file."""

    @functools.wraps(method)
    def wrapper(self: Store, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: SQLite error: {' '.join(str(exc).split())} (damaged store? "
                             f"`tepa-bench store check {self.path}` lists its problems)") from None
    return wrapper  # type: ignore[return-value]


# ------------------------------------------------------------------- episode encoding
def encode_success(success: np.ndarray) -> bytes:
    return np.packbits(np.asarray(success, dtype=bool)).tobytes()


def decode_success(blob: bytes, n_tasks: int) -> np.ndarray:
    """The per-task success of a stored episode; ``ValueError`` unless ``blob`` holds
    exactly ``ceil(n_tasks / 8)`` bytes (checked before anything is allocated)."""
    if not isinstance(blob, bytes):
        raise ValueError(f"success is {type(blob).__name__}, not a blob")
    if isinstance(n_tasks, bool) or not isinstance(n_tasks, int) or not 1 <= n_tasks <= MAX_TASKS:
        raise ValueError(f"n_tasks {n_tasks!r} is not an int between 1 and {MAX_TASKS:,}")
    if len(blob) != (n_tasks + 7) // 8:
        raise ValueError(f"success blob is {len(blob)} bytes; {n_tasks} tasks need {(n_tasks + 7) // 8}")
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


def decode_phase(text: str, n_tasks: int | None = None) -> np.ndarray:
    """The per-task phase of run-length JSON ``[[phase, count], ...]``; ``ValueError``
    when it is not that (or, given ``n_tasks``, its counts do not sum to it)."""
    try:
        runs = json.loads(text)
    except RecursionError:
        raise ValueError("phase is JSON nested too deeply") from None
    if not isinstance(runs, list) or not runs or not all(
            isinstance(r, list) and len(r) == 2 and all(_is_int(x) for x in r) and r[1] >= 1 for r in runs):
        raise ValueError("phase is not run-length JSON [[phase, count], ...]")
    total = sum(r[1] for r in runs)
    if n_tasks is not None and total != n_tasks:
        raise ValueError(f"phase runs sum to {total}, not n_tasks = {n_tasks}")
    if total > MAX_TASKS:
        raise ValueError(f"phase runs sum to {total}, over {MAX_TASKS:,} tasks")
    return np.repeat(np.array([r[0] for r in runs], dtype=np.int64), [r[1] for r in runs])


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_count(value: Any, high: int | None = None) -> bool:
    return _is_int(value) and value >= 0 and (high is None or value <= high)


def _loads(text: Any, what: str) -> Any:
    """JSON of a store's text column; ``ValueError`` naming ``what`` when it is not."""
    if not isinstance(text, str):
        raise ValueError(f"{what} is {type(text).__name__}, not JSON text")
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(f"{what} is JSON nested too deeply") from None
    except ValueError:
        raise ValueError(f"{what} is not JSON") from None


_COUNT_KEYS = ("tasks", "changes", "undetected", "unrecovered", "unjudged", "stale_retrievals",
               "correct_value_losses", "false_revocations", "regret")


def check_detection(detection: Any, n_tasks: int) -> None:
    """``ValueError`` unless ``detection`` (decoded) has the drift metrics' keys and types
    (:func:`~tepa_envs.agents.evaluation.analysis.drift_metrics.episode_metrics`), counts within ``n_tasks``."""
    if not isinstance(detection, dict):
        raise ValueError(f"detection is {type(detection).__name__}, not a JSON object")
    for key in _COUNT_KEYS:
        if not _is_count(detection.get(key), n_tasks):
            raise ValueError(f"detection.{key} is {detection.get(key)!r}, not a count between 0 and n_tasks")
    for key in ("delays", "recoveries"):
        values = detection.get(key)
        if not isinstance(values, list) or len(values) > n_tasks or not all(_is_count(v, n_tasks) for v in values):
            raise ValueError(f"detection.{key} is not a list of counts")
    if not isinstance(detection.get("false_revocation_source"), str):
        raise ValueError("detection.false_revocation_source is not a string")
    if "views" in detection:
        views = detection["views"]
        if not (isinstance(views, dict) and isinstance(views.get("phases"), dict)
                and all(isinstance(row, dict) for row in views["phases"].values())
                and _is_count(views.get("changes")) and isinstance(views.get("uses_to_correct_view"), dict)
                and _is_count(views["uses_to_correct_view"].get("never"))):
            raise ValueError("detection.views is not the view metrics' layout")
        stack: list[Any] = [views]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                stack.extend(item.values())
            elif item is not None and (isinstance(item, bool) or not isinstance(item, (int, float))
                                       or not math.isfinite(item)):
                raise ValueError("detection.views holds a value that is not a finite number")


def check_statistics(data: Any) -> Statistics:
    """The :class:`Statistics` of a ``sweeps.statistics`` JSON object; ``ValueError`` when out of bounds."""
    if not isinstance(data, dict):
        raise ValueError("statistics is not a JSON object")
    alpha, n_perm = data.get("alpha", 0.05), data.get("n_perm", 50_000)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0.0 < alpha < 1.0:
        raise ValueError(f"statistics.alpha is {alpha!r}, not a number in (0, 1)")
    if not _is_int(n_perm) or not 1 <= n_perm <= MAX_N_PERM:
        raise ValueError(f"statistics.n_perm is {n_perm!r}, not an int between 1 and {MAX_N_PERM:,}")
    baselines = data.get("baselines", [])
    if not isinstance(baselines, list) or not all(isinstance(b, str) for b in baselines):
        raise ValueError("statistics.baselines is not a list of method labels")
    return Statistics.from_json(data)


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


_HEX64 = re.compile(r"[0-9a-f]{64}")


def _decode_cell(row: Sequence[Any]) -> StoredCell:
    """A ``cells`` row as a :class:`StoredCell`; ``ValueError`` naming the bad column."""
    id_, cell_id, group_id, env_id, env_kwargs, label, identity, reader_kwargs, version = row
    if not _is_int(id_):
        raise ValueError(f"id is {id_!r}, not an integer")
    for name, value in (("cell_id", cell_id), ("group_id", group_id)):
        if not isinstance(value, str) or not _HEX64.fullmatch(value):
            raise ValueError(f"{name} is not a sha256 hex digest")
    for name, value in (("env_id", env_id), ("method", label), ("version", version)):
        if not isinstance(value, str) or not value:
            raise ValueError(f"{name} is {value!r}, not a non-empty string")
    decoded = {}
    for name, text in (("env_kwargs", env_kwargs), ("reader_kwargs", reader_kwargs), ("method_identity", identity)):
        decoded[name] = _loads(text, name)
        if not isinstance(decoded[name], dict):
            raise ValueError(f"{name} is not a JSON object")
    identity = decoded["method_identity"]
    if not isinstance(identity.get("spec"), str) or ("label" in identity and (
            not isinstance(identity["label"], str) or not isinstance(identity.get("kwargs", {}), dict))):
        raise ValueError("method_identity is not {spec} or {label, spec, kwargs}")
    try:
        method = method_from_identity(identity)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"method_identity: {exc}") from None
    return StoredCell(id_, cell_id, group_id, env_id, decoded["env_kwargs"], method, label,
                      decoded["reader_kwargs"], version)


def _decode_episode(row: Sequence[Any]) -> tuple[np.ndarray, np.ndarray, dict[str, int], Any]:
    """success, phase, trials and detection of a :meth:`Store.rows` row, each checked;
    ``ValueError`` naming what is wrong."""
    seed, n_tasks, blob, phase_text, trials_text, wall, detection_text, successes = row
    if not _is_count(seed):
        raise ValueError(f"seed is {seed!r}, not a non-negative integer")
    success = decode_success(blob, n_tasks)
    padding = len(blob) * 8 - n_tasks
    if padding and blob[-1] & ((1 << padding) - 1):
        raise ValueError("success blob has bits set past n_tasks")
    if not _is_count(successes) or successes != int(success.sum()):
        raise ValueError(f"successes is {successes!r}, but the success blob holds {int(success.sum())}")
    if not isinstance(phase_text, str):
        raise ValueError("phase is not JSON text")
    phase = decode_phase(phase_text, n_tasks)
    trials = _loads(trials_text, "trials")
    if not isinstance(trials, dict) or not all(isinstance(k, str) and _is_count(v) for k, v in trials.items()):
        raise ValueError("trials is not a JSON object of non-negative counts")
    if isinstance(wall, bool) or not isinstance(wall, (int, float)) or not 0.0 <= wall <= MAX_WALL_S:
        raise ValueError(f"wall_s is {wall!r}, not a number of seconds between 0 and {MAX_WALL_S:g}")
    detection = None
    if detection_text is not None:
        detection = _loads(detection_text, "detection")
        check_detection(detection, n_tasks)
        if detection["tasks"] != n_tasks:
            raise ValueError(f"detection.tasks is {detection['tasks']}, not n_tasks = {n_tasks}")
    return success, phase, trials, detection


def _structure_problems(db: sqlite3.Connection) -> list[str]:
    """Missing tables or columns of the schema (:data:`_COLUMNS`)."""
    problems = []
    for table, columns in _COLUMNS.items():
        have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        if not have:
            problems.append(f"table {table} is missing")
            continue
        missing = [c for c in columns if c not in have]
        if missing:
            problems.append(f"table {table} lacks column {missing[0]}")
    return problems


# (what is wrong, condition on a row of episodes) checked in SQL, so a store of millions
# of episodes is checked in seconds; a CASE keeps JSON functions off text that is not JSON.
_EPISODE_CHECKS: tuple[tuple[str, str], ...] = (
    ("seed is not a non-negative integer", "typeof(seed) != 'integer' OR seed < 0"),
    ("cell names no row of cells", "typeof(cell) != 'integer' OR cell NOT IN (SELECT id FROM cells)"),
    (f"n_tasks is not an integer between 1 and {MAX_TASKS:,}",
     f"typeof(n_tasks) != 'integer' OR n_tasks < 1 OR n_tasks > {MAX_TASKS}"),
    ("success is not a blob of ceil(n_tasks / 8) bytes",
     "typeof(success) != 'blob' OR typeof(n_tasks) != 'integer' OR length(success) != (n_tasks + 7) / 8"),
    ("successes is not an integer between 0 and n_tasks",
     "typeof(successes) != 'integer' OR successes < 0 OR successes > n_tasks"),
    ("phase is not run-length JSON [[phase, count], ...] summing to n_tasks",
     "CASE WHEN typeof(phase) != 'text' THEN 1 WHEN NOT json_valid(phase) THEN 1 "
     "WHEN json_type(phase) != 'array' THEN 1 WHEN json_array_length(phase) = 0 THEN 1 "
     "WHEN EXISTS (SELECT 1 FROM json_each(phase) WHERE type != 'array') THEN 1 "
     "WHEN EXISTS (SELECT 1 FROM json_each(phase) WHERE json_array_length(value) != 2 "
     "OR json_type(value, '$[0]') != 'integer' OR json_type(value, '$[1]') != 'integer' "
     "OR json_extract(value, '$[1]') < 1) THEN 1 "
     "WHEN (SELECT total(json_extract(value, '$[1]')) FROM json_each(phase)) != n_tasks THEN 1 ELSE 0 END"),
    ("trials is not a JSON object of non-negative counts",
     "CASE WHEN typeof(trials) != 'text' THEN 1 WHEN NOT json_valid(trials) THEN 1 "
     "WHEN json_type(trials) != 'object' THEN 1 "
     "WHEN EXISTS (SELECT 1 FROM json_each(trials) WHERE type != 'integer' OR value < 0) THEN 1 ELSE 0 END"),
    ("detection is neither NULL nor a JSON object",
     "CASE WHEN detection IS NULL THEN 0 WHEN typeof(detection) != 'text' THEN 1 "
     "WHEN NOT json_valid(detection) THEN 1 WHEN json_type(detection) != 'object' THEN 1 ELSE 0 END"),
    ("success has bits set past n_tasks",
     "CASE WHEN typeof(success) != 'blob' OR typeof(n_tasks) != 'integer' OR n_tasks % 8 = 0 THEN 0 "
     "WHEN length(success) != (n_tasks + 7) / 8 THEN 0 "
     "ELSE ((instr('0123456789ABCDEF', substr(hex(success), -2, 1)) - 1) * 16 "
     "+ instr('0123456789ABCDEF', substr(hex(success), -1, 1)) - 1) & ((1 << (8 - n_tasks % 8)) - 1) != 0 END"),
    ("detection lacks the drift metrics' counts (or one is out of bounds)",
     "CASE WHEN detection IS NULL THEN 0 WHEN typeof(detection) != 'text' THEN 0 WHEN NOT json_valid(detection) "
     "THEN 0 WHEN json_type(detection) != 'object' THEN 0 "
     + " ".join(f"WHEN coalesce(json_type(detection, '$.{k}'), '') != 'integer' THEN 1 "
                f"WHEN json_extract(detection, '$.{k}') NOT BETWEEN 0 AND n_tasks THEN 1" for k in _COUNT_KEYS)
     + " WHEN json_extract(detection, '$.tasks') != n_tasks THEN 1 "
     + " ".join(f"WHEN coalesce(json_type(detection, '$.{k}'), '') != 'array' THEN 1 "
                f"WHEN EXISTS (SELECT 1 FROM json_each(detection, '$.{k}') WHERE type != 'integer' "
                f"OR value NOT BETWEEN 0 AND n_tasks) THEN 1" for k in ("delays", "recoveries"))
     + " WHEN coalesce(json_type(detection, '$.false_revocation_source'), '') != 'text' THEN 1 ELSE 0 END"),
    (f"wall_s is not a number of seconds between 0 and {MAX_WALL_S:g}",
     f"typeof(wall_s) NOT IN ('real', 'integer') OR wall_s < 0 OR wall_s > {MAX_WALL_S}"),
    ("code_version is not text", "typeof(code_version) != 'text'"),
)


def store_problems(db: sqlite3.Connection, limit: int = 20, *, deep: bool = True) -> list[str]:
    """The problems :meth:`Store.check` lists (at most ``limit``); ``deep`` also decodes
    every episode in Python (bits past ``n_tasks``, ``successes`` against the bits, the
    drift metrics' layout: about 70 µs a row, where the SQL checks take about 20)."""
    problems: list[str] = []

    def add(line: str) -> bool:
        problems.append(line)
        return len(problems) >= limit

    try:
        lines = [str(r[0]) for r in db.execute(f"PRAGMA integrity_check({max(1, limit)})")]
    except sqlite3.DatabaseError as exc:
        lines = [str(exc)]
    if lines != ["ok"]:
        for line in lines:
            if add(f"SQLite integrity_check: {' '.join(line.split())}"):
                return problems
        return problems  # a file SQLite cannot read whole: its rows are not worth reading
    try:
        structure = _structure_problems(db)
        for line in structure:
            if add(line):
                return problems
        if structure:
            return problems
        versions = [r[0] for r in db.execute("SELECT version FROM schema_version")]
        if not versions or not all(_is_int(v) for v in versions):
            if add(f"schema_version holds {versions[:3]!r}, not one integer"):
                return problems
        groups: dict[Any, tuple[Any, Any, Any, list[str]]] = {}
        for row in db.execute("SELECT id, cell_id, group_id, env_id, env_kwargs, method, method_identity, "
                              "reader_kwargs, version FROM cells ORDER BY id"):
            try:
                cell = _decode_cell(row)
            except ValueError as exc:
                if add(f"cells row {row[0]!r}: {exc}"):
                    return problems
                continue
            first = groups.setdefault(cell.group_id, (cell.env_id, cell.env_kwargs, cell.reader_kwargs, []))
            if first[:3] != (cell.env_id, cell.env_kwargs, cell.reader_kwargs):
                if add(f"cells row {cell.id}: group {cell.group_id[:12]} mixes environments or kwargs"):
                    return problems
            if cell.label in first[3]:
                if add(f"cells row {cell.id}: method {cell.label!r} is twice in group {cell.group_id[:12]}"):
                    return problems
            first[3].append(cell.label)
        for what, condition in _EPISODE_CHECKS:
            for cell, seed in db.execute(f"SELECT cell, seed FROM episodes WHERE {condition} LIMIT ?", (limit,)):
                if add(f"episode (cell {cell!r}, seed {seed!r}): {what}"):
                    return problems
        for (group_id, counts) in db.execute(
                "SELECT c.group_id, group_concat(DISTINCT e.n_tasks) FROM episodes e JOIN cells c ON e.cell = c.id "
                "GROUP BY c.group_id HAVING count(DISTINCT e.n_tasks) > 1 LIMIT ?", (limit,)):
            if add(f"group {str(group_id)[:12]}: episodes with different task counts ({counts})"):
                return problems
        if deep and not problems:  # what SQL cannot check cheaply: decoded rows (bits, counts, drift metrics)
            for row in db.execute("SELECT seed, n_tasks, success, phase, trials, wall_s, detection, successes, "
                                  "cell FROM episodes"):
                try:
                    _decode_episode(row[:8])
                except ValueError as exc:
                    if add(f"episode (cell {row[8]!r}, seed {row[0]!r}): {exc}"):
                        return problems
        for row in db.execute("SELECT id, statistics FROM sweeps ORDER BY id"):
            try:
                check_statistics(_loads(row[1], "statistics"))
            except ValueError as exc:
                if add(f"sweeps row {row[0]!r}: {exc}"):
                    return problems
    except sqlite3.DatabaseError as exc:
        add(f"SQLite error while reading rows: {' '.join(str(exc).split())}")
    return problems


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
    def open(cls, path: str | os.PathLike[str], *, create: bool = True, check: bool = True) -> Store:
        """Open (with ``create``, create) the store at ``path`` (``":memory:"`` for a
        throw-away one); :class:`StoreError` (one line) when it is not a store this version
        reads. With ``check``, a store that already held rows is checked whole first
        (:meth:`validate`: SQLite's ``integrity_check`` and every row), so damage is
        refused before any work rather than met half-way."""
        path = str(path)
        existed = False
        if path != ":memory:":
            target = Path(path)
            if target.is_dir():
                raise StoreError(f"store {path} is a directory, not a SQLite file")
            existed = target.is_file() and target.stat().st_size > 0
            if target.exists() and not target.is_file():
                raise StoreError(f"store {path} is not a regular file")
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
            raise StoreError(f"{path} is not a tepa-bench store (or is damaged): {exc}") from None
        if check and existed:
            try:
                store.validate()
            except BaseException:
                connection.close()
                raise
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
        if "schema_version" in tables:
            problems = _structure_problems(db)
            if problems:
                raise StoreError(f"{self.path} is damaged: {problems[0]}")
        if self.path != ":memory:":
            mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":  # pragma: no cover - e.g. a file system without shared memory
                raise StoreError(f"cannot put {self.path} in WAL mode (got {mode})")
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("PRAGMA foreign_keys = ON")
        if "schema_version" not in tables:
            with immediate_transaction(db):
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute("INSERT INTO schema_version (version) VALUES (?)", (STORE_SCHEMA_VERSION,))

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ writing (the driver only)
    @_guarded
    def schema_version(self) -> int:
        return int(self.connection.execute("SELECT max(version) FROM schema_version").fetchone()[0])

    @_guarded
    def add_cells(self, cells: Sequence[Cell]) -> list[int]:
        """The ``cells.id`` of every cell, inserting the new ones (in order)."""
        db = self.connection
        ids = []
        with immediate_transaction(db):
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
        return ids

    @_guarded
    def add_sweep(self, spec: SweepSpec, command: Sequence[str]) -> int:
        started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        cursor = self.connection.execute(
            "INSERT INTO sweeps (started_utc, name, command, spec, statistics) VALUES (?, ?, ?, ?, ?)",
            (started, spec.name, json.dumps(list(command)), json.dumps(spec.to_json()),
             json.dumps(spec.statistics.to_json())))
        sweep_id = cursor.lastrowid
        assert sweep_id is not None  # set by the INSERT
        return sweep_id

    def code_version(self) -> str:
        """The ``code_version`` written with this process's episodes."""
        if self._code_version is None:
            self._code_version = code_version()
        return self._code_version

    @_guarded
    def add_episodes(self, episodes: Iterable[Episode]) -> int:
        """Insert finished episodes in one transaction (an episode already stored is
        kept: results are deterministic); the number inserted."""
        version = self.code_version()
        rows = [(e.cell, e.seed, e.n_tasks, e.successes, e.success, e.phase, e.trials, e.detection, e.wall_s,
                 version) for e in episodes]
        if not rows:
            return 0
        db = self.connection
        with immediate_transaction(db):
            before = db.total_changes
            db.executemany("INSERT OR IGNORE INTO episodes (cell, seed, n_tasks, successes, success, phase, "
                           "trials, detection, wall_s, code_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            inserted = db.total_changes - before
        return inserted

    # ------------------------------------------------------------------ reading
    @_guarded
    def finished(self, cells: Iterable[int]) -> set[tuple[int, int]]:
        """The ``(cell, seed)`` pairs already stored among ``cells``."""
        done: set[tuple[int, int]] = set()
        for cell in cells:
            done.update((cell, seed) for (seed,) in
                        self.connection.execute("SELECT seed FROM episodes WHERE cell = ?", (cell,)))
        return done

    @_guarded
    def count(self) -> int:
        return int(self.connection.execute("SELECT count(*) FROM episodes").fetchone()[0])

    @_guarded
    def cells(self) -> list[StoredCell]:
        out = []
        for row in self.connection.execute(
                "SELECT id, cell_id, group_id, env_id, env_kwargs, method, method_identity, reader_kwargs, "
                "version FROM cells ORDER BY id"):
            try:
                out.append(_decode_cell(row))
            except ValueError as exc:
                raise StoreError(f"{self.path} is damaged: cells row {row[0]!r}: {exc}") from None
        return out

    def groups(self) -> dict[str, list[StoredCell]]:
        """Cells by group id: groups in order of their first cell, cells in store order."""
        groups: dict[str, list[StoredCell]] = {}
        for cell in self.cells():
            groups.setdefault(cell.group_id, []).append(cell)
        return groups

    @_guarded
    def statistics(self) -> Statistics:
        """The statistics of the latest sweep started on this store (defaults when none)."""
        row = self.connection.execute("SELECT id, statistics FROM sweeps ORDER BY id DESC LIMIT 1").fetchone()
        if row is None:
            return Statistics()
        try:
            return check_statistics(_loads(row[1], "statistics"))
        except ValueError as exc:
            raise StoreError(f"{self.path} is damaged: sweeps row {row[0]!r}: {exc}") from None

    @_guarded
    def seeds_of(self, cell: int) -> list[int]:
        return [s for (s,) in self.connection.execute("SELECT seed FROM episodes WHERE cell = ? ORDER BY seed",
                                                      (cell,))]

    @_guarded
    def rows(self, cell: int, seeds: Sequence[int] | None = None) -> list[tuple[Any, ...]]:
        """``(seed, n_tasks, success, phase, trials, wall_s, detection, successes)`` of ``cell``'s episodes, by seed."""
        rows = self.connection.execute(
            "SELECT seed, n_tasks, success, phase, trials, wall_s, detection, successes FROM episodes "
            "WHERE cell = ? ORDER BY seed", (cell,)).fetchall()
        if seeds is not None:
            wanted = set(seeds)
            rows = [r for r in rows if r[0] in wanted]
        return rows

    @_guarded
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
            decoded = []
            for row in ordered:
                try:
                    decoded.append(_decode_episode(row))
                except ValueError as exc:
                    raise StoreError(f"{self.path} is damaged: episode (cell {cell}, seed {row[0]!r}) of "
                                     f"{label}: {exc}") from None
            lengths = sorted({d[0].size for d in decoded} | ({phase.size} if phase is not None else set()))
            if len(lengths) > 1:
                raise StoreError(f"{self.path} is damaged: the episodes of one group have different task "
                                 f"counts ({', '.join(map(str, lengths[:5]))})")
            if phase is None:
                phase = decoded[0][1]
            success = np.stack([d[0] for d in decoded])
            trials = [d[2] for d in decoded]
            wall += sum(r[5] for r in ordered)
            metrics = [d[3] for d in decoded]
            runs[label] = MethodRuns(label, success, trials, metrics)
        assert phase is not None
        return Evaluation(env_id, dict(env_kwargs), dict(reader_kwargs), seeds, phase, runs, wall)

    @_guarded
    def integrity_check(self) -> str:
        return str(self.connection.execute("PRAGMA integrity_check").fetchone()[0])

    def check(self, limit: int = 20, *, deep: bool = True) -> list[str]:
        """What is wrong with this store, at most ``limit`` lines (none: it is sound):
        SQLite's ``integrity_check``, the tables and columns, then every row of every
        table (types, bounds, JSON, blob lengths against ``n_tasks``, phase runs summing
        to ``n_tasks``, the drift metrics' layout, groups that agree); ``deep=False`` leaves
        out the Python decoding of every episode (what :meth:`evaluation` checks anyway on
        the rows a report uses)."""
        return store_problems(self.connection, max(1, limit), deep=deep)

    def validate(self) -> None:
        """:class:`StoreError` naming the file and its first problem unless :meth:`check` (without
        ``deep``: seconds for a store of a million episodes) finds none."""
        problems = self.check(limit=2, deep=False)
        if problems:
            more = f" (and more: `tepa-bench store check {self.path}` lists them)" if len(problems) > 1 else ""
            raise StoreError(f"{self.path} is damaged: {problems[0]}{more}")


__all__ = ["Episode", "MAX_TASKS", "MAX_WALL_S", "STORE_SCHEMA_VERSION", "Store", "StoreError", "StoredCell",
           "check_detection", "check_statistics", "code_version", "store_problems",
           "decode_phase", "decode_success", "encode_phase", "encode_success"]
