"""Gymnasium and PettingZoo wrappers, imported as ``tepa_envs.wrappers``.

``SB3VecEnv`` (:mod:`tepa_envs.wrappers.sb3`) is imported on first use, so importing
this package does not import Stable-Baselines3 (the ``rl`` extra); so is ``RLlibEnvCreator``
(:mod:`tepa_envs.wrappers.rllib`, whose ``register_envs()`` registers every environment
with Ray RLlib), so importing this package does not import Ray.
"""

import importlib
from typing import Any

from tepa_envs.wrappers.flat_observation import FlatObservation, FlatObservationV
from tepa_envs.wrappers.memory_observation import MEMORY_ENTRIES, MemoryObservation
from tepa_envs.wrappers.numpy_info import NumpyInfo
from tepa_envs.wrappers.shared_memory import SharedMemory
from tepa_envs.wrappers.vector_memory import BATCHED_MEMORIES, MemoryObservationV

__all__ = ["BATCHED_MEMORIES", "MEMORY_ENTRIES", "FlatObservation", "FlatObservationV", "MemoryObservation",
           "MemoryObservationV", "NumpyInfo", "RLlibEnvCreator", "SB3VecEnv", "SharedMemory"]


def __getattr__(name: str) -> Any:
    if name == "SB3VecEnv":  # needs Stable-Baselines3: imported only when asked for
        from tepa_envs.wrappers.sb3 import SB3VecEnv

        return SB3VecEnv
    if name == "RLlibEnvCreator":  # needs Ray RLlib: imported only when asked for
        return importlib.import_module("tepa_envs.wrappers.rllib").RLlibEnvCreator
    raise AttributeError(f"module 'tepa_envs.wrappers' has no attribute {name!r}")
