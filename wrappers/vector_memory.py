"""MemoryObservationV: a memory for every sub-environment of the native RegimeDrift vector env, batched in numpy.

:class:`~tepa_envs.wrappers.MemoryObservation` wraps one environment and keeps
one Python memory. Wrapping each of a vector env's sub-environments that way
(``SyncVectorEnv`` of ``MemoryObservation``) forfeits the native vector env. This
wrapper keeps the memories of all sub-environments in numpy arrays, one entry
per sub-environment, key and value, and updates them for all sub-environments in
one vectorised step. What each sub-environment observes is, entry for entry,
what ``MemoryObservation`` with the same memory would show it
(``tests/wrappers/test_vector_memory.py`` checks every step, autoresets included).
"""

from __future__ import annotations

from typing import Any, Sequence

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper
from gymnasium.vector.utils import batch_space

from tepa_envs.agents.memories.batched import (BATCHED_MEMORIES, MAX_WINDOW, BatchedAppendOnly, BatchedLWW,
                                               BatchedMemory, BatchedTEPA, make_batched_memory)
from tepa_envs.core import check_positive_int
from tepa_envs.regime_drift.vector import RegimeDriftVectorEnv
from tepa_envs.wrappers.memory_observation import memory_spaces, scaled_count



class MemoryObservationV(VectorWrapper):
    """:class:`~tepa_envs.wrappers.MemoryObservation` for every sub-environment of
    :class:`~tepa_envs.regime_drift.vector.RegimeDriftVectorEnv`, with the memories
    batched in numpy arrays.

    The observation is a ``Dict`` batched from ``MemoryObservation``'s single
    observation space: ``"obs"`` (the vector env's observations) and
    ``"memory_value"``, ``"memory_validity"``, ``"memory_support"``,
    ``"memory_conflict"`` (see ``MemoryObservation``), each with a leading
    ``num_envs`` axis. For the same seeds and actions every entry equals what
    ``SyncVectorEnv`` of ``MemoryObservation(gym.make("TEPA/RegimeDrift-v0", ...),
    memory)`` returns, at every step, autoresets included: a sub-environment's
    memory is emptied when it resets (its autoreset step, or a ``reset`` that
    selects it through ``options["reset_mask"]``), and a sub-environment whose
    episode just ended shows an empty view (its ``info["key"]`` is ``""``).

    The evidence of a step is read from the vector env's public outputs: the key
    is the one the previous observation presented, the value the action, the
    outcome ``info["success"]`` and the time the sub-environment's step count. So
    ``key_noise`` must be 0 (the noisy key a step files its evidence under is not
    among those outputs), and the vector env must autoreset on the next step
    (``AutoresetMode.NEXT_STEP``, the native env's mode).

    Batched memories (:data:`BATCHED_MEMORIES`), each with the same arguments as
    the Python method:

    * ``"no-memory"``: shows nothing;
    * ``"lww"``: last write wins (``LastWriteWins``);
    * ``"append-only"``: ``AppendOnly`` with ``retrieval="key"`` (any ``top_k``);
    * ``"tepa"``, ``"tepa-norev"``: TEPA with the ``"v0"`` preset's choices and
      any thresholds and prior (``alpha``, ``beta``, ``theta_rev``, ``n_min``,
      ``theta_rec``, ``n_rec`` up to :data:`MAX_WINDOW`, ``theta_pro``,
      ``theta_prop``, ``theta_prop_fresh``, ``top_k``, ``revocation``). Per
      sub-environment, key and value the arrays hold the lifecycle state
      (none, hypothesis, active), support, conflict, the recent-outcome window
      (bits and length), creation and update times and the candidate's supports.

    A configuration that cannot be batched (another method, a memory object, the
    ``"paper"`` preset or any choice other than v0's) is refused with a
    ``ValueError`` naming it, before anything else happens.

    Args:
        env: a :class:`RegimeDriftVectorEnv` (e.g. ``gym.make_vec("TEPA/RegimeDrift-v0",
            num_envs=256)``), possibly inside vector wrappers that keep its
            observation space.
        memory: one of :data:`BATCHED_MEMORIES`.
        memory_kwargs: the method's arguments.
        count_cap: as in ``MemoryObservation``.
    """

    def __init__(self, env: VectorEnv, memory: str = "tepa", memory_kwargs: dict[str, Any] | None = None,
                 count_cap: int = 1000) -> None:
        if not isinstance(env, VectorEnv):
            raise TypeError(f"env must be a gymnasium VectorEnv, got {type(env).__name__}")
        native = env.unwrapped
        if not isinstance(native, RegimeDriftVectorEnv):
            raise ValueError("MemoryObservationV batches memories for RegimeDriftVectorEnv only "
                             f"(gym.make_vec('TEPA/RegimeDrift-v0', ...)), got {type(native).__name__}; "
                             "wrap other environments' sub-environments in MemoryObservation instead")
        if env.single_observation_space != native.single_observation_space:
            raise ValueError("MemoryObservationV reads the native observations: a wrapper below it must not "
                             "change the observation space")
        if env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP) != AutoresetMode.NEXT_STEP:
            raise ValueError("MemoryObservationV needs autoreset_mode NEXT_STEP (the native env's)")
        key_noise = _key_noise(env)
        if key_noise != 0:
            raise ValueError(f"MemoryObservationV needs key_noise=0, got {key_noise}: a noisy step files its "
                             "evidence under a key the vector env does not report; use SyncVectorEnv of "
                             "MemoryObservation for key noise")
        check_positive_int("count_cap", count_cap)
        super().__init__(env)
        observations, actions = native.single_observation_space, native.single_action_space
        assert isinstance(observations, gym.spaces.MultiDiscrete) and isinstance(actions, gym.spaces.Discrete)
        n_keys, n_tools_plus_one, _ = (int(n) for n in observations.nvec)
        self.n_actions = int(actions.n)
        self.count_cap = count_cap
        self._memory = make_batched_memory(memory, memory_kwargs or {}, env.num_envs, n_keys, self.n_actions)
        self.memory_name = memory
        single = gym.spaces.Dict({"obs": native.single_observation_space, **memory_spaces(self.n_actions)})
        self.single_observation_space = single
        self.observation_space = batch_space(single, env.num_envs)
        # scaled_count of every count up to the cap, computed by scaled_count itself
        self._scaled = np.concatenate([scaled_count(c, count_cap) for c in range(count_cap + 1)])
        n = env.num_envs
        self._action_ids = np.arange(self.n_actions)
        self._entries = tuple(single.spaces)
        self._keys = np.zeros(n, dtype=np.int64)  # the key each sub-environment now presents
        self._t = np.zeros(n, dtype=np.int64)  # its task index (the time of its next evidence)
        self._ended = np.zeros(n, dtype=bool)  # its episode ended: it autoresets on the next step

    # -------------------------------------------------------------- gymnasium
    def reset(self, *, seed: int | Sequence[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        # a vector env takes a seed per sub-environment (SyncVectorEnv.reset's own annotation);
        # VectorWrapper.reset's annotation says int | None only
        observations, info = self.env.reset(seed=seed, options=options)  # type: ignore[arg-type]
        mask = np.ones(self.num_envs, dtype=bool)
        if options is not None and "reset_mask" in options:
            mask = np.asarray(options["reset_mask"], dtype=bool)
        self._memory.clear(mask)
        self._t[mask] = 0
        self._ended[mask] = False
        self._keys = observations[:, 0].astype(np.int64)
        # a sub-environment left out of reset_mask whose episode ended still shows an empty view
        return self._observe(observations, self._ended.copy()), info

    def step(self, actions: Any) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        # The vector env validates the actions and raises before any memory changes.
        observations, rewards, terminations, truncations, info = self.env.step(actions)
        resetting = self._ended
        stepping = ~resetting
        if resetting.any():
            self._memory.clear(resetting)
        rows = np.flatnonzero(stepping)
        if rows.size:
            actions = np.asarray(actions, dtype=np.int64)
            success = np.asarray(info["success"], dtype=bool)
            self._memory.observe(rows, self._keys[rows], actions[rows], success[rows], self._t[rows])
        self._t = np.where(stepping, self._t + 1, 0)
        self._ended = np.logical_or(terminations, truncations)
        self._keys = observations[:, 0].astype(np.int64)
        return self._observe(observations, terminations), rewards, terminations, truncations, info

    # ---------------------------------------------------------------- helpers
    def _observe(self, observations: np.ndarray, hidden: np.ndarray) -> dict[str, np.ndarray]:
        """The batched observation: every sub-environment's view of the key it now presents
        (an empty view where ``hidden``: its episode ended and no task is presented)."""
        found, value, support, conflict = self._memory.view(self._keys)
        found &= ~hidden
        one_hot = ((self._action_ids == value[:, None]) & found[:, None]).astype(np.float32)
        support = np.where(found, support, 0)
        conflict = np.where(found, conflict, 0)
        # Record.validity, in float64 as Python computes it, then float32 as MemoryObservation stores it
        validity = np.where(found, (support + 1.0) / ((support + conflict) + 2.0), 0.0).astype(np.float32)
        out = {
            "obs": observations,
            "memory_value": one_hot,
            "memory_validity": validity[:, None],
            "memory_support": self._scaled.take(np.minimum(support, self.count_cap))[:, None],
            "memory_conflict": self._scaled.take(np.minimum(conflict, self.count_cap))[:, None],
        }
        return {name: out[name] for name in self._entries}


def _key_noise(env: VectorEnv) -> float:
    """The vector env's ``key_noise`` (its construction arguments; 0 when it was left out)."""
    if isinstance(env.unwrapped, RegimeDriftVectorEnv):
        return env.unwrapped.key_noise
    spec = env.spec
    return float((spec.kwargs if spec is not None else {}).get("key_noise", 0.0))


__all__ = ["BATCHED_MEMORIES", "MAX_WINDOW", "BatchedAppendOnly", "BatchedLWW", "BatchedMemory", "BatchedTEPA",
           "MemoryObservationV", "make_batched_memory"]
