"""What the RL study's engines share: the clock of a unit's environment and memory calls,
and the versions of the libraries a unit records.

Both engines wrap the environments they hand their library in :class:`TimedEnv` (each
single environment) or :class:`TimedVectorEnv` (a vector environment), at the boundary
where the library asks for observations, so "env+memory steps/s" means the same under
Stable-Baselines3 and RLlib.
"""

from __future__ import annotations

import platform
import time
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Sequence

import gymnasium as gym
import torch
from gymnasium.vector import VectorEnv, VectorWrapper


class Clock:
    """Seconds spent in a unit's environment and memory calls, and when its library last
    finished collecting samples (``sample_end``, for engines that split a training
    iteration into sampling and update)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.sample_end = 0.0

    def restart(self) -> None:
        self.seconds = 0.0
        self.sample_end = 0.0


class _TimedCalls:
    """``reset`` and ``step`` of the wrapped environment, their seconds added to ``clock``."""

    env: Any
    clock: Clock

    def reset(self, **kwargs: Any) -> Any:
        start = time.perf_counter()
        out = self.env.reset(**kwargs)
        self.clock.seconds += time.perf_counter() - start
        return out

    def step(self, action: Any) -> Any:
        start = time.perf_counter()
        out = self.env.step(action)
        self.clock.seconds += time.perf_counter() - start
        return out


class TimedEnv(_TimedCalls, gym.Wrapper):
    """Adds the seconds of its inner env's ``reset`` and ``step`` to ``clock``."""

    def __init__(self, env: gym.Env, clock: Clock) -> None:
        super().__init__(env)
        self.clock = clock


class TimedVectorEnv(_TimedCalls, VectorWrapper):
    """:class:`TimedEnv` for a Gymnasium vector environment."""

    def __init__(self, env: VectorEnv, clock: Clock) -> None:
        super().__init__(env)
        self.clock = clock


def library_versions(libraries: Sequence[str]) -> dict[str, str]:
    """Versions of ``libraries`` (``"absent"`` for one not installed), Python and torch's threads."""
    found = {}
    for name in libraries:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "absent"
    found["python"] = platform.python_version()
    found["torch_threads"] = str(torch.get_num_threads())
    return found


__all__ = ["Clock", "TimedEnv", "TimedVectorEnv", "library_versions"]
