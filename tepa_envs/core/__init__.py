"""Shared types, contracts and building blocks of every environment family.

Environments emit :class:`Evidence`; memories return :class:`Record` objects;
:mod:`~tepa_envs.core.contracts` declares what agents may ask of a task
environment and :mod:`~tepa_envs.core.step_info` the ``info`` every step carries.
"""

from tepa_envs.core.checks import (
    check_choice,
    check_int,
    check_number,
    check_phase_lengths,
    check_positive_int,
    check_probability,
    check_str,
    check_trial_kind,
)
from tepa_envs.core.types import (
    PHASE_NAMES,
    TRIAL_KINDS,
    AuditEvent,
    Evidence,
    LifecycleState,
    Record,
    TrialFn,
    validate_evidence,
)

__all__ = [
    "PHASE_NAMES", "TRIAL_KINDS", "AuditEvent", "Evidence", "LifecycleState", "Record", "TrialFn",
    "check_choice", "check_int", "check_number", "check_phase_lengths", "check_positive_int", "check_probability",
    "check_str", "check_trial_kind", "validate_evidence",
]
