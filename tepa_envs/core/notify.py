"""Change notification: what a task-stream environment tells the agent about drift.

Every task-stream environment (RegimeDrift and its scenarios, FileOps,
PreferenceStream, and the native RegimeDrift vector env) takes
``notify`` (:data:`NOTIFY_LEVELS`), the three levels of NS-Gym's change
notification:

* ``"none"`` (the default): nothing is told; observation, ``info`` and every
  number are exactly as without the argument (no ``notified`` key, no extra
  observation component).
* ``"known"``: the flag is true on the first task that presents a key after a
  **true change** of that key's correct value: the task's correct value differs
  from the correct value the key had when it was last presented (a key's first
  presentation is never flagged; a change that is undone before the key is
  presented again, A -> B -> A, is not a change). This is exactly when the
  per-key ``oracle-reset`` bound clears a key, so ``oracle-reset`` is the
  ``known`` end of the dial.
* ``"detected"``: the same flag from a noisy detector (:class:`ChangeNotifier`):
  each true change is flagged after a delay of ``D`` further presentations of
  its key, ``D`` geometric on ``{0, 1, 2, ...}`` with mean ``detect_delay``
  (``P(D = d) = p (1 - p)^d``, ``p = 1 / (1 + detect_delay)``; ``D = 0`` flags
  the first task after the change, as ``known`` does); and every presentation of
  a key after its first raises a false alarm with probability
  ``false_alarm_rate``, independently. A change that comes while an alarm of the
  same key is pending keeps the earlier due presentation (one flag announces
  both); an alarm still pending when the episode ends is never raised.

Where the flag goes: the observation (every task-stream observation space is a
``MultiDiscrete``) gains one component of size 2 after the environment's own,
and ``info["notified"]`` (bool) is added to every ``info`` (reset, every step,
the terminal step: ``False`` there) in both info schemas; with ``"none"`` the key
is absent, so each configuration keeps one fixed structure.

The detector draws from its own generator, spawned from the environment's
seeded ``np_random`` at every ``reset`` (``np_random.spawn(1)``, which leaves
``np_random``'s own stream untouched), so the world (tasks, regimes, outcomes)
is identical across notification levels for the same seed. Its draws come in a
fixed order per presentation (the false-alarm uniform, then, on a true change,
the delay), so the native vector env computes the same flags from the same
spawned generator (:func:`notify_flags`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Hashable, Sequence

import numpy as np

from tepa_envs.core.checks import check_choice, check_number, check_probability, check_str

NOTIFY_LEVELS = ("none", "detected", "known")
"""Values of a task-stream environment's ``notify`` argument (module docstring)."""
DEFAULT_NOTIFY = "none"
DEFAULT_DETECT_DELAY = 1.0
"""Default mean of the detector's geometric delay, in presentations of the key: half the
changes are flagged on their first task, a quarter one presentation later, ... About what
a detector that needs one failure of the old value achieves (the first presentation after
a change fails; the flag comes with the next one)."""
DEFAULT_FALSE_ALARM_RATE = 0.02
"""Default false-alarm probability per presentation: on ``TEPA/RegimeDrift-v0`` (160
tasks of one key, three true changes) about three false alarms an episode, as many as
true changes."""
MAX_DETECT_DELAY = 1000.0
"""Largest ``detect_delay`` (a mean beyond any episode's presentations of a key is a typo)."""
NOTIFIED_KEY = "notified"
"""The ``info`` key of the flag (present exactly when ``notify != "none"``)."""


@dataclass(frozen=True, slots=True)
class NotifySettings:
    """A validated notification configuration (:func:`check_notify`)."""

    level: str = DEFAULT_NOTIFY
    detect_delay: float = DEFAULT_DETECT_DELAY
    false_alarm_rate: float = DEFAULT_FALSE_ALARM_RATE

    @property
    def enabled(self) -> bool:
        """Whether the observation and ``info`` carry the flag (``level != "none"``)."""
        return self.level != "none"

    @property
    def delay_p(self) -> float:
        """The success probability of the geometric delay, ``1 / (1 + detect_delay)``."""
        return 1.0 / (1.0 + self.detect_delay)


def check_notify(notify: object, detect_delay: object = DEFAULT_DETECT_DELAY,
                 false_alarm_rate: object = DEFAULT_FALSE_ALARM_RATE) -> NotifySettings:
    """Validate the three arguments (``TypeError``/``ValueError`` naming the field), before
    an environment changes any state. ``detect_delay`` and ``false_alarm_rate`` are checked
    whatever the level (and used only by ``"detected"``)."""
    level = check_choice("notify", check_str("notify", notify), NOTIFY_LEVELS)
    delay = check_number("detect_delay", detect_delay)  # type: ignore[arg-type]
    if math.isnan(delay) or not 0.0 <= delay <= MAX_DETECT_DELAY:
        raise ValueError(f"detect_delay must be in [0, {MAX_DETECT_DELAY:g}], got {delay}")
    rate = check_probability("false_alarm_rate", false_alarm_rate)  # type: ignore[arg-type]
    return NotifySettings(level, delay, rate)


def notifier_rng(np_random: np.random.Generator) -> np.random.Generator:
    """The detector's generator for one episode: a child spawned from the environment's
    ``np_random`` (its own draws are unchanged; the same seed gives the same child)."""
    return np_random.spawn(1)[0]


@dataclass(slots=True)
class ChangeNotifier:
    """The flag of one episode, presentation by presentation (:meth:`present`).

    Args:
        settings: the level and the detector's parameters.
        rng: the detector's generator (:func:`notifier_rng`); only ``"detected"`` draws from it.
    """

    settings: NotifySettings
    rng: np.random.Generator | None = None
    _last: dict[Hashable, Hashable] = field(default_factory=dict)
    _seen: dict[Hashable, int] = field(default_factory=dict)
    _due: dict[Hashable, int] = field(default_factory=dict)

    def present(self, key: Hashable, correct: Hashable) -> bool:
        """Whether the flag is raised on this presentation of ``key`` whose correct value is ``correct``."""
        level = self.settings.level
        if level == "none":
            return False
        last = self._last.get(key)
        self._last[key] = correct
        changed = last is not None and last != correct
        if level == "known":
            return changed
        n = self._seen.get(key, 0)  # this is the key's n-th presentation (0 = first)
        self._seen[key] = n + 1
        rng = self.rng
        if rng is None:
            raise ValueError("notify='detected' needs the detector's generator (rng)")
        false_alarm = n > 0 and bool(rng.random() < self.settings.false_alarm_rate)
        if changed:
            due = n + int(rng.geometric(self.settings.delay_p)) - 1
            pending = self._due.get(key)
            self._due[key] = due if pending is None else min(pending, due)
        scheduled = self._due.get(key)
        detected = scheduled is not None and scheduled <= n
        if detected:
            del self._due[key]
        return detected or false_alarm


def notify_flags(settings: NotifySettings, rng: np.random.Generator | None, keys: Sequence[Hashable],
                 correct: Sequence[Hashable]) -> np.ndarray:
    """The flag of every task of a stream whose task ``t`` presents ``keys[t]`` with correct
    value ``correct[t]``: the same draws, in the same order, as an environment's
    :class:`ChangeNotifier` over the stream (a ``bool`` array of ``len(keys)``)."""
    notifier = ChangeNotifier(settings, rng)
    return np.fromiter((notifier.present(k, c) for k, c in zip(keys, correct)), dtype=bool, count=len(keys))


__all__ = ["NOTIFY_LEVELS", "DEFAULT_NOTIFY", "DEFAULT_DETECT_DELAY", "DEFAULT_FALSE_ALARM_RATE",
           "MAX_DETECT_DELAY", "NOTIFIED_KEY", "NotifySettings", "ChangeNotifier", "check_notify",
           "notifier_rng", "notify_flags"]
