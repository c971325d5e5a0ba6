"""The prompt every language-model reader reads: one documented, versioned template.

A prompt is a chat: a system message, three worked examples (a user turn and the
assistant's answer each), then the task's user message; a completion model reads
the same turns as :meth:`Prompt.text`. Every user message holds, in this order:

1. ``Task:`` the task's text exactly as the environment wrote it
   (``info["context"]``, multi-line texts kept as they are);
2. ``Options:`` the task's choices, comma-separated (for a free-text task, the
   distinct values the memory showed: the reader can only state a shown value);
3. ``Memory:`` what the memory retrieved for the task, in the memory's order,
   one numbered line per record::

       1. tool_1 (support 15, conflict 0, validity 0.94)

   ``support``/``conflict`` are the record's counts as the memory reports them;
   ``validity`` is the record's score, shown only for memories whose score *is*
   a validity (TEPA and its variants: the mean of the precedent's Beta
   posterior; :func:`shows_validity`). A memory that retrieved nothing gives the
   line ``Memory: nothing recorded for this task.``;
4. the instruction ``Answer with exactly one option.``

The three worked examples (:data:`EXAMPLES`) are fixed: made-up tasks whose options
(colours, compass points, seasons) appear in no environment, with one or two
records, answered with the first record's value (the last, second and first
option, so no position is favoured); they are rendered by the same code, with
validities exactly when the task's records show them. They show a small model
the answer's form and where the memory is; without them SmolLM2-135M answered
``tool_1`` to every controlled-drift task whatever its memory showed (measured
while choosing the template; see the README).

The renderer adds nothing the memory did not return: revoked precedents are not
retrieved, so they never appear, and two methods' prompts for the same task
differ only in their ``Memory`` block (and whether validities are shown).
Values are put on one line each (whitespace runs become one space).

:data:`TEMPLATE_VERSION` names this template; every cache of decisions is keyed
by it, so a change to the wording must change the version. The golden files in
``tests/data/prompts/`` pin the rendered text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from tepa_envs.core import LifecycleState, Record

from tepa_envs.agents.memories.protocol import Memory, MemoryHooks

TEMPLATE_VERSION = "tepa-reader-prompt/1"
"""Identifies the template's wording; part of every decision-cache key."""

SYSTEM = ("You are an agent that completes tasks. Your memory lists what it recorded about tasks "
          "of the same kind. Pick the option most likely to be right.")
"""The system message of every prompt."""

INSTRUCTION = "Answer with exactly one option."
EMPTY_MEMORY = "Memory: nothing recorded for this task."

VALIDITY_MEMORIES: frozenset[str] = frozenset({"tepa", "tepa-norev", "tepa-full", "tepa-paper"})
"""Memory names whose record ``score`` is a validity (TEPA's posterior mean)."""


def _example_record(value: str, support: int, conflict: int) -> Record:
    validity = (support + 1.0) / (support + conflict + 2.0)
    return Record("example", value, support, conflict, LifecycleState.ACTIVE, 0, 0, validity)


EXAMPLES: tuple[tuple[str, tuple[str, ...], tuple[Record, ...], str], ...] = (
    ("Request #3: convert the sales report provided as pdf. Available tools: red, green, blue. Pick one tool.",
     ("red", "green", "blue"), (_example_record("blue", 4, 0),), "blue"),
    ("Request #9: check the travel booking provided as json. Available tools: north, south, east, west. "
     "Pick one tool.",
     ("north", "south", "east", "west"), (_example_record("south", 2, 0), _example_record("west", 1, 1)), "south"),
    ("Request #14: sort the music files provided as text. Available tools: spring, summer, autumn, winter. "
     "Pick one tool.",
     ("spring", "summer", "autumn", "winter"), (_example_record("spring", 3, 1),), "spring"),
)
"""The worked examples: (task text, options, records, answer)."""


def shows_validity(memory: object) -> bool:
    """Whether the records of ``memory`` carry a validity in their ``score``: a memory that
    declares it (:attr:`~tepa_envs.agents.memories.protocol.MemoryHooks.scores_are_validity`;
    TEPA and its variants do, by class, so a subclass under another name counts) or a
    memory named in :data:`VALIDITY_MEMORIES`."""
    return ((isinstance(memory, MemoryHooks) and memory.scores_are_validity)
            or (isinstance(memory, Memory) and memory.name in VALIDITY_MEMORIES))


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) collapsed to one space."""
    return " ".join(str(text).split())


def options_for(records: Sequence[Record], choices: Sequence[str]) -> tuple[str, ...]:
    """The options a reader chooses among: the task's choices; for a free-text task
    (no choices) the distinct values the records show, in their order."""
    if choices:
        return tuple(choices)
    seen: dict[str, None] = {}
    for record in records:
        if record.value not in seen:
            seen[record.value] = None
    return tuple(seen)


def record_line(index: int, record: Record, validity: bool) -> str:
    """One record as one numbered line of evidence."""
    fields = f"support {record.support}, conflict {record.conflict}"
    if validity:
        fields += f", validity {record.score:.2f}"
    return f"{index}. {one_line(record.value)} ({fields})"


def user_message(context: str, options: Sequence[str], records: Sequence[Record], validity: bool) -> str:
    """The user message of one task (the template of the module docstring)."""
    lines = [f"Task: {context.strip()}", "", "Options: " + ", ".join(one_line(o) for o in options), ""]
    if records:
        lines.append("Memory (most relevant first):")
        lines += [record_line(i, r, validity) for i, r in enumerate(records, start=1)]
    else:
        lines.append(EMPTY_MEMORY)
    lines.append(INSTRUCTION)
    return "\n".join(lines)


@dataclass(frozen=True)
class Prompt:
    """A rendered prompt: its chat turns and the options to choose among.

    ``messages`` are ``{"role", "content"}`` dicts (OpenAI's format, also what chat
    templates take); the last is the task's user message.
    """

    messages: tuple[dict[str, str], ...]
    options: tuple[str, ...]
    version: str = TEMPLATE_VERSION

    @property
    def user(self) -> str:
        """The task's user message."""
        return self.messages[-1]["content"]

    def text(self) -> str:
        """The whole prompt as one text: every turn headed by its role (for completion
        models, golden files and cache keys)."""
        return "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in self.messages)


def render_prompt(context: str, choices: Sequence[str], records: Sequence[Record], *,
                  validity: bool = False) -> Prompt:
    """Render the prompt of one decision (the template is described in the module docstring).

    Args:
        context: the task's text (``info["context"]``).
        choices: the task's choices (empty for a free-text task).
        records: what the memory retrieved, in the memory's order.
        validity: show each record's score as its validity (see :func:`shows_validity`).
    """
    options = options_for(records, choices)
    messages = [{"role": "system", "content": SYSTEM}]
    for task, example_options, example_records, answer in EXAMPLES:
        messages.append({"role": "user", "content": user_message(task, example_options, example_records, validity)})
        messages.append({"role": "assistant", "content": answer})
    messages.append({"role": "user", "content": user_message(context, options, records, validity)})
    return Prompt(tuple(messages), options)


__all__ = ["EMPTY_MEMORY", "EXAMPLES", "INSTRUCTION", "Prompt", "SYSTEM", "TEMPLATE_VERSION", "VALIDITY_MEMORIES",
           "options_for", "record_line", "render_prompt", "shows_validity", "user_message"]
