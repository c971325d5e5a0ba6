"""Recording the drift metrics' trace: an observer of the one episode loop.

:class:`DriftTracer` subscribes to :func:`~tepa_envs.agents.readers.agent.run_episode`
(:class:`~tepa_envs.agents.readers.agent.EpisodeObserver`): per scored task it notes
the key, the oracle's correct value, the value the memory showed (the first
retrieval for the task's key while the agent decides it, exactly the records the
memory returned) and the value chosen; at the episode's end, the memory's audit
log of revocations when it keeps one. It never changes a decision, wraps no
environment and patches no memory. The metrics themselves are computed in
:mod:`~tepa_envs.agents.evaluation.analysis.drift_metrics`.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import gymnasium as gym
import numpy as np

from tepa_envs.agents.evaluation.analysis.drift_metrics import REVOKED, EpisodeTrace
from tepa_envs.agents.evaluation.analysis.settings import settings_for
from tepa_envs.agents.evaluation.analysis.view_quality import View
from tepa_envs.agents.memories.protocol import AuditedMemory
from tepa_envs.agents.readers.agent import EpisodeObserver, EpisodeResult, MemoryAgent, run_episode
from tepa_envs.agents.readers.task_access import TaskAccess, task_access
from tepa_envs.core.step_info import evidence_of, is_scored


class DriftTracer(EpisodeObserver):
    """Records one episode's :class:`~tepa_envs.agents.evaluation.analysis.drift_metrics.EpisodeTrace`
    (:attr:`trace`). Kept cheap (it watches every step of every episode ``tepa-bench run``
    evaluates): a scored step notes one tuple, appended to the trace at the episode's
    end; a key's choices and their actions are looked up once per episode."""

    def __init__(self) -> None:
        self.trace = EpisodeTrace()
        self.agent: MemoryAgent | None = None
        self.task: TaskAccess | None = None
        self.key = ""
        """The presented task's key (``info["key"]``)."""
        self.pending_shown = ""
        self.pending_view: tuple[str, ...] = ()
        self.retrieved = False
        self.env: gym.Env | None = None
        self._choices_now: tuple[str, ...] = ()
        """The presented task's choices, asked when it is presented (a question's candidates
        differ from the next question's under the same key, FactConsolidation ``action_mode="choice"``)."""
        self._values: dict[tuple[str, tuple[str, ...]], dict[Any, str]] = {}
        self._values_now: dict[Any, str] = {}
        self._scored: list[tuple[str, Any, str, str]] = []
        self._failures: dict[str, dict[str, int]] = {}
        """Per key, per value: failed uses since the value last worked."""
        self._stale: dict[str, set[str]] = {}
        """Per key, the values that were its correct value earlier and are not now."""
        self._last_correct: dict[str, str] = {}

    def on_reset(self, env: gym.Env, agent: MemoryAgent, info: Mapping[str, Any]) -> None:
        self.agent, self.task, self.env = agent, task_access(env), env
        if env.spec is not None:
            self.trace.phase_names = tuple(settings_for(env.spec.id).phase_names)
        self.key, self.pending_shown, self.pending_view, self.retrieved = info.get("key", ""), "", (), False
        self._values, self._failures = {}, {}  # a key's choices may differ between episodes
        self._present(info)
        self._stale, self._last_correct = {}, {}

    def on_retrieve(self, key: str, context: str, records: list[Any]) -> None:
        """The first retrieval for the presented task's key: what it shows."""
        if self.retrieved or key != self.key:
            return
        self.retrieved = True
        choices = self._choices_now
        self.pending_view = tuple(r.value for r in records if not choices or r.value in choices)
        if self.pending_view:
            self.pending_shown = self.pending_view[0]

    def on_step(self, info_before: Mapping[str, Any], action: Any, info_after: Mapping[str, Any]) -> None:
        key, values = self.key, self._values_now
        if is_scored(info_after):
            oracle = info_before.get("oracle", {})
            correct = oracle.get("correct", "")
            correct = correct if type(correct) is str else str(correct)
            self._scored.append((key, correct, self.pending_shown, _value_of(values, action)))
            self.trace.views.append(self._view(key, int(oracle.get("phase", 0)), correct))
        self._count_outcomes(info_after)
        self.key, self.pending_shown, self.pending_view, self.retrieved = info_after.get("key", ""), "", (), False
        self._present(info_after)

    def _present(self, info: Mapping[str, Any]) -> None:
        """The task ``info`` presents: its choices and the value of each action, asked now
        (after the step, the environment presents the next task); none once no task is
        presented (no ``oracle``, or its sentinel phase -1: the terminal step)."""
        assert self.task is not None
        presented = int(info.get("oracle", {}).get("phase", -1)) >= 0
        self._choices_now = choices = tuple(self.task.choices(self.key)) if presented else ()
        values = self._values.get((self.key, choices))
        if values is None:  # action -> value, once per key and distinct set of choices
            values = self._values[(self.key, choices)] = self._actions_of(choices)
        self._values_now = values

    def _view(self, key: str, phase: int, correct: str) -> View:
        stale = self._stale.setdefault(key, set())
        last = self._last_correct.get(key)
        if last is not None and last != correct:
            stale.add(last)
        stale.discard(correct)
        self._last_correct[key] = correct
        failures = self._failures.get(key, {})
        shown = self.pending_view
        refuted = max((failures.get(value, 0) for value in stale), default=0)
        return View(key, phase, correct, shown, failures.get(shown[0], 0) if shown else 0, refuted)

    def _count_outcomes(self, info_after: Mapping[str, Any]) -> None:
        for evidence in evidence_of(info_after, self.env):
            if evidence.outcome is None:
                continue
            failures = self._failures.setdefault(evidence.key, {})
            failures[evidence.value] = 0 if evidence.outcome else failures.get(evidence.value, 0) + 1

    def on_episode_end(self, result: EpisodeResult) -> None:
        if self._scored:
            keys, correct, shown, chosen = zip(*self._scored)
            self.trace.keys.extend(keys)
            self.trace.correct.extend(c if type(c) is str else str(c) for c in correct)
            self.trace.shown.extend(shown)
            self.trace.chosen.extend(chosen)
            self._scored = []
        assert self.agent is not None
        memory = self.agent.memory
        if isinstance(memory, AuditedMemory):
            self.trace.revocations = [(int(e.t), e.key, e.value) for e in memory.audit_log
                                      if e.to_state == REVOKED]  # a str enum: equal to its value

    def _actions_of(self, choices: tuple[str, ...]) -> dict[Any, str]:
        assert self.task is not None
        to_action = self.task.to_action
        return {_hashable(to_action(value)): value for value in choices}


def _value_of(values: Mapping[Any, str], action: Any) -> str:
    """The value whose action is ``action`` (``values``: action -> value of the key's
    choices), else the action itself when it is a string (free text), else ``""``."""
    if type(action) is int or type(action) is str:  # the common actions, their own dict keys
        found = values.get(action)
    else:
        found = values.get(_hashable(action))
    if found is not None:
        return found
    return action if isinstance(action, str) else ""


def _hashable(action: Any) -> Any:
    """An action as a dict key (array actions by their bytes)."""
    if isinstance(action, np.ndarray):
        return (action.dtype.str, action.shape, action.tobytes())
    if isinstance(action, np.generic):
        return action.item()
    try:
        hash(action)
    except TypeError:
        return repr(action)
    return action


def trace_episode(env: gym.Env, agent: MemoryAgent, seed: int, *,
                  decide_phases: tuple[int, ...] | None = None,
                  observers: Sequence[EpisodeObserver] = ()) -> tuple[EpisodeResult, EpisodeTrace]:
    """:func:`~tepa_envs.agents.readers.agent.run_episode` of ``agent`` on ``env`` with the
    metrics' trace recorded by a :class:`DriftTracer` (the episode result is unchanged);
    ``observers`` watch the episode too."""
    tracer = DriftTracer()
    result = run_episode(env, agent, seed, decide_phases=decide_phases, observers=(tracer, *observers))
    return result, tracer.trace


__all__ = ["DriftTracer", "trace_episode"]
