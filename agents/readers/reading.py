"""Reading strategies: how an agent turns a task into memory queries and a value.

* :func:`read_direct`: retrieve the task's key; the reader picks among the
  task's choices (or states the first shown value for free-text answers).
* :func:`read_chain`: multi-hop questions (``info["chain"]``: the relations after
  the first hop). Each hop retrieves ``subject|relation`` and the reader's answer
  becomes the next hop's subject; a question without a chain is one hop.
* :func:`read_question`: questions the environment did not key (``info["key"]``
  empty, e.g. FactConsolidation facts keyed by frames induced from the record):
  the reader answers the question text by a chain of hops through the memory
  (:func:`tepa_envs.agents.readers.questions.answer_question`: an anchor entity,
  the question's relation words, each hop the memory's current value for a
  known key). The known keys come from the environment's optional
  ``known_keys()`` member (the keys of the ``info["evidence"]`` it streamed;
  what a reader that kept the keys it was shown would know). The chain's last
  records go to the reader, which states one value. A keyed question is read
  as :func:`read_chain` reads it. :func:`last_reading` tells which facts the
  last answer used (its provenance).
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Mapping

from tepa_envs.agents.memories.protocol import Memory
from tepa_envs.agents.readers.evidence_reader import EvidenceReader
from tepa_envs.agents.readers.task_access import TaskAccess
from tepa_envs.agents.readers.questions import FactIndex, Hop, QuestionReading, answer_question

Reading = Callable[[Memory, EvidenceReader, TaskAccess, Mapping[str, Any]], str]


def read_direct(memory: Memory, reader: EvidenceReader, task: TaskAccess, info: Mapping[str, Any]) -> str:
    key, context = info["key"], info.get("context", "")
    return reader.choose(memory.retrieve(key, context), task.choices(key), task.stated_value(key, context))


def read_chain(memory: Memory, reader: EvidenceReader, task: TaskAccess, info: Mapping[str, Any]) -> str:
    key, context = info["key"], info.get("context", "")
    relations = list(info.get("chain") or ())
    if not relations:
        records = memory.retrieve(key, context)
        answer = reader.choose(records, task.choices(key))
        _remember(memory, QuestionReading(answer, (_hop(key, answer, records),), key.partition("|")[0]))
        return answer
    subject, _, relation = key.partition("|")
    anchor, answer, hops = subject, "", []
    for rel in [relation, *relations]:
        hop_key = f"{subject}|{rel}"
        records = memory.retrieve(hop_key, context)
        answer = reader.choose(records, ())
        hops.append(_hop(hop_key, answer, records))
        if not answer:
            break
        subject = answer
    _remember(memory, QuestionReading(answer, tuple(hops), anchor))
    return answer


def _hop(key: str, value: str, records: list[Any]) -> Hop:
    used = next((r for r in records if r.value == value), None)
    return Hop(key, value, None if used is None else used.created)


def _known_keys(task: TaskAccess) -> tuple[str, ...]:
    env = task.env
    try:
        member = env.get_wrapper_attr("known_keys") if hasattr(env, "get_wrapper_attr") else env.known_keys
    except AttributeError:
        return ()
    return tuple(member())


_LAST: "weakref.WeakKeyDictionary[Any, QuestionReading]" = weakref.WeakKeyDictionary()
_INDEX: list[tuple[tuple[str, ...], FactIndex]] = []


def _index_of(keys: tuple[str, ...]) -> FactIndex:
    """The index of ``keys`` (the last one is kept: keys only grow within an episode)."""
    if _INDEX and _INDEX[0][0] == keys:
        return _INDEX[0][1]
    index = FactIndex(keys)
    _INDEX[:] = [(keys, index)]
    return index


def last_reading(memory: Memory) -> QuestionReading | None:
    """How the last unkeyed question read with ``memory`` was answered (anchor, hops:
    the keys looked up and the values the memory returned), or ``None``."""
    try:
        return _LAST.get(memory)
    except TypeError:
        return None


def read_question(memory: Memory, reader: EvidenceReader, task: TaskAccess, info: Mapping[str, Any]) -> str:
    if info["key"]:
        return read_chain(memory, reader, task, info)
    context = info.get("context", "")
    shown: dict[str, list[Any]] = {}

    def retrieve(key: str) -> list[Any]:  # one retrieval per key and question
        if key not in shown:
            shown[key] = memory.retrieve(key, context)
        return shown[key]

    reading = answer_question(context, _index_of(_known_keys(task)), retrieve) if context else QuestionReading(
        "", failure="no question")
    _remember(memory, reading)
    records = retrieve(reading.hops[-1].key) if reading.hops else []
    return reader.choose(records, ())


def _remember(memory: Memory, reading: QuestionReading) -> None:
    try:
        _LAST[memory] = reading
    except TypeError:  # a memory object that cannot be weakly referenced: no provenance
        pass


READINGS: dict[str, Reading] = {"direct": read_direct, "chain": read_chain, "question": read_question}
