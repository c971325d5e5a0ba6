"""TEPA-Regime: TEPA that also reasons across keys (``tepa-regime``).

TEPA revokes per key: a precedent goes only after its own failures (with the
defaults, two of its last three uses), so when a regime change hits many keys at
once every stale precedent is used and fails twice before it goes. TEPA-Regime
watches the precedents of all keys together. When failures of several keys'
active precedents come close together, it takes them as a regime change: the
precedents whose failures raised the alarm are revoked at once (their failure is
now explained by the change, not by chance), and every other active precedent goes
on **probation**: it is still retrieved, but its next own use decides it: a failure
revokes it at once (instead of after a second failure), a success confirms it and
ends the probation. A key that did not change loses nothing (its precedent succeeds
and is confirmed); a key that changed loses one failure instead of two.

**The rule** (every threshold a named argument). Let the *cross-key window* be the
last ``regime_window`` outcomes of uses of active precedents, of any key (a use is
evidence whose value is the key's active precedent, with a success or failure
outcome; assertions, and uses of values without an active precedent, do not enter
it). A *regime alarm* is raised when the window is full, its success rate is below
``regime_rate``, and its failures belong to at least ``regime_keys`` distinct keys.
At the alarm, each active precedent whose latest use (in the window) failed is
revoked (``revoke_failed=True``; with ``False`` it goes on probation like the others,
the ablation), and every other active precedent is put on probation. The window
is then emptied, so each alarm rests on fresh evidence.

Defaults: the window and rate are TEPA's own recent-success rule
(``regime_window = n_rec = 3``, ``regime_rate = theta_rec = 0.34``: at most one
success in the last three), lifted from one precedent's uses to the uses of all
precedents: the evidence TEPA already takes as enough to revoke one precedent, seen
across keys. ``regime_keys = 2``: the fewest keys that make a failure pattern
cross-key (one key's failures are its own precedent's business, which TEPA's
per-key rules handle). With a single key the alarm can never fire and TEPA-Regime
is TEPA.

**Shown or hidden on probation** (``probation``, a named choice the idea leaves open).
``"shown"`` (default): a precedent on probation is still retrieved, so the reader keeps
acting on it until its next use decides it. ``"hidden"``: it is not retrieved while
on probation; it is still decided by its next use (when the agent picks its value
for another reason). Which is better depends on what the agent does when its memory
shows nothing: if it explores blindly (RegimeDrift), hiding a still-valid precedent
costs a guess, and ``"shown"`` wins on every RegimeDrift scenario; if the task itself
usually tells the answer (the preference stream, where the user states the
preference), hiding a stale one costs nothing, and ``"hidden"`` wins there and is the
one way found to stay above no memory in its full reversal. The README's
TEPA-Regime section has the measured trade-off.

**Lifecycle and audit.** Probation is not a lifecycle state: a precedent on probation
stays ``ACTIVE`` (retrieved unless ``probation="hidden"``), so :func:`~tepa_envs.agents.memories.tepa.replay_audit`
rebuilds the states from :attr:`audit_log` exactly as for TEPA. A revocation on
probation or at an alarm is an ordinary ``ACTIVE -> REVOKED`` event in the audit log
(reason ``"failed on probation after the regime alarm at t=..."`` or ``"failed in the
regime alarm at t=... (keys ...)"``), the precedent goes to the
archive, and its value can be re-proposed and re-promoted like any revoked value.
The alarms are in :attr:`regime_alarms` and every probation event (start,
confirmation, end by revocation) in :attr:`probation_log`;
:meth:`explain_probation` lists a key's.
"""

from __future__ import annotations

from collections import deque
from typing import Any, NamedTuple

from tepa_envs.core import Evidence, check_int, check_probability

from tepa_envs.agents.memories.tepa import TEPA
from tepa_envs.agents.memories.tepa_rules import ACTIVE, REVOKED, Precedent


PROBATION_MODES: tuple[str, ...] = ("shown", "hidden")
"""Whether a precedent on probation is retrieved (see the module docstring)."""


class RegimeAlarm(NamedTuple):
    """A cross-key regime alarm: when, the keys whose failures raised it, the precedents
    it revoked and those it put on probation (ids)."""

    t: int
    failing_keys: tuple[str, ...]
    revoked: tuple[int, ...]
    on_probation: tuple[int, ...]


class ProbationEvent(NamedTuple):
    """A precedent put on probation (``"start"``), confirmed by a success
    (``"confirmed"``) or revoked while on probation (``"revoked"``)."""

    precedent_id: int
    key: str
    value: str
    t: int
    event: str
    alarm_t: int


class TEPARegime(TEPA):
    """TEPA plus cross-key regime alarms that put active precedents on probation.

    See the module docstring for the rule and its defaults.

    Args:
        regime_window: precedent outcomes (of any key) in the cross-key window
            (default: TEPA's ``n_rec``).
        regime_rate: an alarm needs the window's success rate below this
            (default: TEPA's ``theta_rec``).
        regime_keys: an alarm needs failures of at least this many distinct keys in
            the window (default 2; at least 2, so one key's failures never raise it).
        revoke_failed: at an alarm, revoke the precedents whose latest use failed
            (default ``True``); ``False`` puts them on probation with the others.
        probation: ``"shown"`` (default: a precedent on probation is still retrieved)
            or ``"hidden"`` (it is not retrieved until its next use confirms it).
        **kwargs: TEPA's arguments.
    """

    name = "tepa-regime"

    regime_window: int = 1
    """Outcomes in the cross-key window (``__init__`` sets it once TEPA's ``n_rec`` is resolved;
    until then, while TEPA's constructor runs ``_reset``, the window is this size)."""

    def __init__(self, *, regime_window: int | None = None, regime_rate: float | None = None,
                 regime_keys: int = 2, revoke_failed: bool = True, probation: str = "shown",
                 **kwargs: Any) -> None:
        # Refused before anything is set (TEPA's own arguments are checked by TEPA.__init__).
        window = None if regime_window is None else check_int("regime_window", regime_window, low=1)
        rate = None if regime_rate is None else check_probability("regime_rate", regime_rate)
        keys = check_int("regime_keys", regime_keys, low=2)
        if not isinstance(revoke_failed, bool):
            raise TypeError(f"revoke_failed must be a bool, got {type(revoke_failed).__name__}")
        if not isinstance(probation, str):
            raise TypeError(f"probation must be a str, 'shown' or 'hidden'; got {type(probation).__name__}")
        if probation not in PROBATION_MODES:
            raise ValueError(f"probation must be one of {', '.join(PROBATION_MODES)}, got {probation!r}")
        if window is not None and keys > window:
            raise ValueError(f"regime_keys ({keys}) cannot exceed regime_window ({window}): "
                             "the alarm could never fire")
        super().__init__(**kwargs)
        self.regime_window = self.n_rec if window is None else window
        self.regime_rate = self.theta_rec if rate is None else rate
        self.regime_keys = keys
        self.revoke_failed = revoke_failed
        self.probation = probation
        if self.regime_keys > self.regime_window:
            raise ValueError(f"regime_keys ({keys}) cannot exceed regime_window ({self.regime_window}, "
                             "from n_rec): the alarm could never fire")
        self._window: deque[tuple[str, bool, Precedent]] = deque(maxlen=self.regime_window)

    # ----------------------------------------------------------------- protocol
    def _reset(self) -> None:
        super()._reset()
        self._probation: dict[int, int] = {}  # precedent id -> t of the alarm that put it on probation
        self._window = deque(maxlen=self.regime_window)
        self._alarms: list[RegimeAlarm] = []
        self._probation_log: list[ProbationEvent] = []

    def _observe(self, evidence: Evidence) -> None:
        outcome = evidence.outcome
        if outcome is None:
            super()._observe(evidence)
            return
        key, value, t = evidence.key, evidence.value, evidence.t
        used = self._active_precedent(key, value)
        super()._observe(evidence)
        if used is None:
            return
        alarm_t = self._probation.get(used.id)
        if alarm_t is not None:
            if outcome:
                del self._probation[used.id]
                self._log(used, t, "confirmed", alarm_t)
            elif used.state is not REVOKED:
                self._revoke(self._live[key], used, t, f"failed on probation after the regime alarm at t={alarm_t}")
        self._window.append((key, bool(outcome), used))
        self._check_regime(t)

    def _retrieve(self, key: str, context: str) -> list[Any]:
        records = super()._retrieve(key, context)
        if self.probation == "shown" or not self._probation:
            return records
        return [r for r in records if not self._is_on_probation(key, r.value)]

    def _is_on_probation(self, key: str, value: str) -> bool:
        precedent = self._active_precedent(key, value)
        return precedent is not None and precedent.id in self._probation

    # --------------------------------------------------------------- the rule
    def _active_precedent(self, key: str, value: str) -> Precedent | None:
        for precedent in self._live.get(key, ()):
            if precedent.value == value:
                return precedent if precedent.state is ACTIVE else None
        return None

    def _check_regime(self, t: int) -> None:
        window = self._window
        if len(window) < self.regime_window:
            return
        successes = sum(success for _, success, _ in window)
        if not successes / len(window) < self.regime_rate:
            return
        failing = tuple(dict.fromkeys(k for k, success, _ in window if not success))
        if len(failing) < self.regime_keys:
            return
        latest = {precedent.id: (precedent, success) for _, success, precedent in window}  # last use wins
        window.clear()
        revoked: list[int] = []
        if self.revoke_failed:
            reason = f"failed in the regime alarm at t={t} (keys {', '.join(failing)})"
            for precedent, success in latest.values():
                if not success and precedent.state is ACTIVE:
                    self._revoke(self._live[precedent.key], precedent, t, reason)
                    revoked.append(precedent.id)
        put: list[int] = []
        for live in self._live.values():
            for precedent in live:
                if precedent.state is ACTIVE and precedent.id not in self._probation:
                    self._probation[precedent.id] = t
                    self._log(precedent, t, "start", t)
                    put.append(precedent.id)
        self._alarms.append(RegimeAlarm(t, failing, tuple(revoked), tuple(put)))

    def _revoke(self, live: list[Precedent], precedent: Precedent, t: int, *args: Any, **kwargs: Any) -> None:
        alarm_t = self._probation.pop(precedent.id, None)
        super()._revoke(live, precedent, t, *args, **kwargs)
        if alarm_t is not None:
            self._log(precedent, t, "revoked", alarm_t)

    def _log(self, precedent: Precedent, t: int, event: str, alarm_t: int) -> None:
        self._probation_log.append(ProbationEvent(precedent.id, precedent.key, precedent.value, t, event, alarm_t))

    # ------------------------------------------------------------------- audit
    @property
    def regime_alarms(self) -> tuple[RegimeAlarm, ...]:
        return tuple(self._alarms)

    @property
    def probation_log(self) -> tuple[ProbationEvent, ...]:
        return tuple(self._probation_log)

    def on_probation(self) -> dict[int, int]:
        """The precedents now on probation: id -> t of the alarm that put them there."""
        return dict(self._probation)

    def explain_probation(self, key: str) -> list[ProbationEvent]:
        """The probation events of ``key``'s precedents, in order."""
        return [event for event in self._probation_log if event.key == key]
