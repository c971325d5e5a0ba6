"""Reading strategies: how an agent turns a task into memory queries and a value.

* :func:`read_direct`: retrieve the task's key; the reader picks among the
  task's choices (or states the first shown value for free-text answers).
* :func:`read_chain`: multi-hop questions (``info["chain"]``: the relations after
  the first hop). Each hop retrieves ``subject|relation`` and the reader's answer
  becomes the next hop's subject; a question without a chain is one hop.
* :func:`read_question`: questions the environment did not key (``info["key"]``
  empty, e.g. FactConsolidation facts keyed by induced frames): the question
  text is mapped to one of the keys streamed so far by subject mention and
  lexical overlap with the frame (:func:`tepa_envs.facts.extraction.match_question`);
  the keys come from the environment's optional ``known_keys()`` member (the
  keys of the ``info["evidence"]`` it streamed). A keyed question is read as
  :func:`read_chain` reads it.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from tepa_envs.agents.memories.protocol import Memory
from tepa_envs.agents.readers.evidence_reader import EvidenceReader
from tepa_envs.agents.readers.task_access import TaskAccess
from tepa_envs.facts.extraction import match_question

Reading = Callable[[Memory, EvidenceReader, TaskAccess, Mapping[str, Any]], str]


def read_direct(memory: Memory, reader: EvidenceReader, task: TaskAccess, info: Mapping[str, Any]) -> str:
    key, context = info["key"], info.get("context", "")
    return reader.choose(memory.retrieve(key, context), task.choices(key), task.stated_value(key, context))


def read_chain(memory: Memory, reader: EvidenceReader, task: TaskAccess, info: Mapping[str, Any]) -> str:
    key, context = info["key"], info.get("context", "")
    relations = list(info.get("chain") or ())
    if not relations:
        return reader.choose(memory.retrieve(key, context), task.choices(key))
    subject, _, relation = key.partition("|")
    answer = ""
    for rel in [relation, *relations]:
        answer = reader.choose(memory.retrieve(f"{subject}|{rel}", context), ())
        if not answer:
            return ""
        subject = answer
    return answer


def _known_keys(task: TaskAccess) -> tuple[str, ...]:
    env = task.env
    try:
        member = env.get_wrapper_attr("known_keys") if hasattr(env, "get_wrapper_attr") else env.known_keys
    except AttributeError:
        return ()
    return tuple(member())


def read_question(memory: Memory, reader: EvidenceReader, task: TaskAccess, info: Mapping[str, Any]) -> str:
    if info["key"]:
        return read_chain(memory, reader, task, info)
    context = info.get("context", "")
    key = match_question(context, _known_keys(task)) if context else ""
    return reader.choose(memory.retrieve(key, context), task.choices(key))


READINGS: dict[str, Reading] = {"direct": read_direct, "chain": read_chain, "question": read_question}
