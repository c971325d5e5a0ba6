"""Gymnasium and PettingZoo wrappers, imported as ``tepa_envs.wrappers``."""

from tepa_envs.wrappers.flat_observation import FlatObservation, FlatObservationV
from tepa_envs.wrappers.memory_observation import MEMORY_ENTRIES, MemoryObservation
from tepa_envs.wrappers.shared_memory import SharedMemory
from tepa_envs.wrappers.vector_memory import BATCHED_MEMORIES, MemoryObservationV

__all__ = ["BATCHED_MEMORIES", "MEMORY_ENTRIES", "FlatObservation", "FlatObservationV", "MemoryObservation",
           "MemoryObservationV", "SharedMemory"]
