"""MemoryAgent and the one episode loop every environment and the harness use."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import gymnasium as gym
import numpy as np

from tepa_envs.core import check_choice
from tepa_envs.error import ResetNeeded

from tepa_envs.agents.memories.protocol import Memory, hooks_of
from tepa_envs.agents.memories.registry import make_memory
from tepa_envs.agents.readers.evidence_reader import EvidenceReader
from tepa_envs.agents.readers.reading import READINGS
from tepa_envs.agents.readers.task_access import TaskAccess, task_access


class MemoryAgent:
    """Reads ``info["key"]``/``info["context"]``, asks the memory, lets the reader
    decide, and feeds ``info["evidence"]`` back into the memory.

    Args:
        memory: a memory object or a name/import path understood by :func:`make_memory`.
        reader: the reader (default: :class:`EvidenceReader` with its documented defaults).
            A reader may also offer ``bind_memory(memory)`` (called here) and
            ``begin_task(info)`` (called before each decision), as the language-model
            readers do to see which memory they read and the task's text.
        reading: ``"direct"``, ``"chain"`` (multi-hop questions) or ``"question"``
            (also maps questions the environment did not key), see
            :mod:`tepa_envs.agents.readers.reading`.
    """

    def __init__(self, memory: Memory | str, reader: EvidenceReader | None = None, *,
                 reading: str = "direct") -> None:
        check_choice("reading", reading, READINGS)
        self.memory = make_memory(memory)
        self.reader = reader if reader is not None else EvidenceReader()
        bind_memory = getattr(self.reader, "bind_memory", None)  # optional: language-model readers
        if bind_memory is not None:
            bind_memory(self.memory)
        self.reading = reading
        self._read = READINGS[reading]
        self._task: TaskAccess | None = None

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
        begin_task = getattr(self.reader, "begin_task", None)  # optional: readers that read the task's text
        if begin_task is not None:
            begin_task(info)
        return self._task.to_action(self._read(self.memory, self.reader, self._task, info))

    def pass_action(self) -> Any:
        """The action of a step that asks for no decision (the empty value)."""
        if self._task is None:
            raise ResetNeeded("call MemoryAgent.reset(env, seed) before pass_action()")
        return self._task.to_action("")

    def learn(self, info: Mapping[str, Any]) -> None:
        """Write the step's evidence; tell the memory about a true phase boundary."""
        write_step(self.memory, info)

    def trials_spent(self) -> dict[str, int]:
        """Trials the environment ran for this agent's memory since the episode began."""
        if self._task is None:
            return {}
        return self._task.trials_spent()


def write_step(memory: Memory, info: Mapping[str, Any]) -> None:
    """Feed a step's ``info["evidence"]`` into ``memory``, then call its
    ``on_phase_boundary`` hook when the task now presented starts a new phase."""
    for evidence in info.get("evidence", ()):
        memory.observe(evidence)
    oracle = info.get("oracle")
    if oracle and oracle.get("phase_changed"):
        hooks_of(memory).on_phase_boundary()


@dataclass
class EpisodeResult:
    """Per-task outcome of one episode: every step that reported ``success``."""

    success: np.ndarray
    phase: np.ndarray
    keys: list[str]
    trials: dict[str, int] = field(default_factory=dict)


def run_episode(env: gym.Env, agent: MemoryAgent, seed: int, *,
                decide_phases: tuple[int, ...] | None = None) -> EpisodeResult:
    """Run one episode of ``agent`` on ``env`` from ``seed``.

    The agent decides on every step whose oracle phase is in ``decide_phases``
    (``None``: every step) and sends :meth:`MemoryAgent.pass_action` otherwise;
    it learns from every step. Scored are the steps whose ``info`` reports
    ``success``, each with the phase and key of its task.
    """
    _, info = env.reset(seed=seed)
    agent.reset(env, seed)
    successes: list[bool] = []
    phases: list[int] = []
    keys: list[str] = []
    terminated = truncated = False
    while not (terminated or truncated):
        phase = int(info.get("oracle", {}).get("phase", 0))
        key = info["key"]
        decide = decide_phases is None or phase in decide_phases
        action = agent.act(info) if decide else agent.pass_action()
        _, _, terminated, truncated, info = env.step(action)
        if "success" in info:
            successes.append(bool(info["success"]))
            phases.append(phase)
            keys.append(key)
        agent.learn(info)
    return EpisodeResult(np.array(successes, dtype=bool), np.array(phases, dtype=np.int64), keys,
                         agent.trials_spent())
