"""MemoryAgent and the one episode loop every environment and the evaluation use.

:func:`run_episode` is the loop; :class:`EpisodeObserver` subscribers watch it
(its reset, every retrieval the agent's reading makes, every step, its end)
without changing a decision: the drift metrics and the FactConsolidation
provenance are recorded this way, with no wrapper and no patched memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import gymnasium as gym
import numpy as np

from tepa_envs.core import check_choice
from tepa_envs.core.step_info import evidence_of, is_scored
from tepa_envs.error import ResetNeeded

from tepa_envs.agents.memories.protocol import NO_HOOKS, Memory, MemoryHooks, hooks_of
from tepa_envs.agents.memories.registry import make_memory
from tepa_envs.agents.readers.evidence_reader import EvidenceReader
from tepa_envs.agents.readers.protocol import reader_hooks
from tepa_envs.agents.readers.questions import QuestionReading
from tepa_envs.agents.readers.reading import READINGS, ReadingState
from tepa_envs.agents.readers.task_access import TaskAccess, task_access


class EpisodeObserver:
    """Watches one :func:`run_episode` (in the style of Stable-Baselines3's ``BaseCallback``:
    every hook is a no-op until overridden). An observer must not change a decision:
    it only reads what it is shown."""

    def on_reset(self, env: gym.Env, agent: MemoryAgent, info: Mapping[str, Any]) -> None:
        """The environment and the agent were reset; ``info`` presents the first task."""

    def on_retrieve(self, key: str, context: str, records: list[Any]) -> None:
        """The agent's reading retrieved ``key`` (with ``context``): exactly the records the memory returned."""

    def on_step(self, info_before: Mapping[str, Any], action: Any, info_after: Mapping[str, Any]) -> None:
        """One environment step: the task's ``info``, the action sent and the step's ``info``
        (called before the agent learns from the step)."""

    def on_episode_end(self, result: EpisodeResult) -> None:
        """The episode ended with ``result``."""


class MemoryAgent:
    """Reads ``info["key"]``/``info["context"]``, asks the memory, lets the reader
    decide, and feeds ``info["evidence"]`` back into the memory.

    Args:
        memory: a memory object or a name/import path understood by :func:`make_memory`.
        reader: the reader (default: :class:`EvidenceReader` with its documented defaults).
            A reader that subclasses :class:`~tepa_envs.agents.readers.protocol.ReaderHooks`
            gets ``bind_memory(memory)`` (called here) and ``begin_task(info)`` (called
            before each decision), as the language-model readers do to see which memory
            they read and the task's text.
        reading: ``"direct"``, ``"chain"`` (multi-hop questions) or ``"question"``
            (also maps questions the environment did not key), see
            :mod:`tepa_envs.agents.readers.reading`.
    """

    def __init__(self, memory: Memory | str, reader: EvidenceReader | None = None, *,
                 reading: str = "direct") -> None:
        check_choice("reading", reading, READINGS)
        self.memory = make_memory(memory)
        self.reader = reader if reader is not None else EvidenceReader()
        self._hooks = reader_hooks(self.reader)
        self._hooks.bind_memory(self.memory)
        self.reading = reading
        self._read = READINGS[reading]
        self._reading_state = ReadingState()
        self._task: TaskAccess | None = None
        self.observers: tuple[EpisodeObserver, ...] = ()
        """Told of every retrieval (:meth:`retrieve`); :func:`run_episode` sets them for its episode."""

    def reset(self, env: Any, seed: int | None = None) -> None:
        """Prepare for a new episode of ``env`` (reset the memory and the reader,
        bind the environment's trial function to the memory)."""
        self._task = task_access(env)
        self.reader.reset(seed)
        self.memory.reset()
        hooks_of(self.memory).bind_trial(self._task.trial)

    def act(self, info: Mapping[str, Any]) -> Any:
        """Choose the action for the task described by ``info``."""
        if self._task is None:
            raise ResetNeeded("call MemoryAgent.reset(env, seed) before act()")
        self._hooks.begin_task(info)
        tell_oracle(self.memory, info)
        self._reading_state.last = None
        return self._task.to_action(self._read(self.retrieve, self.reader, self._task, info, self._reading_state))

    def retrieve(self, key: str, context: str = "") -> list[Any]:
        """The memory's records for ``key``, as its reading asks for them; every observer
        is told of the retrieval with exactly these records."""
        records = self.memory.retrieve(key, context)
        for observer in self.observers:
            observer.on_retrieve(key, context, records)
        return records

    @property
    def last_reading(self) -> QuestionReading | None:
        """How the task the agent last decided was answered (anchor, hops: the keys looked up
        and the values the memory returned), for the ``chain`` and ``question`` readings;
        ``None`` for a ``direct`` reading and after a step the agent did not decide."""
        return self._reading_state.last

    def pass_action(self) -> Any:
        """The action of a step that asks for no decision (the empty value)."""
        if self._task is None:
            raise ResetNeeded("call MemoryAgent.reset(env, seed) before pass_action()")
        self._reading_state.last = None
        return self._task.to_action("")

    def learn(self, info: Mapping[str, Any]) -> None:
        """Write the step's evidence; tell the memory about a true phase boundary."""
        write_step(self.memory, info, self._task.env if self._task is not None else None)

    def trials_spent(self) -> dict[str, int]:
        """Trials the environment ran for this agent's memory since the episode began."""
        if self._task is None:
            return {}
        return self._task.trials_spent()


def write_step(memory: Memory, info: Mapping[str, Any], env: Any = None) -> None:
    """Feed a step's evidence into ``memory`` (``info["evidence"]``, or, for an
    ``info_schema="fixed"`` info, ``env``'s ``last_evidence``), then call its
    ``on_phase_boundary`` hook when the task now presented starts a new phase, its
    ``on_notify`` hook with the presented key when the environment's change
    notification is raised (``info["notified"]``, present only with ``notify`` other
    than ``"none"``), and its ``on_oracle`` hook with the presented key and its true
    value (:func:`tell_oracle`)."""
    evidence = info.get("evidence", ())
    for item in evidence if isinstance(evidence, (list, tuple)) else evidence_of(info, env):
        memory.observe(item)
    oracle = info.get("oracle")
    if oracle and oracle.get("phase_changed"):
        hooks_of(memory).on_phase_boundary()
    if info.get("notified"):
        key = info.get("key")
        if key and type(key) is str:
            hooks_of(memory).on_notify(key)
    tell_oracle(memory, info)


def tell_oracle(memory: Memory, info: Mapping[str, Any]) -> None:
    """Call ``memory``'s ``on_oracle(key, correct)`` hook for the task ``info`` presents
    (nothing when no task is presented or the memory has no hooks). Only the diagnostic
    oracle methods act on it; telling the same task twice changes nothing."""
    hooks = hooks_of(memory)
    if hooks is NO_HOOKS or type(hooks).on_oracle is MemoryHooks.on_oracle:
        return  # the no-op hook: nothing to tell
    oracle = info.get("oracle")
    key = info.get("key")
    if not oracle or not key or type(key) is not str:
        return
    correct = oracle.get("correct")
    if type(correct) is str and int(oracle.get("phase", 0)) >= 0:
        hooks.on_oracle(key, correct)


@dataclass
class EpisodeResult:
    """Per-task outcome of one episode: every step that reported ``success``."""

    success: np.ndarray
    phase: np.ndarray
    keys: list[str]
    trials: dict[str, int] = field(default_factory=dict)


def run_episode(env: gym.Env, agent: MemoryAgent, seed: int, *,
                decide_phases: tuple[int, ...] | None = None,
                observers: Iterable[EpisodeObserver] = ()) -> EpisodeResult:
    """Run one episode of ``agent`` on ``env`` from ``seed``.

    The agent decides on every step whose oracle phase is in ``decide_phases``
    (``None``: every step) and sends :meth:`MemoryAgent.pass_action` otherwise;
    it learns from every step. Scored are the steps whose ``info`` reports
    ``success``, each with the phase and key of its task. ``observers``
    (:class:`EpisodeObserver`) watch the episode: its reset, every retrieval, every
    step and its end.
    """
    observers = tuple(observers)
    _, info = env.reset(seed=seed)
    agent.reset(env, seed)
    tell_oracle(agent.memory, info)
    outside, agent.observers = agent.observers, observers
    try:
        for observer in observers:
            observer.on_reset(env, agent, info)
        successes: list[bool] = []
        phases: list[int] = []
        keys: list[str] = []
        terminated = truncated = False
        while not (terminated or truncated):
            phase = int(info.get("oracle", {}).get("phase", 0))
            key = info["key"]
            decide = decide_phases is None or phase in decide_phases
            action = agent.act(info) if decide else agent.pass_action()
            _, _, terminated, truncated, after = env.step(action)
            for observer in observers:
                observer.on_step(info, action, after)
            if is_scored(after):
                successes.append(bool(after["success"]))
                phases.append(phase)
                keys.append(key)
            agent.learn(after)
            info = after
        result = EpisodeResult(np.array(successes, dtype=bool), np.array(phases, dtype=np.int64), keys,
                               agent.trials_spent())
        for observer in observers:
            observer.on_episode_end(result)
    finally:
        agent.observers = outside
    return result
