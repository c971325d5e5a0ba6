"""Base class of the task-stream environments (one step = one task), whose phases
are the paper's four or the segments of a :class:`~tepa_envs.core.drift.DriftSchedule`.

Subclasses build their hidden world from the seed in :meth:`_build`, describe
each task in :meth:`_present`, run the chosen value in :meth:`_execute`, and
answer held-out trials in :meth:`_trial`. This class keeps the evidence
contract of the project: ``info`` is built fresh on every call with ``key``,
``context``, ``evidence``, ``success`` and ``oracle``.

It also prices trials (``trial_cost``, one of :data:`TRIAL_COSTS`): ``"free"``
(the default) runs them at no cost; ``"task"`` pays each trial with one task of
the stream, for an equal-budget comparison with methods that never trial. A
trial made while task ``t`` is presented forfeits task ``t`` (the next task the
stream executes), a second one task ``t + 1``, and so on; trials beyond the
remaining stream forfeit the remaining tasks. A forfeited step does not execute
its action: the task fails (reward 0, ``info["success"]`` False), reveals no
evidence (the observation's previous-step fields keep describing the last
executed task), and the stream moves on. In ``"task"`` mode every step's
``info`` has ``forfeited`` (``True`` on a forfeited task); in ``"free"`` mode the
key is absent, so ``info`` is exactly as before (with ``info_schema="fixed"``
``forfeited`` is always present, ``False`` in ``"free"`` mode). Stream length,
seeds and the hidden world do not depend on the mode.

``info_schema`` (:data:`~tepa_envs.core.step_info.INFO_SCHEMAS`) picks the view of
``info``: ``"fixed"`` (default) or ``"rich"``; ``"fixed"`` is one schema at reset and every step
(:mod:`tepa_envs.core.step_info`); :attr:`TaskStreamEnv.last_evidence` is the
step's evidence list in both.

``notify`` (:data:`~tepa_envs.core.notify.NOTIFY_LEVELS`, with ``detect_delay`` and
``false_alarm_rate``) tells the agent when the presented key's correct value changed
(:mod:`tepa_envs.core.notify`): with ``"none"`` (the default) nothing changes; otherwise
the observation gains one component of size 2 (the flag) and every ``info`` the fixed
key ``notified`` (bool). ``observe_truth=True`` makes the fully observed twin (the
``*-MDP-v0`` ids): the observation gains, last, the index in :attr:`values` of the
presented task's correct value (``len(values)`` once no task is presented), the value
``info["oracle"]["correct"]`` names. Neither draws from ``np_random``: the world is the
same for the same seed whatever the two arguments.

Render modes (:data:`RENDER_MODES`): ``"ansi"`` returns the last step as one line
of text; ``"human"`` prints that line to stdout at every step (and a header at
reset), as Gymnasium's environments render in ``step``, and ``render()`` returns
``None``; ``"rgb_array"`` returns a picture of the stream
(:func:`~tepa_envs.core.render.draw_frame`, shape
:data:`~tepa_envs.core.render.FRAME_SHAPE`, ``uint8``).
"""

from __future__ import annotations

import sys
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any, Collection, Mapping, Sequence

import gymnasium as gym
import numpy as np

from tepa_envs.core.checks import check_choice, check_int, check_str, check_trial_kind
from tepa_envs.core.contracts import ValueActions
from tepa_envs.core.drift import DriftSchedule
from tepa_envs.core.notify import (DEFAULT_DETECT_DELAY, DEFAULT_FALSE_ALARM_RATE, DEFAULT_NOTIFY, NOTIFIED_KEY,
                                   ChangeNotifier, check_notify, notifier_rng)
from tepa_envs.core.schedule import PhaseSchedule
from tepa_envs.core.render import RECENT, Frame, draw_frame
from tepa_envs.core.step_info import (DEFAULT_INFO_SCHEMA, NO_ORACLE, StepInfo, check_info_schema, fixed_info,
                                      oracle_info, step_info)
from tepa_envs.core.types import Evidence, slot_setter
from tepa_envs.error import ResetNeeded

TRIAL_COSTS = ("free", "task")
"""Values of ``trial_cost``: trials cost nothing, or each one forfeits a task of the stream."""

NO_PHASE = NO_ORACLE["phase"]
FORFEIT_MESSAGE = "forfeited: this task was spent on a held-out trial"
RENDER_MODES = ["ansi", "human", "rgb_array"]
"""The render modes every environment draws (``metadata["render_modes"]``)."""
RENDER_FPS = 4


def check_render_mode(render_mode: object) -> str | None:
    """``None`` or a str (``TypeError`` otherwise).

    Every environment draws :data:`RENDER_MODES` (``"ansi"``, ``"human"``,
    ``"rgb_array"``). As in Gymnasium's own environments, another mode is
    accepted by the constructor: ``gym.make`` warns about it, and the
    environment's ``render()`` warns and returns ``None``
    (:func:`warn_render_unsupported`; through ``gym.make``, Gymnasium's
    ``PassiveEnvChecker`` refuses the first ``render()`` instead).
    """
    return None if render_mode is None else check_str("render_mode", render_mode)


def warn_render_unsupported(env: Any) -> None:
    """The warning ``render()`` gives, as Gymnasium's environments do, when ``env.render_mode``
    is ``None`` or a mode it does not draw; ``render()`` then returns ``None``."""
    modes = list(env.metadata["render_modes"])
    if env.render_mode is None:
        gym.logger.warn("You are calling render method without specifying any render mode. You can specify "
                        f"the render_mode at initialization, one of {modes}.")
    else:
        gym.logger.warn(f"render_mode={env.render_mode!r} is not supported by {type(env).__name__} "
                        f"(render_modes: {modes}); render() returns None.")


def check_observe_truth(observe_truth: object) -> bool:
    """``observe_truth`` must be a bool (``TypeError`` otherwise)."""
    if not isinstance(observe_truth, bool):
        raise TypeError(f"observe_truth must be a bool, got {type(observe_truth).__name__}")
    return observe_truth


def check_reset_options(options: object, accepted: Collection[str] = ()) -> dict[str, Any]:
    """``reset(options=...)``: ``None`` or a dict whose keys are all in ``accepted``.

    ``TypeError`` for anything but ``None`` or a mapping, ``ValueError`` naming the
    unknown keys (an option no environment reads is a mistake, never silently ignored).
    """
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
    unknown = [key for key in options if key not in accepted]
    if unknown:
        takes = f"it takes {', '.join(map(repr, sorted(accepted)))}" if accepted else "it takes none"
        raise ValueError(f"unknown reset option(s) {', '.join(map(repr, unknown))}: {takes}")
    return dict(options)


@dataclass(frozen=True, slots=True, init=False)
class Task:
    """A task as presented: its key, its text, and the hidden correct value."""

    key: str
    context: str
    correct: str

    def __init__(self, key: str, context: str, correct: str) -> None:
        # What the frozen dataclass's constructor does (object.__setattr__ per field), through
        # the slots' setters: about 2x faster, and environments build one Task per step.
        _set_task_key(self, key)
        _set_task_context(self, context)
        _set_task_correct(self, correct)


@dataclass(frozen=True, slots=True, init=False)
class Outcome:
    """What executing a value revealed."""

    success: bool
    evidence: tuple[Evidence, ...]
    message: str

    def __init__(self, success: bool, evidence: tuple[Evidence, ...], message: str) -> None:
        _set_outcome_success(self, success)  # as Task's constructor
        _set_outcome_evidence(self, evidence)
        _set_outcome_message(self, message)


_set_task_key, _set_task_context, _set_task_correct = (slot_setter(Task, name)
                                                       for name in ("key", "context", "correct"))
_set_outcome_success, _set_outcome_evidence, _set_outcome_message = (slot_setter(Outcome, name)
                                                                     for name in ("success", "evidence", "message"))


class TaskStreamEnv(ValueActions, gym.Env[Any, np.int64]):
    """A stream of tasks over phases whose hidden rules drift.

    The phases are the paper's four (``phase_lengths``, four ints) or the segments
    of a :class:`~tepa_envs.core.drift.DriftSchedule` (passed in its place), named by
    it; :attr:`schedule` maps a task index to its phase, and ``info["oracle"]``
    reports the phase's index and name.

    The action picks one of :attr:`values` by index. Language agents use
    :meth:`choices` and :meth:`to_action` to turn a chosen value into an action.
    ``render_mode`` is one of :data:`RENDER_MODES` (module docstring); any other
    mode is accepted, as in Gymnasium, and :meth:`render` then warns and returns
    ``None``. ``info_schema`` is ``"rich"`` or ``"fixed"`` (module docstring).
    ``reset(options=...)`` takes no options (``ValueError`` naming unknown keys).
    """

    metadata = {"render_modes": RENDER_MODES, "render_fps": RENDER_FPS}
    offers_trials = True

    def __init__(self, phase_lengths: Sequence[int] | DriftSchedule, values: Sequence[str],
                 render_mode: str | None = None, *, trial_cost: str = "free",
                 info_schema: str = DEFAULT_INFO_SCHEMA, notify: str = DEFAULT_NOTIFY,
                 detect_delay: float = DEFAULT_DETECT_DELAY, false_alarm_rate: float = DEFAULT_FALSE_ALARM_RATE,
                 observe_truth: bool = False) -> None:
        self.notification = check_notify(notify, detect_delay, false_alarm_rate)
        self.notify = self.notification.level
        self.observe_truth = check_observe_truth(observe_truth)
        self.render_mode = check_render_mode(render_mode)
        self.info_schema = check_info_schema(info_schema)
        self.trial_cost = check_choice("trial_cost", check_str("trial_cost", trial_cost), TRIAL_COSTS)
        if isinstance(phase_lengths, DriftSchedule):  # its segments are the phases, with their names
            self.schedule = PhaseSchedule.of(phase_lengths)
        else:
            self.schedule = PhaseSchedule(tuple(phase_lengths))
        self._set_values(values)
        self.action_space = gym.spaces.Discrete(len(self.values))
        self._trials_spent: Counter[str] = Counter()
        self._forfeits_pending = 0
        self._tasks_forfeited = 0
        self._t = 0
        self._task: Task | None = None
        self._last_step: tuple[int, str, str, bool, str] | None = None
        self._last_evidence: tuple[Evidence, ...] = ()
        self._outcomes: deque[int] = deque(maxlen=RECENT)
        self._value_index = {value: i for i, value in enumerate(self.values)}
        # The step path's constants: the value of each action index (a valid Python or NumPy
        # int action is looked up here; anything else goes through _action_index's checks),
        # whether the observation and info carry the flag and the twin's component.
        self._action_values = dict(enumerate(self.values))
        self._flagged = self.notification.enabled
        self._extended = self._flagged or self.observe_truth
        self._notifier = ChangeNotifier(self.notification)
        self._notified = False

    def _observation_space(self, nvec: Sequence[int]) -> gym.spaces.MultiDiscrete:
        """The environment's ``MultiDiscrete(nvec)`` observation space with the components
        ``notify`` and ``observe_truth`` add after it: the flag (size 2) and the correct
        value's index (size ``len(values) + 1``)."""
        return gym.spaces.MultiDiscrete(list(nvec) + self._extra_nvec())

    def _extra_nvec(self) -> list[int]:
        extra = [2] if self.notification.enabled else []
        return extra + [len(self.values) + 1] if self.observe_truth else extra

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
        check_reset_options(options)
        super().reset(seed=seed)
        self._build(self.np_random)
        self._trials_spent.clear()
        self._forfeits_pending = 0
        self._tasks_forfeited = 0
        self._t = 0
        self._task = self._present(0)
        self._last_step = None
        self._last_evidence = ()
        self._outcomes.clear()
        if self.notification.enabled:
            detector = notifier_rng(self.np_random) if self.notify == "detected" else None
            self._notifier = ChangeNotifier(self.notification, detector)
        self._notified = self._notify(self._task)
        observation, info = self._full_observation(0, self._task), self._info(evidence=(), success=None)
        if self.render_mode == "human":
            _print(f"{type(self).__name__}: {self.schedule.total} tasks in {len(self.schedule.names)} phases "
                   f"({', '.join(self.schedule.names)})\n")
        return observation, info

    def step(self, action: Any):
        task = self._task
        if task is None:
            raise ResetNeeded("call reset() before step()")
        t = self._t
        schedule = self.schedule
        if t >= schedule.total:
            raise ResetNeeded("the episode has ended; call reset() to start a new one")
        kind = type(action)
        value = self._action_values.get(int(action)) if kind is int or kind is np.int64 else None
        if value is None:  # anything but an int in range: checked (and refused) by _action_index
            value = self.values[self._action_index(action)]
        forfeited = self._forfeits_pending > 0
        if forfeited:  # paid for a trial: the action is not executed and reveals nothing
            self._forfeits_pending -= 1
            self._tasks_forfeited += 1
            outcome = Outcome(False, (), FORFEIT_MESSAGE)
        else:
            outcome = self._execute(t, task, value)
        success, evidence, message = outcome.success, outcome.evidence, outcome.message
        self._last_step = (t, task.key, value, success, message)
        self._last_evidence = tuple(evidence)
        self._outcomes.append(-1 if forfeited else int(success))
        t += 1
        self._t = t
        terminated = t >= schedule.total
        task = None if terminated else self._present(t)
        self._task = task
        self._notified = self._notify(task) if self._flagged else False
        observation = self._observation(t, task)
        if self._extended:
            observation = self._extend(observation, task)
        info: dict[str, Any] | StepInfo
        if self.info_schema == "fixed":
            info = self._fixed_info(evidence, success, message, forfeited)
        else:
            info = self._info(evidence=evidence, success=success, message=message, forfeited=forfeited)
        if terminated:
            self._task = Task("", "", "")
        if self.render_mode == "human":
            _print(self._ansi())
        return observation, float(success), terminated, False, info

    def _notify(self, task: Task | None) -> bool:
        """The flag for ``task`` now presented (``False`` when none is, or with ``notify="none"``)."""
        if task is None or not self.notification.enabled:
            return False
        return self._notifier.present(task.key, task.correct)

    def _full_observation(self, t: int, task: Task | None) -> Any:
        """The environment's observation with the components ``notify`` and ``observe_truth`` add."""
        observation = self._observation(t, task)
        return self._extend(observation, task) if self._extended else observation

    def _extend(self, observation: Any, task: Task | None) -> Any:
        """``observation`` with the flag and the correct value's index after it (as enabled)."""
        extra = [int(self._notified)] if self.notification.enabled else []
        if self.observe_truth:
            extra.append(self._value_index[task.correct] if task is not None else len(self.values))
        if type(observation) is np.ndarray and observation.ndim == 1:  # the same array, built in one call
            return np.array([*observation.tolist(), *extra], dtype=observation.dtype)
        return np.concatenate([observation, np.array(extra, dtype=observation.dtype)])

    @property
    def notified(self) -> bool:
        """Whether the flag is raised on the task now presented (``info["notified"]``)."""
        return self._notified

    def _action_index(self, action: Any) -> int:
        """``TypeError`` unless ``action`` is an integer (a Python or NumPy int, or a 0-d
        integer array), ``ValueError`` outside the action space."""
        if isinstance(action, np.ndarray) and action.shape == () and np.issubdtype(action.dtype, np.integer):
            action = action.item()
        return check_int("action", action, low=0, high=len(self.values) - 1)

    def render(self) -> str | np.ndarray | None:
        """``"ansi"``: the last step as one line of text; ``"rgb_array"``: a picture of the
        stream (:func:`~tepa_envs.core.render.draw_frame`); ``"human"``: ``None`` (the
        lines are printed as the stream runs). Any other mode warns and returns ``None``,
        as Gymnasium's environments do."""
        if self.render_mode == "ansi":
            return self._ansi()
        if self.render_mode == "rgb_array":
            return draw_frame(self._frame())
        if self.render_mode != "human":
            warn_render_unsupported(self)
        return None

    def _ansi(self) -> str:
        if self._last_step is None:
            return "\n"
        t, key, value, success, message = self._last_step
        return (f"t={t} [{self.schedule.name_of(t)}] {key}: {value} -> "
                f"{'ok' if success else 'fail'} ({message})\n")

    def _frame(self) -> Frame:
        total, t = self.schedule.total, self._t
        task = self._task
        phase = self.schedule.name_of(min(t, total - 1)) if total else ""
        name = self.spec.id if self.spec is not None else type(self).__name__  # gym.Env declares spec (None)
        presented = f"[{task.key}] {task.context}" if task is not None and task.key else ""
        return Frame(f"{name}  t={t}/{total}  phase: {phase}", presented, self._ansi(), tuple(self._outcomes),
                     tuple(zip(self.schedule.names, self.schedule.lengths)), t, total)

    # -------------------------------------------------------- language agents
    def trial(self, kind: str, key: str, value: str) -> bool:
        """Run a held-out trial task: does ``value`` work for ``key`` now?

        Trials never advance the stream; they are counted per kind in
        :attr:`trials_spent`. With ``trial_cost="task"`` each trial forfeits the
        next task the stream executes (the one now presented, then the following
        ones), see :attr:`tasks_forfeited`; with ``"free"`` it changes no outcome.
        """
        check_trial_kind(kind)
        check_str("trial key", key)
        check_str("trial value", value)
        if self._task is None:
            raise ResetNeeded("call reset() before trial()")
        self._trials_spent[kind] += 1
        if self.trial_cost == "task":
            self._forfeits_pending += 1
        return bool(self._trial(key, value))

    @property
    def trials_spent(self) -> Counter[str]:
        """Trials run since the last reset, per kind."""
        return self._trials_spent

    @property
    def tasks_forfeited(self) -> int:
        """Tasks forfeited to pay for trials since the last reset (always 0 with ``trial_cost="free"``)."""
        return self._tasks_forfeited

    # ------------------------------------------------------------------ helpers
    @property
    def t(self) -> int:
        """Index of the task currently presented."""
        return self._t

    @property
    def last_evidence(self) -> tuple[Evidence, ...]:
        """The :class:`~tepa_envs.core.Evidence` the last step revealed (``()`` after reset
        and on a forfeited task), whatever ``info_schema``."""
        return self._last_evidence

    def _info(self, *, evidence: Sequence[Evidence], success: bool | None,
              message: str = "", forfeited: bool = False) -> StepInfo:
        if self.info_schema == "fixed":
            return self._fixed_info(evidence, success, message, forfeited)  # type: ignore[return-value]
        task, t, schedule = self._task, self._t, self.schedule
        oracle = None
        if task is not None and task.key:
            phase = schedule.phase_of(t)
            oracle = oracle_info(phase, schedule.names[phase], schedule.starts_phase(t), task.correct)
        extra: dict[str, Any] = {} if success is None else {"message": message}
        if success is not None and self.trial_cost == "task":
            extra["forfeited"] = bool(forfeited)
        if self._flagged:
            extra[NOTIFIED_KEY] = self._notified
        return step_info(key=task.key if task else "", context=task.context if task else "", evidence=evidence,
                         t=t, success=success, oracle=oracle, **extra)

    def _fixed_info(self, evidence: Sequence[Evidence], success: bool | None, message: str,
                    forfeited: bool) -> dict[str, Any]:
        """The ``info_schema="fixed"`` info of the task now presented (:func:`fixed_info`), then
        ``forfeited`` and, when notifying, ``notified``."""
        task, t = self._task, self._t
        if task is None:
            info = fixed_info("", "", t, success, message, evidence, NO_PHASE, "", False, "")
        elif not task.key:
            info = fixed_info(task.key, task.context, t, success, message, evidence, NO_PHASE, "", False, "")
        else:
            schedule = self.schedule
            phase = schedule.phase_of(t)
            info = fixed_info(task.key, task.context, t, success, message, evidence,
                              phase, schedule.names[phase], schedule.starts_phase(t), task.correct)
        info["forfeited"] = bool(forfeited)
        if self._flagged:
            info[NOTIFIED_KEY] = self._notified
        return info


def _print(text: str) -> None:
    """``render_mode="human"``: the text to stdout, flushed."""
    sys.stdout.write(text)
    sys.stdout.flush()
