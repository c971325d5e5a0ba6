"""``TEPA/FactConsolidation-v0``: MemoryAgentBench fact consolidation, with its data
generator, record loader and answer metric."""

from tepa_envs.facts.env import FactConsolidationEnv

__all__ = ["FactConsolidationEnv"]
