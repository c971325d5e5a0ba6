"""TEPA's speed kernel: the rules of :mod:`~tepa_envs.agents.memories.tepa_rules`
with their common transitions inlined.

:class:`TEPAKernel` computes exactly what :class:`~tepa_envs.agents.memories.tepa_rules.TEPARules`
computes (states, records, archive, audit log), faster:

* ``observe`` trusts evidence its constructor validated
  (:func:`~tepa_envs.core.types.is_checked`) and checks only its time order;
  anything else is validated in full before any state changes.
* The common transitions run inline, without the rule methods' calls: a fresh
  key's first support (proposed, and promoted when the prior allows, in one
  step), a support or a failed use of a key's only live value, and a failed use
  with nothing to discard. Every other case goes to the rules' ``_observe``.
* A key's only live precedent is retrieved without a call of ``_retrieve``.
* The rules' reasons go to the audit log as codes
  (:mod:`~tepa_envs.agents.memories.tepa_audit`), formatted when it is read.

A subclass that overrides a rule method (:data:`~tepa_envs.agents.memories.tepa_rules.LIFECYCLE`)
gets the rules' path, which calls it; one that overrides ``_retrieve`` gets it called.
``tests/agents/memories/test_trusted_fast_path.py`` binds the kernel to the rules:
over random streams under every choice, both give the same results, audit log included.
"""

from __future__ import annotations

from typing import Any, ClassVar

from tepa_envs.core import Evidence, Record, check_str, validate_evidence

from tepa_envs.agents.memories.tepa_audit import BLOCK, PROMOTED_1_0, PROPOSED_1_0
from tepa_envs.agents.memories.tepa_rules import ACTIVE, HYPOTHESIS, LIFECYCLE, REVOKED, Precedent, TEPARules

_new_tuple = tuple.__new__  # Record(...) without the named tuple's Python-level __new__: the same object
_new_object = object.__new__


class TEPAKernel(TEPARules):
    """:class:`~tepa_envs.agents.memories.tepa_rules.TEPARules` with the speed kernel's
    ``observe`` and ``retrieve`` (see the module docstring). Takes TEPA's arguments."""

    _rules_kept: ClassVar[bool] = True
    """Whether the class keeps every rule method of TEPARules (then the inlined paths apply)."""
    _retrieve_kept: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._rules_kept = all(getattr(cls, name) is getattr(TEPARules, name) for name in LIFECYCLE)
        cls._retrieve_kept = cls._retrieve is TEPARules._retrieve

    def _configure(self) -> None:
        super()._configure()
        # Which paths apply (instance attributes: one look-up in observe and retrieve).
        self._inline = self._rules_kept
        self._inline_retrieve = self._retrieve_kept
        # A fresh key's first support proposes a precedent with s = 1, f = 0 (when theta_prop_fresh
        # is 1) and, unless revocation is checked after supports, is it promoted at once?
        self._fresh_proposes = self.choices.theta_prop_fresh == 1 and not self._check_after_support
        self._fresh_state = (ACTIVE if (1 + self._alpha) / (1 + 0 + self._alpha + self._beta) >= self._theta_pro
                             else HYPOTHESIS)

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
                    tail = self._audit.tail
                    tail += (pid, t, PROPOSED_1_0, pid, t, PROMOTED_1_0)
                else:
                    tail = self._audit.tail
                    tail += (pid, t, PROPOSED_1_0)
                if len(tail) >= BLOCK:
                    self._audit.flush()
                self._last_t = t
                return
        elif len(live) == 1 and live[0].value == value:
            precedent = live[0]
            if outcome is False:
                # A failed use of the key's only live value: one conflict, then the revocation rules.
                precedent.conflict += 1
                precedent.updated = t
                n_rec = self._n_rec
                precedent.recent_bits = (precedent.recent_bits << 1) & ((1 << n_rec) - 1)
                if precedent.recent_n < n_rec:
                    precedent.recent_n += 1
                if self._revocation:
                    self._check_revocation(live, precedent, t)
                self._last_t = t
                return
            if not (self._consecutive and key in self._candidates):
                # A support of the key's only live value.
                precedent.support += 1
                precedent.updated = t
                if outcome is True or self._window_assertions:
                    n_rec = self._n_rec
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


__all__ = ["TEPAKernel"]
