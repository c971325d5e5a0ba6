"""shared_drift_v0: several agents act in one drifting tool world.

    from tepa_envs.multi_agent import shared_drift_v0

    env = shared_drift_v0.parallel_env(n_agents=3, unreliable_agent=2)
    observations, infos = env.reset(seed=0)

The environment holds no memory: each agent's ``info["evidence"]`` is what its
step revealed. The ``SharedMemory`` wrapper (package ``wrappers``) writes that
evidence into one team memory or one memory per agent and adds the memory's
view to the observations.
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

import gymnasium as gym
import numpy as np
from pettingzoo import ParallelEnv
from pettingzoo.utils import conversions, wrappers

from tepa_envs.core import PHASE_NAMES, Evidence, check_probability, check_trial_kind
from tepa_envs.core.checks import check_int, check_phase_lengths
from tepa_envs.core.contracts import ValueActions
from tepa_envs.core.schedule import PhaseSchedule, draw_phase_values
from tepa_envs.core.step_info import StepInfo, oracle_info, step_info
from tepa_envs.core.stream import check_render_mode, warn_render_unsupported
from tepa_envs.error import ResetNeeded
from tepa_envs.regime_drift.env import MAX_KEYS, MAX_TOOLS, key_names, task_context

MAX_WORLD_CELLS = 2 * 10**7
"""Largest ``sum(phase_lengths) * n_agents``: the per-agent task draws made at each
reset (two int64 arrays of that size, 320 MB at the bound)."""


class SharedDriftParallelEnv(ValueActions, ParallelEnv):
    """
    ## Description

    ``n_agents`` agents solve tool tasks in one world whose hidden tool regime
    drifts through the four phases of ``TEPA/RegimeDrift-v0`` (stable, light
    drift, full reversal, partial return). At every step each agent gets one
    task whose conflict key is drawn uniformly from its own key set. Key sets
    overlap in part: agent ``i`` sees keys ``i*(k-s) .. i*(k-s)+k-1`` (modulo
    the number of keys) with ``k = keys_per_agent`` and ``s = shared_keys``, so
    neighbouring agents share ``s`` keys and there are ``n_agents*(k-s)`` keys.

    The environment holds no memory. After a step each agent's
    ``info["evidence"]`` is its report of the step (tool used, outcome,
    ``source=agent name``). The ``SharedMemory`` wrapper (package
    ``wrappers``) writes these reports into one memory for the team or one
    per agent and adds the memory's view of each agent's next key to its
    observation.

    **Unreliable reporter.** With ``unreliable_agent`` set, at each step with
    probability ``poison_rate`` that agent reports falsely: its evidence names a
    tool that is wrong for its key (uniform among the wrong tools), reported as
    having worked (``outcome=True``), and its info has ``poisoned=True``. Its
    own reward still reflects what really happened. The false report carries the
    agent's usual source. Whatever memory reads the reports is poisoned by them.

    **Held-out trials.** ``offers_trials`` is ``True``: :meth:`trial` answers
    whether a tool works for a key now (for methods that validate by execution,
    such as TEPA-Full), never advances the world and is counted per kind in
    :attr:`trials_spent`, which every reset clears.

    ## Action Space (per agent)

    ``Discrete(n_tools)``: the tool used for the agent's task.

    ## Observation Space (per agent)

    ``Box(0, 1, (n_keys + n_tools + 2,), float32)``, a flat array
    (PettingZoo's convention) whose entries are named by
    :meth:`observation_fields`: the one-hot of the task's key (all 0 after the
    last step), the one-hot of the agent's previous tool (``n_tools + 1``
    entries, the last meaning "no step yet") and its previous success.
    The ``SharedMemory`` wrapper appends the memory's view.

    ## Rewards

    1.0 per agent whose tool solves its task, 0.0 otherwise.

    ## Episode End

    Every agent terminates after ``sum(phase_lengths)`` steps; no truncation.

    ## Info (per agent)

    Built by :func:`tepa_envs.core.step_info.step_info`: ``key``, ``context``,
    ``evidence`` (this agent's report of the step, false when ``poisoned``;
    empty after reset), ``t``, ``success`` and ``poisoned`` (after a step), and
    ``oracle`` (``phase``, ``phase_name``, ``phase_changed``, ``correct``; for
    evaluation and the oracle-reset bound only; absent after the last step).

    ## State

    :meth:`state` is the global state for centralised training (``state_space``:
    ``Box(0, 1, (n_agents * (n_keys + n_tools + 2) + 5,), float32)``, entries named
    by :meth:`state_fields`): every agent's observation in agent order (its key,
    previous tool and previous success), then ``t / sum(phase_lengths)`` and the
    one-hot of the hidden phase (all 0 after the last step). The phase is
    privileged information, for a critic, never for the agents' policies.

    ## Arguments

    * ``n_agents``: number of agents (default 3, at most ``MAX_KEYS`` = 216).
    * ``keys_per_agent``: keys in each agent's set (default 2, at most 216).
    * ``shared_keys``: keys each agent shares with the next one (default 1, less than ``keys_per_agent``).
      The world has ``n_agents * (keys_per_agent - shared_keys)`` keys, at most
      ``MAX_KEYS`` = 216, the keys RegimeDrift's ``task_type/domain/input_type``
      schema can name.
    * ``n_tools``: tools per task (default 3, at least 3, at most ``MAX_TOOLS`` = 64).
    * ``phase_lengths``: steps in each phase (default ``(40, 40, 40, 40)``): a tuple or
      list of four ints, each from 1 to ``MAX_PHASE_LENGTH`` (10**6), with
      ``sum(phase_lengths) * n_agents`` at most ``MAX_WORLD_CELLS`` (2 * 10**7).
    * ``light_drift_fraction``, ``partial_return_fraction``: as in RegimeDrift (default 0.5 each).
    * ``unreliable_agent``: index of the agent that reports false evidence, or ``None`` (default).
    * ``poison_rate``: probability per step that the unreliable agent's evidence is false (default 0.3).
    * ``render_mode``: ``None``, ``"ansi"`` (:meth:`render` returns the last step's lines) or
      ``"human"`` (:meth:`render` prints them and returns ``None``); any other mode is
      accepted, and :meth:`render` then warns and returns ``None``, as in Gymnasium.
    """

    metadata = {"name": "shared_drift_v0", "render_modes": ["ansi", "human"], "is_parallelizable": True}
    offers_trials = True

    def __init__(self, n_agents: int = 3, keys_per_agent: int = 2, shared_keys: int = 1, n_tools: int = 3,
                 phase_lengths: tuple[int, int, int, int] = (40, 40, 40, 40),
                 light_drift_fraction: float = 0.5, partial_return_fraction: float = 0.5,
                 unreliable_agent: int | None = None, poison_rate: float = 0.3,
                 render_mode: str | None = None) -> None:
        n_agents = self.n_agents = check_int("n_agents", n_agents, low=1, high=MAX_KEYS)
        keys_per_agent = self.keys_per_agent = check_int("keys_per_agent", keys_per_agent, low=1, high=MAX_KEYS)
        shared_keys = check_int("shared_keys", shared_keys, low=0, high=keys_per_agent - 1)
        if n_agents * (keys_per_agent - shared_keys) > MAX_KEYS:
            raise ValueError(f"n_agents * (keys_per_agent - shared_keys) must be <= {MAX_KEYS} (the keys the "
                             f"schema can name), got {n_agents} * ({keys_per_agent} - {shared_keys})")
        n_tools = self.n_tools = check_int("n_tools", n_tools, low=3, high=MAX_TOOLS)
        phase_lengths = check_phase_lengths(phase_lengths)  # a dict or a huge length: refused before any allocation
        if sum(phase_lengths) * n_agents > MAX_WORLD_CELLS:
            raise ValueError(f"sum(phase_lengths) * n_agents must be <= {MAX_WORLD_CELLS:,} (the tasks drawn at "
                             f"each reset), got {sum(phase_lengths)} * {n_agents}")
        self.schedule = PhaseSchedule(phase_lengths)
        self.light_drift_fraction = check_probability("light_drift_fraction", light_drift_fraction)
        self.partial_return_fraction = check_probability("partial_return_fraction", partial_return_fraction)
        if unreliable_agent is not None:
            unreliable_agent = check_int("unreliable_agent", unreliable_agent, low=0, high=n_agents - 1)
        self.poison_rate = check_probability("poison_rate", poison_rate)
        self.unreliable_agent = unreliable_agent
        self.render_mode = check_render_mode(render_mode)

        stride = keys_per_agent - shared_keys
        self.n_keys = n_agents * stride
        self.keys = key_names(self.n_keys)
        self._set_values(tuple(f"tool_{i}" for i in range(n_tools)))
        self._key_index = {k: i for i, k in enumerate(self.keys)}
        self.possible_agents = [f"agent_{i}" for i in range(n_agents)]
        self.agent_keys = np.array([[(i * stride + j) % self.n_keys for j in range(keys_per_agent)]
                                    for i in range(n_agents)], dtype=np.int64)
        self.agents: list[str] = []
        self._t = 0
        self._started = False
        self._np_random: np.random.Generator | None = None
        self._trials_spent: Counter[str] = Counter()
        self._last_lines: list[str] = []

    # ----------------------------------------------------------------- spaces
    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent: str) -> gym.spaces.Box:
        self._check_agent(agent)
        return gym.spaces.Box(0.0, 1.0, shape=(len(self.observation_fields()),), dtype=np.float32)

    def observation_fields(self) -> tuple[str, ...]:
        """Names of the entries of an observation, in order."""
        return (tuple(f"key[{k}]" for k in self.keys)
                + tuple(f"previous_tool[{v}]" for v in self.values) + ("previous_tool[none]", "previous_success"))

    @functools.lru_cache(maxsize=None)
    def action_space(self, agent: str) -> gym.spaces.Discrete:
        self._check_agent(agent)
        return gym.spaces.Discrete(self.n_tools)

    def _check_agent(self, agent: str) -> None:
        if agent not in self.possible_agents:
            raise ValueError(f"unknown agent {agent!r}; agents are {self.possible_agents}")

    # ------------------------------------------------------------------ world
    def _build(self, rng: np.random.Generator) -> None:
        total = self.schedule.total
        self.regime = draw_phase_values(rng, self.n_keys, self.n_tools, self.light_drift_fraction,
                                        self.partial_return_fraction)
        slot = rng.integers(0, self.keys_per_agent, size=(total, self.n_agents))
        self.task_keys = self.agent_keys[np.arange(self.n_agents), slot]
        self.poisoned = rng.random(total) < self.poison_rate
        # Offset 1..n_tools-1 from the correct tool: always a wrong tool.
        self.poison_offset = rng.integers(1, self.n_tools, size=total)

    def _correct(self, t: int, key_index: int) -> int:
        return int(self.regime[self.schedule.phase_of(t), key_index])

    def _context(self, t: int, key: str) -> str:
        return task_context(t, key, self.values)

    # -------------------------------------------------------- language agents
    def trial(self, kind: str, key: str, value: str) -> bool:
        """Held-out trial (TEPA-Full): does ``value`` work for ``key`` now?

        Trials never advance the world or change its outcomes; they are counted
        per kind in :attr:`trials_spent`. An unknown key fails.
        """
        check_trial_kind(kind)
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError("trial key and value must be strings")
        if not self._started:
            raise ResetNeeded("call reset() before trial()")
        self._trials_spent[kind] += 1
        if key not in self._key_index:
            return False
        return self.values[self._correct(self._t, self._key_index[key])] == value

    @property
    def trials_spent(self) -> Counter[str]:
        """Trials run since the last reset, per kind."""
        return self._trials_spent

    # -------------------------------------------------------------- pettingzoo
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start an episode. ``options`` is accepted and ignored (unlike the Gymnasium
        environments, which refuse unknown options): PettingZoo's API tests call
        ``reset(seed=0, options={"options": 1})`` and expect it to work."""
        if seed is not None or self._np_random is None:
            self._np_random = np.random.default_rng(seed)
        self._build(self._np_random)
        self._t = 0
        self._started = True
        self._previous = {agent: (self.n_tools, 0) for agent in self.possible_agents}
        self._trials_spent.clear()
        self.agents = list(self.possible_agents)
        self._last_lines = []
        infos = {agent: self._info(agent, evidence=[]) for agent in self.agents}
        return {agent: self._observe(agent) for agent in self.agents}, infos

    def step(self, actions: dict[str, Any]):
        if not self._started:
            raise ResetNeeded("call reset() before step()")
        if not self.agents:
            raise ResetNeeded("the episode has ended; call reset() to start a new one")
        if set(actions) != set(self.agents):
            raise ValueError(f"actions must name every live agent {self.agents}, got {sorted(actions)}")
        for agent, action in actions.items():
            check_int(f"action of {agent}", action, low=0, high=self.n_tools - 1)
        t = self._t
        rewards: dict[str, float] = {}
        reported: dict[str, list[Evidence]] = {}
        poisoned: dict[str, bool] = {}
        self._last_lines = []
        for i, agent in enumerate(self.agents):
            key_index = int(self.task_keys[t, i])
            correct = self._correct(t, key_index)
            tool = int(actions[agent])
            success = tool == correct
            rewards[agent] = float(success)
            self._previous[agent] = (tool, int(success))
            poisoned[agent] = i == self.unreliable_agent and bool(self.poisoned[t])
            if poisoned[agent]:
                false_tool = (correct + int(self.poison_offset[t])) % self.n_tools
                evidence = Evidence(self.keys[key_index], self.values[false_tool], t, True, agent)
            else:
                evidence = Evidence(self.keys[key_index], self.values[tool], t, success, agent)
            reported[agent] = [evidence]
            self._last_lines.append(f"t={t} {agent} {self.keys[key_index]}: {self.values[tool]} -> "
                                    f"{'ok' if success else 'fail'}{' (false report)' if poisoned[agent] else ''}")
        self._t = t + 1
        done = self._t >= self.schedule.total
        observations = {agent: self._observe(agent) for agent in self.agents}
        infos = {agent: self._info(agent, evidence=reported[agent], success=bool(rewards[agent]),
                                   poisoned=poisoned[agent]) for agent in self.agents}
        terminations = {agent: done for agent in self.agents}
        truncations = {agent: False for agent in self.agents}
        if done:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def render(self) -> str | None:
        """The last step, one line per agent: returned with ``render_mode="ansi"``, printed
        with ``"human"`` (which returns ``None``); any other mode warns and returns ``None``."""
        text = "\n".join(self._last_lines) + "\n"
        if self.render_mode == "ansi":
            return text
        if self.render_mode == "human":
            print(text, end="")
            return None
        warn_render_unsupported(self)
        return None

    # ------------------------------------------------------------------ state
    @functools.cached_property
    def state_space(self) -> gym.spaces.Box:
        """The space of :meth:`state`."""
        return gym.spaces.Box(0.0, 1.0, shape=(len(self.state_fields()),), dtype=np.float32)

    def state_fields(self) -> tuple[str, ...]:
        """Names of the entries of :meth:`state`, in order."""
        per_agent = tuple(f"{agent}.{field}" for agent in self.possible_agents for field in self.observation_fields())
        return per_agent + ("progress",) + tuple(f"phase[{name}]" for name in PHASE_NAMES)

    def state(self) -> np.ndarray:
        """The global state (see the class docstring): every agent's observation, the
        progress ``t / sum(phase_lengths)`` and the hidden phase's one-hot."""
        if not self._started:
            raise ResetNeeded("call reset() before state()")
        phase = np.zeros(len(PHASE_NAMES), dtype=np.float32)
        if self._t < self.schedule.total:
            phase[self.schedule.phase_of(self._t)] = 1.0
        progress = np.array([self._t / self.schedule.total], dtype=np.float32)
        return np.concatenate([self._observe(agent) for agent in self.possible_agents] + [progress, phase])

    def close(self) -> None:
        pass

    # ---------------------------------------------------------------- helpers
    def current_key(self, agent: str) -> str:
        """The key of ``agent``'s task now presented ('' after the last step)."""
        if self._t >= self.schedule.total:
            return ""
        return self.keys[int(self.task_keys[self._t, self.possible_agents.index(agent)])]

    def _observe(self, agent: str) -> np.ndarray:
        key = self.current_key(agent)
        key_one_hot = np.zeros(self.n_keys, dtype=np.float32)
        if key:
            key_one_hot[self._key_index[key]] = 1.0
        previous_tool, previous_success = self._previous[agent]
        tool_one_hot = np.zeros(self.n_tools + 1, dtype=np.float32)
        tool_one_hot[previous_tool] = 1.0
        return np.concatenate([key_one_hot, tool_one_hot, np.array([previous_success], dtype=np.float32)])

    def _info(self, agent: str, *, evidence: list[Evidence], success: bool | None = None,
              poisoned: bool = False) -> StepInfo:
        key = self.current_key(agent)
        oracle = None
        if key:
            phase = self.schedule.phase_of(self._t)
            oracle = oracle_info(phase, PHASE_NAMES[phase], self.schedule.starts_phase(self._t),
                                 self.values[self._correct(self._t, self._key_index[key])])
        extra = {} if success is None else {"poisoned": poisoned}
        return step_info(key=key, context=self._context(self._t, key) if key else "", evidence=evidence,
                         t=self._t, success=success, oracle=oracle, **extra)


def parallel_env(**kwargs: Any) -> SharedDriftParallelEnv:
    """The parallel environment (see :class:`SharedDriftParallelEnv` for the arguments)."""
    return SharedDriftParallelEnv(**kwargs)


def raw_env(**kwargs: Any):
    """The AEC environment through PettingZoo's ``parallel_to_aec``, without wrappers."""
    return conversions.parallel_to_aec(parallel_env(**kwargs))


def env(**kwargs: Any):
    """The AEC environment with PettingZoo's standard wrappers."""
    aec = raw_env(**kwargs)
    aec = wrappers.AssertOutOfBoundsWrapper(aec)
    return wrappers.OrderEnforcingWrapper(aec)
