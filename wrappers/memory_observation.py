"""MemoryObservation: a memory's view of the current task, added to the observation."""

from __future__ import annotations

from types import MethodType
from typing import Any, Callable

import gymnasium as gym
import numpy as np
from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker, TimeLimit

from tepa_envs.agents.memories.protocol import hooks_of
from tepa_envs.agents.readers.agent import write_step
from tepa_envs.agents.readers.task_access import TaskAccess, task_access
from tepa_envs.agents.memories.protocol import Memory
from tepa_envs.agents.memories.registry import make_memory
from tepa_envs.core import Record, check_positive_int
from tepa_envs.core.contracts import ValueActions

MEMORY_ENTRIES = ("memory_value", "memory_validity", "memory_support", "memory_conflict")


class MemoryObservation(gym.Wrapper[dict[str, Any], Any, Any, Any], gym.utils.RecordConstructorArgs):
    """Feeds every step's ``info["evidence"]`` into a memory and shows the policy
    what the memory retrieves for the task just presented.

    The observation becomes a flat ``Dict``:

    * ``"obs"``: the environment's observation (a ``Dict`` observation space is
      merged entry by entry instead);
    * ``"memory_value"``: ``Box(0, 1, (n_actions,))``, the memory's first
      retrieved value for ``info["key"]`` as a one-hot over actions (through
      ``env.unwrapped.to_action``); all zeros when the memory shows nothing usable;
    * ``"memory_validity"``: ``Box(0, 1, (1,))``, that record's Beta(1, 1)
      validity ``(support + 1) / (support + conflict + 2)``; 0 when nothing is shown;
    * ``"memory_support"``, ``"memory_conflict"``: ``Box(0, 1, (1,))``, the
      record's counts scaled as ``log1p(min(count, count_cap)) / log1p(count_cap)``.

    The evidence is read from either ``info`` schema: the rich list, or, with an
    environment made with ``info_schema="fixed"``, the environment's
    ``last_evidence``. For a flat ``Box(float32)`` of all of this, wrap it in
    :class:`~tepa_envs.wrappers.FlatObservation`.

    The memory is reset with the environment and its hooks
    (:class:`~tepa_envs.agents.memories.MemoryHooks`) are called as
    :class:`~tepa_envs.agents.MemoryAgent` calls them: it is bound the
    environment's trial function (TEPA-Full) and told of true phase boundaries
    (oracle reset). Environment members are reached through
    ``get_wrapper_attr``, so an inner wrapper may override them.

    Args:
        env: an environment with a ``Discrete`` action space whose infos carry
            ``key``, ``context`` and ``evidence``, and that implements the task
            contract (:class:`~tepa_envs.core.contracts.TaskEnv`).
        memory: a memory object (any object with ``observe``, ``retrieve`` and
            ``reset``), a method name (``"tepa"``) or an import path
            (``"package.module:ClassName"``).
        memory_kwargs: arguments for a memory given by name or path.
        count_cap: support/conflict counts at or above this scale to 1.0.
    """

    def __init__(self, env: gym.Env, memory: Memory | str = "tepa",
                 memory_kwargs: dict[str, Any] | None = None, count_cap: int = 1000) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, memory=memory, memory_kwargs=memory_kwargs,
                                                 count_cap=count_cap)
        gym.Wrapper.__init__(self, env)
        if not isinstance(env.action_space, gym.spaces.Discrete):
            raise TypeError(f"MemoryObservation needs a Discrete action space, got {env.action_space}")
        self._bind(task_access(env))
        check_positive_int("count_cap", count_cap)
        self.memory = make_memory(memory, **(memory_kwargs or {}))
        self.count_cap = count_cap
        self.n_actions = int(env.action_space.n)
        self._dict_inner = isinstance(env.observation_space, gym.spaces.Dict)
        self.observation_space = gym.spaces.Dict({**self._inner_spaces(env.observation_space),
                                                  **memory_spaces(self.n_actions)})
        # Precomputed once: the arrays of an empty view (copied, never handed out) and, per
        # pair of counts already seen, the validity and scaled counts (computed as memory_view does).
        self._zero_value = np.zeros(self.n_actions, dtype=np.float32)
        self._zero_unit = np.zeros(1, dtype=np.float32)
        self._zero_count = scaled_count(0, count_cap)
        self._scaled: dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}

    def _bind(self, task: TaskAccess) -> None:
        """Cache what every step needs: the task contract and the memory's bound methods."""
        self._task = task
        self._to_action = task.to_action
        self._evidence_env = evidence_layer(self.env)
        # The environment's own ValueActions.to_action (not overridden by a wrapper or a subclass):
        # values are looked up in its index directly.
        method = task.to_action
        owner = method.__self__ if isinstance(method, MethodType) and method.__func__ is ValueActions.to_action else None
        self._value_owner = owner if isinstance(owner, ValueActions) else None

    @property
    def memory(self) -> Memory:
        """The memory whose view is shown (assigning a new one takes effect at the next step)."""
        return self._memory

    @memory.setter
    def memory(self, memory: Memory) -> None:
        self._memory = memory
        self._retrieve = memory.retrieve

    # ----------------------------------------------------------------- spaces
    @staticmethod
    def _inner_spaces(space: gym.Space) -> dict[str, gym.Space]:
        if isinstance(space, gym.spaces.Dict):
            clash = set(space.spaces) & set(MEMORY_ENTRIES)
            if clash:
                raise ValueError(f"observation entries {sorted(clash)} clash with MemoryObservation's entries")
            if any(isinstance(s, (gym.spaces.Dict, gym.spaces.Tuple)) for s in space.spaces.values()):
                raise TypeError("MemoryObservation needs a flat observation space (no nested Dict/Tuple)")
            return dict(space.spaces)
        return {"obs": space}

    # -------------------------------------------------------------- gymnasium
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        observation, info = self.env.reset(seed=seed, options=options)
        self.memory.reset()
        self._bind(task_access(self.env))
        hooks_of(self.memory).bind_trial(self._task.trial)
        return self._augment(observation, info), info

    def step(self, action: Any):
        observation, reward, terminated, truncated, info = self.env.step(action)
        # the fixed schema's evidence is the environment's last_evidence (through get_wrapper_attr)
        write_step(self._memory, info, self._evidence_env)
        return self._augment(observation, info), reward, terminated, truncated, info

    # ---------------------------------------------------------------- helpers
    def top_record(self, info: dict[str, Any]) -> Record | None:
        """The first record the memory shows for the task in ``info`` that maps to an action."""
        return top_record(self.memory, info.get("key", ""), info.get("context", ""), self._action_of)

    def _action_of(self, value: str) -> int | None:
        return action_of(self._task.to_action, value, self.n_actions)

    def _record_view(self, record: Record, action: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Fresh copies of the one-hot, validity and scaled-count arrays of ``record`` shown as
        ``action``, computed once per action and pair of integer counts of a plain
        :class:`Record` (whose validity depends on its counts alone)."""
        support, conflict = record.support, record.conflict
        cacheable = type(support) is int and type(conflict) is int and type(record) is Record
        arrays = self._scaled.get((action, support, conflict)) if cacheable else None
        if arrays is None:
            value = self._zero_value.copy()
            value[action] = 1.0
            arrays = (value, np.array([record.validity], dtype=np.float32), scaled_count(support, self.count_cap),
                      scaled_count(conflict, self.count_cap))
            if cacheable and len(self._scaled) < _SCALED_CACHE_SIZE:
                self._scaled[(action, support, conflict)] = arrays
        return arrays[0].copy(), arrays[1].copy(), arrays[2].copy(), arrays[3].copy()

    def _augment(self, observation: Any, info: dict[str, Any]) -> dict[str, Any]:
        # Same result as memory_view(self.top_record(info), ...), merged after the inner entries,
        # with each record's action looked up once.
        key = info.get("key", "")
        action = record = None
        if key:
            n_actions, owner = self.n_actions, self._value_owner
            for candidate in self._retrieve(key, info.get("context", "")):
                name = candidate.value
                if owner is not None and type(name) is str:
                    # ValueActions.to_action without its checks: None for an unknown value (its ValueError).
                    action = owner._value_index.get(name)
                    if action is None:
                        continue
                else:
                    try:
                        action = int(self._to_action(name))
                    except ValueError:
                        continue
                if 0 <= action < n_actions:
                    record = candidate
                    break
        if record is None or action is None:
            value, validity = self._zero_value.copy(), self._zero_unit.copy()
            support, conflict = self._zero_count.copy(), self._zero_count.copy()
        else:
            value, validity, support, conflict = self._record_view(record, action)
        if self._dict_inner:
            merged = dict(observation)
            merged["memory_value"] = value
            merged["memory_validity"] = validity
            merged["memory_support"] = support
            merged["memory_conflict"] = conflict
            return merged
        return {"obs": observation, "memory_value": value, "memory_validity": validity,
                "memory_support": support, "memory_conflict": conflict}


_SCALED_CACHE_SIZE = 1 << 16
"""Most pairs of scaled counts a MemoryObservation keeps (pairs of ``int`` counts only)."""


PLAIN_WRAPPERS: tuple[type, ...] = (OrderEnforcing, PassiveEnvChecker, TimeLimit)
"""Gymnasium's wrappers ``gym.make`` adds, none of which overrides an environment member."""


def evidence_layer(env: gym.Env) -> gym.Env:
    """The first layer of ``env`` below the :data:`PLAIN_WRAPPERS` (exactly those classes):
    its ``get_wrapper_attr`` finds what ``env``'s would, without walking those layers again
    on every step."""
    while type(env) in PLAIN_WRAPPERS and isinstance(env, gym.Wrapper):
        env = env.env
    return env


def memory_spaces(n_actions: int) -> dict[str, gym.spaces.Box]:
    """The observation entries a memory's view adds (see :class:`MemoryObservation`)."""
    unit = gym.spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32)
    return {
        "memory_value": gym.spaces.Box(0.0, 1.0, shape=(n_actions,), dtype=np.float32),
        "memory_validity": unit,
        "memory_support": unit,
        "memory_conflict": unit,
    }


def action_of(to_action: Callable[[str], int], value: str, n_actions: int) -> int | None:
    """The action that uses ``value``, or ``None`` when ``value`` is not one of the actions."""
    try:
        action = int(to_action(value))
    except ValueError:
        return None
    return action if 0 <= action < n_actions else None


def top_record(memory: Memory, key: str, context: str,
               action_of_value: Callable[[str], int | None]) -> Record | None:
    """The first record ``memory`` retrieves for ``key`` whose value maps to an action."""
    if not key:
        return None
    for record in memory.retrieve(key, context):
        if action_of_value(record.value) is not None:
            return record
    return None


def scaled_count(count: int, count_cap: int) -> np.ndarray:
    """``log1p(min(count, count_cap)) / log1p(count_cap)`` as a float32 array of shape ``(1,)``."""
    return np.array([np.log1p(min(max(count, 0), count_cap)) / np.log1p(count_cap)], dtype=np.float32)


def memory_view(record: Record | None, action_of_value: Callable[[str], int | None], n_actions: int,
                count_cap: int) -> dict[str, np.ndarray]:
    """The observation entries for ``record`` (all zeros when the memory shows nothing)."""
    value = np.zeros(n_actions, dtype=np.float32)
    if record is None:
        return {"memory_value": value, "memory_validity": np.zeros(1, np.float32),
                "memory_support": scaled_count(0, count_cap), "memory_conflict": scaled_count(0, count_cap)}
    value[action_of_value(record.value)] = 1.0
    return {"memory_value": value, "memory_validity": np.array([record.validity], dtype=np.float32),
            "memory_support": scaled_count(record.support, count_cap),
            "memory_conflict": scaled_count(record.conflict, count_cap)}
