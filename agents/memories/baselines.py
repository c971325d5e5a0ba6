"""Baseline memories that keep asserted values without any notion of validity.

Value memories write a value when the evidence asserts it works: a successful
use (``outcome=True``) or a stated observation (``outcome=None``). A failed use
(``outcome=False``) asserts nothing about a value, so these memories ignore it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from itertools import groupby

from tepa_envs.core import Evidence, LifecycleState, Record, check_choice, check_positive_int

from tepa_envs.agents.memories.lexical import BM25Index
from tepa_envs.agents.memories.protocol import MemoryBase

ACTIVE = LifecycleState.ACTIVE
_new_tuple = tuple.__new__
RETRIEVALS: tuple[str, ...] = ("key", "lexical")
ON_NOTIFY: tuple[str, ...] = ("ignore", "clear")
"""Values of the baselines' ``on_notify`` option: what a change notification
(:meth:`~tepa_envs.agents.memories.protocol.MemoryHooks.on_notify`) does to the key:
nothing (default), or forget everything stored for it."""


def asserts_value(evidence: Evidence) -> bool:
    return evidence.outcome is not False


def check_retrieval(retrieval: object) -> str:
    return check_choice("retrieval", retrieval, RETRIEVALS)  # type: ignore[return-value]


def check_on_notify(on_notify: object, choices: tuple[str, ...] = ON_NOTIFY) -> str:
    """One of ``choices`` (``TypeError`` for a non-str, ``ValueError`` otherwise)."""
    if not isinstance(on_notify, str):
        raise TypeError(f"on_notify must be a str, got {type(on_notify).__name__}")
    return check_choice("on_notify", on_notify, choices)


@dataclass(slots=True)
class ValueEntry:
    value: str
    support: int
    created: int
    updated: int

    def record(self, key: str, conflict: int, score: float = 0.0) -> Record:
        # Record(...) without the named tuple's Python-level __new__: the same object, built faster.
        return _new_tuple(Record, (key, self.value, self.support, conflict, ACTIVE, self.created, self.updated,
                                   score))


class NoMemory(MemoryBase):
    """Remembers nothing; the agent acts on the task's context alone."""

    name = "no-memory"

    def _observe(self, evidence: Evidence) -> None:
        pass

    def _retrieve(self, key: str, context: str) -> list[Record]:
        return []

    def _reset(self) -> None:
        pass


class AppendOnly(MemoryBase):
    """Keeps every asserted value; retrieves the key's values ranked by support.

    Args:
        top_k: at most this many values are retrieved per key.
        retrieval: ``"key"`` retrieves the key's values; ``"lexical"`` retrieves
            the ``top_k`` stored facts (texts ``"subject relation value"``) of any
            key ranked by BM25 against the key and the context, ties broken by
            the memory's own ranking (key separators split tokens, so a fact
            ``subject|relation = value`` is indexed as its words).
        on_notify: ``"ignore"`` (default) or ``"clear"``: a change notification on a key
            forgets every value stored for it (with ``notify="known"`` this is the
            per-key ``oracle-reset`` bound, learned from the notification instead of
            the oracle).
    """

    name = "append-only"

    def __init__(self, *, top_k: int = 5, retrieval: str = "key", on_notify: str = "ignore") -> None:
        super().__init__()
        self.top_k = check_positive_int("top_k", top_k)
        self.retrieval = check_retrieval(retrieval)
        self.on_notify_action = check_on_notify(on_notify)
        self._reset()

    def on_notify(self, key: str) -> None:
        if self.on_notify_action == "clear":
            self._values.pop(key, None)

    def _reset(self) -> None:
        self._values: dict[str, dict[str, ValueEntry]] = {}
        self._index = BM25Index() if self.retrieval == "lexical" else None
        self._documents: list[tuple[str, str]] = []
        self._document_of: dict[tuple[str, str], int] = {}

    def _observe(self, evidence: Evidence) -> None:
        if evidence.outcome is False:  # asserts_value, inlined
            return
        key, value = evidence.key, evidence.value
        entries = self._values.get(key)
        if entries is None:
            entries = self._values[key] = {}
        entry = entries.get(value)
        if entry is None:
            entries[value] = ValueEntry(value, 1, evidence.t, evidence.t)
            self._index_fact(key, value)
        else:
            entry.support += 1
            entry.updated = evidence.t

    def _index_fact(self, key: str, value: str) -> None:
        # A (key, value) is indexed once; a forgetting subclass that drops it from
        # _values leaves the document in the index, where retrieval skips it.
        if self._index is None or (key, value) in self._document_of:
            return
        self._document_of[(key, value)] = self._index.add(f"{key} {value}")
        self._documents.append((key, value))

    def _entries(self, key: str) -> list[ValueEntry]:
        return list(self._values.get(key, {}).values())

    def _rank(self, entries: list[ValueEntry]) -> list[ValueEntry]:
        return sorted(entries, key=lambda e: (-e.support, -e.updated))

    def _retrieve(self, key: str, context: str) -> list[Record]:
        if self._index is not None:
            return self._retrieve_lexical(key, context)
        entries = self._entries(key)
        conflict = max(len(entries) - 1, 0)
        return [e.record(key, conflict) for e in self._rank(entries)[: self.top_k]]

    def _retrieve_lexical(self, key: str, context: str) -> list[Record]:
        assert self._index is not None
        records: list[Record] = []
        hits = self._index.top(f"{key} {context}", self.top_k)
        for score, tied in groupby(hits, key=lambda hit: hit[1]):
            owner: dict[int, str] = {}
            entries: list[ValueEntry] = []
            for document, _ in tied:
                fact_key, value = self._documents[document]
                entry = self._values.get(fact_key, {}).get(value)
                if entry is not None:
                    owner[id(entry)] = fact_key
                    entries.append(entry)
            for entry in self._rank(entries):
                fact_key = owner[id(entry)]
                records.append(entry.record(fact_key, len(self._values[fact_key]) - 1, score))
        return records[: self.top_k]


class TemporalRecency(AppendOnly):
    """Append-only storage; retrieval ranked by recency and cut to ``top_k``.

    Its first record is always the key's most recently asserted value, which is the one
    record :class:`LastWriteWins` shows (and :class:`ConflictAwareRecency`'s first): the
    three differ only in the records after the first. A reader that acts on the first
    record, and follows it equally often whether one value or several are shown
    (the ``default``, ``ideal`` and ``never-explore`` reader profiles), therefore makes
    the same decisions with the three on every stream, so every success count and every
    evidence stream is identical (``tests/agents/memories/test_recency_identity.py``);
    a reader that follows a prompt listing several values more readily than a lone one
    (``smollm2-135m``: ``follow_conflict`` 0.55 against ``follow_plain`` 0.34) separates
    LWW from the two list-showing methods."""

    name = "temporal-recency"

    def __init__(self, *, top_k: int = 3, retrieval: str = "key", on_notify: str = "ignore") -> None:
        super().__init__(top_k=top_k, retrieval=retrieval, on_notify=on_notify)

    def _rank(self, entries: list[ValueEntry]) -> list[ValueEntry]:
        return sorted(entries, key=lambda e: (-e.updated, -e.support))


class ConflictAwareRecency(AppendOnly):
    """Support-ranked like append-only until a key holds conflicting values;
    from then on its newest value comes first.

    The rule has no effect on what comes first: while a key holds one value, that value
    is both the best-supported and the newest. So its first record is always the newest
    asserted value, as for :class:`TemporalRecency` (whose list it equals up to
    ``top_k``, 5 here against 3) and :class:`LastWriteWins`: see
    :class:`TemporalRecency` for when the three make the same decisions and the reader
    that separates them."""

    name = "conflict-aware-recency"

    def _rank(self, entries: list[ValueEntry]) -> list[ValueEntry]:
        if len(entries) < 2:
            return entries
        return sorted(entries, key=lambda e: (-e.updated, -e.support))


class LastWriteWins(MemoryBase):
    """One value per key: the newest assertion replaces the old one.

    Shows the first record of :class:`TemporalRecency` and :class:`ConflictAwareRecency`
    alone (see :class:`TemporalRecency` for why the three run identically under the
    ``default``, ``ideal`` and ``never-explore`` readers).

    Args:
        on_notify: ``"ignore"`` (default) or ``"clear"``: a change notification on a key
            forgets its value, so the reader explores until a new value is asserted.
    """

    name = "lww"

    def __init__(self, *, on_notify: str = "ignore") -> None:
        super().__init__()
        self.on_notify_action = check_on_notify(on_notify)
        self._reset()

    def on_notify(self, key: str) -> None:
        if self.on_notify_action == "clear":
            self._current.pop(key, None)

    def _reset(self) -> None:
        self._current: dict[str, ValueEntry] = {}
        self._replacements: dict[str, int] = {}

    def _observe(self, evidence: Evidence) -> None:
        if evidence.outcome is not False:  # asserts_value, inlined
            self._write(evidence)

    def _write(self, evidence: Evidence) -> None:
        entry = self._current.get(evidence.key)
        if entry is not None and entry.value == evidence.value:
            entry.support += 1
            entry.updated = evidence.t
            return
        if entry is not None:
            self._replacements[evidence.key] = self._replacements.get(evidence.key, 0) + 1
        self._current[evidence.key] = ValueEntry(evidence.value, 1, evidence.t, evidence.t)

    def _retrieve(self, key: str, context: str) -> list[Record]:
        entry = self._current.get(key)
        if entry is None:
            return []
        return [entry.record(key, self._replacements.get(key, 0))]


class SlidingWindow(MemoryBase):
    """Keeps only the last ``window`` assertions (over all keys).

    Args:
        window: number of most recent assertions kept.
    """

    name = "sliding-window"

    def __init__(self, *, window: int = 20) -> None:
        super().__init__()
        self.window = check_positive_int("window", window)
        self._reset()

    def _reset(self) -> None:
        self._recent: deque[Evidence] = deque(maxlen=self.window)

    def _observe(self, evidence: Evidence) -> None:
        if asserts_value(evidence):
            self._recent.append(evidence)

    def _retrieve(self, key: str, context: str) -> list[Record]:
        entries: dict[str, ValueEntry] = {}
        for evidence in self._recent:
            if evidence.key != key:
                continue
            entry = entries.get(evidence.value)
            if entry is None:
                entries[evidence.value] = ValueEntry(evidence.value, 1, evidence.t, evidence.t)
            else:
                entry.support += 1
                entry.updated = evidence.t
        ranked = sorted(entries.values(), key=lambda e: (-e.support, -e.updated))
        return [e.record(key, len(ranked) - 1) for e in ranked]
