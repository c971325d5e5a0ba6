"""Reading, writing and parsing FactConsolidation records.

* :func:`write_records` / :func:`load_records`: JSON (a list of records or one
  record), JSONL (one record a line) and parquet (through pyarrow, when
  installed: ``pip install pyarrow``), in MemoryAgentBench's published schema
  (:data:`METADATA_FIELDS`). Records are validated against it on load.
* :func:`find_official`: the file of one official configuration in a folder,
  under the documented names (:func:`official_file_names`).
* :func:`parse_context`: the numbered facts of a context.
* :func:`parse_fact` / :func:`parse_questions`: facts and questions in the
  generator's templates, turned into ``subject|relation`` keys and relation
  chains. Text in other templates does not parse (``None`` / ``[]``).

The official data: MemoryAgentBench's Hugging Face dataset ``ai-hyz/MemoryAgentBench``,
split ``Conflict_Resolution``, published as one parquet file,
``data/Conflict_Resolution-00000-of-00001.parquet`` (:data:`PUBLISHED_FILE`), whose
eight rows are the eight FactConsolidation configurations: ``metadata.source`` =
``factconsolidation_<split>_<length>`` for split ``sh`` (single-hop) or ``mh``
(multi-hop) and length ``6k``, ``32k``, ``64k`` or ``262k``. One row may also be kept
alone as ``factconsolidation_<split>_<length>.json`` (``.jsonl``, ``.parquet``), as
the development rows are. Either file is read whole; :func:`select_record` takes
the row that names the split and length asked for and refuses any other.

A malformed file or record raises :class:`~tepa_envs.error.DataFormatError`
(a ``ValueError``) naming where the problem is; a parquet file without pyarrow
installed raises Gymnasium's ``DependencyNotInstalled``.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from tepa_envs.error import DataFormatError, DependencyNotInstalled
from tepa_envs.facts.data import RELATIONS, check_length, check_split, source_name

_LINE = re.compile(r"^\s*(\d+)\.\s+(.*\S)\s*$")

PUBLISHED_FILE = "Conflict_Resolution-00000-of-00001.parquet"
"""The file name of MemoryAgentBench's ``Conflict_Resolution`` split (its ``data/`` folder):
the eight FactConsolidation rows."""
METADATA_FIELDS: tuple[str, ...] = ("demo", "haystack_sessions", "keypoints", "previous_events", "qa_pair_ids",
                                    "question_dates", "question_ids", "question_types", "source")
"""The fields of ``metadata`` in the published schema (the FactConsolidation rows fill
``qa_pair_ids`` and ``source``; the others are null)."""
INSTALL_PARQUET = "pip install pyarrow"


# ------------------------------------------------------------------ schema
def _nonblank(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _record_name(record: dict, where: str) -> str:
    """``where``, plus the record's ``metadata.source`` when it has a readable one."""
    metadata = record.get("metadata")
    source = metadata.get("source") if isinstance(metadata, dict) else None
    return f"{where} (metadata.source {source!r})" if isinstance(source, str) else where


def validate_record(record: object, where: str = "record") -> dict[str, Any]:
    """Check one record against the FactConsolidation schema; normalise answers to lists.

    The schema (MemoryAgentBench's): ``context`` a non-empty string; ``questions``
    a non-empty list of non-empty strings; ``answers`` a list of the same length
    whose items are non-empty lists of non-empty strings (the gold aliases; a
    single string is taken as one alias); ``metadata`` a dict (optional), whose
    ``source`` is a string and ``qa_pair_ids`` a list of one id per question.
    Raises :class:`~tepa_envs.error.DataFormatError` naming the record (``where``,
    e.g. ``file.json[0]``, and its ``metadata.source`` when readable) and the field.
    """
    if not isinstance(record, dict):
        raise DataFormatError(f"{where} must be a dict, got {type(record).__name__}")
    where = _record_name(record, where)
    missing = [f for f in ("context", "questions", "answers") if f not in record]
    if missing:
        raise DataFormatError(f"{where} lacks field(s) {', '.join(missing)}")
    metadata = record.get("metadata")
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise DataFormatError(f"{where}.metadata must be a dict, got {type(metadata).__name__}")
    if not _nonblank(record["context"]):
        got = "a blank one" if isinstance(record["context"], str) else type(record["context"]).__name__
        raise DataFormatError(f"{where}.context must be a non-empty string, got {got}")
    for field in ("questions", "answers"):
        if not isinstance(record[field], (list, tuple)):
            raise DataFormatError(f"{where}.{field} must be a list, got {type(record[field]).__name__}")
    questions, answers = list(record["questions"]), list(record["answers"])
    if not questions:
        raise DataFormatError(f"{where}.questions is empty: a record needs at least one question")
    for i, question in enumerate(questions):
        if not _nonblank(question):
            raise DataFormatError(f"{where}.questions[{i}] must be a non-empty string, got {question!r:.60}")
    if len(questions) != len(answers):
        raise DataFormatError(f"{where} has {len(questions)} questions but {len(answers)} answers")
    aliases: list[list[str]] = []
    for i, answer in enumerate(answers):
        listed = [answer] if isinstance(answer, str) else list(answer) if isinstance(answer, (list, tuple)) else []
        if not listed or not all(_nonblank(a) for a in listed):
            raise DataFormatError(f"{where}.answers[{i}] must be a string or a non-empty list of strings "
                                  f"(the gold aliases, none blank), got {answer!r:.60}")
        aliases.append(listed)
    metadata = dict(metadata)
    if metadata.get("source") is not None and not isinstance(metadata["source"], str):
        raise DataFormatError(f"{where}.metadata.source must be a string, got {type(metadata['source']).__name__}")
    if "qa_pair_ids" in metadata:
        if not isinstance(metadata["qa_pair_ids"], (list, tuple)):
            raise DataFormatError(f"{where}.metadata.qa_pair_ids must be a list")
        for i, x in enumerate(metadata["qa_pair_ids"]):
            if isinstance(x, bool) or not isinstance(x, (str, int)):
                raise DataFormatError(f"{where}.metadata.qa_pair_ids[{i}] must be a string (or an int), "
                                      f"got {type(x).__name__}")
        metadata["qa_pair_ids"] = [str(x) for x in metadata["qa_pair_ids"]]
        if len(metadata["qa_pair_ids"]) != len(questions):
            raise DataFormatError(f"{where}.metadata.qa_pair_ids has {len(metadata['qa_pair_ids'])} ids "
                                  f"for {len(questions)} questions")
    return {"context": record["context"], "questions": questions, "answers": aliases, "metadata": metadata}


# --------------------------------------------------------------------- I/O
def write_records(records: Iterable[dict], path: str | Path) -> Path:
    """Write records as ``.json`` (a list), ``.jsonl`` (one a line) or ``.parquet`` (the
    published schema, :data:`METADATA_FIELDS`; needs pyarrow); returns the path.

    Every record is validated (and, for parquet, its metadata checked against the
    published fields) before the file is touched.
    """
    path = Path(path)
    if path.suffix not in (".json", ".jsonl", ".parquet"):
        raise ValueError(f"records are written as .json, .jsonl or .parquet, got {path.name!r}")
    rows = [validate_record(r, f"records[{i}]") for i, r in enumerate(records)]
    if path.suffix == ".parquet":
        _write_parquet(rows, path)
        return path
    if path.suffix == ".json":
        text = json.dumps(rows, ensure_ascii=False)
    else:
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    path.write_text(text, encoding="utf-8")
    return path


def load_records(path: str | Path) -> list[dict[str, Any]]:
    """Read FactConsolidation records from a local ``.json``, ``.jsonl`` or ``.parquet`` file."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no such file: {path}")
    if path.suffix == ".json":
        data = _parse_json(path.read_text(encoding="utf-8"), path.name)
        rows = data if isinstance(data, list) else [data]
    elif path.suffix == ".jsonl":
        lines = path.read_text(encoding="utf-8").splitlines()
        rows = [_parse_json(line, f"{path.name} line {n}") for n, line in enumerate(lines, 1) if line.strip()]
    elif path.suffix == ".parquet":
        rows = _read_parquet(path)
    else:
        raise ValueError(f"records are read from .json, .jsonl or .parquet files, got {path.name!r}")
    if not rows:
        raise DataFormatError(f"{path} holds no records")
    return [validate_record(r, f"{path.name}[{i}]") for i, r in enumerate(rows)]


def _parse_json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataFormatError(f"{where} is not valid JSON: {exc}") from None
    except RecursionError:
        raise DataFormatError(f"{where} is nested too deeply to be a FactConsolidation record "
                              "(JSON arrays/objects nested beyond Python's recursion limit)") from None


def _pyarrow(path: Path) -> Any:
    """The ``pyarrow`` module (an optional dependency), or a clear error naming the file."""
    try:
        import pyarrow
        import pyarrow.parquet  # noqa: F401  (the submodule, loaded onto pyarrow)
    except ImportError:
        raise DependencyNotInstalled(f"{path.name} is a parquet file: reading or writing it needs pyarrow: "
                                     f"{INSTALL_PARQUET} (or convert the file to .json / .jsonl)") from None
    return pyarrow


def _read_parquet(path: Path) -> list[dict[str, Any]]:
    pa = _pyarrow(path)
    try:
        return pa.parquet.read_table(path).to_pylist()
    except (pa.ArrowException, OSError) as exc:
        raise DataFormatError(f"{path.name} is not a readable parquet file: {exc}") from None


def published_schema(pa: Any) -> Any:
    """The ``pyarrow`` schema of MemoryAgentBench's published rows (``pa``: the pyarrow module)."""
    texts = pa.list_(pa.string())
    turn = pa.struct([("content", pa.string()), ("has_answer", pa.bool_()), ("role", pa.string())])
    fields = {name: texts for name in METADATA_FIELDS}
    fields.update(demo=pa.string(), source=pa.string(), haystack_sessions=pa.list_(pa.list_(pa.list_(turn))))
    return pa.schema([("context", pa.string()), ("questions", texts), ("answers", pa.list_(texts)),
                      ("metadata", pa.struct([(name, fields[name]) for name in METADATA_FIELDS]))])


def _write_parquet(rows: list[dict[str, Any]], path: Path) -> None:
    for i, row in enumerate(rows):
        unknown = sorted(set(row["metadata"]) - set(METADATA_FIELDS))
        if unknown:
            raise DataFormatError(f"records[{i}].metadata has field(s) {', '.join(unknown)} outside the published "
                                  f"schema ({', '.join(METADATA_FIELDS)}); write .json or .jsonl to keep them")
    pa = _pyarrow(path)
    try:
        table = pa.Table.from_pylist([{**row, "metadata": {name: row["metadata"].get(name)
                                                            for name in METADATA_FIELDS}} for row in rows],
                                     schema=published_schema(pa))
    except pa.ArrowException as exc:
        raise DataFormatError("records do not fit the published schema's metadata types (demo and source "
                              "strings, haystack_sessions lists of turns, the others lists of strings; "
                              f"any may be null): {exc}") from None
    pa.parquet.write_table(table, path)


def select_record(records: list[dict[str, Any]], split: str, length: str) -> dict[str, Any]:
    """The record whose ``metadata.source`` is ``factconsolidation_<split>_<length>``.

    A file with a single record that names no source is used as it is; a record
    that names another split or length is refused (``ValueError`` naming both),
    so asking for ``split="mh"`` never silently runs single-hop questions.
    """
    check_split(split)
    check_length(length)
    wanted = source_name(split, length)
    matches = [r for r in records if r["metadata"].get("source") == wanted]
    if matches:
        return matches[0]
    if len(records) == 1 and not records[0]["metadata"].get("source"):
        return records[0]
    sources = sorted(str(r["metadata"].get("source")) for r in records)
    raise ValueError(f"no record with metadata.source {wanted!r}; the file holds {sources}")


def official_file_names(split: str, length: str) -> tuple[str, ...]:
    """The file names, in the order looked for, that may hold the official row of
    ``split`` and ``length``: the row alone (``factconsolidation_<split>_<length>``
    ``.json``, ``.jsonl``, ``.parquet``), then the published split, :data:`PUBLISHED_FILE`."""
    name = source_name(check_split(split), check_length(length))
    return f"{name}.json", f"{name}.jsonl", f"{name}.parquet", PUBLISHED_FILE


def find_official(folder: str | Path, split: str, length: str) -> Path | None:
    """The first file of :func:`official_file_names` in ``folder`` that holds the row
    (``metadata.source``) of ``split`` and ``length``; ``None`` when there is none.

    A file named after the row is taken to hold it (loading it checks); the published
    file is read to see which rows it holds."""
    folder = Path(folder)
    for name in official_file_names(split, length):
        path = folder / name
        if path.is_file() and (name != PUBLISHED_FILE or source_name(split, length) in _sources(path)):
            return path
    return None


def _sources(path: Path) -> frozenset[str]:
    stat = path.stat()
    return _sources_cached(str(path), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=8)
def _sources_cached(path: str, mtime_ns: int, size: int) -> frozenset[str]:
    return frozenset(str(r["metadata"].get("source")) for r in load_records(path))


# ----------------------------------------------------------------- parsing
def parse_context(context: str) -> list[tuple[int, str]]:
    """The numbered facts ``(serial, text)`` of a context, in the order written."""
    facts = []
    for line in context.splitlines():
        match = _LINE.match(line)
        if match:
            facts.append((int(match.group(1)), match.group(2)))
    if not facts:
        raise DataFormatError("the context holds no numbered facts ('<n>. <fact>' lines)")
    return facts


def _pattern(template: str, groups: dict[str, str]) -> str:
    parts = re.split(r"(\{[so]\})", template)
    return "".join(groups[p] if p in groups else re.escape(p) for p in parts)


_FACT = re.compile("|".join(
    _pattern(r.fact, {"{s}": f"(?P<s{i}>.+?)", "{o}": f"(?P<o{i}>.+)"}) for i, r in enumerate(RELATIONS)))
_QUESTIONS = tuple((r.name, re.compile(_pattern(r.question, {"{s}": "(?P<s>.+)"}))) for r in RELATIONS)
_PHRASES = tuple((r.name, re.compile(_pattern(r.phrase, {"{s}": "(?P<s>.+)"}))) for r in RELATIONS)


def parse_fact(text: str) -> tuple[str, str] | None:
    """``(key, value)`` of a fact in one of the templates, or ``None``."""
    match = _FACT.fullmatch(text.strip())
    if match is None:
        return None
    index = int(match.lastgroup[1:])  # type: ignore[index]
    return f"{match.group(f's{index}')}|{RELATIONS[index].name}", match.group(f"o{index}")


@lru_cache(maxsize=4096)
def _subject_parses(text: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Every reading of a subject phrase: (entity, relations from the entity outward)."""
    readings: list[tuple[str, tuple[str, ...]]] = [(text, ())]
    for name, pattern in _PHRASES:
        match = pattern.fullmatch(text)
        if match:
            readings.extend((entity, chain + (name,)) for entity, chain in _subject_parses(match.group("s")))
    return tuple(readings)


def parse_questions(question: str) -> list[tuple[str, list[str]]]:
    """Every reading of a question: ``(first-hop key, further relations)``, most nested first.

    A question in the generator's templates has one reading whose first-hop key
    exists in its context; callers pick that one. Unknown templates give ``[]``.
    """
    readings: list[tuple[str, list[str]]] = []
    for name, pattern in _QUESTIONS:
        match = pattern.fullmatch(question.strip())
        if match is None:
            continue
        for entity, chain in _subject_parses(match.group("s")):
            relations = [*chain, name]
            readings.append((f"{entity}|{relations[0]}", relations[1:]))
    readings.sort(key=lambda r: -len(r[1]))
    return readings


__all__ = ["INSTALL_PARQUET", "METADATA_FIELDS", "PUBLISHED_FILE", "find_official", "load_records",
           "official_file_names", "parse_context", "parse_fact", "parse_questions", "published_schema",
           "select_record", "validate_record", "write_records"]
