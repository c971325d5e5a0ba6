"""Readers (stand-ins for a language model reading its prompt) and the agent loop."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tepa_envs.core.lazy import lazy_attributes

if TYPE_CHECKING:
    from tepa_envs.agents.readers.agent import EpisodeResult, MemoryAgent, run_episode
    from tepa_envs.agents.readers.evidence_reader import EvidenceReader
    from tepa_envs.agents.readers.factory import READER_NAMES, make_reader
    from tepa_envs.agents.readers.lm_base import LMReaderError
    from tepa_envs.agents.readers.local_lm import LocalLMReader
    from tepa_envs.agents.readers.openai_reader import OpenAIReader
    from tepa_envs.agents.readers.prompt import TEMPLATE_VERSION, render_prompt
    from tepa_envs.agents.readers.protocol import Reader, ReaderHooks, reader_hooks

_LAZY: dict[str, str] = {
    "EpisodeResult": "tepa_envs.agents.readers.agent",
    "MemoryAgent": "tepa_envs.agents.readers.agent",
    "run_episode": "tepa_envs.agents.readers.agent",
    "EvidenceReader": "tepa_envs.agents.readers.evidence_reader",
    "READER_NAMES": "tepa_envs.agents.readers.factory",
    "make_reader": "tepa_envs.agents.readers.factory",
    "LMReaderError": "tepa_envs.agents.readers.lm_base",
    "LocalLMReader": "tepa_envs.agents.readers.local_lm",
    "OpenAIReader": "tepa_envs.agents.readers.openai_reader",
    "TEMPLATE_VERSION": "tepa_envs.agents.readers.prompt",
    "render_prompt": "tepa_envs.agents.readers.prompt",
    "Reader": "tepa_envs.agents.readers.protocol",
    "ReaderHooks": "tepa_envs.agents.readers.protocol",
    "reader_hooks": "tepa_envs.agents.readers.protocol",
}
"""Public name -> the module it is loaded from (on first use)."""
__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals())

__all__ = ["EpisodeResult", "EvidenceReader", "LMReaderError", "LocalLMReader", "MemoryAgent", "OpenAIReader",
           "READER_NAMES", "Reader", "ReaderHooks", "TEMPLATE_VERSION", "make_reader", "reader_hooks", "render_prompt",
           "run_episode"]
