"""Every official FactConsolidation configuration (single- and multi-hop at 6k, 32k, 64k
and 262k) loads and scores from files in MemoryAgentBench's published schema.

The records are built at each length in the schema of the official rows (the generator
shaped like them, with the published metadata fields; the structure is checked against
the official 6k rows when they are present) and written as real files under the
documented names: one JSON file per row (``factconsolidation_<split>_<length>.json``, as
the development rows are kept) and the published parquet file holding all eight rows
(``Conflict_Resolution-00000-of-00001.parquet``; skipped, saying why, without pyarrow).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import tepa_envs  # noqa: F401
from tepa_envs.agents.evaluation.outputs.facts_tables import facts_markdown, format_facts_table
from tepa_envs.agents.evaluation.studies.facts import official_file, reproduce_facts, run_questions
from tepa_envs.error import DataFormatError, DependencyNotInstalled
from tepa_envs.facts.data import LENGTHS, SPLITS, source_name
from tepa_envs.facts.env import generated_episode
from tepa_envs.facts.loader import (METADATA_FIELDS, PUBLISHED_FILE, find_official, load_records,
                                    official_file_names, write_records)
from tepa_envs.facts.shaped import generate_shaped

ENV_ID = "TEPA/FactConsolidation-v0"
CONFIGS = [(split, length) for length in LENGTHS for split in SPLITS]
HAS_PYARROW = importlib.util.find_spec("pyarrow") is not None
needs_pyarrow = pytest.mark.skipif(not HAS_PYARROW, reason="pyarrow is not installed (pip install pyarrow): "
                                                           "the published parquet file cannot be written or read")


def published_record(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with the published metadata: every field of the schema, null unless filled."""
    metadata = {name: record["metadata"].get(name) for name in METADATA_FIELDS}
    return {"context": record["context"], "questions": record["questions"], "answers": record["answers"],
            "metadata": metadata}


@pytest.fixture(scope="module")
def records() -> dict[tuple[str, str], dict[str, Any]]:
    """The eight configurations, each a record in the published schema (seed 0)."""
    out = {}
    for length in LENGTHS:
        for split, record in generate_shaped(length, 0).items():
            out[split, length] = published_record(record)
    return out


@pytest.fixture(scope="module")
def folder(records, tmp_path_factory) -> Path:
    """A data folder as a user would lay it out: one JSON file per row under its documented
    name, and (with pyarrow) the published parquet file holding all eight rows."""
    path = tmp_path_factory.mktemp("official")
    for (split, length), record in records.items():
        write_records([record], path / f"{source_name(split, length)}.json")
    if HAS_PYARROW:
        write_records(list(records.values()), path / PUBLISHED_FILE)
    return path


def _shape(value: Any) -> Any:
    """The structure of a JSON value: dict keys with their shapes, list item shapes, leaf types."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return sorted({json.dumps(_shape(v)) for v in value})
    return type(value).__name__


def test_records_have_the_official_rows_schema(records, real_rows):
    for split in SPLITS:
        (official,) = json.loads((real_rows / f"factconsolidation_{split}_6k.json").read_text(encoding="utf-8"))
        for length in LENGTHS:
            built = records[split, length]
            assert _shape(built) == _shape(official), (split, length)
            assert built["context"].splitlines()[0] == official["context"].splitlines()[0]
            assert built["metadata"]["source"] == source_name(split, length)


def test_documented_file_names():
    assert official_file_names("mh", "262k") == ("factconsolidation_mh_262k.json", "factconsolidation_mh_262k.jsonl",
                                                 "factconsolidation_mh_262k.parquet", PUBLISHED_FILE)
    with pytest.raises(ValueError, match="length"):
        official_file_names("sh", "128k")
    with pytest.raises(ValueError, match="split"):
        official_file_names("xh", "6k")


@pytest.mark.parametrize("split, length", CONFIGS, ids=[f"{s}-{n}" for s, n in CONFIGS])
def test_each_configuration_loads_from_its_json_file_and_scores(folder, records, split, length):
    path = folder / f"{source_name(split, length)}.json"
    assert official_file(folder, split, length) == path  # the row's own file is found first
    env = gym.make(ENV_ID, split=split, length=length, data_path=path)
    env.reset(seed=0)
    data = env.unwrapped.data
    assert len(data.facts) == LENGTHS[length] and len(data.questions) == 100
    assert env.unwrapped.coverage() == 1.0
    # the same record as the generator streams it: the loaded file changes nothing
    assert data == generated_episode(length, 0, split)
    rows = run_questions(env, "lww", 0)
    score = sum(r["success"] for r in rows) / len(rows)
    # measured (lww, newest, general template pool): SH 0.84 / 0.85 / 0.86 / 0.79, MH 0.58 / 0.52 / 0.58 / 0.62
    # (SH 0.83 / 0.81 / 0.82 / 0.77, MH 0.53 / 0.51 / 0.58 / 0.57 with father and mother under one key)
    assert len(rows) == 100 and score >= (0.52 if split == "mh" else 0.79), score
    env.close()


@needs_pyarrow
def test_the_published_parquet_file_holds_all_eight_rows(folder, records):
    loaded = load_records(folder / PUBLISHED_FILE)
    assert [r["metadata"]["source"] for r in loaded] == [source_name(s, n) for s, n in records]
    assert loaded == list(records.values())  # the published schema round-trips exactly


@needs_pyarrow
@pytest.mark.parametrize("split, length", CONFIGS, ids=[f"{s}-{n}" for s, n in CONFIGS])
def test_each_configuration_loads_from_the_published_parquet_file(folder, split, length, tmp_path):
    published = tmp_path / PUBLISHED_FILE
    published.write_bytes((folder / PUBLISHED_FILE).read_bytes())
    assert find_official(tmp_path, split, length) == published  # no per-row file here: the published one
    env = gym.make(ENV_ID, split=split, length=length, data_path=published)
    env.reset(seed=0)
    assert env.unwrapped.data.source == source_name(split, length)
    assert env.unwrapped.data == generated_episode(length, 0, split)
    env.close()


def test_a_size_or_split_mismatch_is_refused(folder, tmp_path):
    row_6k = folder / "factconsolidation_sh_6k.json"
    for split, length in [("sh", "32k"), ("mh", "6k"), ("mh", "262k")]:
        with pytest.raises(ValueError, match=rf"no record with metadata.source '{source_name(split, length)}'.*"
                                             r"factconsolidation_sh_6k"):
            gym.make(ENV_ID, split=split, length=length, data_path=row_6k)
    # a file named after another configuration is still read by its rows' sources
    renamed = tmp_path / "factconsolidation_sh_262k.json"
    renamed.write_bytes(row_6k.read_bytes())
    with pytest.raises(ValueError, match="factconsolidation_sh_262k"):
        gym.make(ENV_ID, split="sh", length="262k", data_path=renamed)


@needs_pyarrow
def test_the_published_file_without_a_row_is_not_taken_for_it(records, tmp_path):
    write_records([records["sh", "6k"], records["mh", "6k"]], tmp_path / PUBLISHED_FILE)
    assert find_official(tmp_path, "sh", "6k") == tmp_path / PUBLISHED_FILE
    assert find_official(tmp_path, "sh", "32k") is None
    with pytest.raises(ValueError, match="no record with metadata.source 'factconsolidation_mh_64k'"):
        gym.make(ENV_ID, split="mh", length="64k", data_path=tmp_path / PUBLISHED_FILE)


def test_the_study_names_size_and_origin_of_every_row(folder):
    rows = reproduce_facts(methods=["lww"], lengths=("6k", "32k"), splits=("sh",), sources=("synthetic", "real"),
                           data_dir=folder, with_extra_rows=False, readers=("newest",))
    assert [(r["origin"], r["length"], r["n_facts"]) for r in rows] == [
        ("generated", "6k", 455), ("generated", "32k", 2310), ("official", "6k", 455), ("official", "32k", 2310)]
    assert [r["data"] for r in rows] == [None, None, "factconsolidation_sh_6k.json", "factconsolidation_sh_32k.json"]
    # the official row is the generated record written to a file: the same score
    assert rows[0]["score"] == rows[2]["score"] and rows[1]["score"] == rows[3]["score"]
    table, markdown = format_facts_table(rows), facts_markdown(rows)
    assert "official / generated" in table and "generated SH-32k (2,310 facts)" in table
    assert "SH-32k official / generated" in markdown and "official SH-32k (2,310 facts)" in markdown


@needs_pyarrow
def test_parquet_metadata_outside_the_published_schema_is_refused_before_writing(records, tmp_path):
    extra = dict(records["sh", "6k"], metadata={**records["sh", "6k"]["metadata"], "lang": "en"})
    path = tmp_path / "rows.parquet"
    with pytest.raises(DataFormatError, match=r"records\[0\]\.metadata has field\(s\) lang"):
        write_records([extra], path)
    assert not path.exists()
    mistyped = dict(records["sh", "6k"], metadata={**records["sh", "6k"]["metadata"], "keypoints": [3]})
    with pytest.raises(DataFormatError, match="published schema's metadata types"):
        write_records([mistyped], path)
    assert not path.exists()
    path.write_bytes(b"PAR1 not a parquet file")
    with pytest.raises(DataFormatError, match="rows.parquet is not a readable parquet file"):
        load_records(path)


def test_parquet_without_pyarrow_gives_a_clear_error(records, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now raises ImportError
    path = tmp_path / PUBLISHED_FILE
    with pytest.raises(DependencyNotInstalled, match="pip install pyarrow"):
        write_records([records["sh", "6k"]], path)
    path.write_bytes(b"PAR1")
    with pytest.raises(DependencyNotInstalled, match=rf"{PUBLISHED_FILE} is a parquet file.*pip install pyarrow"):
        load_records(path)
