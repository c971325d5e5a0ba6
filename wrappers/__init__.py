"""Gymnasium and PettingZoo wrappers, imported as ``tepa_envs.wrappers``."""

from tepa_envs.wrappers.memory_observation import MEMORY_ENTRIES, MemoryObservation
from tepa_envs.wrappers.shared_memory import SharedMemory

__all__ = ["MEMORY_ENTRIES", "MemoryObservation", "SharedMemory"]
