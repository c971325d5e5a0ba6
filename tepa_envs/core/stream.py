"""Base class of the four-phase task-stream environments (one step = one task).

Subclasses build their hidden world from the seed in :meth:`_build`, describe
each task in :meth:`_present`, run the chosen value in :meth:`_execute`, and
answer held-out trials in :meth:`_trial`. This class keeps the evidence
contract of the project: ``info`` is built fresh on every call with ``key``,
``context``, ``evidence``, ``success`` and ``oracle``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Sequence

import gymnasium as gym
import numpy as np

from tepa_envs.core.checks import check_trial_kind
from tepa_envs.core.contracts import ValueActions
from tepa_envs.core.schedule import PhaseSchedule
from tepa_envs.core.step_info import StepInfo, oracle_info, step_info
from tepa_envs.core.types import PHASE_NAMES, Evidence
from tepa_envs.error import ResetNeeded


@dataclass(frozen=True, slots=True)
class Task:
    """A task as presented: its key, its text, and the hidden correct value."""

    key: str
    context: str
    correct: str


@dataclass(frozen=True, slots=True)
class Outcome:
    """What executing a value revealed."""

    success: bool
    evidence: tuple[Evidence, ...]
    message: str


class TaskStreamEnv(ValueActions, gym.Env[Any, np.int64]):
    """A stream of tasks over four phases whose hidden rules drift.

    The action picks one of :attr:`values` by index. Language agents use
    :meth:`choices` and :meth:`to_action` to turn a chosen value into an action.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}
    offers_trials = True

    def __init__(self, phase_lengths: Sequence[int], values: Sequence[str],
                 render_mode: str | None = None) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}"
            )
        self.render_mode = render_mode
        self.schedule = PhaseSchedule(tuple(phase_lengths))  # type: ignore[arg-type]
        self._set_values(values)
        self.action_space = gym.spaces.Discrete(len(self.values))
        self._trials_spent: Counter[str] = Counter()
        self._t = 0
        self._task: Task | None = None
        self._last_step: tuple[int, str, str, bool, str] | None = None

    # ------------------------------------------------------------ subclass API
    def _build(self, rng: np.random.Generator) -> None:
        raise NotImplementedError

    def _present(self, t: int) -> Task:
        raise NotImplementedError

    def _execute(self, t: int, task: Task, value: str) -> Outcome:
        raise NotImplementedError

    def _trial(self, key: str, value: str) -> bool:
        raise NotImplementedError

    def _observation(self, t: int, task: Task | None) -> Any:
        raise NotImplementedError

    # --------------------------------------------------------------- gymnasium
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self._build(self.np_random)
        self._trials_spent.clear()
        self._t = 0
        self._task = self._present(0)
        self._last_step = None
        return self._observation(0, self._task), self._info(evidence=(), success=None)

    def step(self, action: Any):
        if self._task is None:
            raise ResetNeeded("call reset() before step()")
        if self._t >= self.schedule.total:
            raise ResetNeeded("the episode has ended; call reset() to start a new one")
        if not self._valid_action(action):
            raise ValueError(f"action must be an int in [0, {self.action_space.n}), got {action!r}")
        value = self.values[int(action)]
        outcome = self._execute(self._t, self._task, value)
        self._last_step = (self._t, self._task.key, value, outcome.success, outcome.message)
        self._t += 1
        terminated = self._t >= self.schedule.total
        self._task = None if terminated else self._present(self._t)
        observation = self._observation(self._t, self._task)
        info = self._info(evidence=outcome.evidence, success=outcome.success,
                          message=outcome.message)
        if terminated:
            self._task = Task("", "", "")
        return observation, float(outcome.success), terminated, False, info

    def _valid_action(self, action: Any) -> bool:
        if type(action) is int or (isinstance(action, np.integer)):
            return 0 <= action < len(self.values)
        return isinstance(action, np.ndarray) and self.action_space.contains(action)

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        if self._last_step is None:
            return "\n"
        t, key, value, success, message = self._last_step
        return (f"t={t} [{self.schedule.name_of(t)}] {key}: {value} -> "
                f"{'ok' if success else 'fail'} ({message})\n")

    # -------------------------------------------------------- language agents
    def trial(self, kind: str, key: str, value: str) -> bool:
        """Run a held-out trial task: does ``value`` work for ``key`` now?

        Trials never advance the stream or change its outcomes; they are counted
        per kind in :attr:`trials_spent`.
        """
        check_trial_kind(kind)
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError("trial key and value must be strings")
        if self._task is None:
            raise ResetNeeded("call reset() before trial()")
        self._trials_spent[kind] += 1
        return bool(self._trial(key, value))

    @property
    def trials_spent(self) -> Counter[str]:
        """Trials run since the last reset, per kind."""
        return self._trials_spent

    # ------------------------------------------------------------------ helpers
    @property
    def t(self) -> int:
        """Index of the task currently presented."""
        return self._t

    def _info(self, *, evidence: Sequence[Evidence], success: bool | None,
              message: str = "") -> StepInfo:
        task = self._task
        oracle = None
        if task is not None and task.key:
            phase = self.schedule.phase_of(self._t)
            oracle = oracle_info(phase, PHASE_NAMES[phase], self.schedule.starts_phase(self._t), task.correct)
        extra = {} if success is None else {"message": message}
        return step_info(key=task.key if task else "", context=task.context if task else "", evidence=evidence,
                         t=self._t, success=success, oracle=oracle, **extra)
