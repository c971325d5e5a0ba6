"""TEPA: revocable evidence memory (TEPA-Rev), its no-revocation ablation, and
TEPA with the paper's rules read literally (``TEPAPaper``).

A *precedent* is a (key, value) pair with support and conflict counts, a
lifecycle state and a window of its most recent outcomes. Its validity is the
Beta(alpha, beta) posterior mean ``q = (s + alpha) / (s + f + alpha + beta)``.

Lifecycle (paper thresholds; the choices the paper leaves open are named
arguments, :class:`~tepa_envs.agents.memories.tepa_choices.TEPAChoices`, and
what follows describes the default ``"v0"`` preset):

* A value seen with success or asserted becomes a *candidate*; a failed use
  discards the candidate's supports. It is proposed
  as a ``HYPOTHESIS`` precedent after ``theta_prop`` supports when it
  challenges a live precedent of the same key, or after ``theta_prop_fresh``
  supports when the key has no live precedent (a fresh key, or one whose
  precedents were all revoked).
* A hypothesis becomes ``ACTIVE`` once ``q >= theta_pro`` (subclasses may gate
  this, e.g. TEPA-Full's trials).
* A live precedent is ``REVOKED`` when ``q < theta_rev`` after ``n_min``
  observations, when its last ``n_rec`` outcomes succeed at a rate below
  ``theta_rec``, or when a newer assertion states a different value for its
  key (a stated fact or preference supersedes an older one).
* Revoked precedents move to an archive: never retrieved, kept for audit. When a
  revoked value is supported again it is re-proposed as a *new* precedent.

Every transition is appended to :attr:`TEPA.audit_log`.
"""

from __future__ import annotations

from array import array
from functools import lru_cache

from tepa_envs.core import (
    AuditEvent,
    Evidence,
    LifecycleState,
    Record,
    check_number,
    check_positive_int,
    check_probability,
)

from tepa_envs.agents.memories.protocol import MemoryBase
from tepa_envs.agents.memories.tepa_choices import TEPAChoices, resolve_choices


HYPOTHESIS = LifecycleState.HYPOTHESIS
ACTIVE = LifecycleState.ACTIVE
REVOKED = LifecycleState.REVOKED


class Tally:
    """Support and conflict counts and a window of recent outcomes (a candidate's, or a precedent's)."""

    __slots__ = ("support", "conflict", "recent_bits", "recent_n")

    def __init__(self, support: int = 0, conflict: int = 0) -> None:
        self.support = support
        self.conflict = conflict
        self.recent_bits = 0
        self.recent_n = 0

    def push_outcome(self, success: bool, window: int) -> None:
        self.recent_bits = ((self.recent_bits << 1) | success) & ((1 << window) - 1)
        if self.recent_n < window:
            self.recent_n += 1

    def recent_rate(self) -> float:
        return bin(self.recent_bits).count("1") / self.recent_n


class Precedent(Tally):
    """Mutable internal precedent; exposed to callers only as a :class:`Record`."""

    __slots__ = ("id", "key", "value", "state", "created", "updated")

    def __init__(self, pid: int, key: str, value: str, support: int, t: int, conflict: int = 0) -> None:
        super().__init__(support, conflict)
        self.id = pid
        self.key = key
        self.value = value
        self.state = HYPOTHESIS
        self.created = t
        self.updated = t

    def record(self, alpha: float, beta: float) -> Record:
        q = (self.support + alpha) / (self.support + self.conflict + alpha + beta)
        return Record(self.key, self.value, self.support, self.conflict, self.state,
                      self.created, self.updated, q)


_STATE_CODES: tuple[LifecycleState | None, ...] = (None, HYPOTHESIS, ACTIVE, REVOKED)
_CODE_OF = {state: code for code, state in enumerate(_STATE_CODES)}


class AuditLog:
    """Append-only log of lifecycle transitions, stored as one compact int array.

    Each event is three integers: precedent id, time, and its states and reason
    packed together. Reasons are interned: a long stream repeats a handful of texts.
    """

    def __init__(self) -> None:
        self._data = array("q")
        self._reasons: list[str] = []
        self._reason_index: dict[str, int] = {}

    def append(self, pid: int, src: LifecycleState | None, dst: LifecycleState, t: int, reason: str) -> None:
        index = self._reason_index.get(reason)
        if index is None:
            index = self._reason_index[reason] = len(self._reasons)
            self._reasons.append(reason)
        self._data.extend((pid, t, (index << 4) | (_CODE_OF[src] << 2) | _CODE_OF[dst]))

    def __len__(self) -> int:
        return len(self._data) // 3

    def events(self, precedents: list[Precedent]) -> tuple[AuditEvent, ...]:
        data = self._data
        out = []
        for i in range(0, len(data), 3):
            pid, t, packed = data[i], data[i + 1], data[i + 2]
            p = precedents[pid]
            out.append(AuditEvent(pid, p.key, p.value, _STATE_CODES[(packed >> 2) & 3],
                                  _STATE_CODES[packed & 3], t, self._reasons[packed >> 4]))  # type: ignore[arg-type]
        return tuple(out)


class TEPA(MemoryBase):
    """TEPA-Rev: precedents with a Hypothesis -> Active -> Revoked lifecycle.

    Hypothesis and ``theta_pro``: a proposed precedent stays a ``HYPOTHESIS`` (never
    retrieved) only while ``q < theta_pro``. A proposal has ``s >= 1`` supports, so
    with no conflict it starts at ``q >= (1 + alpha) / (1 + alpha + beta)`` (2/3
    under Beta(1, 1)) and, with v0's choices (where no conflict accrues before
    proposal) and ``theta_pro = 0.6``, it is promoted in the step that proposed it:
    the Hypothesis state and ``theta_pro`` take effect only in TEPA-Full (trials
    gate promotion), with ``theta_pro`` above the proposal's ``(s + alpha) / (s +
    alpha + beta)`` (e.g. 0.7 for a fresh key), or with
    ``failed_candidate="count"`` (the ``"paper"`` preset), which lets conflicts
    accrue before proposal.

    Implementation choices (the paper leaves them open; :class:`TEPAChoices`
    documents every value, and ``tepa_choices.PAPER_READINGS`` the reason for each
    ``"paper"`` reading).
    Each argument left ``None`` takes ``preset``'s value; the resolved choices
    are :attr:`choices`. v0's value first, the ``"paper"`` preset's in brackets:

    * ``theta_prop_fresh`` 1 [= ``theta_prop``]: supports before a value is
      proposed for a key with no live precedent.
    * ``assertion_supersedes`` True [False]: a newer conflicting assertion
      revokes the key's live precedents; ``False``: it is one conflict each.
    * ``window_outcomes`` ``"own_uses"`` [``"support_and_conflict"``]: the
      window holds only uses of the precedent's own value; or every outcome
      counted for or against it (another value's success enters as a miss).
    * ``failed_candidate`` ``"discard"`` [``"count"``]: a failed use of a value
      with no live precedent discards its candidate's supports; ``"count"``
      keeps it as a conflict the precedent is proposed with; ``"ignore"``
      leaves the candidate unchanged.
    * ``assertions_in_window`` False [False]: assertions enter windows as a hit
      for their value (and, counted as a conflict, a miss for another's).
    * ``window_seed`` ``"proposing_outcome"`` [``"candidate_history"``]: a new
      precedent's window starts with the proposing outcome only; or with the
      candidate's recorded outcomes.
    * ``revoke_check`` ``"after_conflict"`` [``"after_every_update"``]:
      revocation is checked only after a conflict; or also after a support
      and at proposal.
    * ``tie_break`` ``"recently_updated"`` [``"first_created"``]: among
      retrieved precedents of equal validity, most recently updated first;
      oldest first; ``"last_created"``: newest first.
    * ``candidate_counting`` ``"cumulative"`` [``"cumulative"``]: supports
      accumulate per (key, value) until proposal; ``"consecutive"``: evidence
      for another value of the key (a success or assertion) drops the candidate.

    Args:
        preset: ``"v0"`` (the project's reported numbers; default) or ``"paper"``.
        alpha, beta: Beta prior of the validity posterior (paper: 1, 1).
        theta_rev: revoke when the posterior falls below this after ``n_min`` observations.
        n_min: observations (support + conflict) before the posterior rule applies.
        theta_rec: revoke when the success rate of the last ``n_rec`` outcomes is below this.
        n_rec: size of the recent-outcome window.
        theta_pro: promote a hypothesis once its posterior reaches this.
        theta_prop: supports before a value challenging a live precedent is proposed.
        revocation: ``False`` gives the NoRev ablation.
        top_k: at most this many active precedents are retrieved per key.
    """

    name = "tepa"

    def __init__(self, *, preset: str = "v0", alpha: float = 1.0, beta: float = 1.0, theta_rev: float = 0.3,
                 n_min: int = 5, theta_rec: float = 0.34, n_rec: int = 3,
                 theta_pro: float = 0.6, theta_prop: int = 3, theta_prop_fresh: int | None = None,
                 assertion_supersedes: bool | None = None, window_outcomes: str | None = None,
                 failed_candidate: str | None = None, assertions_in_window: bool | None = None,
                 window_seed: str | None = None, revoke_check: str | None = None,
                 tie_break: str | None = None, candidate_counting: str | None = None,
                 revocation: bool = True, top_k: int = 3) -> None:
        # Everything is validated into locals first: a refused argument changes nothing.
        for prior_name, prior in (("alpha", alpha), ("beta", beta)):
            if not check_number(prior_name, prior) > 0:
                raise ValueError(f"{prior_name} must be > 0, got {prior!r}")
        thresholds = (check_probability("theta_rev", theta_rev), check_probability("theta_rec", theta_rec),
                      check_probability("theta_pro", theta_pro))
        counts = (check_positive_int("n_min", n_min), check_positive_int("n_rec", n_rec),
                  check_positive_int("theta_prop", theta_prop), check_positive_int("top_k", top_k))
        if not isinstance(revocation, bool):
            raise TypeError(f"revocation must be a bool, got {type(revocation).__name__}")
        choices = resolve_choices(
            preset, counts[2], theta_prop_fresh=theta_prop_fresh, assertion_supersedes=assertion_supersedes,
            window_outcomes=window_outcomes, failed_candidate=failed_candidate,
            assertions_in_window=assertions_in_window, window_seed=window_seed, revoke_check=revoke_check,
            tie_break=tie_break, candidate_counting=candidate_counting)
        super().__init__()
        self.preset = preset
        self.choices: TEPAChoices = choices
        self.alpha, self.beta = float(alpha), float(beta)
        self.theta_rev, self.theta_rec, self.theta_pro = thresholds
        self.n_min, self.n_rec, self.theta_prop, self.top_k = counts
        self.theta_prop_fresh = choices.theta_prop_fresh
        self.revocation = revocation
        self._supersede = revocation and choices.assertion_supersedes
        self._window_conflicts = choices.window_outcomes == "support_and_conflict"
        self._window_assertions = choices.assertions_in_window
        self._seed_from_history = choices.window_seed == "candidate_history"
        self._check_after_support = choices.revoke_check == "after_every_update"
        self._consecutive = choices.candidate_counting == "consecutive"
        self._reset()

    # ----------------------------------------------------------------- protocol
    def _reset(self) -> None:
        self._live: dict[str, list[Precedent]] = {}
        self._candidates: dict[str, dict[str, Tally]] = {}
        self._by_id: list[Precedent] = []
        self._archive: list[Precedent] = []
        self._audit = AuditLog()

    def _retrieve(self, key: str, context: str) -> list[Record]:
        live = self._live.get(key)
        if not live:
            return []
        if len(live) == 1:
            only = live[0]
            return [only.record(self.alpha, self.beta)] if only.state is ACTIVE else []
        alpha, beta = self.alpha, self.beta
        records = [p.record(alpha, beta) for p in live if p.state is ACTIVE]  # live is in creation order
        if len(records) > 1:
            tie_break = self.choices.tie_break
            if tie_break == "recently_updated":
                records.sort(key=lambda r: (-r.score, -r.updated))
            else:
                if tie_break == "last_created":
                    records.reverse()
                records.sort(key=lambda r: -r.score)  # stable: equal scores keep their order
            del records[self.top_k:]
        return records

    def _observe(self, evidence: Evidence) -> None:
        key, value, t, outcome = evidence.key, evidence.value, evidence.t, evidence.outcome
        live = self._live.get(key)
        if live is None:
            live = self._live[key] = []
        if outcome is False:
            precedent = _find(live, value)
            if precedent is not None:
                precedent.conflict += 1
                precedent.updated = t
                precedent.push_outcome(False, self.n_rec)
                self._check_revocation(live, precedent, t)
            else:
                self._fail_candidate(key, value)
            return
        asserted = outcome is None
        in_window = not asserted or self._window_assertions
        for other in live[:]:
            if other.value != value:
                other.conflict += 1
                other.updated = t
                if asserted and self._supersede:
                    self._revoke(live, other, t, f"superseded by assertion of {value!r}")
                    continue
                if in_window and self._window_conflicts:
                    other.push_outcome(False, self.n_rec)
                self._check_revocation(live, other, t)
        if self._consecutive:
            self._break_runs(key, value)
        self._support(live, key, value, t, in_window)

    # ---------------------------------------------------------------- lifecycle
    def _support(self, live: list[Precedent], key: str, value: str, t: int, in_window: bool) -> None:
        precedent = _find(live, value)
        if precedent is None:
            pending = self._candidates.get(key)
            candidate = pending.get(value) if pending else None
            if candidate is None:
                candidate = Tally()
            candidate.support += 1
            if in_window and self._seed_from_history:
                candidate.push_outcome(True, self.n_rec)
            needed = self.theta_prop if live else self.theta_prop_fresh
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
                precedent.push_outcome(True, self.n_rec)
        else:
            precedent.support += 1
            precedent.updated = t
            if in_window:
                precedent.push_outcome(True, self.n_rec)
        if self._check_after_support:
            self._check_revocation(live, precedent, t)
            if precedent.state is REVOKED:
                return
        if precedent.state is HYPOTHESIS:
            self._consider_promotion(live, precedent, t)

    def _fail_candidate(self, key: str, value: str) -> None:
        """A failed use of ``value``, which has no live precedent for ``key``."""
        mode = self.choices.failed_candidate
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
            candidate.push_outcome(False, self.n_rec)

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
        precedent = Precedent(len(self._by_id), key, value, candidate.support, t, candidate.conflict)
        self._by_id.append(precedent)
        live.append(precedent)
        self._audit.append(precedent.id, None, HYPOTHESIS, t, _proposal_reason(candidate.support, candidate.conflict))
        return precedent

    def validity(self, precedent: Precedent) -> float:
        s, f = precedent.support, precedent.conflict
        return (s + self.alpha) / (s + f + self.alpha + self.beta)

    def _consider_promotion(self, live: list[Precedent], precedent: Precedent, t: int) -> None:
        q = self.validity(precedent)
        if q >= self.theta_pro:
            self._promote(precedent, t, _promotion_reason(round(q, 3), self.theta_pro))

    def _promote(self, precedent: Precedent, t: int, reason: str) -> None:
        precedent.state = ACTIVE
        self._audit.append(precedent.id, HYPOTHESIS, ACTIVE, t, reason)

    def _check_revocation(self, live: list[Precedent], precedent: Precedent, t: int) -> None:
        if not self.revocation:
            return
        q = self.validity(precedent)
        observations = precedent.support + precedent.conflict
        if observations >= self.n_min and q < self.theta_rev:
            self._revoke(live, precedent, t,
                         f"posterior {q:.3f} < theta_rev {self.theta_rev} after {observations} observations")
        elif precedent.recent_n >= self.n_rec and precedent.recent_rate() < self.theta_rec:
            self._revoke(live, precedent, t,
                         f"recent success {precedent.recent_rate():.2f} < theta_rec {self.theta_rec} "
                         f"over last {precedent.recent_n} outcomes")

    def _revoke(self, live: list[Precedent], precedent: Precedent, t: int, reason: str) -> None:
        previous = precedent.state
        precedent.state = REVOKED
        precedent.updated = t
        live.remove(precedent)
        self._archive.append(precedent)
        self._audit.append(precedent.id, previous, REVOKED, t, reason)

    # ------------------------------------------------------------------- audit
    @property
    def audit_log(self) -> tuple[AuditEvent, ...]:
        return self._audit.events(self._by_id)

    @property
    def archive(self) -> tuple[Record, ...]:
        return tuple(p.record(self.alpha, self.beta) for p in self._archive)

    def precedents(self, key: str | None = None) -> list[Record]:
        """Every precedent (live and archived), optionally for one key, oldest first."""
        return [p.record(self.alpha, self.beta) for p in self._by_id if key is None or p.key == key]

    def states(self) -> dict[int, LifecycleState]:
        """Current state of every precedent by id."""
        return {p.id: p.state for p in self._by_id}

    def explain(self, key: str) -> list[AuditEvent]:
        """The lifecycle events of every precedent of ``key``, in order."""
        return [event for event in self.audit_log if event.key == key]

    def __len__(self) -> int:
        return len(self._by_id)


@lru_cache(maxsize=256)
def _proposal_reason(support: int, conflict: int = 0) -> str:
    failures = f" and {conflict} failure{'s' if conflict > 1 else ''}" if conflict else ""
    return f"proposed after {support} supports{failures}"


@lru_cache(maxsize=1024)
def _promotion_reason(q: float, theta_pro: float) -> str:
    return f"posterior {q:.3f} >= theta_pro {theta_pro}"


def _find(live: list[Precedent], value: str) -> Precedent | None:
    for precedent in live:
        if precedent.value == value:
            return precedent
    return None


class TEPANoRev(TEPA):
    """TEPA without revocation (ablation): stale precedents stay active."""

    name = "tepa-norev"

    def __init__(self, **kwargs: object) -> None:
        if "revocation" in kwargs:
            raise TypeError("TEPANoRev does not take 'revocation'; it never revokes")
        super().__init__(revocation=False, **kwargs)  # type: ignore[arg-type]


class TEPAPaper(TEPA):
    """TEPA with the ``"paper"`` preset: the paper's rules read literally (see :data:`PAPER_READINGS`).

    Explicit choice arguments still override single readings.
    """

    name = "tepa-paper"

    def __init__(self, **kwargs: object) -> None:
        if "preset" in kwargs:
            raise TypeError("TEPAPaper does not take 'preset'; it is TEPA(preset='paper')")
        super().__init__(preset="paper", **kwargs)  # type: ignore[arg-type]


def replay_audit(events: tuple[AuditEvent, ...] | list[AuditEvent]) -> dict[int, LifecycleState]:
    """Rebuild every precedent's state from an audit log; raises if a transition is illegal."""
    states: dict[int, LifecycleState] = {}
    allowed = {None: {HYPOTHESIS}, HYPOTHESIS: {ACTIVE, REVOKED}, ACTIVE: {REVOKED}, REVOKED: set()}
    for event in events:
        current = states.get(event.precedent_id)
        if current != event.from_state or event.to_state not in allowed[current]:
            raise ValueError(
                f"illegal transition for precedent {event.precedent_id}: "
                f"{current} -> {event.to_state} (logged from {event.from_state})"
            )
        states[event.precedent_id] = event.to_state
    return states
