"""Shared types of tepa-envs: evidence, records, lifecycle states, phases, trials.

Every environment emits :class:`Evidence`; every memory method returns
:class:`Record` objects. These types are defined here once and imported
everywhere else.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

PHASE_NAMES: tuple[str, ...] = ("stable", "light_drift", "full_reversal", "partial_return")
TRIAL_KINDS: tuple[str, ...] = ("support", "counterfactual", "contamination")

MAX_T: int = 2**63
"""Evidence times are ``0 <= t < MAX_T``: they fit a signed 64-bit integer, which
memories (and NumPy arrays of times) rely on."""

TrialFn = Callable[[str, str, str], bool]
"""``trial(kind, key, value) -> bool``: does ``value`` work for ``key`` under the
current hidden state? ``kind`` is one of :data:`TRIAL_KINDS` and is used by the
environment only for accounting. Trials never advance the task stream."""


class LifecycleState(str, enum.Enum):
    """State of a memory record. Baselines report every record as ``ACTIVE``."""

    HYPOTHESIS = "hypothesis"
    ACTIVE = "active"
    REVOKED = "revoked"


class _Checked:
    """Private base of :class:`Evidence`: one slot, outside the dataclass fields (so
    equality, hashing, ``repr``, ``fields()`` and pickling ignore it), where the
    constructor records that it validated the evidence."""

    __slots__ = ("_checked",)


@dataclass(frozen=True, slots=True, init=False)
class Evidence(_Checked):
    """One thing a step revealed.

    ``outcome=True/False``: the agent used ``value`` for ``key`` and it worked /
    failed. ``outcome=None``: an asserted observation (a stated fact or
    preference) with no action behind it.

    The constructor validates every field (:func:`validate_evidence`), once, where
    the evidence is built, and marks the instance checked; memories then skip
    re-validating it (:func:`is_checked`) and check only that time does not go
    backwards. Anything else they are given (another type, a subclass, an
    ``Evidence`` that bypassed its constructor, e.g. through ``object.__new__`` or
    unpickling) is validated in full before any state changes. The instance is
    frozen: changing a field with ``object.__setattr__`` breaks that contract.
    """

    key: str
    value: str
    t: int
    outcome: bool | None
    source: str = "env"

    def __init__(self, key: str, value: str, t: int, outcome: bool | None, source: str = "env") -> None:
        # The dataclass's own constructor with its checks inlined: a frozen dataclass sets each
        # field through object.__setattr__; the slots' setters do the same, about 2x faster
        # (environments build one Evidence per step).
        _set_key(self, key)
        _set_value(self, value)
        _set_t(self, t)
        _set_outcome(self, outcome)
        _set_source(self, source)
        # The common case in a few identity checks; anything unusual (a str subclass, a bad
        # field) goes through validate_evidence, which raises naming the field or accepts it.
        if not (type(key) is str and type(value) is str and type(t) is int and 0 <= t < MAX_T
                and (outcome is None or outcome is True or outcome is False)
                and type(source) is str and key.strip()):
            validate_evidence(self)
        _set_checked(self, True)


def slot_setter(cls: type, name: str) -> Callable[[Any, Any], None]:
    """The setter of the slot ``name`` of ``cls``: sets the field without the frozen
    dataclass's ``__setattr__`` guard, as its generated constructor does through
    ``object.__setattr__`` (for hand-written constructors of frozen slotted dataclasses)."""
    setter: Callable[[Any, Any], None] = vars(cls)[name].__set__
    return setter


_set_checked = slot_setter(_Checked, "_checked")
_set_key, _set_value, _set_t, _set_outcome, _set_source = (slot_setter(Evidence, name)
                                                           for name in ("key", "value", "t", "outcome", "source"))


def is_checked(evidence: object) -> bool:
    """Whether ``evidence`` is an :class:`Evidence` (the class itself, not a subclass)
    that its constructor validated: such evidence needs no re-validation."""
    if type(evidence) is not Evidence:
        return False
    try:
        return evidence._checked is True  # type: ignore[attr-defined]
    except AttributeError:  # built without the constructor
        return False


class Record(NamedTuple):
    """What a memory shows the agent for one key: a value and its standing.

    An immutable snapshot (a named tuple, cheap to build on every retrieval);
    ``score`` is the memory's own ranking score (TEPA: the posterior validity).
    """

    key: str
    value: str
    support: int
    conflict: int
    state: LifecycleState
    created: int
    updated: int
    score: float = 0.0

    @property
    def validity(self) -> float:
        """Beta(1, 1) posterior mean of the record's support and conflict counts."""
        return (self.support + 1.0) / (self.support + self.conflict + 2.0)


class AuditEvent(NamedTuple):
    """One lifecycle transition of a precedent, kept in an append-only log."""

    precedent_id: int
    key: str
    value: str
    from_state: LifecycleState | None
    to_state: LifecycleState
    t: int
    reason: str


def validate_evidence(evidence: object, last_t: int | None = None) -> None:
    """Raise ``TypeError``/``ValueError`` naming the field when evidence is malformed.

    ``last_t`` is the newest time a memory has seen; evidence older than that is
    refused because memories are written in stream order.
    """
    if not isinstance(evidence, Evidence):
        raise TypeError(f"evidence must be an Evidence, got {type(evidence).__name__}")
    if not isinstance(evidence.key, str):
        raise TypeError(f"evidence.key must be a str, got {type(evidence.key).__name__}")
    if not evidence.key.strip():
        raise ValueError("evidence.key must be a non-empty string")
    if not isinstance(evidence.value, str):
        raise TypeError(f"evidence.value must be a str, got {type(evidence.value).__name__}")
    if isinstance(evidence.t, bool) or not isinstance(evidence.t, int):
        raise TypeError(f"evidence.t must be an int, got {type(evidence.t).__name__}")
    if not 0 <= evidence.t < MAX_T:
        raise ValueError(f"evidence.t must be in [0, 2**63), got {evidence.t}")
    if evidence.outcome is not None and not isinstance(evidence.outcome, bool):
        raise TypeError(
            f"evidence.outcome must be True, False or None, got {evidence.outcome!r}"
        )
    if not isinstance(evidence.source, str):
        raise TypeError(f"evidence.source must be a str, got {type(evidence.source).__name__}")
    if last_t is not None and evidence.t < last_t:
        raise ValueError(
            f"evidence.t went backwards: {evidence.t} after {last_t} (key {evidence.key!r})"
        )
