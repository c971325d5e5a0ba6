"""Gymnasium and PettingZoo wrappers, imported as ``tepa_envs.wrappers``."""

from tepa_envs.wrappers.memory_observation import MEMORY_ENTRIES, MemoryObservation

__all__ = ["MEMORY_ENTRIES", "MemoryObservation"]
