"""An on-disk cache of language-model decisions, shared by every language-model reader.

One SQLite file; one row per decision, keyed by the sha256 of (model identity,
prompt template version, prompt text, options). A row holds the option chosen and
the scores (or the raw answer) it was chosen from, so a rerun of the same seeds
makes the same decisions without running the model, and a statistic computed
from a run can be recomputed from the cache.

Each write is one SQLite transaction (atomic: a killed run leaves whole rows or
none). Several processes (the harness's workers) may share the file: SQLite
locks it per write and readers wait up to ``timeout`` seconds. The default
location is ``$TEPA_LM_CACHE`` or, failing that,
``$XDG_CACHE_HOME/tepa-envs/lm-decisions.sqlite`` (``~/.cache`` when
``XDG_CACHE_HOME`` is unset).
"""

from __future__ import annotations

from tepa_envs.error import TepaError
import contextlib
import hashlib
import json
import os
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

CACHE_ENV = "TEPA_LM_CACHE"
"""Environment variable naming the decision cache file."""

SCHEMA_VERSION = 1

_COLUMNS = ("key", "model", "template", "choice", "detail")
_CHECKED: dict[tuple[str, int, int], None] = {}  # files already found sound: (path, size, mtime_ns)


class CacheError(TepaError, ValueError):
    """A decision cache that cannot be used (not a SQLite file, another application's
    database, damaged pages or rows): one line naming the file and what is wrong."""


def cache_home() -> Path:
    """``$XDG_CACHE_HOME/tepa-envs`` (``~/.cache/tepa-envs``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tepa-envs"


def default_cache_path() -> Path:
    """``$TEPA_LM_CACHE`` or ``cache_home() / "lm-decisions.sqlite"``."""
    named = os.environ.get(CACHE_ENV)
    return Path(named) if named else cache_home() / "lm-decisions.sqlite"


def decision_key(model: str, template: str, prompt: str, options: Sequence[str]) -> str:
    """The cache key of one decision: sha256 of its parts, JSON-encoded (unambiguous)."""
    blob = json.dumps([SCHEMA_VERSION, model, template, prompt, list(options)], ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedDecision:
    """A decision as the cache holds it."""

    choice: str
    detail: dict[str, Any]


class DecisionCache:
    """The SQLite decision cache (see the module docstring).

    Args:
        path: the cache file (created with its directory if missing).
        timeout: seconds to wait for another process's write lock.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, timeout: float = 60.0) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        self.timeout = float(timeout)
        self._local = threading.local()
        self._pid = os.getpid()
        if self.path.exists() and not self.path.is_file():
            raise CacheError(f"decision cache {self.path} is not a regular file")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._guard():
            conn = self._connect()
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if tables - {"decisions"}:
                raise CacheError(f"decision cache {self.path} is a SQLite file of another application "
                                 f"(tables: {', '.join(sorted(tables))})")
            with conn:
                conn.execute("CREATE TABLE IF NOT EXISTS decisions (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
                             "template TEXT NOT NULL, choice TEXT NOT NULL, detail TEXT NOT NULL)")
            columns = tuple(row[1] for row in conn.execute("PRAGMA table_info(decisions)"))
            if columns != _COLUMNS:
                raise CacheError(f"decision cache {self.path}: table decisions has columns {', '.join(columns)}, "
                                 f"not {', '.join(_COLUMNS)}")
            self._check_pages(conn)

    def _check_pages(self, conn: sqlite3.Connection) -> None:
        """SQLite's ``quick_check`` of the file, once per process for each size and mtime."""
        try:
            info = os.stat(self.path)
        except OSError:
            return
        stamp = (str(self.path.absolute()), info.st_size, info.st_mtime_ns)
        if stamp in _CHECKED:
            return
        result = [str(row[0]) for row in conn.execute("PRAGMA quick_check(1)")]
        if result != ["ok"]:
            raise CacheError(f"decision cache {self.path} is damaged: {' '.join(result[0].split())}; "
                             "move it aside (its decisions are asked again) or set $" + CACHE_ENV + " to another file")
        _CHECKED[stamp] = None

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        """A SQLite failure (a file that is not a database, damaged pages) as one-line :class:`CacheError`."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise CacheError(f"decision cache {self.path}: {' '.join(str(exc).split())}; move it aside (its "
                             f"decisions are asked again) or set ${CACHE_ENV} to another file") from None

    def _connect(self) -> sqlite3.Connection:
        """This process's and thread's connection (a forked worker opens its own)."""
        conn = getattr(self._local, "conn", None)
        if conn is None or self._pid != os.getpid():
            conn = sqlite3.connect(self.path, timeout=self.timeout)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
            except sqlite3.OperationalError:  # a file system without shared memory: keep the rollback journal
                pass
            self._local.conn, self._pid = conn, os.getpid()
        return conn

    def get(self, key: str) -> CachedDecision | None:
        """The decision stored under ``key``, or ``None``."""
        with self._guard():
            row = self._connect().execute("SELECT choice, detail FROM decisions WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            detail = json.loads(row[1]) if isinstance(row[1], str) else None
        except (ValueError, RecursionError):
            detail = None
        if not isinstance(row[0], str) or not isinstance(detail, dict):
            raise CacheError(f"decision cache {self.path}: the row of key {key[:12]}… is damaged (choice must be "
                             "text, detail a JSON object); move the file aside or set $" + CACHE_ENV + " to another")
        return CachedDecision(row[0], detail)

    def put(self, key: str, model: str, template: str, decision: CachedDecision) -> None:
        """Store ``decision`` under ``key`` (one transaction; an existing row is kept:
        decisions are deterministic, so both would be the same)."""
        with self._guard():
            conn = self._connect()
            with conn:
                conn.execute("INSERT OR IGNORE INTO decisions VALUES (?, ?, ?, ?, ?)",
                             (key, model, template, decision.choice, json.dumps(decision.detail, sort_keys=True)))

    def __len__(self) -> int:
        with self._guard():
            return int(self._connect().execute("SELECT COUNT(*) FROM decisions").fetchone()[0])

    def clear(self) -> None:
        """Remove every stored decision."""
        with self._guard():
            conn = self._connect()
            with conn:
                conn.execute("DELETE FROM decisions")

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._pid == os.getpid():
            conn.close()
        self._local.conn = None

    def __getstate__(self) -> dict[str, Any]:  # picklable: the connection is reopened where it is used
        return {"path": self.path, "timeout": self.timeout}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.path, self.timeout = state["path"], state["timeout"]
        self._local, self._pid = threading.local(), os.getpid()

    def __repr__(self) -> str:
        return f"DecisionCache({str(self.path)!r})"


def open_cache(cache: "DecisionCache | str | os.PathLike[str] | bool | None") -> DecisionCache | None:
    """A reader's ``cache`` argument as a cache: ``True``/``None`` the default file,
    ``False`` no cache, a path that file, or a :class:`DecisionCache` as it is."""
    if cache is False:
        return None
    if isinstance(cache, DecisionCache):
        return cache
    if cache is None or cache is True:
        return DecisionCache()
    if isinstance(cache, (str, os.PathLike)):
        return DecisionCache(cache)
    raise TypeError(f"cache must be a path, True, False, None or a DecisionCache, got {type(cache).__name__}")


__all__ = ["CACHE_ENV", "CacheError", "CachedDecision", "DecisionCache", "cache_home", "decision_key", "default_cache_path",
           "open_cache"]
