"""The reader protocol and its optional hooks, declared (as the memory protocol's are).

A reader is any object with ``reset(episode_seed)`` and ``choose(records, choices,
stated)`` (:class:`Reader`). A reader that needs more from the agent loop subclasses
:class:`ReaderHooks` and overrides the hooks it uses; every hook has a no-op default,
so the loop calls them on every reader through :func:`reader_hooks` and never probes
a reader for a member by name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Protocol, Sequence, runtime_checkable

from tepa_envs.core import Record

if TYPE_CHECKING:
    from tepa_envs.agents.readers.prompt import Prompt


@runtime_checkable
class Reader(Protocol):
    """What the agent loop asks of every reader."""

    def reset(self, episode_seed: int | None = None) -> None: ...

    def choose(self, records: Sequence[Record], choices: Sequence[str], stated: str | None = None) -> str: ...


@runtime_checkable
class PromptedReader(Reader, Protocol):
    """A reader that decides by prompting a language model
    (:class:`~tepa_envs.agents.readers.lm_base.LMReader`): the ``local-lm`` question reader
    adds each hop's question to :attr:`context` while the reader chooses that hop's value."""

    context: str
    """The task's text, the question the prompt asks (set by ``begin_task``)."""

    def prompt_for(self, records: Sequence[Record], choices: Sequence[str]) -> Prompt:
        """The prompt this reader would send for ``records`` and ``choices``."""
        ...


class ReaderHooks:
    """Optional hooks :class:`~tepa_envs.agents.readers.agent.MemoryAgent` calls on a reader
    that subclasses this class (Stable-Baselines3 ``BaseCallback`` style: no-op defaults)."""

    def bind_memory(self, memory: object) -> None:
        """The memory this reader reads (once, when the agent is built)."""

    def begin_task(self, info: Mapping[str, Any]) -> None:
        """The task about to be decided (``info["context"]`` is its text)."""


NO_READER_HOOKS = ReaderHooks()
"""The hooks of a reader that does not subclass :class:`ReaderHooks`: every hook does nothing."""


def reader_hooks(reader: object) -> ReaderHooks:
    """``reader`` itself when it subclasses :class:`ReaderHooks`, else hooks that do nothing."""
    return reader if isinstance(reader, ReaderHooks) else NO_READER_HOOKS


__all__ = ["NO_READER_HOOKS", "PromptedReader", "Reader", "ReaderHooks", "reader_hooks"]
