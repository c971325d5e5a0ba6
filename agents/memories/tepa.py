"""TEPA: revocable evidence memory (TEPA-Rev), its no-revocation ablation, and
TEPA with the paper's rules read literally (``TEPAPaper``).

TEPA is four parts, one module each:

* :mod:`~tepa_envs.agents.memories.tepa_rules`: the paper's rules (precedents,
  the Hypothesis -> Active -> Revoked lifecycle, the promotion and revocation
  rules, the archive), one method each, in :class:`TEPARules`;
* :mod:`~tepa_envs.agents.memories.tepa_kernel`: the speed kernel, the same rules
  with their common transitions inlined, held to :class:`TEPARules` by
  ``tests/agents/memories/test_trusted_fast_path.py``;
* :mod:`~tepa_envs.agents.memories.tepa_audit`: the audit log, stored compactly;
* :mod:`~tepa_envs.agents.memories.tepa_params` and
  :mod:`~tepa_envs.agents.memories.tepa_choices`: the thresholds and prior
  (:class:`TEPAParams`) and the choices the paper leaves open (:class:`TEPAChoices`),
  frozen and validated.

:class:`TEPA` is the kernel under the shipped name ``tepa``; every variant
(``tepa-norev``, ``tepa-paper``, ``tepa-full``, ``tepa-regime``) subclasses it.
"""

from __future__ import annotations

from tepa_envs.agents.memories.tepa_audit import AuditLog
from tepa_envs.agents.memories.tepa_choices import TEPAChoices
from tepa_envs.agents.memories.tepa_kernel import TEPAKernel
from tepa_envs.agents.memories.tepa_params import TEPAParams
from tepa_envs.agents.memories.tepa_rules import (
    ACTIVE,
    HYPOTHESIS,
    ON_NOTIFY,
    REVOKED,
    TRANSITIONS,
    Precedent,
    Tally,
    TEPARules,
    replay_audit,
)


class TEPA(TEPAKernel):
    """TEPA-Rev: precedents with a Hypothesis -> Active -> Revoked lifecycle.

    The rules are :mod:`~tepa_envs.agents.memories.tepa_rules`'s; this class runs
    them through the speed kernel (same results, faster).

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

    Configuration, in one of two forms (never both):

    * grouped: ``TEPA(params=TEPAParams(...), choices=TEPAChoices.from_preset(...))``;
    * keywords: every field of :class:`TEPAParams` and of :class:`TEPAChoices` by
      name, and ``preset``. A keyword left ``None`` takes its default: the
      :class:`TEPAParams` field's, or ``preset``'s choice.

    Implementation choices (the paper leaves them open; :class:`TEPAChoices`
    documents every value, and ``tepa_choices.PAPER_READINGS`` the reason for each
    ``"paper"`` reading). v0's value first, the ``"paper"`` preset's in brackets:

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
        params: the thresholds and prior as one :class:`TEPAParams` (instead of
            the keywords below).
        choices: the implementation choices as one :class:`TEPAChoices` (instead
            of ``preset`` and the choice keywords).
        preset: ``"v0"`` (the project's reported numbers; default) or ``"paper"``.
        alpha, beta: Beta prior of the validity posterior (default and paper: 1, 1).
        theta_rev: revoke when the posterior falls below this after ``n_min``
            observations (0.3).
        n_min: observations (support + conflict) before the posterior rule applies (5).
        theta_rec: revoke when the success rate of the last ``n_rec`` outcomes is below this (0.34).
        n_rec: size of the recent-outcome window (3).
        theta_pro: promote a hypothesis once its posterior reaches this (0.6).
        theta_prop: supports before a value challenging a live precedent is proposed (3).
        revocation: ``False`` gives the NoRev ablation.
        top_k: at most this many active precedents are retrieved per key (3).
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
        if "choices" in kwargs:
            raise TypeError("TEPAPaper does not take 'choices'; its choices are the 'paper' preset's "
                            "(TEPA(choices=...) takes any)")
        super().__init__(preset="paper", **kwargs)  # type: ignore[arg-type]


__all__ = ["ACTIVE", "HYPOTHESIS", "ON_NOTIFY", "REVOKED", "TRANSITIONS", "AuditLog", "Precedent", "TEPA",
           "TEPAChoices", "TEPANoRev", "TEPAPaper", "TEPAParams", "TEPARules", "Tally", "replay_audit"]
