"""TEPA/RegimeDrift-v0 and its scenarios: a tool regime that drifts, reverses and partly returns,
or follows any other drift schedule."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from tepa_envs.core import Evidence, check_int, check_probability
from tepa_envs.core.checks import check_phase_lengths
from tepa_envs.core.drift import DriftSchedule, Timeline, draw_timeline, resolve_schedule
from tepa_envs.core.schedule import draw_phase_values
from tepa_envs.core.step_info import DEFAULT_INFO_SCHEMA
from tepa_envs.core.notify import DEFAULT_DETECT_DELAY, DEFAULT_FALSE_ALARM_RATE, DEFAULT_NOTIFY, check_notify
from tepa_envs.core.contracts import DriftPhases
from tepa_envs.core.stream import Outcome, Task, TaskStreamEnv, check_observe_truth

TASK_TYPES = ("summarize", "classify", "extract", "translate", "aggregate", "validate")
DOMAINS = ("finance", "health", "legal", "retail", "travel", "energy")
INPUT_TYPES = ("csv", "json", "pdf", "html", "text", "xml")
MAX_KEYS = len(TASK_TYPES) * len(DOMAINS) * len(INPUT_TYPES)
"""Distinct keys the ``task_type/domain/input_type`` schema can name (6 * 6 * 6 = 216)."""
MAX_TOOLS = 64
"""Largest ``n_tools``: every task's text lists the tools, so 64 keeps a context
under about 700 characters (and the action space small enough to explore)."""


def key_names(n_keys: int) -> tuple[str, ...]:
    """Deterministic conflict keys ``task_type/domain/input_type`` for ``n_keys`` keys
    (at most :data:`MAX_KEYS`: the schema has no more distinct keys)."""
    check_int("n_keys", n_keys, low=1, high=MAX_KEYS)
    names = []
    for i in range(n_keys):
        names.append(f"{TASK_TYPES[i % len(TASK_TYPES)]}/{DOMAINS[(i // len(TASK_TYPES)) % len(DOMAINS)]}/"
                     f"{INPUT_TYPES[(i // (len(TASK_TYPES) * len(DOMAINS))) % len(INPUT_TYPES)]}")
    return tuple(names)


def task_context(t: int, key: str, tools: tuple[str, ...]) -> str:
    """The text of task ``t``: the same wording in every phase, only the key's words vary."""
    return f"Request #{t}{context_tail(key, tools)}"


def context_tail(key: str, tools: tuple[str, ...]) -> str:
    """What follows ``Request #{t}`` in :func:`task_context`'s text: the same for every task of ``key``."""
    task_type, domain, input_type = key.split("/")
    return (f": {task_type} the {domain} records provided as {input_type}. "
            f"Available tools: {', '.join(tools)}. Pick one tool.")


def corrupt_key(key: str, field: int, offset: int) -> str:
    """``key`` with schema field ``field`` replaced by another word of its vocabulary."""
    parts = key.split("/")
    vocabulary = (TASK_TYPES, DOMAINS, INPUT_TYPES)[field]
    parts[field] = vocabulary[(vocabulary.index(parts[field]) + offset) % len(vocabulary)]
    return "/".join(parts)


@dataclass(frozen=True)
class RegimeWorld:
    """The hidden world of one episode (:func:`draw_world`).

    Attributes:
        regime: correct tool index per segment and key, shape ``(n_segments, n_keys)``
            (for a timed change, the tool the key changes to).
        timeline: every key's tool over time (:class:`~tepa_envs.core.drift.Timeline`).
        task_keys: key index of every task.
        evidence_keys: the key every task's evidence is filed under (``None`` when not built).
        correct: the correct tool index of every task.
        ramp_draw: per task, the uniform number deciding gradual changes (``None`` without ramps).
        outcome_draw: per task, the uniform number deciding noisy outcomes (``None`` when deterministic).
    """

    regime: np.ndarray
    timeline: Timeline
    task_keys: np.ndarray
    evidence_keys: list[str] | None
    correct: np.ndarray
    ramp_draw: np.ndarray | None
    outcome_draw: np.ndarray | None

    def tool(self, t: int, key_index: int) -> int:
        """The correct tool index of key ``key_index`` at task ``t``."""
        return self.timeline.value(t, key_index, self.ramp_draw)


def draw_world(rng: np.random.Generator, keys: tuple[str, ...], n_tools: int, schedule: DriftSchedule,
               key_noise: float, *, with_evidence_keys: bool = True) -> RegimeWorld:
    """The hidden world of one episode, drawn from ``rng`` in a fixed order: the
    timeline (:func:`~tepa_envs.core.drift.draw_timeline`), the task keys
    (:meth:`~tepa_envs.core.drift.DriftSchedule.draw_task_keys`), the key-noise draws
    (which tasks, which field, which offset), then, only when the schedule has them,
    the ramp draws and the outcome draws. With ``with_evidence_keys=False`` the same
    numbers are drawn in the same order, so ``rng`` ends in the same state, but the
    evidence key list is not built (the vector environment does not need it)."""
    total = schedule.total
    timeline = draw_timeline(rng, schedule, len(keys), n_tools)
    task_keys = schedule.draw_task_keys(rng, len(keys), total)
    noisy = rng.random(total) < key_noise
    field = rng.integers(0, 3, size=total)
    offset = rng.integers(1, len(TASK_TYPES), size=total)
    ramp_draw = schedule.draw_ramp(rng, total)
    outcome_draw = schedule.draw_outcomes(rng, total)
    evidence_keys = evidence_key_list(keys, task_keys, noisy, field, offset) if with_evidence_keys else None
    return RegimeWorld(timeline.values, timeline, task_keys, evidence_keys,
                       timeline.task_values(task_keys, ramp_draw), ramp_draw, outcome_draw)


def build_world(rng: np.random.Generator, keys: tuple[str, ...], n_tools: int, total: int,
                light_fraction: float, return_fraction: float,
                key_noise: float, *, with_evidence_keys: bool = True
                ) -> tuple[np.ndarray, np.ndarray, list[str] | None]:
    """The hidden world of one episode of the ``"paper"`` schedule over ``total`` tasks,
    drawn from ``rng`` in a fixed order (as :func:`draw_world`).

    Returns the regime (correct tool index per phase and key), the key index of
    every task, and the key every task's evidence is filed under (``None`` with
    ``with_evidence_keys=False``: the same random numbers are drawn in the same
    order, so ``rng`` ends in the same state, but the key list is not built).
    """
    regime = draw_phase_values(rng, len(keys), n_tools, light_fraction, return_fraction)
    task_keys = rng.integers(0, len(keys), size=total)
    noisy = rng.random(total) < key_noise
    field = rng.integers(0, 3, size=total)
    offset = rng.integers(1, len(TASK_TYPES), size=total)
    if not with_evidence_keys:
        return regime, task_keys, None
    return regime, task_keys, evidence_key_list(keys, task_keys, noisy, field, offset)


def evidence_key_list(keys: tuple[str, ...], task_keys: np.ndarray, noisy: np.ndarray, field: np.ndarray,
                      offset: np.ndarray) -> list[str]:
    """The key every task's evidence is filed under: its own key, or on a ``noisy`` task that key
    with schema field ``field`` moved by ``offset`` (:func:`corrupt_key`)."""
    if not noisy.any():
        return [keys[k] for k in task_keys.tolist()]
    return [corrupt_key(keys[k], f, o) if n else keys[k]
            for k, n, f, o in zip(task_keys.tolist(), noisy.tolist(), field.tolist(), offset.tolist())]


class RegimeDriftEnv(DriftPhases, TaskStreamEnv):
    """
    ## Description

    A stream of tool-use tasks. Each task has a conflict key
    ``task_type/domain/input_type`` and can be solved by exactly one of
    ``n_tools`` tools; a hidden regime decides which tool works for each key.
    The visible context stays the same in wording across phases; only the
    hidden correct tool changes. By default (``schedule="paper"``) the stream
    has the paper's four phases:

    1. **stable**: the initial regime.
    2. **light drift**: a ``light_drift_fraction`` of keys switch tools.
    3. **full reversal**: every key switches to a tool it has not used before.
    4. **partial return**: a ``partial_return_fraction`` of keys return to
       their stable tool; the rest keep the reversed one.

    Keys are drawn uniformly at random for each task (from the seed). Executors
    are deterministic: the right tool always works, every other tool fails
    (unless the schedule has noisy outcomes or Zipf keys).

    Any other drift is a ``schedule`` (:mod:`tepa_envs.core.drift`): a list of
    segments (the phases), each changing a share of the keys at its start
    (switch to a new tool, return to an earlier one, or nothing), possibly
    gradually (``ramp``), asynchronously per key (``spread``) or at random
    per-key change points (``hazard``); noisy outcomes (``p_hit``, ``p_false``);
    and Zipf-skewed key frequency (``zipf``). The registered scenarios below
    are named schedules.

    ## Registered scenarios

    Each varies one thing of the paper's protocol (``TEPA/RegimeDrift-v0``: one
    key, three tools, four phases of 40 tasks), so a method's change of rank
    between two scenarios is due to that thing. ``gym.make(id, **kwargs)``
    overrides the listed kwargs as usual.

    * ``TEPA/RegimeDrift-Noisy-v0`` (``schedule="noisy"``): the right tool
      succeeds with probability ``p_hit = 0.9`` and each wrong tool with
      ``p_false = 0.1``: a flaky executor, one transient failure of a
      still-valid memory in ten uses, and a lucky wrong tool as often. Tests
      whether revocation (or forgetting) thresholds ride out transient failures
      and whether a lucky success is mistaken for a change.
    * ``TEPA/RegimeDrift-Recurring-v0`` (``schedule="recurring"``): every key
      alternates between two tools, A -> B -> A -> B (phases ``regime_a``,
      ``regime_b``, ``back_to_a``, ``back_to_b``); a tool revoked earlier becomes
      right again, so re-promotion from the archive matters.
    * ``TEPA/RegimeDrift-Gradual-v0`` (``schedule="gradual"``): the four
      phases, but each change ramps in over half its phase (``ramp = 20`` at the
      default lengths): at the change's ``i``-th task the new tool is the right
      one with probability ``(i + 1) / 21``. A migration that rolls out slowly:
      early failures of the old tool are mixed with its successes.
    * ``TEPA/RegimeDrift-Async-v0`` (``schedule="async"``, ``n_keys=4``): the
      four phases over four keys, but each changed key changes at its own time,
      uniform over the first half of the phase (``spread = 20``). Failures of
      different keys do not coincide, so a regime change is not visible as a
      burst of failures.
    * ``TEPA/RegimeDrift-Poisson-v0`` (``schedule="poisson"``, ``n_keys=4``): a
      stable phase, then three phases (``random_1..3``) in which every key
      switches tool at random change points with hazard ``1 / 40`` per task: the
      paper's rate of one change per key per phase, at random times and
      independently per key. A global wipe erases the keys that did not change.
    * ``TEPA/RegimeDrift-ManyKeys-v0`` (``n_keys=8``, phases of 80 tasks): the
      paper's schedule over eight keys, each seen about ten times a phase; in
      light drift four keys change at once, in full reversal all eight. The
      case where a global wipe beats per-key revocation.
    * ``TEPA/RegimeDrift-Zipf-v0`` (``schedule="zipf"``, ``n_keys=8``, phases of
      80 tasks): ManyKeys with Zipf-distributed keys (exponent 1: the most
      frequent key takes 37 % of the tasks, the rarest 4.6 %, about four tasks a
      phase), so rare keys see few outcomes between changes.
    * ``TEPA/RegimeDrift-NoisyManyKeys-v0`` (``schedule="noisy"``, ``n_keys=8``,
      phases of 80 tasks): ManyKeys with Noisy's flaky executor. Transient
      failures of different keys now coincide by chance, so a rule that reads a
      burst of failures across keys as a regime change (``tepa-regime``) meets
      its false alarms here.

    ## Action Space

    ``Discrete(n_tools)``: the tool used for the task.

    ## Observation Space

    ``MultiDiscrete([n_keys, n_tools + 1, 2])``: the index of the task's key,
    the tool used in the previous step (``n_tools`` before the first step) and
    whether it succeeded. The correct tool is never observable.

    With ``notify="known"`` or ``"detected"`` the observation gains one component of
    size 2 after these: ``1`` when the change flag is raised on the task now
    presented (``info["notified"]``), else ``0``. With ``observe_truth=True`` (the
    ``*-MDP-v0`` twins) it gains, last, a component of size ``n_tools + 1``: the index
    of the presented task's correct tool (the one ``info["oracle"]["correct"]``
    names; ``n_tools`` at the terminal step). So the space is ``MultiDiscrete(nvec)``
    with ``nvec`` the list above, then ``2`` when notified, then ``n_tools + 1`` for a twin.

    ## Rewards

    1.0 when the tool solves the task, 0.0 otherwise. With noisy outcomes
    (``p_hit < 1`` or ``p_false > 0``) the right tool solves it with probability
    ``p_hit`` and a wrong one with ``p_false``, decided by one uniform number per
    task drawn at reset (the same for every action: two agents that choose alike
    get the same outcome). ``info["success"]`` is the outcome, and
    ``info["oracle"]["correct"]`` the right tool.

    ## Episode End

    Terminates after the last task of the last phase (``sum(phase_lengths)``
    steps, or the schedule's total length). There is no truncation.

    ## Evidence

    A step reveals one :class:`~tepa_envs.core.Evidence`: the tool used, its
    outcome (``True``/``False``) and ``source="executor"``; the executor's
    message is in ``info["message"]`` (the same message for every failure, noisy
    or not). Nothing reveals which tool would have worked. With
    ``key_noise > 0`` the evidence is filed under a wrong key with that
    probability: one field of the key schema is replaced by another word of its
    vocabulary (the paper's key-noise study).

    ## Trials

    ``trial(kind, key, value)`` answers a held-out task for ``key`` from the
    hidden regime now: ``True`` exactly when ``value`` is its right tool (trials
    are noise-free, a controlled check, and never draw from the episode's
    generator). Unknown keys fail their trials.

    ## Oracle

    ``info["oracle"]`` has the phase (segment) index and name, ``phase_changed``
    at the first task of each phase after the first, and the right tool. Changes
    inside a phase (ramps, spreads, random change points) are not announced, so
    the oracle-reset bound, which clears its memory at phase boundaries, is not
    an upper bound on those scenarios.

    ## Info

    With ``info_schema="fixed"`` every ``info`` (reset, every step, the terminal
    step) has the same keys with values of fixed type, sentinels where a value does
    not apply (:mod:`tepa_envs.core.step_info`): ``key`` (str, ``""``),
    ``context`` (str, ``""``), ``t`` (int), ``scored`` (bool, ``False`` at reset),
    ``success`` (bool, ``False`` unless scored), ``message`` (str, ``""``),
    ``evidence`` (``{"count", "key", "value", "t", "outcome", "source"}``: the
    number of evidence and the first one, ``outcome`` 1 / 0 / -1; ``0, "", "",
    -1, -1, ""`` when none), ``oracle`` (``{"phase", "phase_name",
    "phase_changed", "correct"}``; ``-1, "", False, ""`` at the terminal step) and
    ``forfeited`` (bool). With ``"rich"`` (the variable view)
    ``evidence`` is the list of :class:`~tepa_envs.core.Evidence`, ``success`` and
    ``message`` are present only after a step, ``oracle`` only while a task is
    presented and ``forfeited`` only with ``trial_cost="task"``. Either way
    ``env.unwrapped.last_evidence`` is the last step's evidence list. With ``notify="known"`` or ``"detected"``
    every ``info`` of either schema also has ``notified`` (bool: the change flag of the
    task now presented, ``False`` at reset's first presentation of a key and at the
    terminal step); with ``notify="none"`` (default) the key is absent.

    ## Rendering

    ``metadata["render_modes"]`` is ``["ansi", "human", "rgb_array"]``
    (``render_fps`` 4). ``"rgb_array"`` frames are ``uint8`` arrays of shape
    ``(256, 512, 3)`` (:data:`~tepa_envs.core.render.FRAME_SHAPE`): the task now
    presented, the last step, the recent outcomes and the phase timeline with a
    cursor at ``t``, so ``gymnasium.wrappers.RecordVideo`` records episodes.

    ## Arguments

    * ``phase_lengths``: tasks in each of the four phases of a named schedule
      (default ``(40, 40, 40, 40)``): a tuple or list of four ints, each from 1
      to ``MAX_PHASE_LENGTH`` (10**6).
    * ``n_tools``: number of tools (default 3, at least 3 so that reversal can
      avoid both earlier tools, at most ``MAX_TOOLS`` = 64: every task's text
      lists the tools).
    * ``n_keys``: number of distinct conflict keys (default 1: one tool regime,
      as in the paper's controlled drift; each extra key must be relearned
      separately after every change), at most ``MAX_KEYS`` = 216, the keys the
      ``task_type/domain/input_type`` schema can name (6 * 6 * 6).
    * ``light_drift_fraction``: fraction of keys that change in light drift (default 0.5).
    * ``partial_return_fraction``: fraction of keys that return (default 0.5).
      Both fractions apply to the four-phase schedules (``paper``, ``noisy``,
      ``gradual``, ``async``, ``zipf``); ``recurring`` and ``poisson`` change
      every key and refuse other values.
    * ``key_noise``: probability that a step's evidence carries a wrong key (default 0.0).
    * ``trial_cost``: what a held-out :meth:`trial` costs: ``"free"`` (default)
      or ``"task"`` (each trial forfeits one task of the stream, for an
      equal-budget comparison; details in :class:`~tepa_envs.core.stream.TaskStreamEnv`).
    * ``render_mode``: ``None``, ``"ansi"`` (the last step as a line of text),
      ``"human"`` (that line printed to stdout at every step) or ``"rgb_array"`` (a
      ``uint8`` picture of the stream, see "Rendering"); any other mode is accepted,
      as in Gymnasium's own environments, and ``render()`` then warns and returns ``None``.
    * ``info_schema``: ``"fixed"`` (default) or ``"rich"``, see "Info".
    * ``notify``: change notification (:mod:`tepa_envs.core.notify`): ``"none"``
      (default: nothing is told, everything exactly as without the argument),
      ``"known"`` (a flag on the first task that presents a key after a true change
      of its correct value) or ``"detected"`` (the same flag from a noisy detector,
      see ``detect_delay`` and ``false_alarm_rate``). With ``"known"`` or
      ``"detected"`` the observation gains the flag and every ``info`` the key
      ``notified``; see "Observation Space" and "Info".
    * ``detect_delay``: with ``notify="detected"``, the mean of the detector's
      geometric delay in presentations of the changed key (default 1.0; 0 flags
      every change on its first task; at most 1000). Checked, and ignored, at the
      other levels.
    * ``false_alarm_rate``: with ``notify="detected"``, the probability that a
      presentation of a key (after its first) raises a false alarm (default 0.02,
      in [0, 1]). Checked, and ignored, at the other levels.
    * ``observe_truth``: ``True`` makes the fully observed twin (the ``*-MDP-v0``
      ids register it): the observation gains, last, the index of the presented
      task's correct value (default ``False``); see "Observation Space".
    * ``schedule``: the drift: a preset name (``"paper"``, the default, or one of
      ``"noisy"``, ``"gradual"``, ``"async"``, ``"zipf"``, ``"recurring"``,
      ``"poisson"``; :data:`~tepa_envs.core.drift.PRESETS`), built over
      ``phase_lengths`` and the fractions; or a
      :class:`~tepa_envs.core.drift.DriftSchedule` or its dict form
      (``{"segments": [{"length": 40}, {"length": 40, "change": "switch",
      "ramp": 10}], "p_hit": 0.95}``, validated with errors naming the field),
      which sets its own segments (at most ``MAX_SEGMENTS`` = 1000 of at most
      ``MAX_PHASE_LENGTH`` tasks, ``MAX_TASKS`` = 4 * 10**6 in all), so
      ``phase_lengths`` and the fractions must then keep their defaults.
    """

    def __init__(self, phase_lengths: tuple[int, int, int, int] = (40, 40, 40, 40),
                 n_tools: int = 3, n_keys: int = 1, light_drift_fraction: float = 0.5,
                 partial_return_fraction: float = 0.5, key_noise: float = 0.0,
                 render_mode: str | None = None, trial_cost: str = "free",
                 schedule: str | DriftSchedule | Mapping[str, Any] = "paper",
                 info_schema: str = DEFAULT_INFO_SCHEMA, notify: str = DEFAULT_NOTIFY,
                 detect_delay: float = DEFAULT_DETECT_DELAY, false_alarm_rate: float = DEFAULT_FALSE_ALARM_RATE,
                 observe_truth: bool = False) -> None:
        check_notify(notify, detect_delay, false_alarm_rate)  # refused before any state changes
        check_observe_truth(observe_truth)
        phase_lengths = check_phase_lengths(phase_lengths)  # a dict or a huge length: refused before any allocation
        self.n_tools = check_int("n_tools", n_tools, low=3, high=MAX_TOOLS)
        self.keys = key_names(n_keys)
        self.n_keys = len(self.keys)
        self.light_drift_fraction = check_probability("light_drift_fraction", light_drift_fraction)
        self.partial_return_fraction = check_probability("partial_return_fraction", partial_return_fraction)
        self.key_noise = check_probability("key_noise", key_noise)
        self.drift = resolve_schedule(schedule, phase_lengths, self.light_drift_fraction,
                                      self.partial_return_fraction)
        super().__init__(self.drift, tuple(f"tool_{i}" for i in range(self.n_tools)), render_mode,
                         trial_cost=trial_cost,
                         info_schema=info_schema, notify=notify, detect_delay=detect_delay,
                         false_alarm_rate=false_alarm_rate, observe_truth=observe_truth)
        self.observation_space = self._observation_space([self.n_keys, self.n_tools + 1, 2])
        self._key_index = {k: i for i, k in enumerate(self.keys)}
        # The step path's constants: each key's text after "Request #{t}" and each tool's failure message.
        self._context_tails = [context_tail(key, self.values) for key in self.keys]
        self._rejections = {value: f"{value} rejected the request: unsupported operation" for value in self.values}

    def _build(self, rng: np.random.Generator) -> None:
        self.world = draw_world(rng, self.keys, self.n_tools, self.drift, self.key_noise)
        evidence_keys = self.world.evidence_keys
        if evidence_keys is None:  # draw_world builds them unless told not to
            raise RuntimeError("the world was drawn without its evidence keys")
        self.regime, self.task_keys, self.evidence_keys = self.world.regime, self.world.task_keys, evidence_keys
        self._correct = self.world.correct.tolist()
        self._task_key_list = self.task_keys.tolist()
        # Noisy outcomes: each task's outcome for the right tool and for a wrong one (what
        # DriftSchedule.succeeds decides, compared here for every task at once); None when deterministic.
        draw = self.world.outcome_draw
        self._noisy_outcomes: tuple[list[bool], list[bool]] | None = None if draw is None else (
            (draw < self.drift.p_hit).tolist(), (draw < self.drift.p_false).tolist())
        self._previous = (self.n_tools, 0)

    def _correct_index(self, t: int, key_index: int) -> int:
        return self.world.tool(t, key_index)

    def _present(self, t: int) -> Task:
        k = self._task_key_list[t]
        return Task(self.keys[k], f"Request #{t}{self._context_tails[k]}", self.values[self._correct[t]])

    def _execute(self, t: int, task: Task, value: str) -> Outcome:
        # value is one of self.values (the base class resolved the action)
        success = value == task.correct
        noisy = self._noisy_outcomes
        if noisy is not None:
            success = noisy[0][t] if success else noisy[1][t]
        message = "completed" if success else self._rejections[value]
        evidence = Evidence(self.evidence_keys[t], value, t, success, "executor")
        self._previous = (self._value_index[value], 1 if success else 0)
        return Outcome(success, (evidence,), message)

    def _trial(self, key: str, value: str) -> bool:
        if key not in self._key_index:
            return False
        return self.values[self._correct_index(self.t, self._key_index[key])] == value

    def _observation(self, t: int, task: Task | None) -> np.ndarray:
        key_index = self._key_index[task.key] if task is not None else 0
        if t == 0:
            self._previous = (self.n_tools, 0)
        return np.array([key_index, *self._previous], dtype=np.int64)

    def regime_table(self) -> dict[str, Any]:
        """The hidden regime per phase, for evaluation and tests only (for a change inside
        a phase, the tool the key changes to)."""
        return {key: [self.values[int(v)] for v in self.regime[:, i]] for i, key in enumerate(self.keys)}
