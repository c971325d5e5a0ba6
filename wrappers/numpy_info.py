"""NumpyInfo: the ``info`` numbers as 0-d numpy arrays of fixed dtype.

The fixed info schema (:mod:`tepa_envs.core.step_info`) gives Python ``int``,
``bool`` and ``float`` values, which Gymnasium's vector envs, Minari and
Tianshou stack as they are. Readers that ask each value for its ``dtype``
(TorchRL's ``default_info_dict_reader``) need numpy values::

    env = NumpyInfo(gym.make("TEPA/RegimeDrift-v0"))
    env = torchrl.envs.GymWrapper(env)
    env.set_info_dict_reader(default_info_dict_reader(["t", "scored", "success", "forfeited"]))

Every ``bool``, ``int`` and ``float`` becomes a 0-d array of dtype ``bool``,
``int64`` and ``float64``, in nested dicts too (``evidence``, ``oracle``);
strings, lists and other values are passed through unchanged. 0-d arrays, not
numpy scalars: a Gymnasium vector env stacks a 0-d array into an array of its
dtype, but an ``np.bool_`` scalar into an object array. The keys are the
environment's own. The conversion costs time on every step, so it is a wrapper
and not the default.
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

__all__ = ["NumpyInfo", "numpy_info"]


def numpy_info(info: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``info`` with its Python numbers (nested dicts too) as 0-d numpy arrays."""
    out: dict[str, Any] = {}
    for key, value in info.items():
        if isinstance(value, bool):
            out[key] = np.asarray(value, dtype=np.bool_)
        elif isinstance(value, int):
            out[key] = np.asarray(value, dtype=np.int64)
        elif isinstance(value, float):
            out[key] = np.asarray(value, dtype=np.float64)
        elif isinstance(value, dict):
            out[key] = numpy_info(value)
        else:
            out[key] = value
    return out


class NumpyInfo(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """``env`` with every number of its ``info`` a 0-d numpy array (see the module)."""

    def __init__(self, env: gym.Env) -> None:
        if not isinstance(env, gym.Env):
            raise TypeError(f"env must be a gymnasium.Env, got {type(env).__name__}")
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        return observation, numpy_info(info)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        return observation, reward, terminated, truncated, numpy_info(info)
