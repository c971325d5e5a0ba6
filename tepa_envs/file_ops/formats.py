"""Tables of records, the writer configurations that export them, and the
downstream consumer that reads an export back.

Writers and the consumer are real code on Python's :mod:`csv` and :mod:`json`:
a file written with one configuration and read with another fails with the
parser's own complaint or with the consumer's validation message.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from tepa_envs.error import TepaError
from tepa_envs.core.checks import check_choice

CSV_DELIMITERS: dict[str, str] = {"csv:comma": ",", "csv:semicolon": ";", "csv:tab": "\t"}
JSON_LAYOUTS: tuple[str, ...] = ("json:array", "json:lines", "json:envelope")
WRITER_CONFIGS: tuple[str, ...] = (*CSV_DELIMITERS, *JSON_LAYOUTS)
FORMATS: tuple[str, ...] = ("csv", "json")
MAX_MESSAGE_CHARS = 240

# Free-text values deliberately include commas, semicolons and quotes, so that
# the CSV writers must quote and the consumer must unquote.
NAMES = ("Acme, Inc.", "Lee; Park LLP", 'The "Blue" Bar', "Ortega", "Nakamura & Sons",
         "Müller GmbH", "O'Brien", "Zhou", "Dubois, Marie", "Patel")
PLACES = ("Lisbon", "Osaka", "Nairobi", "Quito", "Oslo", "Perth", "Austin", "Pune")
CODES = ("EUR", "USD", "JPY", "KES", "GBP", "INR")

# field name -> kind: "id", "int", "money", "name", "place", "code", "date"
SCHEMAS: dict[str, tuple[tuple[str, str], ...]] = {
    "finance": (("id", "id"), ("account", "name"), ("amount", "money"), ("currency", "code"), ("booked", "date")),
    "health": (("id", "id"), ("patient", "name"), ("systolic", "int"), ("diastolic", "int"), ("ward", "place")),
    "retail": (("id", "id"), ("customer", "name"), ("quantity", "int"), ("price", "money"), ("store", "place")),
    "travel": (("id", "id"), ("traveler", "name"), ("origin", "place"), ("destination", "place"), ("fare", "money")),
    "energy": (("id", "id"), ("meter", "code"), ("kwh", "money"), ("site", "place"), ("read_on", "date")),
    "legal": (("id", "id"), ("party", "name"), ("fee", "money"), ("court", "place"), ("filed", "date")),
}
DOMAINS: tuple[str, ...] = tuple(SCHEMAS)
MAX_FIELDS = max(len(s) for s in SCHEMAS.values())


_FORMAT_OF = {c: c.split(":", 1)[0] for c in WRITER_CONFIGS}
_CONFIGS_OF = {f: tuple(c for c in WRITER_CONFIGS if _FORMAT_OF[c] == f) for f in FORMATS}


def format_of(config: str) -> str:
    """``"csv"`` or ``"json"`` for a writer configuration."""
    return _FORMAT_OF[check_choice("writer configuration", config, _FORMAT_OF)]


def configs_of(fmt: str) -> tuple[str, ...]:
    """The writer configurations of one format."""
    return _CONFIGS_OF[check_choice("format", fmt, _CONFIGS_OF)]


@dataclass(frozen=True, slots=True)
class Table:
    """Records of one domain, in field order."""

    domain: str
    fields: tuple[str, ...]
    kinds: tuple[str, ...]
    records: tuple[dict[str, Any], ...]


def draw_numbers(rng: np.random.Generator, n_tables: int, max_records: int) -> np.ndarray:
    """Raw numbers for ``n_tables`` tables, drawn in one call (shape ``(n, max_records, MAX_FIELDS)``)."""
    return rng.integers(0, 1 << 30, size=(n_tables, max_records, MAX_FIELDS), dtype=np.int64)


DATES = tuple(f"2025-{1 + i % 12:02d}-{1 + (i // 12) % 28:02d}" for i in range(12 * 28))
_LOOKUPS = {"name": NAMES, "place": PLACES, "code": CODES, "date": DATES}
_LOOKUP_ARRAYS = {kind: np.array(words, dtype=object) for kind, words in _LOOKUPS.items()}
_FIELDS = {d: tuple(n for n, _ in s) for d, s in SCHEMAS.items()}
_KINDS = {d: tuple(k for _, k in s) for d, s in SCHEMAS.items()}


def record_values(domain_indices: np.ndarray, numbers: np.ndarray) -> list[list[list[Any]]]:
    """Field values of every record of every table (tables of domain
    ``DOMAINS[domain_indices[i]]``), computed from drawn ``numbers`` at once."""
    values = np.empty(numbers.shape, dtype=object)
    rows = np.arange(numbers.shape[1])[None, :]
    for d, domain in enumerate(DOMAINS):
        mask = np.asarray(domain_indices) == d
        if not mask.any():
            continue
        for j, kind in enumerate(_KINDS[domain]):
            values[mask, :, j] = _column(kind, numbers[mask][:, :, j], rows)
    return values.tolist()


def _column(kind: str, x: np.ndarray, rows: np.ndarray) -> np.ndarray:
    if kind == "id":
        return 1000 + rows * 97 + x % 97
    if kind == "int":
        return 40 + x % 160
    if kind == "money":
        return (x % 1_000_000) / 100.0  # the double nearest to a whole number of cents
    words = _LOOKUP_ARRAYS[kind]
    return words[x % len(words)]


def make_table(domain: str, values: Sequence[Sequence[Any]], n_records: int) -> Table:
    """The table of the first ``n_records`` records of ``values`` (one list per record,
    as from :func:`record_values`)."""
    check_choice("domain", domain, SCHEMAS)
    fields = _FIELDS[domain]
    records = tuple(dict(zip(fields, row)) for row in values[:n_records])
    return Table(domain, fields, _KINDS[domain], records)


# ------------------------------------------------------------------ writers
def write_table(config: str, table: Table) -> str:
    """The text of ``table`` exported with writer configuration ``config``."""
    fmt = format_of(config)
    rows = [dict(r) for r in table.records]
    if fmt == "csv":
        buffer = io.StringIO(newline="")
        writer = csv.writer(buffer, delimiter=CSV_DELIMITERS[config], lineterminator="\n")
        writer.writerow(table.fields)
        for record in rows:
            writer.writerow([_csv_cell(record[f], k) for f, k in zip(table.fields, table.kinds)])
        return buffer.getvalue()
    if config == "json:array":
        return json.dumps(rows, ensure_ascii=False) + "\n"
    if config == "json:lines":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    envelope = {"domain": table.domain, "count": len(rows), "records": rows}
    return json.dumps(envelope, ensure_ascii=False) + "\n"


def _csv_cell(value: Any, kind: str) -> str:
    return f"{value:.2f}" if kind == "money" else str(value)


# ----------------------------------------------------------------- consumer
class Rejected(TepaError):
    """The consumer's complaint about a file."""


def consume(expected_config: str, table: Table, text: str) -> tuple[bool, str]:
    """Read ``text`` the way a consumer configured for ``expected_config`` does and
    check it yields ``table``'s records. Returns ``(accepted, message)``; the
    message of a rejection is the parser's or the validator's own text."""
    try:
        if format_of(expected_config) == "csv":
            records = _read_csv(text, CSV_DELIMITERS[expected_config], table)
        else:
            records = _read_json(text, expected_config)
        _validate(records, table)
    except (csv.Error, json.JSONDecodeError, Rejected, ValueError) as exc:
        message = f"{type(exc).__name__}: {exc}"
        if len(message) > MAX_MESSAGE_CHARS:
            message = message[: MAX_MESSAGE_CHARS - 3] + "..."
        return False, message
    return True, f"accepted {len(records)} records"


def _read_csv(text: str, delimiter: str, table: Table) -> list[dict[str, Any]]:
    rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True))
    if not rows:
        raise Rejected("empty file: no header row")
    if tuple(rows[0]) != table.fields:
        raise Rejected(f"header mismatch: expected {list(table.fields)}, got {rows[0]}")
    records = []
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != len(table.fields):
            raise Rejected(f"line {line}: expected {len(table.fields)} fields, got {len(row)}")
        records.append({f: _parse_cell(cell, kind) for f, kind, cell in zip(table.fields, table.kinds, row)})
    return records


def _parse_cell(cell: str, kind: str) -> Any:
    if kind in ("id", "int"):
        return int(cell)
    if kind == "money":
        return float(cell)
    return cell


def _read_json(text: str, config: str) -> list[Any]:
    if config == "json:lines":
        records = []
        for line_no, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            item = json.loads(line)
            if not isinstance(item, dict):
                raise Rejected(f"line {line_no}: expected one JSON object per line, got {_json_type(item)}")
            records.append(item)
        return records
    document = json.loads(text)
    if config == "json:array":
        if not isinstance(document, list):
            raise Rejected(f"expected a JSON array of records, got {_json_type(document)}")
        return document
    if not isinstance(document, dict) or not isinstance(document.get("records"), list):
        raise Rejected(f"expected a JSON object with a 'records' array, got {_json_type(document)}"
                       + (f" with keys {sorted(document)}" if isinstance(document, dict) else ""))
    if document.get("count") != len(document["records"]):
        raise Rejected(f"envelope count {document.get('count')!r} does not match "
                       f"{len(document['records'])} records")
    return document["records"]


def _json_type(item: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean"}.get(type(item), type(item).__name__)


def _validate(records: list[Any], table: Table) -> None:
    if len(records) != len(table.records):
        raise Rejected(f"expected {len(table.records)} records, got {len(records)}")
    for i, (got, want) in enumerate(zip(records, table.records), start=1):
        if not isinstance(got, dict):
            raise Rejected(f"record {i}: expected an object, got {_json_type(got)}")
        if tuple(got) != table.fields:
            raise Rejected(f"record {i}: fields {list(got)} do not match {list(table.fields)}")
        for field in table.fields:
            if got[field] != want[field] or type(got[field]) is not type(want[field]):
                raise Rejected(f"record {i}, field {field!r}: expected {want[field]!r}, got {got[field]!r}")
