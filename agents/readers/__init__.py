"""Readers (stand-ins for a language model reading its prompt) and the agent loop."""

from tepa_envs.agents.readers.agent import EpisodeResult, MemoryAgent, run_episode
from tepa_envs.agents.readers.evidence_reader import EvidenceReader
from tepa_envs.agents.readers.factory import READER_NAMES, make_reader
from tepa_envs.agents.readers.lm_base import LMReaderError
from tepa_envs.agents.readers.local_lm import LocalLMReader
from tepa_envs.agents.readers.openai_reader import OpenAIReader
from tepa_envs.agents.readers.prompt import TEMPLATE_VERSION, render_prompt

__all__ = ["EpisodeResult", "EvidenceReader", "LMReaderError", "LocalLMReader", "MemoryAgent", "OpenAIReader",
           "READER_NAMES", "TEMPLATE_VERSION", "make_reader", "render_prompt", "run_episode"]
