"""A damaged decision cache is refused in one line naming the file (issue 29, item 7)."""

import os
import sqlite3

import pytest

from tepa_envs.agents.evaluation.cli import main
from tepa_envs.agents.readers.lm_cache import CacheError, CachedDecision, DecisionCache, decision_key

KEY = decision_key("m", "v1", "prompt", ["a", "b"])


def _good(path):
    cache = DecisionCache(path)
    cache.put(KEY, "m", "v1", CachedDecision("b", {"score": 1}))
    cache.close()
    db = sqlite3.connect(path)
    with db:  # one transaction: 300 commits would take a second
        db.executemany("INSERT INTO decisions VALUES (?, 'm', 'v1', 'a', ?)",
                       [(decision_key("m", "v1", f"prompt {i}", ["a", "b"]), f'{{"i": {i}}}') for i in range(300)])
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


def _random_bytes(path):
    path.write_bytes(os.urandom(20_000))


def _mid_file(path):
    _good(path)
    size = os.path.getsize(path)
    with open(path, "r+b") as handle:
        handle.seek((size // 4096 // 2) * 4096)
        handle.write(os.urandom(8192))


def _foreign(path):
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE accounts (x)")
    db.commit()
    db.close()


def _wrong_columns(path):
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE decisions (key TEXT PRIMARY KEY, answer TEXT)")
    db.commit()
    db.close()


@pytest.mark.parametrize("damage, needle", [
    (_random_bytes, "not a database"),
    (_mid_file, "damaged"),
    (_foreign, "another application"),
    (_wrong_columns, "columns"),
])
def test_a_damaged_cache_is_one_line_cache_error(tmp_path, damage, needle):
    path = tmp_path / "cache.sqlite"
    damage(path)
    with pytest.raises(CacheError, match=needle) as info:
        cache = DecisionCache(path)
        cache.get(KEY)
        len(cache)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("update", ["choice = x'00'", "detail = 'not json'", "detail = '[1]'",
                                    "detail = '" + "[" * 5000 + "]" * 5000 + "'"])
def test_a_damaged_row_is_a_cache_error(tmp_path, update):
    path = tmp_path / "cache.sqlite"
    _good(path)
    db = sqlite3.connect(path)
    db.execute(f"UPDATE decisions SET {update} WHERE key = ?", (KEY,))
    db.commit()
    db.close()
    cache = DecisionCache(path)
    with pytest.raises(CacheError, match="damaged"):
        cache.get(KEY)


def test_a_sound_cache_still_reads(tmp_path):
    path = tmp_path / "cache.sqlite"
    _good(path)
    cache = DecisionCache(path)
    assert cache.get(KEY) == CachedDecision("b", {"score": 1}) and len(cache) == 301


def test_run_with_a_random_bytes_cache_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
    path = tmp_path / "cache.sqlite"
    _random_bytes(path)
    monkeypatch.setenv("TEPA_LM_CACHE", str(path))
    argv = ["run", "TEPA/RegimeDrift-v0", "--methods", "tepa", "--seeds", "1", "--reader", "openai",
            "--reader-kwargs", '{"model": "m", "base_url": "http://127.0.0.1:9/v1"}', "--quiet"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tepa-bench: error:") and str(path) in err and "\n" not in err
