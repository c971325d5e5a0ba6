"""Readers (stand-ins for a language model reading its prompt) and the agent loop."""

from tepa_envs.agents.readers.agent import EpisodeResult, MemoryAgent, run_episode
from tepa_envs.agents.readers.evidence_reader import EvidenceReader

__all__ = ["EpisodeResult", "EvidenceReader", "MemoryAgent", "run_episode"]
