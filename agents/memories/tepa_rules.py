"""TEPA's rules, as the paper states them: precedents, their lifecycle, and the
promotion and revocation rules (TEPA-Rev, arXiv 2608.07429).

A *precedent* is a (key, value) pair with support and conflict counts ``s`` and
``f``, a lifecycle state and a window of its most recent outcomes. Its validity is
the Beta(alpha, beta) posterior mean ``q = (s + alpha) / (s + f + alpha + beta)``.

The lifecycle, :data:`TRANSITIONS` (the thresholds are :class:`TEPAParams`; the
choices the paper leaves open are :class:`TEPAChoices`, and what follows describes
the default ``"v0"`` preset):

* **Candidate.** A value seen with success or asserted, with no live precedent,
  is a *candidate* that gathers supports; a failed use discards them.
* **Proposal** (``None -> HYPOTHESIS``). A candidate is proposed as a precedent
  after ``theta_prop`` supports when it challenges a live precedent of its key, or
  after ``theta_prop_fresh`` supports when the key has no live precedent (a fresh
  key, or one whose precedents were all revoked).
* **Promotion** (``HYPOTHESIS -> ACTIVE``). A hypothesis becomes active once
  ``q >= theta_pro`` (a subclass may gate this: TEPA-Full's trials). Only active
  precedents are retrieved, the most valid first, at most ``top_k``.
* **Revocation** (``-> REVOKED``). A live precedent is revoked by the *posterior
  rule* (``q < theta_rev`` after ``n_min`` observations), by the *recent-success
  rule* (its last ``n_rec`` outcomes succeed at a rate below ``theta_rec``), or by
  *supersession* (a newer assertion states a different value for its key).
* **Archive.** A revoked precedent moves to the archive: never retrieved, kept for
  audit. A revoked value supported again is re-proposed as a *new* precedent.

Every transition is appended to the audit log with its reason
(:mod:`~tepa_envs.agents.memories.tepa_audit` stores it compactly).

:class:`TEPARules` runs these rules one method each, and is the reference
the speed kernel (:mod:`~tepa_envs.agents.memories.tepa_kernel`, under
:class:`~tepa_envs.agents.memories.tepa.TEPA`) is held to:
``tests/agents/memories/test_trusted_fast_path.py`` checks that both give the same
results, audit log included. A subclass extends the rules by overriding the
methods of :data:`LIFECYCLE`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from tepa_envs.core import AuditEvent, Evidence, LifecycleState, Record

from tepa_envs.agents.memories.tepa_audit import (
    PROMOTED,
    PROPOSED,
    REVOKED_POSTERIOR,
    REVOKED_RECENT,
    AuditLog,
    AuditParams,
    proposal_reason,
    reason_code,
    reason_text,
)
from tepa_envs.agents.memories.tepa_params import ON_NOTIFY, TEPABase

HYPOTHESIS = LifecycleState.HYPOTHESIS
ACTIVE = LifecycleState.ACTIVE
REVOKED = LifecycleState.REVOKED

TRANSITIONS: Mapping[LifecycleState | None, frozenset[LifecycleState]] = MappingProxyType({
    None: frozenset({HYPOTHESIS}),
    HYPOTHESIS: frozenset({ACTIVE, REVOKED}),
    ACTIVE: frozenset({REVOKED}),
    REVOKED: frozenset(),
})
"""The lifecycle's transitions: from a state (``None``: not yet a precedent) to those it may reach."""

DEMOTE_TRANSITIONS: Mapping[LifecycleState | None, frozenset[LifecycleState]] = MappingProxyType({
    **TRANSITIONS, ACTIVE: frozenset({HYPOTHESIS, REVOKED})})
""":data:`TRANSITIONS` and Active -> Hypothesis: the lifecycle of a TEPA built with
``on_notify="demote"``, which demotes a key's Active precedents on a change notification
(not a transition of the paper's lifecycle; every other option keeps :data:`TRANSITIONS`)."""

LIFECYCLE: tuple[str, ...] = (
    "_observe", "_record_failure", "_count_conflicts", "_support", "_fail_candidate", "_break_runs",
    "_drop_candidate", "_propose", "validity", "_consider_promotion", "_promote", "_check_revocation", "_revoke")
"""The rule methods a subclass may override (the speed kernel steps aside for a subclass that does)."""

NOTIFY_DEMOTED = "demoted on change notification"
NOTIFY_REVOKED = "revoked on change notification"

_new_tuple = tuple.__new__  # Record(...) without the named tuple's Python-level __new__: the same object


class Tally:
    """Support and conflict counts and a window of recent outcomes (a candidate's, or a precedent's)."""

    __slots__ = ("support", "conflict", "recent_bits", "recent_n")

    def __init__(self, support: int = 0, conflict: int = 0) -> None:
        self.support = support
        self.conflict = conflict
        self.recent_bits = 0
        self.recent_n = 0

    def push_outcome(self, success: bool, window: int) -> None:
        """One outcome enters the window of the last ``window`` (newest in the lowest bit)."""
        self.recent_bits = ((self.recent_bits << 1) | success) & ((1 << window) - 1)
        if self.recent_n < window:
            self.recent_n += 1

    def recent_rate(self) -> float:
        """The success rate of the outcomes in the window."""
        return self.recent_bits.bit_count() / self.recent_n


class Precedent(Tally):
    """Mutable internal precedent; exposed to callers only as a :class:`Record`."""

    __slots__ = ("id", "key", "value", "state", "created", "updated")

    def __init__(self, pid: int, key: str, value: str, support: int, t: int, conflict: int = 0,
                 state: LifecycleState = HYPOTHESIS, recent_bits: int = 0, recent_n: int = 0) -> None:
        self.support = support  # Tally's fields, set here without a super() call (a hot path)
        self.conflict = conflict
        self.recent_bits = recent_bits
        self.recent_n = recent_n
        self.id = pid
        self.key = key
        self.value = value
        self.state = state
        self.created = t
        self.updated = t

    def record(self, alpha: float, beta: float) -> Record:
        """What a caller is shown: the precedent with its validity under Beta(``alpha``, ``beta``)."""
        s, f = self.support, self.conflict
        return _new_tuple(Record, (self.key, self.value, s, f, self.state, self.created, self.updated,
                                   (s + alpha) / (s + f + alpha + beta)))


class TEPARules(TEPABase):
    """TEPA's rules, one method each (see the module docstring); the reference that
    :class:`~tepa_envs.agents.memories.tepa.TEPA`'s speed kernel is held to.

    Takes TEPA's arguments (:class:`~tepa_envs.agents.memories.tepa.TEPA` documents them;
    :class:`~tepa_envs.agents.memories.tepa_params.TEPABase` resolves them).
    """

    name = "tepa-rules"
    scores_are_validity: ClassVar[bool] = True

    _codes: ClassVar[bool] = True
    """Whether reasons are passed to ``_promote``/``_revoke`` as audit codes: unless a subclass
    overrides one of them (or ``validity``, which the posterior reasons quote), then as texts."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._codes = all(getattr(cls, name) is getattr(TEPARules, name) for name in ("_promote", "_revoke", "validity"))

    def _audit_params(self) -> AuditParams:
        p = self.params
        return p.alpha, p.beta, p.theta_pro, p.theta_rev, p.theta_rec

    def _configure(self) -> None:
        super()._configure()
        self._audit.set_params(self._audit_params())  # the thresholds later reasons quote

    # ----------------------------------------------------------------- protocol
    def _reset(self) -> None:
        self._live: dict[str, list[Precedent]] = {}
        """Per key, its live (hypothesis or active) precedents in creation order."""
        self._candidates: dict[str, dict[str, Tally]] = {}
        """Per key, the tallies of values not yet proposed."""
        self._by_id: list[Precedent] = []
        self._archive: list[Precedent] = []
        self._audit = AuditLog(self._audit_params())
        self._configure()

    def _observe(self, evidence: Evidence) -> None:
        """A failed use counts against its value; a success or an assertion counts against the
        key's other live values and supports its own."""
        key, value, t, outcome = evidence.key, evidence.value, evidence.t, evidence.outcome
        live = self._live.get(key)
        if live is None:
            live = self._live[key] = []
        if outcome is False:
            self._record_failure(live, key, value, t)
            return
        in_window = outcome is True or self._window_assertions
        self._count_conflicts(live, value, t, outcome is None, in_window)
        if self._consecutive:
            self._break_runs(key, value)
        self._support(live, key, value, t, in_window)

    def _retrieve(self, key: str, context: str) -> list[Record]:
        """The key's active precedents, the most valid first (ties: choice ``tie_break``), at most ``top_k``."""
        live = self._live.get(key)
        if not live:
            return []
        if len(live) == 1:
            only = live[0]
            return [only.record(self._alpha, self._beta)] if only.state is ACTIVE else []
        alpha, beta = self._alpha, self._beta
        records = [p.record(alpha, beta) for p in live if p.state is ACTIVE]  # live is in creation order
        if len(records) > 1:
            tie_break = self._choices.tie_break
            if tie_break == "recently_updated":
                records.sort(key=lambda r: (-r.score, -r.updated))
            else:
                if tie_break == "last_created":
                    records.reverse()
                records.sort(key=lambda r: -r.score)  # stable: equal scores keep their order
            del records[self._params.top_k:]
        return records

    def on_notify(self, key: str) -> None:
        """A change notification on ``key`` (the ``on_notify`` option says what it does)."""
        action = self.on_notify_action
        if action == "ignore":
            return
        live = self._live.get(key)
        t = self._last_t
        if action == "revoke":
            self._candidates.pop(key, None)
            for precedent in list(live or ()):
                self._revoke(live, precedent, t, self._as_reason(self._audit.text_code(NOTIFY_REVOKED)))  # type: ignore[arg-type]
            return
        for precedent in live or ():
            if precedent.state is ACTIVE:
                precedent.state = HYPOTHESIS
                self._audit.append(precedent.id, ACTIVE, HYPOTHESIS, t, self._audit.text_code(NOTIFY_DEMOTED))

    # --------------------------------------------------------------- the rules
    def _record_failure(self, live: list[Precedent], key: str, value: str, t: int) -> None:
        """A failed use of ``value``: a conflict of its live precedent, then the revocation rules;
        without a live precedent, what choice ``failed_candidate`` says."""
        precedent = _find(live, value)
        if precedent is None:
            self._fail_candidate(key, value)
            return
        precedent.conflict += 1
        precedent.updated = t
        precedent.push_outcome(False, self._n_rec)
        self._check_revocation(live, precedent, t)

    def _count_conflicts(self, live: list[Precedent], value: str, t: int, asserted: bool, in_window: bool) -> None:
        """Evidence for ``value`` is a conflict of every other live precedent of its key (a miss in
        its window with choice ``window_outcomes="support_and_conflict"``), then the revocation
        rules; an assertion supersedes them instead (choice ``assertion_supersedes``)."""
        for other in live[:]:
            if other.value != value:
                other.conflict += 1
                other.updated = t
                if asserted and self._supersede:
                    self._revoke(live, other, t, self._as_reason(self._audit.superseded_code(value)))
                    continue
                if in_window and self._window_conflicts:
                    other.push_outcome(False, self._n_rec)
                self._check_revocation(live, other, t)

    def _support(self, live: list[Precedent], key: str, value: str, t: int, in_window: bool) -> None:
        """A support of ``value``: of its live precedent, or of its candidate, which is proposed once
        it has ``theta_prop`` supports (``theta_prop_fresh`` when the key has no live precedent);
        then the revocation rules (choice ``revoke_check``) and the promotion rule."""
        precedent = _find(live, value)
        if precedent is None:
            pending = self._candidates.get(key)
            candidate = pending.get(value) if pending else None
            if candidate is None:
                candidate = Tally()
            candidate.support += 1
            if in_window and self._seed_from_history:
                candidate.push_outcome(True, self._n_rec)
            needed = self._params.theta_prop if live else self._choices.theta_prop_fresh
            if candidate.support < needed:
                if pending is None:
                    pending = self._candidates[key] = {}
                pending[value] = candidate
                return
            self._drop_candidate(key, value)
            precedent = self._propose(live, key, value, candidate, t)
            if self._seed_from_history:
                precedent.recent_bits, precedent.recent_n = candidate.recent_bits, candidate.recent_n
            elif in_window:
                precedent.push_outcome(True, self._n_rec)
            check = self._choices.revoke_check == "after_every_update"
        else:
            precedent.support += 1
            precedent.updated = t
            if in_window:
                precedent.push_outcome(True, self._n_rec)
            check = self._check_after_support
        if check:
            self._check_revocation(live, precedent, t)
            if precedent.state is REVOKED:
                return
        if precedent.state is HYPOTHESIS:
            self._consider_promotion(live, precedent, t)

    def _fail_candidate(self, key: str, value: str) -> None:
        """A failed use of ``value``, which has no live precedent for ``key`` (choice ``failed_candidate``)."""
        mode = self._choices.failed_candidate
        if mode == "discard":
            self._drop_candidate(key, value)
        elif mode == "count":
            pending = self._candidates.get(key)
            if pending is None:
                pending = self._candidates[key] = {}
            candidate = pending.get(value)
            if candidate is None:
                candidate = pending[value] = Tally()
            candidate.conflict += 1
            candidate.push_outcome(False, self._n_rec)

    def _break_runs(self, key: str, value: str) -> None:
        """Evidence for ``value`` drops the candidates of every other value of ``key``."""
        pending = self._candidates.get(key)
        if pending:
            for other in [v for v in pending if v != value]:
                del pending[other]
            if not pending:
                del self._candidates[key]

    def _drop_candidate(self, key: str, value: str) -> None:
        pending = self._candidates.get(key)
        if pending is not None and pending.pop(value, None) is not None and not pending:
            del self._candidates[key]

    def _propose(self, live: list[Precedent], key: str, value: str, candidate: Tally, t: int) -> Precedent:
        """Proposal: the candidate becomes a ``HYPOTHESIS`` precedent with its supports and conflicts."""
        precedent = Precedent(len(self._by_id), key, value, candidate.support, t, candidate.conflict)
        self._by_id.append(precedent)
        live.append(precedent)
        code = reason_code(PROPOSED, candidate.support, candidate.conflict)
        self._audit.append(precedent.id, None, HYPOTHESIS, t,
                           code if code is not None else proposal_reason(candidate.support, candidate.conflict))
        return precedent

    def validity(self, precedent: Precedent) -> float:
        """The posterior mean ``q = (s + alpha) / (s + f + alpha + beta)``."""
        s, f = precedent.support, precedent.conflict
        return (s + self._alpha) / (s + f + self._alpha + self._beta)

    def _consider_promotion(self, live: list[Precedent], precedent: Precedent, t: int) -> None:
        """The promotion rule: a hypothesis with ``q >= theta_pro`` is promoted."""
        q = self.validity(precedent)
        if q >= self._theta_pro:
            self._promote(precedent, t, self._because(PROMOTED, precedent.support, precedent.conflict))

    def _promote(self, precedent: Precedent, t: int, reason: str | int) -> None:
        """Make ``precedent`` active; ``reason`` is a text or an audit code."""
        precedent.state = ACTIVE
        self._audit.append(precedent.id, HYPOTHESIS, ACTIVE, t, reason)

    def _check_revocation(self, live: list[Precedent], precedent: Precedent, t: int) -> None:
        """The revocation rules: the posterior rule (``q < theta_rev`` after ``n_min`` observations),
        else the recent-success rule (success rate below ``theta_rec`` over the last ``n_rec`` outcomes)."""
        if not self._revocation:
            return
        q = self.validity(precedent)
        observations = precedent.support + precedent.conflict
        if observations >= self._n_min and q < self._theta_rev:
            self._revoke(live, precedent, t,
                         self._because(REVOKED_POSTERIOR, precedent.support, precedent.conflict))
        elif precedent.recent_n >= self._n_rec and precedent.recent_rate() < self._theta_rec:
            self._revoke(live, precedent, t,
                         self._because(REVOKED_RECENT, precedent.recent_bits.bit_count(), precedent.recent_n))

    def _revoke(self, live: list[Precedent], precedent: Precedent, t: int, reason: str | int) -> None:
        """Revoke ``precedent`` (moved from ``live`` to the archive); ``reason`` is a text or an audit code."""
        previous = precedent.state
        precedent.state = REVOKED
        precedent.updated = t
        live.remove(precedent)
        self._archive.append(precedent)
        self._audit.append(precedent.id, previous, REVOKED, t, reason)

    # ----------------------------------------------------------------- reasons
    def _as_reason(self, code: int) -> str | int:
        """``code`` as passed to ``_promote``/``_revoke``: the code itself, or its text for a
        subclass that overrides one of them (which may read the reason as a str)."""
        return code if self._codes else self._audit.format(code)

    def _because(self, kind: int, a: int, b: int) -> str | int:
        """The reason of rule ``kind`` with arguments ``a``, ``b``, as passed to ``_promote``/``_revoke``."""
        code = reason_code(kind, a, b)
        if code is None:  # an argument beyond a code's range (over 10**8): formatted now, stored as text
            code = self._audit.text_code(reason_text(kind, a, b, self._audit_params()))
        return self._as_reason(code)

    # ------------------------------------------------------------------- audit
    @property
    def audit_log(self) -> tuple[AuditEvent, ...]:
        return self._audit.events(self._by_id)

    @property
    def archive(self) -> tuple[Record, ...]:
        return tuple(p.record(self._alpha, self._beta) for p in self._archive)

    def precedents(self, key: str | None = None) -> list[Record]:
        """Every precedent (live and archived), optionally for one key, oldest first."""
        return [p.record(self._alpha, self._beta) for p in self._by_id if key is None or p.key == key]

    @property
    def transitions(self) -> Mapping[LifecycleState | None, frozenset[LifecycleState]]:
        """The transitions this memory's audit log may hold (:func:`replay_audit`'s ``transitions``)."""
        return DEMOTE_TRANSITIONS if self.on_notify_action == "demote" else TRANSITIONS

    def states(self) -> dict[int, LifecycleState]:
        """Current state of every precedent by id."""
        return {p.id: p.state for p in self._by_id}

    def explain(self, key: str) -> list[AuditEvent]:
        """The lifecycle events of every precedent of ``key``, in order."""
        return [event for event in self.audit_log if event.key == key]

    def __len__(self) -> int:
        return len(self._by_id)


def _find(live: list[Precedent], value: str) -> Precedent | None:
    for precedent in live:
        if precedent.value == value:
            return precedent
    return None


def replay_audit(events: tuple[AuditEvent, ...] | list[AuditEvent], *,
                 transitions: Mapping[LifecycleState | None, frozenset[LifecycleState]] = TRANSITIONS,
                 ) -> dict[int, LifecycleState]:
    """Rebuild every precedent's state from an audit log; ``ValueError`` if a transition is not
    in ``transitions`` (the paper's lifecycle, :data:`TRANSITIONS`, unless told otherwise: pass
    a memory's :attr:`TEPARules.transitions` to replay its own log)."""
    states: dict[int, LifecycleState] = {}
    for event in events:
        current = states.get(event.precedent_id)
        if current != event.from_state or event.to_state not in transitions[current]:
            raise ValueError(
                f"illegal transition for precedent {event.precedent_id}: "
                f"{current} -> {event.to_state} (logged from {event.from_state})"
            )
        states[event.precedent_id] = event.to_state
    return states


__all__ = ["ACTIVE", "DEMOTE_TRANSITIONS", "HYPOTHESIS", "LIFECYCLE", "ON_NOTIFY", "Precedent", "REVOKED", "TRANSITIONS", "TEPARules",
           "Tally", "replay_audit"]
