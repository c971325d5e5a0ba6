"""Drift schedules as data, shared by the task-stream environments.

A :class:`DriftSchedule` says how the hidden correct value of every conflict key
changes over a stream of tasks. It is a list of :class:`Segment` objects (the
phases the harness reports success on) plus an outcome model and a key
frequency:

* **Segments.** Each has a ``length`` (tasks) and a ``change`` applied at its
  start to a chosen share of the keys (``fraction``): ``"none"`` (no change),
  ``"switch"`` (to a value the key has never held, or, when it has held every
  value, to one other than its current value) or ``"return"`` (to the value the
  key had in the earlier segment ``to``). A segment may also make its change
  **gradual** (``ramp``: over ``ramp`` tasks the probability that the new value
  is the correct one ramps from 0 to 1), **asynchronous** (``spread``: each
  chosen key changes at its own offset, uniform in ``[0, spread]`` tasks after
  the segment's start), or carry **random change points** (``hazard``: at every
  task each key independently switches to another value with this probability,
  so the times between a key's changes are geometric).
* **Noisy outcomes.** The correct value succeeds with probability ``p_hit`` and
  any wrong value with probability ``p_false`` (defaults 1 and 0: deterministic).
  One uniform number per task decides, shared by every action (common random
  numbers: two methods that choose alike on a task get the same outcome).
* **Key frequency.** Tasks draw their key uniformly, or Zipf-skewed with
  exponent ``zipf`` (key ``i`` with weight ``1 / (i + 1) ** zipf``), so rare keys
  see few outcomes between changes.

Everything random is drawn from the episode's generator in a documented, fixed
order (:func:`draw_timeline`, :meth:`DriftSchedule.draw_task_keys`,
:meth:`DriftSchedule.draw_ramp`, :meth:`DriftSchedule.draw_outcomes`), and the
draws a feature needs are only made when the schedule uses it, so the paper's
four-phase protocol (the ``"paper"`` preset) draws exactly the numbers it drew
before schedules were data.

Named presets (:data:`PRESETS`, :func:`preset`) build the registered scenarios
from four phase lengths. Every constructor argument is validated: ``TypeError``
for a wrong type and ``ValueError`` for a wrong value, each naming the field
(``segments[2].ramp must be ...``).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from tepa_envs.core.checks import MAX_PHASE_LENGTH, check_int, check_number, check_phase_lengths, check_probability
from tepa_envs.core.types import PHASE_NAMES

CHANGES: tuple[str, ...] = ("none", "switch", "return")
"""What a segment does to its chosen keys at its start."""
ALL_KEYS = "all"
"""``Segment.fraction`` meaning every key, in key order, without a random draw."""
MAX_SEGMENTS = 1000
"""Most segments a schedule may have."""
MAX_TASKS = 4 * MAX_PHASE_LENGTH
"""Longest stream a schedule may describe (4 * 10**6 tasks, as four phases of ``MAX_PHASE_LENGTH``)."""
MAX_ZIPF = 10.0
"""Largest Zipf exponent (beyond it every task has the first key, to float precision)."""
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


# ------------------------------------------------------------------------ validation
def _where(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _check_fraction(name: str, value: object) -> float | str:
    if isinstance(value, str):
        if value != ALL_KEYS:
            raise ValueError(f"{name} must be a number in [0, 1] or {ALL_KEYS!r}, got {value!r}")
        return value
    return check_probability(name, value)  # type: ignore[arg-type]


def _check_name(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if value and (len(value) > 64 or not set(value) <= _NAME_CHARS):
        raise ValueError(f"{name} must be at most 64 characters of a-z, 0-9 and _, got {value!r}")
    return value


@dataclass(frozen=True)
class Segment:
    """One phase of a :class:`DriftSchedule` (see the module docstring).

    Args:
        length: tasks in the segment, 1 to ``MAX_PHASE_LENGTH`` (10**6).
        change: ``"none"``, ``"switch"`` or ``"return"``, applied at the start to the chosen keys.
        fraction: share of keys the change applies to: a number in [0, 1] (at least
            one key when positive; the keys are chosen by a random draw, which is
            made even for 0 or 1) or ``"all"`` (every key, no draw; the default).
        to: for ``"return"``, the earlier segment whose value the keys go back to.
        ramp: gradual change: over ``ramp`` tasks after the change the new value is
            correct with probability ``(i + 1) / (ramp + 1)`` at the change's
            ``i``-th task, then always (0: at once). Needs a change.
        spread: asynchronous change: each chosen key changes ``offset`` tasks
            after the start, ``offset`` uniform in ``[0, spread]`` and drawn per key;
            ``spread < length``. Needs a change.
        hazard: probability, at each task of the segment, that each key switches
            to another value (random change points; geometric gaps). Cannot be
            combined with ``ramp`` or ``spread``.
        name: the phase's name (``a-z``, ``0-9``, ``_``; empty: ``segment_<i>``).
    """

    length: int
    change: str = "none"
    fraction: float | str = ALL_KEYS
    to: int = 0
    ramp: int = 0
    spread: int = 0
    hazard: float = 0.0
    name: str = ""

    def __post_init__(self) -> None:
        self.validate("")

    def validate(self, prefix: str) -> None:
        """Check every field (``prefix`` names the segment in messages, e.g. ``segments[2]``)."""
        check_int(_where(prefix, "length"), self.length, low=1, high=MAX_PHASE_LENGTH)
        if not isinstance(self.change, str):
            raise TypeError(f"{_where(prefix, 'change')} must be a str, got {type(self.change).__name__}")
        if self.change not in CHANGES:
            raise ValueError(f"{_where(prefix, 'change')} must be one of {', '.join(CHANGES)}, got {self.change!r}")
        object.__setattr__(self, "fraction", _check_fraction(_where(prefix, "fraction"), self.fraction))
        check_int(_where(prefix, "to"), self.to, low=0, high=MAX_SEGMENTS - 1)
        check_int(_where(prefix, "ramp"), self.ramp, low=0, high=MAX_PHASE_LENGTH)
        check_int(_where(prefix, "spread"), self.spread, low=0, high=self.length - 1)
        object.__setattr__(self, "hazard", check_probability(_where(prefix, "hazard"), self.hazard))
        _check_name(_where(prefix, "name"), self.name)
        if self.change == "none" and (self.ramp or self.spread):
            which = "ramp" if self.ramp else "spread"
            raise ValueError(f"{_where(prefix, which)} needs a change: {_where(prefix, 'change')} is 'none'")
        if self.change != "return" and self.to:
            raise ValueError(f"{_where(prefix, 'to')} applies only to change 'return', got change {self.change!r}")
        if self.hazard and (self.ramp or self.spread):
            which = "ramp" if self.ramp else "spread"
            raise ValueError(f"{_where(prefix, 'hazard')} cannot be combined with {_where(prefix, which)}")

    @property
    def timed(self) -> bool:
        """Whether some key's value changes at a time other than the segment's start."""
        return bool(self.ramp or self.spread or self.hazard)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: every field that differs from its default."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if f.name == "length" or getattr(self, f.name) != f.default}


SEGMENT_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Segment))
SCHEDULE_FIELDS: tuple[str, ...] = ("segments", "p_hit", "p_false", "zipf")


@dataclass(frozen=True)
class DriftSchedule:
    """Segments, an outcome model and a key frequency (see the module docstring).

    Args:
        segments: a tuple or list of :class:`Segment` (1 to ``MAX_SEGMENTS``; the
            first has change ``"none"``: it draws every key's initial value), at
            most ``MAX_TASKS`` tasks in all, with distinct names.
        p_hit: probability that the correct value succeeds (default 1).
        p_false: probability that a wrong value succeeds (default 0; below ``p_hit``).
        zipf: Zipf exponent of the key frequency, 0 (uniform, the default) to ``MAX_ZIPF``.
    """

    segments: tuple[Segment, ...]
    p_hit: float = 1.0
    p_false: float = 0.0
    zipf: float = 0.0
    _starts: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        segments = self.segments
        if not isinstance(segments, (tuple, list)):
            raise TypeError(f"segments must be a tuple or list of Segment, got {type(segments).__name__}")
        if not 1 <= len(segments) <= MAX_SEGMENTS:
            raise ValueError(f"segments must hold 1 to {MAX_SEGMENTS} segments, got {len(segments)}")
        for i, segment in enumerate(segments):
            if not isinstance(segment, Segment):
                raise TypeError(f"segments[{i}] must be a Segment, got {type(segment).__name__}")
        object.__setattr__(self, "segments", tuple(segments))
        if segments[0].change != "none":
            raise ValueError(f"segments[0].change must be 'none' (the first segment draws the initial values), "
                             f"got {segments[0].change!r}")
        for i, segment in enumerate(segments):
            if segment.change == "return" and segment.to >= i:
                raise ValueError(f"segments[{i}].to must name an earlier segment (0 to {i - 1}), got {segment.to}")
        total = sum(segment.length for segment in segments)
        if total > MAX_TASKS:
            raise ValueError(f"segments must hold at most MAX_TASKS={MAX_TASKS:,} tasks in all, got {total:,}")
        names = self.names
        duplicated = sorted({n for n in names if names.count(n) > 1})
        if duplicated:
            raise ValueError(f"segments' names must be distinct, got {', '.join(duplicated)} more than once")
        object.__setattr__(self, "p_hit", check_probability("p_hit", self.p_hit))
        object.__setattr__(self, "p_false", check_probability("p_false", self.p_false))
        if self.p_false >= self.p_hit:
            raise ValueError(f"p_false must be below p_hit (a wrong value must succeed less often than the "
                             f"correct one), got p_false={self.p_false} and p_hit={self.p_hit}")
        zipf = check_number("zipf", self.zipf)
        if math.isnan(zipf) or not 0.0 <= zipf <= MAX_ZIPF:
            raise ValueError(f"zipf must be in [0, {MAX_ZIPF}], got {zipf}")
        object.__setattr__(self, "zipf", zipf)
        object.__setattr__(self, "_starts", tuple(int(s) for s in np.cumsum([0] + list(self.lengths[:-1]))))

    # ------------------------------------------------------------------ views
    @property
    def lengths(self) -> tuple[int, ...]:
        return tuple(segment.length for segment in self.segments)

    @property
    def names(self) -> tuple[str, ...]:
        """Phase names, one per segment (``segment_<i>`` for an unnamed one)."""
        return tuple(segment.name or f"segment_{i}" for i, segment in enumerate(self.segments))

    @property
    def starts(self) -> tuple[int, ...]:
        return self._starts

    @property
    def total(self) -> int:
        return sum(self.lengths)

    @property
    def timed(self) -> bool:
        """Whether any change happens at a time other than a segment's start (ramp, spread, hazard)."""
        return any(segment.timed for segment in self.segments)

    @cached_property
    def segment_of_task(self) -> np.ndarray:
        """The segment index of every task (computed once per schedule; read-only)."""
        array = np.repeat(np.arange(len(self.segments)), self.lengths)
        array.setflags(write=False)
        return array

    @cached_property
    def _segment_list(self) -> list[int]:
        return self.segment_of_task.tolist()

    @property
    def noisy(self) -> bool:
        return self.p_hit < 1.0 or self.p_false > 0.0

    @property
    def has_ramp(self) -> bool:
        return any(segment.ramp for segment in self.segments)

    def reversal_phases(self) -> tuple[str, ...]:
        """Names of the segments whose change applies to every key (``fraction`` ``"all"`` or 1):
        the phases in which every remembered value goes stale at once."""
        return tuple(name for name, segment in zip(self.names, self.segments)
                     if segment.change != "none" and segment.fraction in (ALL_KEYS, 1.0))

    # ---------------------------------------------------------------- JSON form
    def to_dict(self) -> dict[str, Any]:
        """The JSON form read by :meth:`from_dict` (fields at their defaults left out)."""
        out: dict[str, Any] = {"segments": [segment.to_dict() for segment in self.segments]}
        for name, default in (("p_hit", 1.0), ("p_false", 0.0), ("zipf", 0.0)):
            if getattr(self, name) != default:
                out[name] = getattr(self, name)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DriftSchedule:
        """A schedule from its JSON form: ``{"segments": [{"length": 40, ...}, ...], "p_hit": ...}``.
        Unknown fields are refused (``ValueError`` naming them)."""
        if not isinstance(data, Mapping):
            raise TypeError(f"schedule must be a mapping, got {type(data).__name__}")
        unknown = sorted(str(k) for k in data if k not in SCHEDULE_FIELDS)
        if unknown:
            raise ValueError(f"unknown schedule field(s) {', '.join(map(repr, unknown))}; "
                             f"valid: {', '.join(SCHEDULE_FIELDS)}")
        if "segments" not in data:
            raise ValueError("schedule needs 'segments'")
        raw = data["segments"]
        if not isinstance(raw, (list, tuple)):
            raise TypeError(f"segments must be a list of objects, got {type(raw).__name__}")
        if not 1 <= len(raw) <= MAX_SEGMENTS:
            raise ValueError(f"segments must hold 1 to {MAX_SEGMENTS} segments, got {len(raw)}")
        segments = []
        for i, item in enumerate(raw):
            if not isinstance(item, Mapping):
                raise TypeError(f"segments[{i}] must be an object, got {type(item).__name__}")
            unknown = sorted(str(k) for k in item if k not in SEGMENT_FIELDS)
            if unknown:
                raise ValueError(f"unknown field(s) {', '.join(map(repr, unknown))} in segments[{i}]; "
                                 f"valid: {', '.join(SEGMENT_FIELDS)}")
            if "length" not in item:
                raise ValueError(f"segments[{i}] needs 'length'")
            try:
                segments.append(Segment(**item))
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"segments[{i}].{exc}") from None
        kwargs = {k: data[k] for k in ("p_hit", "p_false", "zipf") if k in data}
        return cls(tuple(segments), **kwargs)

    # ------------------------------------------------------------------- draws
    def key_weights(self, n_keys: int) -> np.ndarray | None:
        """Probability of each key (``None``: uniform)."""
        if self.zipf == 0.0:
            return None
        weights = 1.0 / np.arange(1, n_keys + 1, dtype=np.float64) ** self.zipf
        return weights / weights.sum()

    def draw_task_keys(self, rng: np.random.Generator, n_keys: int, total: int | None = None) -> np.ndarray:
        """The key index of every task: ``rng.integers(0, n_keys, size=total)`` (uniform) or
        ``rng.choice(n_keys, size=total, p=weights)`` (Zipf)."""
        total = self.total if total is None else total
        weights = self.key_weights(n_keys)
        if weights is None:
            return rng.integers(0, n_keys, size=total)
        return rng.choice(n_keys, size=total, p=weights)

    def draw_ramp(self, rng: np.random.Generator, total: int | None = None) -> np.ndarray | None:
        """One uniform number per task deciding gradual changes (``None`` and no draw without a ramp)."""
        return rng.random(self.total if total is None else total) if self.has_ramp else None

    def draw_outcomes(self, rng: np.random.Generator, total: int | None = None) -> np.ndarray | None:
        """One uniform number per task deciding noisy outcomes (``None`` and no draw when deterministic)."""
        return rng.random(self.total if total is None else total) if self.noisy else None

    def succeeds(self, chose_correct: Any, draw: Any) -> Any:
        """Whether a task succeeds: ``draw < p_hit`` for the correct value, ``draw < p_false`` for
        a wrong one (elementwise on arrays); always ``chose_correct`` when ``draw`` is ``None``."""
        if draw is None:
            return chose_correct
        return np.where(chose_correct, draw < self.p_hit, draw < self.p_false) if isinstance(
            chose_correct, np.ndarray) else bool(draw < (self.p_hit if chose_correct else self.p_false))


# ---------------------------------------------------------------- the drawn timeline
def changed_count(fraction: float, n_keys: int) -> int:
    """Keys affected by a fractional change: at least one when the fraction is positive."""
    if fraction <= 0.0:
        return 0
    return min(n_keys, max(1, int(round(fraction * n_keys))))


def _other(rng: np.random.Generator, n_values: int, excluded: set[int]) -> int:
    options = [v for v in range(n_values) if v not in excluded]
    return int(options[int(rng.integers(len(options)))])


@dataclass(frozen=True)
class Timeline:
    """The hidden values of one episode, drawn by :func:`draw_timeline`.

    ``values[s, k]`` is key ``k``'s value in segment ``s`` (for a timed change, the
    value it changes to). For schedules with timed changes, ``events[k]`` lists key
    ``k``'s changes as ``(times, old values, new values, ramps)``, sorted by time.
    """

    schedule: DriftSchedule
    values: np.ndarray
    events: tuple[tuple[list[int], list[int], list[int], list[int]], ...] | None

    def value(self, t: int, k: int, ramp_draw: np.ndarray | None = None) -> int:
        """Key ``k``'s correct value index at task ``t`` (``t`` past the end: the last task's)."""
        segment_of_t = self.schedule._segment_list
        t = min(t, len(segment_of_t) - 1)
        if self.events is None:
            return int(self.values[segment_of_t[t], k])
        times, olds, news, ramps = self.events[k]
        i = bisect.bisect_right(times, t) - 1
        if i < 0:
            return int(self.values[0, k])
        ramp = ramps[i]
        if ramp and t - times[i] < ramp and ramp_draw is not None:
            return news[i] if ramp_draw[t] < (t - times[i] + 1) / (ramp + 1) else olds[i]
        return news[i]

    def task_values(self, task_keys: np.ndarray, ramp_draw: np.ndarray | None = None) -> np.ndarray:
        """The correct value index of every task (``task_keys[t]`` at ``t``)."""
        if self.events is None:
            return self.values[self.schedule.segment_of_task[: len(task_keys)], task_keys]
        return np.fromiter((self.value(t, int(k), ramp_draw) for t, k in enumerate(task_keys)),
                           dtype=np.int64, count=len(task_keys))


def draw_timeline(rng: np.random.Generator, schedule: DriftSchedule, n_keys: int, n_values: int) -> Timeline:
    """Draw every key's values over the schedule, segment by segment, in this order:

    1. segment 0: ``rng.integers(0, n_values, size=n_keys)``, the initial values;
    2. each later segment: the chosen keys (``rng.choice(n_keys, size=changed_count(fraction,
       n_keys), replace=False)``; no draw for ``"all"``), then for each chosen key in that
       order its new value (``"switch"``: one ``rng.integers`` over the values it may take;
       ``"return"``: no draw), then with ``spread`` the chosen keys' offsets
       (``rng.integers(0, spread + 1, size=len(chosen))``);
    3. in a segment with ``hazard`` (after 1 or 2), for each key in order: geometric gaps
       (``rng.geometric(hazard)``) until the segment ends, each change followed by its new
       value (one ``rng.integers`` over the values other than the current one).
    """
    check_int("n_values", n_values, low=2)  # drift needs another value to change to
    check_int("n_keys", n_keys, low=1)
    segments = schedule.segments
    values = np.empty((len(segments), n_keys), dtype=np.int64)
    timed = schedule.timed
    events: list[tuple[list[int], list[int], list[int], list[int]]] = [([], [], [], []) for _ in range(n_keys)]
    history: list[set[int]] = []
    current: list[int] = []
    for s, (segment, start) in enumerate(zip(segments, schedule.starts)):
        if s == 0:
            values[0] = rng.integers(0, n_values, size=n_keys)
            history = [{int(v)} for v in values[0]]
            current = [int(v) for v in values[0]]
        else:
            values[s] = current
            if segment.change != "none":
                if segment.fraction == ALL_KEYS:
                    chosen = list(range(n_keys))
                else:
                    chosen = [int(k) for k in rng.choice(n_keys, size=changed_count(float(segment.fraction), n_keys),
                                                         replace=False)]
                for k in chosen:
                    if segment.change == "switch":
                        excluded = history[k] if len(history[k]) < n_values else {current[k]}
                        values[s, k] = _other(rng, n_values, excluded)
                    else:
                        values[s, k] = values[segment.to, k]
                offsets = (rng.integers(0, segment.spread + 1, size=len(chosen)).tolist() if segment.spread
                           else [0] * len(chosen))
                for k, offset in zip(chosen, offsets):
                    new = int(values[s, k])
                    if timed:
                        times, olds, news, ramps = events[k]
                        times.append(start + int(offset))
                        olds.append(current[k])
                        news.append(new)
                        ramps.append(segment.ramp)
                    history[k].add(new)
                    current[k] = new
        if segment.hazard:
            for k in range(n_keys):
                offset = 0
                while True:
                    offset += int(rng.geometric(segment.hazard))
                    if offset >= segment.length:
                        break
                    new = _other(rng, n_values, {current[k]})
                    times, olds, news, ramps = events[k]
                    times.append(start + offset)
                    olds.append(current[k])
                    news.append(new)
                    ramps.append(0)
                    history[k].add(new)
                    current[k] = new
    # Events are in time order: a spread offset stays inside its segment, and hazard excludes spread.
    return Timeline(schedule, values, tuple(events) if timed else None)


# --------------------------------------------------------------------------- presets
def four_phase(phase_lengths: Sequence[int] = (40, 40, 40, 40), light_drift_fraction: float = 0.5,
               partial_return_fraction: float = 0.5, *, ramp: Callable[[int], int] | None = None,
               spread: Callable[[int], int] | None = None, **outcome: float) -> DriftSchedule:
    """The paper's four phases: ``stable``; ``light_drift`` (a ``light_drift_fraction`` of
    keys switch); ``full_reversal`` (every key switches to a value it has not had);
    ``partial_return`` (a ``partial_return_fraction`` of keys return to their stable value).
    ``ramp``/``spread`` give each change's ramp or spread from its phase's length."""
    lengths = check_phase_lengths(tuple(phase_lengths) if isinstance(phase_lengths, list) else phase_lengths)
    light = check_probability("light_drift_fraction", light_drift_fraction)
    back = check_probability("partial_return_fraction", partial_return_fraction)

    def timing(length: int) -> dict[str, int]:
        return {"ramp": ramp(length) if ramp else 0, "spread": spread(length) if spread else 0}

    return DriftSchedule((
        Segment(lengths[0], name=PHASE_NAMES[0]),
        Segment(lengths[1], "switch", light, name=PHASE_NAMES[1], **timing(lengths[1])),
        Segment(lengths[2], "switch", ALL_KEYS, name=PHASE_NAMES[2], **timing(lengths[2])),
        Segment(lengths[3], "return", back, to=0, name=PHASE_NAMES[3], **timing(lengths[3])),
    ), **outcome)


RECURRING_NAMES: tuple[str, ...] = ("regime_a", "regime_b", "back_to_a", "back_to_b")
POISSON_NAMES: tuple[str, ...] = ("stable", "random_1", "random_2", "random_3")


def _recurring(lengths: tuple[int, ...]) -> DriftSchedule:
    return DriftSchedule((
        Segment(lengths[0], name=RECURRING_NAMES[0]),
        Segment(lengths[1], "switch", name=RECURRING_NAMES[1]),
        Segment(lengths[2], "return", to=0, name=RECURRING_NAMES[2]),
        Segment(lengths[3], "return", to=1, name=RECURRING_NAMES[3]),
    ))


def _poisson(lengths: tuple[int, ...]) -> DriftSchedule:
    return DriftSchedule((Segment(lengths[0], name=POISSON_NAMES[0]),) + tuple(
        Segment(length, hazard=1.0 / length, name=name) for length, name in zip(lengths[1:], POISSON_NAMES[1:])))


@dataclass(frozen=True)
class Preset:
    """A named schedule built from four phase lengths (and, where it uses them, the fractions)."""

    name: str
    summary: str
    build: Callable[[tuple[int, ...], float, float], DriftSchedule]
    uses_fractions: bool = True
    phase_names: tuple[str, ...] = PHASE_NAMES


NOISY_P_HIT = 0.9
NOISY_P_FALSE = 0.1
ZIPF_EXPONENT = 1.0

PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset("paper", "the paper's four phases, deterministic outcomes",
           lambda lengths, light, back: four_phase(lengths, light, back)),
    Preset("noisy", f"the four phases; the correct value succeeds w.p. {NOISY_P_HIT}, a wrong one w.p. {NOISY_P_FALSE}",
           lambda lengths, light, back: four_phase(lengths, light, back, p_hit=NOISY_P_HIT, p_false=NOISY_P_FALSE)),
    Preset("gradual", "the four phases; each change ramps in over half its phase",
           lambda lengths, light, back: four_phase(lengths, light, back, ramp=lambda n: max(1, n // 2))),
    Preset("async", "the four phases; each changed key changes at its own time in the first half of the phase",
           lambda lengths, light, back: four_phase(lengths, light, back, spread=lambda n: n // 2)),
    Preset("zipf", f"the four phases; keys Zipf-distributed (exponent {ZIPF_EXPONENT})",
           lambda lengths, light, back: four_phase(lengths, light, back, zipf=ZIPF_EXPONENT)),
    Preset("recurring", "A -> B -> A -> B: every key alternates between two values",
           lambda lengths, light, back: _recurring(lengths), uses_fractions=False, phase_names=RECURRING_NAMES),
    Preset("poisson", "a stable phase, then random per-key change points, about one per key per phase",
           lambda lengths, light, back: _poisson(lengths), uses_fractions=False, phase_names=POISSON_NAMES),
)}
"""The named schedules, by name."""

DEFAULT_FRACTIONS = (0.5, 0.5)


def preset(name: str, phase_lengths: Sequence[int] = (40, 40, 40, 40), light_drift_fraction: float = 0.5,
           partial_return_fraction: float = 0.5, *,
           default_fractions: tuple[float, float] = DEFAULT_FRACTIONS) -> DriftSchedule:
    """The schedule of the preset ``name`` (:data:`PRESETS`) over four phases of ``phase_lengths``.

    Presets that do not use the fractions (``recurring``, ``poisson``) refuse values
    other than ``default_fractions`` (the environment's defaults; ``ValueError`` naming
    the argument)."""
    if not isinstance(name, str):
        raise TypeError(f"schedule must be a preset name, a DriftSchedule or a dict, got {type(name).__name__}")
    if name not in PRESETS:
        raise ValueError(f"schedule must be one of {', '.join(PRESETS)} (or a DriftSchedule or a dict), got {name!r}")
    lengths = check_phase_lengths(tuple(phase_lengths) if isinstance(phase_lengths, list) else phase_lengths)
    light = check_probability("light_drift_fraction", light_drift_fraction)
    back = check_probability("partial_return_fraction", partial_return_fraction)
    entry = PRESETS[name]
    if not entry.uses_fractions:
        for argument, value, default in (("light_drift_fraction", light, default_fractions[0]),
                                         ("partial_return_fraction", back, default_fractions[1])):
            if value != default:
                raise ValueError(f"{argument} does not apply to schedule {name!r} (every key changes at each "
                                 f"of its phase boundaries or at random); leave it at {default}")
    return entry.build(lengths, light, back)


def resolve_schedule(schedule: object, phase_lengths: Sequence[int], light_drift_fraction: float,
                     partial_return_fraction: float, *, default_lengths: Sequence[int] = (40, 40, 40, 40),
                     default_fractions: tuple[float, float] = DEFAULT_FRACTIONS) -> DriftSchedule:
    """An environment's ``schedule`` argument as a :class:`DriftSchedule`: a preset name is
    built over ``phase_lengths`` and the fractions; a :class:`DriftSchedule` or its dict
    form sets its own lengths, so ``phase_lengths`` and the fractions must keep the
    environment's defaults (``default_lengths``, ``default_fractions``; ``ValueError``
    naming the one that does not)."""
    if isinstance(schedule, str):
        return preset(schedule, phase_lengths, light_drift_fraction, partial_return_fraction,
                      default_fractions=default_fractions)
    if isinstance(schedule, Mapping):
        schedule = DriftSchedule.from_dict(schedule)
    if not isinstance(schedule, DriftSchedule):
        raise TypeError(f"schedule must be a preset name, a DriftSchedule or a dict, got {type(schedule).__name__}")
    for argument, value, default in (("phase_lengths", tuple(phase_lengths), tuple(default_lengths)),
                                     ("light_drift_fraction", light_drift_fraction, default_fractions[0]),
                                     ("partial_return_fraction", partial_return_fraction, default_fractions[1])):
        if value != default:
            raise ValueError(f"{argument} applies to a named schedule only: a DriftSchedule sets its own "
                             f"segments; leave {argument} at its default {default}")
    return schedule


def refuse_outcome_model(schedule: DriftSchedule, env_name: str, why: str) -> DriftSchedule:
    """``schedule`` for an environment whose outcomes and key frequency are its own
    (``why`` says so): ``ValueError`` naming ``p_hit``/``p_false`` or ``zipf`` when set."""
    if schedule.noisy:
        field_name = "p_hit" if schedule.p_hit < 1.0 else "p_false"
        raise ValueError(f"{field_name} does not apply to {env_name} ({why}); use a schedule without noisy "
                         f"outcomes (p_hit=1, p_false=0)")
    if schedule.zipf:
        raise ValueError(f"zipf does not apply to {env_name} ({why}); use a schedule with zipf=0")
    return schedule


__all__ = [
    "ALL_KEYS", "CHANGES", "DriftSchedule", "MAX_SEGMENTS", "MAX_TASKS", "MAX_ZIPF", "POISSON_NAMES", "PRESETS",
    "Preset", "RECURRING_NAMES", "Segment", "Timeline", "changed_count", "draw_timeline", "four_phase", "preset",
    "refuse_outcome_model", "resolve_schedule",
]
