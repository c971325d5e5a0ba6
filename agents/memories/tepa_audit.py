"""TEPA's audit log: the lifecycle events of every precedent, stored compactly.

The rules (:mod:`~tepa_envs.agents.memories.tepa_rules`) log each transition with
a *reason*. A long stream logs millions of events whose reasons repeat a handful
of patterns, so a reason is stored as a code: the kind of rule that fired and its
arguments (a proposal's supports and failures, a posterior's counts, a window's
hits), formatted into its text only when the log is read. Reading gives exactly
the texts the rules would have formatted when they logged the event, with the
thresholds and prior in force then (:meth:`AuditLog.set_params` records each
change of them). Any other reason (a subclass's own, an argument too large for a
code) is stored as an interned text.

An event is three int64s: precedent id, time, and a packed word. The packed word
holds the transition in its low 4 bits (from-state << 2 | to-state, codes of
:data:`STATE_CODES`), the kind of reason in the next 4, and the reason's
arguments above (two of :data:`ARG_BITS` bits each, or a text's index).
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from functools import lru_cache
from typing import Protocol, Sequence

from tepa_envs.core import AuditEvent, LifecycleState, check_str

HYPOTHESIS = LifecycleState.HYPOTHESIS
ACTIVE = LifecycleState.ACTIVE
REVOKED = LifecycleState.REVOKED

AuditParams = tuple[float, float, float, float, float]
"""``(alpha, beta, theta_pro, theta_rev, theta_rec)``: what the rules' reasons quote."""

STATE_CODES: tuple[LifecycleState | None, ...] = (None, HYPOTHESIS, ACTIVE, REVOKED)
"""A state's code in a packed event is its index here (``None``: not yet a precedent)."""

# The kinds of reason: a fixed text, and the rules' own reasons with their arguments.
TEXT, PROPOSED, PROMOTED, REVOKED_POSTERIOR, REVOKED_RECENT, SUPERSEDED = range(6)
ARG_BITS = 27
ARG_LIMIT = 1 << ARG_BITS
"""A reason's arguments must be below this to fit a code (else the reason is stored as text)."""
NEW_TO_HYPOTHESIS, HYPOTHESIS_TO_ACTIVE = 0b0001, 0b0110
"""The transition bits of a proposal and of a promotion."""
BLOCK = 3 * 1024
"""Ints an :class:`AuditLog` buffers in a list before moving them to its array."""


def reason_code(kind: int, a: int, b: int = 0) -> int | None:
    """The packed reason (without the transition bits), or ``None`` when an argument does not fit."""
    if 0 <= a < ARG_LIMIT and 0 <= b < ARG_LIMIT:
        return (b << (8 + ARG_BITS)) | (a << 8) | (kind << 4)
    return None


PROPOSED_1_0 = reason_code(PROPOSED, 1, 0) | NEW_TO_HYPOTHESIS  # type: ignore[operator]
"""The packed word of "proposed after 1 supports" (a fresh key's first support)."""
PROMOTED_1_0 = reason_code(PROMOTED, 1, 0) | HYPOTHESIS_TO_ACTIVE  # type: ignore[operator]
"""The packed word of its promotion in the same step."""


@lru_cache(maxsize=256)
def proposal_reason(support: int, conflict: int = 0) -> str:
    failures = f" and {conflict} failure{'s' if conflict > 1 else ''}" if conflict else ""
    return f"proposed after {support} supports{failures}"


@lru_cache(maxsize=1024)
def promotion_reason(q: float, theta_pro: float) -> str:
    return f"posterior {q:.3f} >= theta_pro {theta_pro}"


def reason_text(kind: int, a: int, b: int, params: AuditParams) -> str:
    """The text of a rule's reason with arguments ``a``, ``b`` under ``(alpha, beta, theta_pro,
    theta_rev, theta_rec)``: exactly the text TEPA formatted when it logged the event."""
    alpha, beta, theta_pro, theta_rev, theta_rec = params
    if kind == PROPOSED:
        return proposal_reason(a, b)
    if kind == REVOKED_RECENT:  # a: successes among the last b outcomes
        return f"recent success {a / b:.2f} < theta_rec {theta_rec} over last {b} outcomes"
    q = (a + alpha) / (a + b + alpha + beta)  # a, b: support and conflict, as in TEPA.validity
    if kind == PROMOTED:
        return promotion_reason(round(q, 3), theta_pro)
    if kind == REVOKED_POSTERIOR:
        return f"posterior {q:.3f} < theta_rev {theta_rev} after {a + b} observations"
    raise ValueError(f"unknown audit reason kind {kind}")


def transition(src: LifecycleState | None, dst: LifecycleState) -> int:
    """The transition bits of ``src -> dst``."""
    # Identity tests: hashing an enum member runs Python code.
    s = 0 if src is None else 1 if src is HYPOTHESIS else 2 if src is ACTIVE else 3
    d = 1 if dst is HYPOTHESIS else 2 if dst is ACTIVE else 3
    return (s << 2) | d


class Named(Protocol):
    """What the log reads of a precedent to name it in an event."""

    key: str
    value: str


class AuditLog:
    """Append-only log of lifecycle transitions, stored as one compact int array.

    Each event is three integers: precedent id, time, and its states and reason
    packed together. A reason is either a code with its arguments (the rules' own
    reasons: proposal, promotion, the two revocation rules, supersession), whose
    text is formatted when the log is read, or a text (interned: a long stream
    repeats a handful). Formatting needs the thresholds and prior in force when
    the event was logged: :meth:`set_params` records each change of them.
    """

    def __init__(self, params: AuditParams = (1.0, 1.0, 0.6, 0.3, 0.34)) -> None:
        self._data = array("q")
        # New events go to a short list first (extending a list is several times cheaper than
        # extending an array by a few items) and move to the array in blocks of BLOCK ints.
        self.tail: list[int] = []
        """Buffered events (three ints each); the speed kernel appends packed events here directly."""
        self._texts: list[str] = []
        self._text_index: dict[str, int] = {}
        self._epoch_starts: list[int] = [0]
        self._epoch_params: list[AuditParams] = [params]

    def set_params(self, params: AuditParams) -> None:
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

    @property
    def texts(self) -> tuple[str, ...]:
        """The reason texts stored so far (interned, in first-use order)."""
        return tuple(self._texts)

    def text_code(self, text: str) -> int:
        """The reason code of a fixed text."""
        return (self._text(check_str("reason", text)) << 8) | (TEXT << 4)

    def superseded_code(self, value: str) -> int:
        """The reason code of "superseded by assertion of ``value``"."""
        return (self._text(value) << 8) | (SUPERSEDED << 4)

    def append(self, pid: int, src: LifecycleState | None, dst: LifecycleState, t: int, reason: str | int) -> None:
        """Log a transition; ``reason`` is a text or a code (from :func:`reason_code`, :meth:`text_code`
        or :meth:`superseded_code`)."""
        code = reason if type(reason) is int else self.text_code(reason)  # type: ignore[arg-type]
        tail = self.tail
        tail += (pid, t, code | transition(src, dst))
        if len(tail) >= BLOCK:
            self.flush()

    def flush(self) -> None:
        """Move the buffered events to the array."""
        self._data.extend(array("q", self.tail))
        self.tail.clear()

    def __len__(self) -> int:
        return (len(self._data) + len(self.tail)) // 3

    def format(self, code: int, event: int | None = None) -> str:
        """The text of reason ``code`` (with the parameters in force at event number ``event``;
        default: the latest)."""
        kind = (code >> 4) & 15
        if kind == TEXT:
            return self._texts[code >> 8]
        if kind == SUPERSEDED:
            return f"superseded by assertion of {self._texts[code >> 8]!r}"
        epoch = -1 if event is None else bisect_right(self._epoch_starts, event) - 1
        return reason_text(kind, (code >> 8) & (ARG_LIMIT - 1), code >> (8 + ARG_BITS),
                           self._epoch_params[epoch])

    def events(self, precedents: Sequence[Named]) -> tuple[AuditEvent, ...]:
        """Every event, formatted; ``precedents`` by id name each event's key and value."""
        data = self._data.tolist() + self.tail
        out = []
        for i in range(0, len(data), 3):
            pid, t, packed = data[i], data[i + 1], data[i + 2]
            p = precedents[pid]
            out.append(AuditEvent(pid, p.key, p.value, STATE_CODES[(packed >> 2) & 3],
                                  STATE_CODES[packed & 3], t,  # type: ignore[arg-type]
                                  self.format(packed & ~15, i // 3)))
        return tuple(out)


__all__ = ["ARG_BITS", "ARG_LIMIT", "AuditLog", "AuditParams", "BLOCK", "PROMOTED", "PROPOSED", "REVOKED_POSTERIOR",
           "REVOKED_RECENT", "STATE_CODES", "SUPERSEDED", "TEXT", "proposal_reason", "promotion_reason",
           "reason_code", "reason_text", "transition"]
