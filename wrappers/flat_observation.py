"""FlatObservation: any environment's observation (or MemoryObservation's) as one flat ``Box(float32)``.

Libraries whose default models take a float vector (RLlib's default encoders,
CleanRL's ``ppo.py``, TorchRL's MLPs) need neither ``MultiDiscrete`` nor
``Dict`` observations::

    env = FlatObservation(gym.make("TEPA/RegimeDrift-v0"))
    env = FlatObservation(MemoryObservation(gym.make("TEPA/FileOps-v0"), memory="tepa"))
    envs = gym.make_vec("TEPA/PreferenceStream-v0", num_envs=8, wrappers=[FlatObservation])
    envs = FlatObservationV(gym.make_vec("TEPA/RegimeDrift-v0", num_envs=256))  # any vector env

The encoding, entry by entry in the space's order (a ``Dict`` in its key order,
a ``Tuple`` in its order, nested spaces depth first):

* ``Discrete(n, start)``: a one-hot of length ``n``;
* ``MultiDiscrete(nvec, start)``: one one-hot per entry (length ``sum(nvec)``,
  entries in C order);
* ``MultiBinary``: its bits as 0.0 / 1.0;
* ``Box``: its values, flattened and cast to float32 (bounds cast alike).

So one-hot blocks sum to 1 and every value lies in the returned space. ``Text``,
``Graph`` and ``Sequence`` spaces have no flat encoding (``TypeError``). The
default stays the environment's own observation (Stable-Baselines3 behaviour is
unchanged): the flat view is only what this wrapper returns.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import VectorEnv, VectorObservationWrapper
from gymnasium.vector.utils import batch_space

__all__ = ["FlatObservation", "FlatObservationV", "flat_space", "flatten_batch"]


def _check(space: gym.Space) -> None:
    if isinstance(space, gym.spaces.Dict):
        for sub in space.spaces.values():
            _check(sub)
    elif isinstance(space, gym.spaces.Tuple):
        for sub in space.spaces:
            _check(sub)
    elif not isinstance(space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary,
                                gym.spaces.Box)):
        raise _no_encoding(space)


def _no_encoding(space: gym.Space) -> TypeError:
    return TypeError(f"FlatObservation has no flat encoding of {space}: it takes Discrete, MultiDiscrete, "
                     "MultiBinary, Box and Dict/Tuple of them")


def _bounds(space: gym.Space) -> tuple[list[np.ndarray], list[np.ndarray]]:
    if isinstance(space, gym.spaces.Discrete):
        n = int(space.n)
        return [np.zeros(n)], [np.ones(n)]
    if isinstance(space, gym.spaces.MultiDiscrete):
        n = int(np.sum(space.nvec))
        return [np.zeros(n)], [np.ones(n)]
    if isinstance(space, gym.spaces.MultiBinary):
        n = int(np.prod(space.shape))
        return [np.zeros(n)], [np.ones(n)]
    if isinstance(space, gym.spaces.Box):
        return [np.asarray(space.low, dtype=np.float64).ravel()], [np.asarray(space.high, dtype=np.float64).ravel()]
    subs: Iterable[gym.Space]
    if isinstance(space, gym.spaces.Dict):
        subs = space.spaces.values()
    elif isinstance(space, gym.spaces.Tuple):
        subs = space.spaces
    else:
        raise _no_encoding(space)
    lows: list[np.ndarray] = []
    highs: list[np.ndarray] = []
    for sub in subs:
        low, high = _bounds(sub)
        lows += low
        highs += high
    return lows, highs


def flat_space(space: gym.Space) -> gym.spaces.Box:
    """The flat ``Box(float32)`` that :func:`flatten_batch` encodes ``space`` into."""
    _check(space)
    lows, highs = _bounds(space)
    low = np.concatenate(lows).astype(np.float32) if lows else np.zeros(0, np.float32)
    high = np.concatenate(highs).astype(np.float32) if highs else np.zeros(0, np.float32)
    return gym.spaces.Box(low, high, dtype=np.float32)


def _one_hot(values: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros((values.shape[0], n), dtype=np.float32)
    out[np.arange(values.shape[0]), values] = 1.0
    return out


def _encode(space: gym.Space, batch: Any, rows: int) -> list[np.ndarray]:
    if isinstance(space, gym.spaces.Discrete):
        values = np.asarray(batch, dtype=np.int64).reshape(rows) - int(space.start)
        return [_one_hot(values, int(space.n))]
    if isinstance(space, gym.spaces.MultiDiscrete):
        columns = (np.asarray(batch, dtype=np.int64) - np.asarray(space.start, dtype=np.int64)).reshape(rows, -1)
        nvec = np.asarray(space.nvec, dtype=np.int64).ravel()
        return [_one_hot(columns[:, i], int(n)) for i, n in enumerate(nvec)]
    if isinstance(space, (gym.spaces.MultiBinary, gym.spaces.Box)):
        return [np.asarray(batch).reshape(rows, -1).astype(np.float32)]
    if isinstance(space, gym.spaces.Dict):
        return [part for name, sub in space.spaces.items() for part in _encode(sub, batch[name], rows)]
    if isinstance(space, gym.spaces.Tuple):
        return [part for i, sub in enumerate(space.spaces) for part in _encode(sub, batch[i], rows)]
    raise _no_encoding(space)


def flatten_batch(space: gym.Space, batch: Any, rows: int) -> np.ndarray:
    """``rows`` observations of ``space``, batched as Gymnasium's vector envs batch them,
    as a float32 array of shape ``(rows, flat_space(space).shape[0])``."""
    parts = _encode(space, batch, rows)
    if not parts:
        return np.zeros((rows, 0), dtype=np.float32)
    return np.concatenate(parts, axis=1)


def _batched(space: gym.Space, observation: Any) -> Any:
    """One observation of ``space`` as a batch of one."""
    if isinstance(space, gym.spaces.Dict):
        return {name: _batched(sub, observation[name]) for name, sub in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(_batched(sub, observation[i]) for i, sub in enumerate(space.spaces))
    return np.asarray(observation)[None]


class FlatObservation(gym.ObservationWrapper[np.ndarray, Any, Any], gym.utils.RecordConstructorArgs):
    """The observation as one flat ``Box(float32)``: one-hot where discrete (module docstring).

    Wraps any registered environment, :class:`~tepa_envs.wrappers.MemoryObservation`
    (its ``Dict`` of the environment's observation and the memory's view) and
    anything else whose observation space is ``Discrete``, ``MultiDiscrete``,
    ``MultiBinary``, ``Box`` or a ``Dict``/``Tuple`` of them. Works under
    ``gym.make_vec(..., wrappers=[FlatObservation])`` (sync and async) and
    ``SyncVectorEnv``/``AsyncVectorEnv``; :class:`FlatObservationV` flattens a
    vector environment's batched observations (the native RegimeDrift vector env,
    :class:`~tepa_envs.wrappers.MemoryObservationV`) with the same encoding.

    Args:
        env: the environment to flatten the observations of.
    """

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.ObservationWrapper.__init__(self, env)
        self._inner_space = env.observation_space
        self.observation_space = flat_space(env.observation_space)

    def observation(self, observation: Any) -> np.ndarray:
        return flatten_batch(self._inner_space, _batched(self._inner_space, observation), 1)[0]


class FlatObservationV(VectorObservationWrapper, gym.utils.RecordConstructorArgs):
    """:class:`FlatObservation` for a vector environment: every sub-environment's observation
    flattened with the same encoding, in one batched numpy pass (``single_observation_space``
    the flat ``Box``, ``observation_space`` its batch)."""

    def __init__(self, env: VectorEnv) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        VectorObservationWrapper.__init__(self, env)
        self._inner_space = env.single_observation_space
        self.single_observation_space = flat_space(env.single_observation_space)
        self.observation_space = batch_space(self.single_observation_space, env.num_envs)

    def observations(self, observations: Any) -> np.ndarray:
        return flatten_batch(self._inner_space, observations, self.num_envs)
