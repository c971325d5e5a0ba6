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

Speed: ``observe`` trusts evidence its constructor validated
(:func:`~tepa_envs.core.types.is_checked`) and checks only its time order;
anything else is validated in full before any state changes. The common
transitions (a fresh key's first support, a support or a failure of a key's
only live value, a failure with nothing to discard) are inlined in ``observe``,
and a key's only live precedent is retrieved without ``_retrieve``; a subclass
that overrides a lifecycle method (``_observe``, ``_propose``, ``_promote``,
``_revoke``, ``_check_revocation``, ``_consider_promotion``, ...) gets the
general path, which calls them, and receives reasons as texts. The rules'
reasons are stored in the audit log as codes and formatted when it is read
(the same texts). ``tests/agents/memories/test_trusted_fast_path.py`` checks
that both paths give the same results, audit log included.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from functools import lru_cache

from tepa_envs.core import (
    AuditEvent,
    Evidence,
    LifecycleState,
    Record,
    check_number,
    check_positive_int,
    check_probability,
    check_str,
    validate_evidence,
)

from tepa_envs.agents.memories.baselines import check_on_notify
from tepa_envs.agents.memories.protocol import MemoryBase
from tepa_envs.agents.memories.tepa_choices import TEPAChoices, resolve_choices


HYPOTHESIS = LifecycleState.HYPOTHESIS
ACTIVE = LifecycleState.ACTIVE
REVOKED = LifecycleState.REVOKED

_new_tuple = tuple.__new__  # Record(...) without the named tuple's Python-level __new__: the same object
_new_object = object.__new__


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
        s, f = self.support, self.conflict
        return _new_tuple(Record, (self.key, self.value, s, f, self.state, self.created, self.updated,
                                   (s + alpha) / (s + f + alpha + beta)))


_STATE_CODES: tuple[LifecycleState | None, ...] = (None, HYPOTHESIS, ACTIVE, REVOKED)

# An audit event is three int64s: precedent id, time, and a packed word. The packed word holds
# the transition in its low 4 bits (from-state << 2 | to-state, codes of _STATE_CODES), the kind
# of reason in the next 4, and the reason's arguments above: a reason is stored as a code and
# its text formatted when the log is read.
_TEXT, _PROPOSED, _PROMOTED, _REVOKED_POSTERIOR, _REVOKED_RECENT, _SUPERSEDED = range(6)
_ARG_BITS = 27
_ARG_LIMIT = 1 << _ARG_BITS
_NEW_TO_HYPOTHESIS, _HYPOTHESIS_TO_ACTIVE = 0b0001, 0b0110
_BLOCK = 3 * 1024
"""Ints an :class:`AuditLog` buffers in a list before moving them to its array."""


def _reason_code(kind: int, a: int, b: int = 0) -> int | None:
    """The packed reason (without the transition bits), or ``None`` when an argument does not fit."""
    if 0 <= a < _ARG_LIMIT and 0 <= b < _ARG_LIMIT:
        return (b << (8 + _ARG_BITS)) | (a << 8) | (kind << 4)
    return None


_PROPOSED_1_0 = _reason_code(_PROPOSED, 1, 0) | _NEW_TO_HYPOTHESIS  # type: ignore[operator]
_PROMOTED_1_0 = _reason_code(_PROMOTED, 1, 0) | _HYPOTHESIS_TO_ACTIVE  # type: ignore[operator]


def _reason_text(kind: int, a: int, b: int, params: tuple[float, float, float, float, float]) -> str:
    """The text of a rule's reason with arguments ``a``, ``b`` under ``(alpha, beta, theta_pro,
    theta_rev, theta_rec)``: exactly the text TEPA formatted when it logged the event."""
    alpha, beta, theta_pro, theta_rev, theta_rec = params
    if kind == _PROPOSED:
        return _proposal_reason(a, b)
    if kind == _REVOKED_RECENT:  # a: successes among the last b outcomes
        return f"recent success {a / b:.2f} < theta_rec {theta_rec} over last {b} outcomes"
    q = (a + alpha) / (a + b + alpha + beta)  # a, b: support and conflict, as in TEPA.validity
    if kind == _PROMOTED:
        return _promotion_reason(round(q, 3), theta_pro)
    if kind == _REVOKED_POSTERIOR:
        return f"posterior {q:.3f} < theta_rev {theta_rev} after {a + b} observations"
    raise ValueError(f"unknown audit reason kind {kind}")


def _transition(src: LifecycleState | None, dst: LifecycleState) -> int:
    # Identity tests: hashing an enum member runs Python code.
    s = 0 if src is None else 1 if src is HYPOTHESIS else 2 if src is ACTIVE else 3
    d = 1 if dst is HYPOTHESIS else 2 if dst is ACTIVE else 3
    return (s << 2) | d


class AuditLog:
    """Append-only log of lifecycle transitions, stored as one compact int array.

    Each event is three integers: precedent id, time, and its states and reason
    packed together. A reason is either a code with its arguments (the rules' own
    reasons: proposal, promotion, the two revocation rules, supersession), whose
    text is formatted when the log is read, or a text (interned: a long stream
    repeats a handful). Formatting needs the thresholds and prior in force when
    the event was logged: :meth:`set_params` records each change of them.
    """

    def __init__(self, params: tuple[float, float, float, float, float] = (1.0, 1.0, 0.6, 0.3, 0.34)) -> None:
        self._data = array("q")
        # New events go to a short list first (extending a list is several times cheaper than
        # extending an array by a few items) and move to the array in blocks of _BLOCK ints.
        self._tail: list[int] = []
        self._texts: list[str] = []
        self._text_index: dict[str, int] = {}
        self._epoch_starts: list[int] = [0]
        self._epoch_params: list[tuple[float, float, float, float, float]] = [params]

    def set_params(self, params: tuple[float, float, float, float, float]) -> None:
        """``(alpha, beta, theta_pro, theta_rev, theta_rec)`` from the next event on."""
        if params == self._epoch_params[-1]:
            return
        if self._epoch_starts[-1] == len(self):
            self._epoch_params[-1] = params
        else:
            self._epoch_starts.append(len(self))
            self._epoch_params.append(params)

    def _text(self, text: str) -> int:
        index = self._text_index.get(text)
        if index is None:
            index = self._text_index[text] = len(self._texts)
            self._texts.append(text)
        return index

    def text_code(self, text: str) -> int:
        """The reason code of a fixed text."""
        return (self._text(check_str("reason", text)) << 8) | (_TEXT << 4)

    def superseded_code(self, value: str) -> int:
        """The reason code of "superseded by assertion of ``value``"."""
        return (self._text(value) << 8) | (_SUPERSEDED << 4)

    def append(self, pid: int, src: LifecycleState | None, dst: LifecycleState, t: int, reason: str | int) -> None:
        """Log a transition; ``reason`` is a text or a code (from :func:`_reason_code`, :meth:`text_code`
        or :meth:`superseded_code`)."""
        code = reason if type(reason) is int else self.text_code(reason)  # type: ignore[arg-type]
        tail = self._tail
        tail += (pid, t, code | _transition(src, dst))
        if len(tail) >= _BLOCK:
            self.flush()

    def flush(self) -> None:
        """Move the buffered events to the array."""
        self._data.extend(array("q", self._tail))
        self._tail.clear()

    def __len__(self) -> int:
        return (len(self._data) + len(self._tail)) // 3

    def format(self, code: int, event: int | None = None) -> str:
        """The text of reason ``code`` (with the parameters in force at event number ``event``;
        default: the latest)."""
        kind = (code >> 4) & 15
        if kind == _TEXT:
            return self._texts[code >> 8]
        if kind == _SUPERSEDED:
            return f"superseded by assertion of {self._texts[code >> 8]!r}"
        epoch = -1 if event is None else bisect_right(self._epoch_starts, event) - 1
        return _reason_text(kind, (code >> 8) & (_ARG_LIMIT - 1), code >> (8 + _ARG_BITS),
                            self._epoch_params[epoch])

    def events(self, precedents: list[Precedent]) -> tuple[AuditEvent, ...]:
        data = self._data.tolist() + self._tail
        out = []
        for i in range(0, len(data), 3):
            pid, t, packed = data[i], data[i + 1], data[i + 2]
            p = precedents[pid]
            out.append(AuditEvent(pid, p.key, p.value, _STATE_CODES[(packed >> 2) & 3],
                                  _STATE_CODES[packed & 3], t,  # type: ignore[arg-type]
                                  self.format(packed & ~15, i // 3)))
        return tuple(out)


def _param(name: str, doc: str) -> property:
    """An argument whose change refreshes TEPA's derived constants and, for the thresholds and
    prior its reasons quote, the audit log's parameters."""
    attr = "_" + name

    def get(self: "TEPA") -> float:
        return getattr(self, attr)

    def set(self: "TEPA", value: float) -> None:
        setattr(self, attr, value)
        self._params_changed()

    return property(get, set, doc=doc)


#: Lifecycle methods a subclass may override; while none is, TEPA runs its inlined fast paths.
_LIFECYCLE = ("_observe", "_support", "_fail_candidate", "_break_runs", "_drop_candidate", "_propose",
              "validity", "_consider_promotion", "_promote", "_check_revocation", "_revoke")


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
      and at proposal; ``"after_support"``: also after a support, not at proposal.
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
        on_notify: what a change notification on a key
            (:meth:`~tepa_envs.agents.memories.protocol.MemoryHooks.on_notify`, from an
            environment's ``notify``) does: ``"ignore"`` (default: the reported
            numbers), ``"demote"`` (the key's active precedents go back to
            ``HYPOTHESIS``: not retrieved until a success of their value promotes
            them again, while failures count against them as usual; soft, for a
            detector with false alarms) or ``"revoke"`` (the key's live precedents
            are revoked to the archive and its candidates dropped, so the next
            asserted value is proposed as for a fresh key). Each transition is
            logged with the reason ``"demoted on change notification"`` or
            ``"revoked on change notification"``.
    """

    name = "tepa"

    alpha = _param("alpha", "Beta prior's alpha of the validity posterior.")
    beta = _param("beta", "Beta prior's beta of the validity posterior.")
    theta_pro = _param("theta_pro", "Promote a hypothesis once its posterior reaches this.")
    theta_rev = _param("theta_rev", "Revoke when the posterior falls below this after ``n_min`` observations.")
    theta_rec = _param("theta_rec", "Revoke when the recent success rate is below this.")
    theta_prop_fresh = _param("theta_prop_fresh", "Supports before a value is proposed for a key with no "
                                                  "live precedent.")

    def __init__(self, *, preset: str = "v0", alpha: float = 1.0, beta: float = 1.0, theta_rev: float = 0.3,
                 n_min: int = 5, theta_rec: float = 0.34, n_rec: int = 3,
                 theta_pro: float = 0.6, theta_prop: int = 3, theta_prop_fresh: int | None = None,
                 assertion_supersedes: bool | None = None, window_outcomes: str | None = None,
                 failed_candidate: str | None = None, assertions_in_window: bool | None = None,
                 window_seed: str | None = None, revoke_check: str | None = None,
                 tie_break: str | None = None, candidate_counting: str | None = None,
                 revocation: bool = True, top_k: int = 3, on_notify: str = "ignore") -> None:
        # Everything is validated into locals first: a refused argument changes nothing.
        on_notify = check_on_notify(on_notify, ON_NOTIFY)
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
        self._alpha, self._beta = float(alpha), float(beta)
        self._theta_rev, self._theta_rec, self._theta_pro = thresholds
        self.n_min, self.n_rec, self.theta_prop, self.top_k = counts
        self._theta_prop_fresh = choices.theta_prop_fresh
        self.revocation = revocation
        self.on_notify_action = on_notify
        self._supersede = revocation and choices.assertion_supersedes
        self._window_conflicts = choices.window_outcomes == "support_and_conflict"
        self._window_assertions = choices.assertions_in_window
        self._seed_from_history = choices.window_seed == "candidate_history"
        self._check_after_support = choices.revoke_check in ("after_every_update", "after_support")
        self._check_at_proposal = choices.revoke_check == "after_every_update"
        self._consecutive = choices.candidate_counting == "consecutive"
        self._discard_failed = choices.failed_candidate == "discard"
        # The fast paths inline the lifecycle methods; a subclass overriding any of them gets the
        # general path, which calls them. Reasons are passed to _promote/_revoke as codes unless
        # a subclass overrides one of those (or validity, which the posterior reasons quote).
        cls = type(self)
        overridden = {name for name in _LIFECYCLE if getattr(cls, name) is not getattr(TEPA, name)}
        self._inline = not overridden
        self._inline_retrieve = cls._retrieve is TEPA._retrieve
        self._codes = not overridden & {"_promote", "_revoke", "validity"}
        self._reset()

    def _params(self) -> tuple[float, float, float, float, float]:
        return self._alpha, self._beta, self._theta_pro, self._theta_rev, self._theta_rec

    def _params_changed(self) -> None:
        """Derived constants, and the audit log's parameters, after a threshold or the prior changed."""
        if "_audit" not in self.__dict__:
            return  # still in __init__
        self._audit.set_params(self._params())
        # A fresh key's first support proposes a precedent with s = 1, f = 0 (when theta_prop_fresh
        # is 1) and, unless revocation is checked after supports, is it promoted at once?
        self._fresh_proposes = self._theta_prop_fresh == 1 and not self._check_after_support
        self._fresh_state = (ACTIVE if (1 + self._alpha) / (1 + 0 + self._alpha + self._beta) >= self._theta_pro
                             else HYPOTHESIS)

    # ----------------------------------------------------------------- protocol
    def _reset(self) -> None:
        self._live: dict[str, list[Precedent]] = {}
        self._candidates: dict[str, dict[str, Tally]] = {}
        self._by_id: list[Precedent] = []
        self._archive: list[Precedent] = []
        self._audit = AuditLog(self._params())
        self._params_changed()

    def observe(self, evidence: Evidence) -> None:
        # MemoryBase.observe's checks, inlined: evidence its constructor validated needs only the
        # time-order check; anything else is validated in full, before any state changes.
        if type(evidence) is Evidence:
            try:
                checked = evidence._checked  # type: ignore[attr-defined]
            except AttributeError:
                checked = False
        else:
            checked = False
        if checked is not True or evidence.t < self._last_t:
            validate_evidence(evidence, self._last_t)
        if not self._inline:
            self._observe(evidence)
            self._last_t = evidence.t
            return
        # Fast paths for the common cases, each the same transitions (and audit events) as
        # _observe; everything else goes through _observe.
        key, value, t, outcome = evidence.key, evidence.value, evidence.t, evidence.outcome
        live = self._live.get(key)
        if live is None:
            if outcome is not False and self._fresh_proposes and key not in self._candidates:
                # A fresh key's first support: proposed at once (and promoted when the prior allows).
                # Precedent(pid, key, value, 1, t, 0, state, window, window), built without the call
                # of __init__ (a third of this path's cost).
                precedent = _new_object(Precedent)
                precedent.support = 1
                precedent.conflict = 0
                precedent.recent_bits = precedent.recent_n = 1 if outcome is True or self._window_assertions else 0
                by_id = self._by_id
                precedent.id = pid = len(by_id)
                precedent.key = key
                precedent.value = value
                precedent.state = self._fresh_state
                precedent.created = precedent.updated = t
                by_id.append(precedent)
                self._live[key] = [precedent]
                if self._fresh_state is ACTIVE:
                    tail = self._audit._tail
                    tail += (pid, t, _PROPOSED_1_0, pid, t, _PROMOTED_1_0)
                else:
                    tail = self._audit._tail
                    tail += (pid, t, _PROPOSED_1_0)
                if len(tail) >= _BLOCK:
                    self._audit.flush()
                self._last_t = t
                return
        elif len(live) == 1 and live[0].value == value:
            precedent = live[0]
            if outcome is False:
                # A failed use of the key's only live value: one conflict, then the revocation rules.
                precedent.conflict += 1
                precedent.updated = t
                n_rec = self.n_rec
                precedent.recent_bits = (precedent.recent_bits << 1) & ((1 << n_rec) - 1)
                if precedent.recent_n < n_rec:
                    precedent.recent_n += 1
                if self.revocation:
                    self._check_revocation(live, precedent, t)
                self._last_t = t
                return
            if not (self._consecutive and key in self._candidates):
                # A support of the key's only live value.
                precedent.support += 1
                precedent.updated = t
                if outcome is True or self._window_assertions:
                    n_rec = self.n_rec
                    precedent.recent_bits = ((precedent.recent_bits << 1) | 1) & ((1 << n_rec) - 1)
                    if precedent.recent_n < n_rec:
                        precedent.recent_n += 1
                if self._check_after_support:
                    self._check_revocation(live, precedent, t)
                    if precedent.state is REVOKED:
                        self._last_t = t
                        return
                if precedent.state is HYPOTHESIS:
                    self._consider_promotion(live, precedent, t)
                self._last_t = t
                return
        if outcome is False and self._discard_failed and key not in self._candidates:
            if live is None:
                self._live[key] = []
                self._last_t = t
                return
            for precedent in live:
                if precedent.value == value:
                    break
            else:  # a failed value with no live precedent and no candidate: nothing to discard
                self._last_t = t
                return
        self._observe(evidence)
        self._last_t = t

    def retrieve(self, key: str, context: str = "") -> list[Record]:
        # A key's only live precedent is shown without a call of _retrieve (unless a subclass
        # overrides it).
        if type(key) is not str or type(context) is not str:
            check_str("key", key), check_str("context", context)
        live = self._live.get(key)
        if not live:
            return self._retrieve(key, context) if not self._inline_retrieve else []
        if len(live) == 1 and self._inline_retrieve:
            only = live[0]
            if only.state is not ACTIVE:
                return []
            s, f, alpha = only.support, only.conflict, self._alpha
            return [_new_tuple(Record, (only.key, only.value, s, f, ACTIVE, only.created, only.updated,
                                        (s + alpha) / (s + f + alpha + self._beta)))]
        return self._retrieve(key, context)

    def _retrieve(self, key: str, context: str) -> list[Record]:
        live = self._live.get(key)
        if not live:
            return []
        if len(live) == 1:
            only = live[0]
            return [only.record(self._alpha, self._beta)] if only.state is ACTIVE else []
        alpha, beta = self._alpha, self._beta
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
                    self._revoke(live, other, t, self._reason(self._audit.superseded_code(value)))
                    continue
                if in_window and self._window_conflicts:
                    other.push_outcome(False, self.n_rec)
                self._check_revocation(live, other, t)
        if self._consecutive:
            self._break_runs(key, value)
        self._support(live, key, value, t, in_window)

    def _reason(self, code: int) -> str | int:
        """``code`` as passed to ``_promote``/``_revoke``: the code itself, or its text for a
        subclass that overrides one of them (which may read the reason as a str)."""
        return code if self._codes else self._audit.format(code)

    def _coded(self, kind: int, a: int, b: int) -> str | int:
        """The reason of ``kind`` with arguments ``a``, ``b``, as passed to ``_promote``/``_revoke``."""
        code = _reason_code(kind, a, b)
        if code is None:  # an argument beyond a code's range (over 10**8): formatted now, stored as text
            code = self._audit.text_code(_reason_text(kind, a, b, self._params()))
        return self._reason(code)

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
                self._revoke(live, precedent, t, self._reason(self._audit.text_code(_NOTIFY_REVOKED)))  # type: ignore[arg-type]
            return
        for precedent in live or ():
            if precedent.state is ACTIVE:
                precedent.state = HYPOTHESIS
                self._audit.append(precedent.id, ACTIVE, HYPOTHESIS, t, self._audit.text_code(_NOTIFY_DEMOTED))

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
            check = self._check_at_proposal
        else:
            precedent.support += 1
            precedent.updated = t
            if in_window:
                precedent.push_outcome(True, self.n_rec)
            check = self._check_after_support
        if check:
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
        code = _reason_code(_PROPOSED, candidate.support, candidate.conflict)
        self._audit.append(precedent.id, None, HYPOTHESIS, t,
                           code if code is not None else _proposal_reason(candidate.support, candidate.conflict))
        return precedent

    def validity(self, precedent: Precedent) -> float:
        s, f = precedent.support, precedent.conflict
        return (s + self._alpha) / (s + f + self._alpha + self._beta)

    def _consider_promotion(self, live: list[Precedent], precedent: Precedent, t: int) -> None:
        q = self.validity(precedent)
        if q >= self._theta_pro:
            self._promote(precedent, t, self._coded(_PROMOTED, precedent.support, precedent.conflict))

    def _promote(self, precedent: Precedent, t: int, reason: str | int) -> None:
        """Make ``precedent`` active; ``reason`` is a text or an audit code."""
        precedent.state = ACTIVE
        self._audit.append(precedent.id, HYPOTHESIS, ACTIVE, t, reason)

    def _check_revocation(self, live: list[Precedent], precedent: Precedent, t: int) -> None:
        if not self.revocation:
            return
        q = self.validity(precedent)
        observations = precedent.support + precedent.conflict
        if observations >= self.n_min and q < self._theta_rev:
            self._revoke(live, precedent, t,
                         self._coded(_REVOKED_POSTERIOR, precedent.support, precedent.conflict))
        elif precedent.recent_n >= self.n_rec and precedent.recent_rate() < self._theta_rec:
            self._revoke(live, precedent, t,
                         self._coded(_REVOKED_RECENT, precedent.recent_bits.bit_count(), precedent.recent_n))

    def _revoke(self, live: list[Precedent], precedent: Precedent, t: int, reason: str | int) -> None:
        """Revoke ``precedent`` (moved from ``live`` to the archive); ``reason`` is a text or an audit code."""
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
        return tuple(p.record(self._alpha, self._beta) for p in self._archive)

    def precedents(self, key: str | None = None) -> list[Record]:
        """Every precedent (live and archived), optionally for one key, oldest first."""
        return [p.record(self._alpha, self._beta) for p in self._by_id if key is None or p.key == key]

    def states(self) -> dict[int, LifecycleState]:
        """Current state of every precedent by id."""
        return {p.id: p.state for p in self._by_id}

    def explain(self, key: str) -> list[AuditEvent]:
        """The lifecycle events of every precedent of ``key``, in order."""
        return [event for event in self.audit_log if event.key == key]

    def __len__(self) -> int:
        return len(self._by_id)


ON_NOTIFY: tuple[str, ...] = ("ignore", "demote", "revoke")
"""Values of TEPA's ``on_notify`` option."""
_NOTIFY_DEMOTED = "demoted on change notification"
_NOTIFY_REVOKED = "revoked on change notification"


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
