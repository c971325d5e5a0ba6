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
  as :func:`read_chain` reads it.

Every reading retrieves through the ``retrieve(key, context)`` it is given (the
agent's :meth:`~tepa_envs.agents.readers.agent.MemoryAgent.retrieve`, which tells
the episode's observers what the memory returned), never the memory itself, and
keeps what it must remember between tasks in the agent's :class:`ReadingState`:
which facts the last answer used (its provenance, :class:`QuestionReading`) and
the index of the known keys.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from tepa_envs.agents.readers.evidence_reader import EvidenceReader
from tepa_envs.agents.readers.task_access import TaskAccess
from tepa_envs.agents.readers.questions import FactIndex, Hop, QuestionReading, answer_question

Retrieve = Callable[[str, str], list[Any]]
"""``retrieve(key, context) -> records``: the memory's records for a key, through the agent."""


class ReadingState:
    """What one agent's reading keeps between tasks."""

    def __init__(self) -> None:
        self.last: QuestionReading | None = None
        """How the task the agent last decided was answered (anchor, hops: the keys looked up
        and the values the memory returned), when its reading records one (``chain``,
        ``question``); ``None`` before any, and after a step the agent did not decide."""
        self._index: tuple[tuple[str, ...], FactIndex] | None = None

    def index_of(self, keys: tuple[str, ...]) -> FactIndex:
        """The index of ``keys`` (the last one is kept: keys only grow within an episode)."""
        if self._index is not None and self._index[0] == keys:
            return self._index[1]
        index = FactIndex(keys)
        self._index = (keys, index)
        return index


Reading = Callable[[Retrieve, EvidenceReader, TaskAccess, Mapping[str, Any], ReadingState], str]


def read_direct(retrieve: Retrieve, reader: EvidenceReader, task: TaskAccess, info: Mapping[str, Any],
                state: ReadingState) -> str:
    key, context = info["key"], info.get("context", "")
    return reader.choose(retrieve(key, context), task.choices(key), task.stated_value(key, context))


def read_chain(retrieve: Retrieve, reader: EvidenceReader, task: TaskAccess, info: Mapping[str, Any],
               state: ReadingState) -> str:
    key, context = info["key"], info.get("context", "")
    relations = list(info.get("chain") or ())
    if not relations:
        records = retrieve(key, context)
        answer = reader.choose(records, task.choices(key))
        state.last = QuestionReading(answer, (_hop(key, answer, records),), key.partition("|")[0])
        return answer
    subject, _, relation = key.partition("|")
    anchor, answer, hops = subject, "", []
    for rel in [relation, *relations]:
        hop_key = f"{subject}|{rel}"
        records = retrieve(hop_key, context)
        answer = reader.choose(records, ())
        hops.append(_hop(hop_key, answer, records))
        if not answer:
            break
        subject = answer
    state.last = QuestionReading(answer, tuple(hops), anchor)
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


def read_question(retrieve: Retrieve, reader: EvidenceReader, task: TaskAccess, info: Mapping[str, Any],
                  state: ReadingState) -> str:
    if info["key"]:
        return read_chain(retrieve, reader, task, info, state)
    context = info.get("context", "")
    shown: dict[str, list[Any]] = {}

    def retrieve_once(key: str) -> list[Any]:  # one retrieval per key and question
        if key not in shown:
            shown[key] = retrieve(key, context)
        return shown[key]

    reading = answer_question(context, state.index_of(_known_keys(task)), retrieve_once) if context else \
        QuestionReading("", failure="no question")
    state.last = reading
    records = retrieve_once(reading.hops[-1].key) if reading.hops else []
    return reader.choose(records, ())


READINGS: dict[str, Reading] = {"direct": read_direct, "chain": read_chain, "question": read_question}
