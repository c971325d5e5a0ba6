"""``two-strike``: last success wins, two failures let go, elimination proposes the
replacement, and a reader that does not explore on its own is given something to
reject.

Designed (issue 31) to lead on both axes at once: what the memory shows (view
accuracy against the oracle) and what a reader following it achieves (closed-loop
success). The diagnosis it answers: last-write-wins shows the newest success, which is
the best view, but never lets go of a value that stopped working (a reader that follows
it never produces the success that would replace it); TEPA lets go after two failures,
but keeps a refuted value through its first failure and needs three supports before it
shows a new one (slow views).

Per key, per value the memory keeps: the time of its last success (or assertion),
its successes, its failures since that success (*strikes*) and the time of its last
failure. The rules, all of them:

1. **Write.** A success or an asserted value (``outcome`` ``True``/``None``) sets the
   value's last success to now and its strikes to 0. A failure adds a strike.
2. **Hold.** A value is *held* while it has a success and fewer than ``strikes``
   (default 2) strikes since it. Held values are shown first, the key's *leader*
   first, then the others newest success first. The leader is the value that last
   worked (last success wins, as in LWW), except on a stream seen to be noisy
   (below): there a value takes the lead from a held leader with no strike only with
   two successes since the leader's last success (one lucky outcome of a wrong value
   does not unseat a value that has not failed). A stream is *seen to be noisy* once
   two held values worked again after a failure (with ``guard="adaptive"``, the
   default; ``"always"``/``"never"`` fix it): on a deterministic stream one failure
   of the only correct value means it changed, and it does not work again at once.
3. **Let go.** At its ``strikes``-th failure since it last worked, a value is *let go*:
   it is no longer shown first (an audit event ``ACTIVE -> REVOKED``). One failure does
   not prove a change (noisy outcomes, one-off wrong feedback); two in a row without a
   success between do, on every stream we know of. A let-go value that works again is
   held again (``REVOKED -> ACTIVE``: recurring regimes).
4. **Eliminate.** When no value is held, the key's *open* values are shown next: values
   seen for the key (tried or asserted) that have not failed since the key last worked
   (the newest success of any of its values). A failure before that time says nothing
   about the current truth (the truth changed after it); a failure after it does. Open
   values with a past success come first (newest first: a regime that returns), then the
   others in the order they were first seen. A value that returns (A -> B -> A) is
   shown again as soon as B is let go, before anything succeeds.
5. **Context.** After the first value, the key's other known values follow (held, open,
   let go, never worked), so a reader sees the alternatives (a language model follows
   the first of several listed values more readily than a lone one); they never change
   what is shown first.
6. **A reader that does not explore.** When nothing is held or open, the memory shows
   nothing, so the reader explores, unless the reader has shown that it does not
   explore when shown nothing: after an empty view the memory sees what the reader
   chose (the next evidence for that key); when, over the episode, the reader chose
   the same value for a key as after the key's previous empty view in at least 80 % of
   such pairs (Beta(1, 1) posterior mean, at least 4 pairs), a reader shown nothing
   repeats itself (``never-explore``, a small model that takes the first option). Then
   the memory shows the key's known value that failed longest ago, alone: a value to
   reject, which such a reader leaves more often than it explores on an empty prompt.
   When the reader followed that value twice in a row for the key, the next view is
   empty again (so a reader misjudged as not exploring is not held on a wrong value,
   and the judgement keeps being measured).

There is no trial, no posterior and no threshold fitted to a scenario; ``strikes`` (2:
the smallest that survives one wrong outcome) and the rule-6 constants
(:data:`REPEAT_SHARE`, :data:`MIN_PAIRS`) were set on the development seeds (0-199)
of the suite and frozen before the held-out report (``benchmarks/new_memory.py``). Every change of
standing is an :class:`~tepa_envs.core.AuditEvent` in :attr:`TwoStrike.audit_log`
(``None -> ACTIVE`` first success, ``ACTIVE -> REVOKED`` let go, ``REVOKED -> ACTIVE``
works again), so a user can ask why a value stopped being shown.
"""

from __future__ import annotations

from dataclasses import dataclass

from tepa_envs.core import AuditEvent, Evidence, LifecycleState, Record, check_choice, check_positive_int

from tepa_envs.agents.memories.protocol import MemoryBase

ACTIVE = LifecycleState.ACTIVE
HYPOTHESIS = LifecycleState.HYPOTHESIS
REVOKED = LifecycleState.REVOKED
REPEAT_SHARE = 0.8
"""Rule 6: the share of repeated choices after empty views above which a reader is taken not to explore."""
GUARDS: tuple[str, ...] = ("adaptive", "always", "never")
MIN_PAIRS = 4
"""Rule 6: pairs of empty views (same key) needed before the reader is judged."""


@dataclass(slots=True)
class _Value:
    id: int
    value: str
    first_seen: int
    last_ok: int = -1
    """Time of the last success or assertion (-1: never)."""
    prev_ok: int = -1
    """Time of the success before the last one (-1: none)."""
    successes: int = 0
    strikes: int = 0
    """Failures since the last success."""
    last_fail: int = -1
    held: bool = False


class TwoStrike(MemoryBase):
    """Last success wins; a value is let go at its second failure since it last worked;
    elimination proposes the replacement (rules in the module docstring).

    Args:
        strikes: failures since a value last worked that let it go (default 2).
        probe_reader: rule 6 (default ``True``): when the reader is seen not to explore
            on an empty view, show a value to reject instead of nothing.
        guard: rule 2's noise guard: ``"adaptive"`` (default: once the stream is seen
            to be noisy), ``"always"`` or ``"never"``.
    """

    name = "two-strike"

    def __init__(self, *, strikes: int = 2, probe_reader: bool = True, guard: str = "adaptive") -> None:
        super().__init__()
        self.guard = check_choice("guard", guard, GUARDS)
        self.strikes = check_positive_int("strikes", strikes)
        if not isinstance(probe_reader, bool):
            raise TypeError(f"probe_reader must be a bool, got {type(probe_reader).__name__}")
        self.probe_reader = probe_reader
        self._reset()

    def _reset(self) -> None:
        self._values: dict[str, dict[str, _Value]] = {}
        self._anchor: dict[str, int] = {}
        """Per key, the newest success of any of its values (-1: never worked)."""
        self._events: list[AuditEvent] = []
        self._next_id = 0
        self._leader: dict[str, _Value] = {}
        self.comebacks = 0
        self._probe_shown: dict[str, str] = {}
        self._probe_follows: dict[str, int] = {}
        self._empty_shown: set[str] = set()
        self._empty_choice: dict[str, str] = {}
        self.empty_pairs = 0
        self.empty_repeats = 0

    # ------------------------------------------------------------------ write
    def _observe(self, evidence: Evidence) -> None:
        key, t = evidence.key, evidence.t
        values = self._values.get(key)
        if values is None:
            values = self._values[key] = {}
        entry = values.get(evidence.value)
        if entry is None:
            entry = values[evidence.value] = _Value(self._next_id, evidence.value, t)
            self._next_id += 1
        if key in self._empty_shown:  # rule 6: what the reader chose after an empty view
            self._empty_shown.discard(key)
            previous = self._empty_choice.get(key)
            if previous is not None:
                self.empty_pairs += 1
                self.empty_repeats += previous == evidence.value
            self._empty_choice[key] = evidence.value
        probe = self._probe_shown.pop(key, None)
        if probe is not None:
            self._probe_follows[key] = self._probe_follows.get(key, 0) + 1 if probe == evidence.value else 0
        leader = self._leader.get(key)
        if evidence.outcome is False:
            entry.strikes += 1
            entry.last_fail = t
            if entry.held and entry.strikes >= self.strikes:
                entry.held = False
                self._log(key, entry, ACTIVE, REVOKED, t, f"{entry.strikes} failures since it last worked")
                if leader is entry:
                    held = [v for v in values.values() if v.held]
                    if held:
                        self._leader[key] = max(held, key=lambda v: v.last_ok)
                    else:
                        del self._leader[key]
            return
        was = REVOKED if entry.last_ok >= 0 else None
        if entry.held and entry.strikes > 0:
            self.comebacks += 1
        entry.prev_ok = entry.last_ok
        entry.last_ok = t
        entry.successes += 1
        entry.strikes = 0
        self._anchor[key] = t
        if not entry.held:
            entry.held = True
            self._log(key, entry, was, ACTIVE, t, "worked" if evidence.outcome else "asserted")
        if (leader is None or not leader.held or leader.strikes > 0 or not self.noisy
                or entry.prev_ok > leader.last_ok):
            self._leader[key] = entry

    @property
    def noisy(self) -> bool:
        """Whether rule 2's noise guard applies now."""
        if self.guard == "adaptive":
            return self.comebacks >= 2
        return self.guard == "always"

    def _log(self, key: str, entry: _Value, before: LifecycleState | None, after: LifecycleState, t: int,
             reason: str) -> None:
        self._events.append(AuditEvent(entry.id, key, entry.value, before, after, t, reason))

    # ------------------------------------------------------------------- read
    def _order(self, key: str) -> tuple[list[_Value], list[_Value]]:
        """The key's values in the order shown (rules 2, 4, 5), and which of them may lead."""
        values = self._values.get(key)
        if not values:
            return [], []
        anchor = self._anchor.get(key, -1)
        leader = self._leader.get(key)
        held = sorted((v for v in values.values() if v.held), key=lambda v: (v is not leader, -v.last_ok))
        open_ = sorted((v for v in values.values() if not v.held and v.last_fail < anchor + (anchor < 0)),
                       key=lambda v: (v.last_ok < 0, -v.last_ok, v.first_seen))
        lead = held + open_
        leading = {v.id for v in lead}
        rest = sorted((v for v in values.values() if v.id not in leading),
                      key=lambda v: (v.last_ok < 0, -v.last_ok, v.first_seen))
        return lead + rest, lead

    def _retrieve(self, key: str, context: str) -> list[Record]:
        ordered, lead = self._order(key)
        if not lead:
            if (ordered and self.probe_reader and self.reader_repeats_itself
                    and self._probe_follows.get(key, 0) < 2):
                probe = min(ordered, key=lambda v: (v.last_fail, v.first_seen))  # rule 6
                self._probe_shown[key] = probe.value
                return [self._record(key, probe, len(ordered) - 1)]
            self._probe_follows[key] = 0
            self._empty_shown.add(key)
            return []
        self._empty_shown.discard(key)
        conflict = len(ordered) - 1
        return [self._record(key, v, conflict) for v in ordered]

    @property
    def reader_repeats_itself(self) -> bool:
        """Rule 6: whether the reader, shown nothing, is seen to repeat its choice."""
        return (self.empty_pairs >= MIN_PAIRS
                and (self.empty_repeats + 1) / (self.empty_pairs + 2) >= REPEAT_SHARE)

    @staticmethod
    def _record(key: str, v: _Value, conflict: int) -> Record:
        state = ACTIVE if v.held else (HYPOTHESIS if v.last_ok < 0 else REVOKED)
        created = v.first_seen if v.last_ok < 0 else v.last_ok
        return Record(key, v.value, v.successes, conflict, state, v.first_seen, max(created, v.last_fail), 0.0)

    # ------------------------------------------------------------------ audit
    @property
    def audit_log(self) -> tuple[AuditEvent, ...]:
        """Every change of standing, in order (append-only)."""
        return tuple(self._events)

    def explain(self, key: str) -> list[AuditEvent]:
        """The audit events of ``key``."""
        return [event for event in self._events if event.key == key]


__all__ = ["GUARDS", "MIN_PAIRS", "REPEAT_SHARE", "TwoStrike"]
