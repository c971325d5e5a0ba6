"""SharedMemory: a PettingZoo wrapper that gives a team of agents one memory, or one each."""

from __future__ import annotations

import functools
from typing import Any, Sequence

import gymnasium as gym
import numpy as np
from pettingzoo import ParallelEnv
from pettingzoo.utils.wrappers import BaseParallelWrapper

from tepa_envs.agents.memories.protocol import Memory, hooks_of
from tepa_envs.agents.memories.registry import make_memory
from tepa_envs.agents.readers.task_access import task_access
from tepa_envs.core import Record, check_positive_int
from tepa_envs.core.contracts import NamedObservation, ValueActions
from tepa_envs.wrappers.memory_observation import MEMORY_ENTRIES, action_of, memory_view, top_record


class SharedMemory(BaseParallelWrapper):
    """Feeds every agent's ``info["evidence"]`` into a memory and shows each agent
    what its memory retrieves for its next task.

    One memory serves the whole team (``shared=True``: every agent reads what
    every agent reported, false reports included) or each agent keeps its own
    (``shared=False``). After a step, each agent's evidence is written into its
    memory in agent order once the environment has returned every agent's
    evidence; then, when the task now presented starts a new true phase
    (``info["oracle"]["phase_changed"]`` of any agent), the
    ``on_phase_boundary`` hook of each distinct memory is called once. On reset
    the memories are reset and given the environment's held-out trial function
    (``None`` when it offers none) through ``bind_trial``. Hooks are reached
    through :func:`tepa_envs.agents.memories.protocol.hooks_of`.

    Each agent's observation, a flat ``Box``, gets the memory's view of the
    agent's next key appended, as :class:`~tepa_envs.wrappers.MemoryObservation`
    computes it: the one-hot over actions of the memory's first retrieved value
    that maps to an action (all 0 when nothing is shown), its validity, and
    its support and conflict scaled to [0, 1]. :meth:`observation_fields` names
    every entry.

    Args:
        env: a PettingZoo ``ParallelEnv`` with ``Discrete`` action spaces and flat
            ``Box`` observation spaces whose infos carry ``key``, ``context`` and
            ``evidence``, and that offers the task contract
            (:class:`tepa_envs.core.contracts.TaskEnv`: ``to_action``, ``trial``, ...).
        memory: a method name (``"tepa"``), an import path
            (``"package.module:ClassName"``) or, with ``shared=True`` only, a
            memory object.
        shared: one memory for the team (default) or one per agent.
        count_cap: support/conflict counts at or above this scale to 1.0.
    """

    def __init__(self, env: ParallelEnv, memory: Memory | str = "tepa", shared: bool = True,
                 count_cap: int = 1000) -> None:
        super().__init__(env)
        if not isinstance(shared, bool):
            raise TypeError(f"shared must be a bool, got {type(shared).__name__}")
        check_positive_int("count_cap", count_cap)
        if not shared and not isinstance(memory, str):
            raise TypeError("private memories need a method name or import path (one memory is made per agent)")
        self._n_actions: dict[str, int] = {}
        for agent in env.possible_agents:
            action_space = env.action_space(agent)
            if not isinstance(action_space, gym.spaces.Discrete):
                raise TypeError(f"SharedMemory needs Discrete action spaces, got {action_space} for {agent}")
            observation_space = env.observation_space(agent)
            if not isinstance(observation_space, gym.spaces.Box) or len(observation_space.shape) != 1:
                raise TypeError(f"SharedMemory needs flat Box observation spaces, got {observation_space} "
                                f"for {agent}")
            self._n_actions[agent] = int(action_space.n)
        self._task = task_access(env)
        self.shared = shared
        self.count_cap = count_cap
        if shared:
            team_memory = make_memory(memory)
            self.memories: dict[str, Memory] = {agent: team_memory for agent in env.possible_agents}
        else:
            self.memories = {agent: make_memory(memory) for agent in env.possible_agents}
        self._unique_memories = list({id(m): m for m in self.memories.values()}.values())

    # ----------------------------------------------------------------- spaces
    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent: str) -> gym.spaces.Box:
        inner = self.env.observation_space(agent)
        width = self._n_actions[agent] + len(MEMORY_ENTRIES) - 1
        low = np.concatenate([inner.low.astype(np.float32), np.zeros(width, dtype=np.float32)])
        high = np.concatenate([inner.high.astype(np.float32), np.ones(width, dtype=np.float32)])
        return gym.spaces.Box(low, high, dtype=np.float32)

    def observation_fields(self, agent: str | None = None) -> tuple[str, ...]:
        """Names of the entries of ``agent``'s observation (default: the first agent), in order:
        the environment's own (its ``observation_fields()`` when it declares them,
        :class:`~tepa_envs.core.contracts.NamedObservation`, else ``obs[i]``), then the memory's view;
        the action values are named after the environment's values when its actions index them
        (:class:`~tepa_envs.core.contracts.ValueActions`)."""
        agent = self.env.possible_agents[0] if agent is None else agent
        if agent not in self._n_actions:
            raise ValueError(f"unknown agent {agent!r}; agents are {self.env.possible_agents}")
        if isinstance(self.env, NamedObservation):
            inner = tuple(self.env.observation_fields())
        else:
            inner = tuple(f"obs[{i}]" for i in range(self.env.observation_space(agent).shape[0]))
        n_actions = self._n_actions[agent]
        unwrapped = self.env.unwrapped
        values: Sequence[Any] = range(n_actions)
        if isinstance(unwrapped, ValueActions) and len(unwrapped.values) == n_actions:
            values = unwrapped.values
        return (inner + tuple(f"memory_value[{v}]" for v in values)
                + tuple(name for name in MEMORY_ENTRIES if name != "memory_value"))

    # -------------------------------------------------------------- pettingzoo
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        observations, infos = self.env.reset(seed=seed, options=options)
        for memory in self._unique_memories:
            memory.reset()
            hooks_of(memory).bind_trial(self._task.trial)
        return self._augment_all(observations, infos), infos

    def step(self, actions: dict[str, Any]):
        observations, rewards, terminations, truncations, infos = self.env.step(actions)
        stepped = [agent for agent in self.env.possible_agents if agent in infos]
        for agent in stepped:
            for evidence in infos[agent].get("evidence", ()):
                self.memories[agent].observe(evidence)
        if any((infos[agent].get("oracle") or {}).get("phase_changed") for agent in stepped):
            for memory in self._unique_memories:
                hooks_of(memory).on_phase_boundary()
        return self._augment_all(observations, infos), rewards, terminations, truncations, infos

    # ---------------------------------------------------------------- helpers
    def top_record(self, agent: str, info: dict[str, Any]) -> Record | None:
        """The first record ``agent``'s memory shows for the task in ``info`` that maps to an action."""
        return top_record(self.memories[agent], info.get("key", ""), info.get("context", ""),
                          functools.partial(self._action_of, agent))

    def _action_of(self, agent: str, value: str) -> int | None:
        return action_of(self._task.to_action, value, self._n_actions[agent])

    def _augment_all(self, observations: dict[str, Any], infos: dict[str, Any]) -> dict[str, np.ndarray]:
        return {agent: self._augment(agent, observation, infos.get(agent, {}))
                for agent, observation in observations.items()}

    def _augment(self, agent: str, observation: Any, info: dict[str, Any]) -> np.ndarray:
        view = memory_view(self.top_record(agent, info), functools.partial(self._action_of, agent),
                           self._n_actions[agent], self.count_cap)
        return np.concatenate([np.asarray(observation, dtype=np.float32).ravel(),
                               *(view[name] for name in MEMORY_ENTRIES)])
