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
  known key). A multiple-choice question (the environment's ``choices``,
  FactConsolidation's ``action_mode="choice"``) is answered by the candidate the
  chain's records state; when they state none, the evidence reader chooses among
  the candidates as it does when a memory shows nothing. The known keys come from
  the environment's :meth:`~tepa_envs.core.contracts.TaskEnv.known_keys` (the keys
  of the ``info["evidence"]`` it streamed; what a reader that kept the keys it was
  shown would know; ``()`` by default). The chain's last records go to the
  reader, which states one value. A keyed question is read
  as :func:`read_chain` reads it.
* **Question readers** (:data:`QUESTION_READERS`): how :func:`read_question` takes a
  hop's value from the records the memory returns, the setting under which
  memories are compared on FactConsolidation (readings ``question-<reader>``):

  - ``newest``: the reader resolves conflicts itself, by fact order: each hop uses
    the most recently written record shown (``updated``, then ``created``; the
    memory's order among equals). Every memory that shows the newest value scores alike.
  - ``memory-order``: the memory must resolve conflicts. Each hop uses the record
    the memory ranks first *by what it states about its records*: a lifecycle
    state (active first), then its score, validity (support and conflict) and
    support (the records of the hop's key, in the places the memory gave them).
    Records the memory states nothing to tell apart are equal to the
    reader, which neither knows nor uses recency, and reads them in the order the
    memory stored them (first written first, as a keep-everything log or a
    context window lists them). So a memory resolves a conflict by not showing the
    stale value (revocation, replacement) or by stating it as worse; a memory
    that keeps every value and only breaks ties by recency leaves the conflict
    unresolved. (The literal first record, reading ``question``, is not a named
    question reader: the keep-everything memories shipped break ties newest first,
    so under it they read as under ``newest``, but ``cusum``, ``bocpd`` and
    ``adwin`` show the first-written record first and fall with the keep-everything
    memories, SH-6k 0.23 against 0.84 under both named readers.)
  - ``local-lm``: the agent's language-model reader
    (:class:`~tepa_envs.agents.readers.local_lm.LocalLMReader`, through the prompt
    and the decision cache of :mod:`~tepa_envs.agents.readers.prompt`) reads the
    records the memory returns for each hop and states one of their values; a
    hop whose records show one value needs no decision.

Every reading retrieves through the ``retrieve(key, context)`` it is given (the
agent's :meth:`~tepa_envs.agents.readers.agent.MemoryAgent.retrieve`, which tells
the episode's observers what the memory returned), never the memory itself, and
keeps what it must remember between tasks in the agent's :class:`ReadingState`:
which facts the last answer used (its provenance, :class:`QuestionReading`) and
the index of the known keys.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from tepa_envs.core import LifecycleState

from tepa_envs.agents.readers.evidence_reader import EvidenceReader
from tepa_envs.agents.readers.protocol import PromptedReader
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
    chain = info.get("chain") or ()
    # the fixed info schema joins the relations with ","; the rich one lists them
    relations = chain.split(",") if isinstance(chain, str) else list(chain)
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


def _within_key(records: Sequence[Any], key: str, rank: Callable[[Any], Any]) -> list[Any]:
    """``records`` with those of ``key`` sorted by ``rank`` in the places they held (a memory
    that retrieves other keys' records too, e.g. a lexical one, keeps its own order of keys)."""
    places = [i for i, r in enumerate(records) if r.key == key]
    out = list(records)
    for i, record in zip(places, sorted((records[i] for i in places), key=rank)):
        out[i] = record
    return out


def _newest_first(records: Sequence[Any], reader: Any, key: str) -> list[Any]:
    """``newest``: the most recently written record first (``updated``, then ``created``: a
    memory may touch an old record when a conflicting one arrives; stable among equals)."""
    return _within_key(records, key, lambda r: (-r.updated, -r.created))


def _standing(record: Any) -> tuple[float, ...]:
    """What a memory states about a record, best first when sorted ascending."""
    active = 0 if record.state == LifecycleState.ACTIVE else 1
    validity = (record.support + 1.0) / (record.support + record.conflict + 2.0)
    return (active, -round(record.score, 9), -round(validity, 9), -record.support)


def _memory_order(records: Sequence[Any], reader: Any, key: str) -> list[Any]:
    """``memory-order``: the memory's stated standing first; among records it states
    nothing to tell apart, the one it stored first (see the module)."""
    return _within_key(records, key, lambda r: (_standing(r), r.created))


def _language_model(records: Sequence[Any], reader: Any, key: str) -> list[Any]:
    """``local-lm``: the agent's language-model reader chooses the hop's value among the
    values the records show (one decision per conflicting hop, cached by prompt)."""
    values = {r.value for r in records}
    if len(values) <= 1 or not isinstance(reader, PromptedReader):
        return list(records)
    question = reader.context
    subject, _, frame = key.partition("|")
    hop = " ".join(frame.replace("{S}", subject).replace("{O}", "...").split())
    reader.context = f"{question}\nThis step asks for: {hop}"
    try:
        chosen = reader.choose(records, ())
    finally:
        reader.context = question
    return [r for r in records if r.value == chosen] + [r for r in records if r.value != chosen]


HopOrder = Callable[[Sequence[Any], Any, str], list[Any]]
QUESTION_READERS: dict[str, HopOrder | None] = {
    "newest": _newest_first, "memory-order": _memory_order, "local-lm": _language_model}
"""The question readers (see the module): name -> how a hop's records are ordered for it
(the first record's value is the hop's value)."""


def _read_question(retrieve: Retrieve, reader: EvidenceReader, task: TaskAccess, info: Mapping[str, Any],
                   state: ReadingState, order: HopOrder | None) -> str:
    if info["key"]:
        return read_chain(retrieve, reader, task, info, state)
    context = info.get("context", "")
    shown: dict[str, list[Any]] = {}

    def retrieve_once(key: str) -> list[Any]:  # one retrieval per key and question
        if key not in shown:
            records = retrieve(key, context)
            shown[key] = order(records, reader, key) if order is not None and len(records) > 1 else records
        return shown[key]

    reading = answer_question(context, state.index_of(tuple(task.known_keys())), retrieve_once) if context else \
        QuestionReading("", failure="no question")
    state.last = reading
    records = retrieve_once(reading.hops[-1].key) if reading.hops else []
    choices = task.choices(info["key"])  # a multiple-choice question's candidates (``()``: free text)
    if order is _language_model:  # the hop's value is the model's choice: the answer states it
        answer = records[0].value if records else ""
        if not choices or answer in choices:
            return answer
        records = []  # the model's answer is no candidate: the reader chooses as with nothing shown
    return reader.choose(records, choices)


def read_question(retrieve: Retrieve, reader: EvidenceReader, task: TaskAccess, info: Mapping[str, Any],
                  state: ReadingState) -> str:
    return _read_question(retrieve, reader, task, info, state, None)


def _question_reading(name: str) -> Reading:
    order = QUESTION_READERS[name]

    def reading(retrieve: Retrieve, reader: EvidenceReader, task: TaskAccess, info: Mapping[str, Any],
                state: ReadingState) -> str:
        return _read_question(retrieve, reader, task, info, state, order)

    reading.__name__ = reading.__qualname__ = f"read_question_{name.replace('-', '_')}"
    reading.__doc__ = f"``question`` with the ``{name}`` question reader (see the module)."
    return reading


READINGS: dict[str, Reading] = {"direct": read_direct, "chain": read_chain, "question": read_question,
                                **{f"question-{name}": _question_reading(name) for name in QUESTION_READERS}}
