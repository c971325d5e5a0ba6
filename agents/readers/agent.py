"""MemoryAgent: closes the loop between an environment, a memory and a reader."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from tepa_envs.agents.memories.protocol import Memory
from tepa_envs.agents.readers.evidence_reader import EvidenceReader
from tepa_envs.agents.memories.registry import make_memory


class MemoryAgent:
    """Reads ``info["key"]``/``info["context"]``, asks the memory, lets the reader
    decide, and feeds ``info["evidence"]`` back into the memory.

    Multi-hop questions (``info["chain"]``: a list of relations after the
    subject of ``info["key"]``) are answered by chain retrieval: each hop's
    answer becomes the subject of the next hop's key.

    Args:
        memory: a memory object or a name/import path understood by :func:`make_memory`.
        reader: the reader; defaults to :class:`EvidenceReader` with the
            environment's ``reader_params`` when :meth:`reset` is given an env.
    """

    def __init__(self, memory: Memory | str, reader: EvidenceReader | None = None) -> None:
        self.memory = make_memory(memory)
        self.reader = reader
        self._env: Any = None

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        """Prepare for a new episode of ``env`` (reset the memory and the reader)."""
        self._env = env.unwrapped
        if self.reader is None:
            self.reader = EvidenceReader.for_env(env)
        self.reader.reset(seed)
        self.memory.reset()
        attach_trial(self.memory, env)

    def act(self, info: dict[str, Any]) -> Any:
        """Choose the action for the task described by ``info``."""
        if self._env is None or self.reader is None:
            raise RuntimeError("call MemoryAgent.reset(env, seed) before act()")
        key, context = info["key"], info.get("context", "")
        chain = info.get("chain")
        if chain:
            value = self._follow_chain(key, list(chain), context)
        else:
            choices = self._env.choices(key)
            stated_value = getattr(self._env, "stated_value", None)
            stated = stated_value(key, context) if callable(stated_value) else None
            value = self.reader.choose(self.memory.retrieve(key, context), choices, stated)
        return self._env.to_action(value)

    def _follow_chain(self, key: str, relations: list[str], context: str) -> str:
        subject, _, relation = key.partition("|")
        answer = ""
        for hop, rel in enumerate([relation, *relations]):
            hop_key = f"{subject}|{rel}"
            answer = self.reader.choose(self.memory.retrieve(hop_key, context), ())
            if not answer:
                return ""
            subject = answer
        return answer

    def learn(self, info: dict[str, Any]) -> None:
        """Write the step's evidence; tell oracle methods about a true phase boundary."""
        write_step(self.memory, info)


def attach_trial(memory: Memory, env: gym.Env) -> None:
    """Give a memory that validates by execution (``trial`` attribute) the
    environment's trial callback, or ``None`` when it offers none."""
    if hasattr(memory, "trial"):
        memory.trial = getattr(env.unwrapped, "trial", None)


def write_step(memory: Memory, info: dict[str, Any]) -> None:
    """Feed a step's ``info["evidence"]`` into ``memory``; call ``on_phase_boundary``
    (oracle methods only) when the task now presented starts a new phase."""
    for evidence in info.get("evidence", ()):
        memory.observe(evidence)
    oracle = info.get("oracle")
    hook = getattr(memory, "on_phase_boundary", None)
    if oracle and oracle.get("phase_changed") and callable(hook):
        hook()


@dataclass
class EpisodeResult:
    """Per-task outcome of one episode."""

    success: np.ndarray
    phase: np.ndarray
    keys: list[str]
    trials: dict[str, int] = field(default_factory=dict)
    extras: dict[str, Any] = field(default_factory=dict)


def run_episode(env: gym.Env, agent: MemoryAgent, seed: int) -> EpisodeResult:
    """Run one episode of ``agent`` on ``env`` from ``seed``."""
    _, info = env.reset(seed=seed)
    agent.reset(env, seed)
    successes: list[bool] = []
    phases: list[int] = []
    keys: list[str] = []
    terminated = truncated = False
    while not (terminated or truncated):
        phases.append(int(info.get("oracle", {}).get("phase", 0)))
        keys.append(info["key"])
        action = agent.act(info)
        _, _, terminated, truncated, info = env.step(action)
        successes.append(bool(info.get("success", False)))
        agent.learn(info)
    trials = dict(getattr(env.unwrapped, "trials_spent", {}) or {})
    return EpisodeResult(np.array(successes, dtype=bool), np.array(phases, dtype=np.int64), keys, trials)
