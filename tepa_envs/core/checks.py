"""Argument and evidence checks shared by every module: ``TypeError`` for a wrong
type, ``ValueError`` for a wrong value, each naming the field."""

from __future__ import annotations

import math

from tepa_envs.core.types import PHASE_NAMES, TRIAL_KINDS


def check_probability(name: str, value: float) -> float:
    """Validate a threshold or rate in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value}")
    return float(value)


def check_positive_int(name: str, value: int) -> int:
    """Validate a window size or count (>= 1)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return value


def check_trial_kind(kind: object) -> str:
    """Validate a trial kind (one of :data:`TRIAL_KINDS`)."""
    if kind not in TRIAL_KINDS:
        raise ValueError(f"trial kind must be one of {TRIAL_KINDS}, got {kind!r}")
    return kind  # type: ignore[return-value]


def check_phase_lengths(phase_lengths: object) -> tuple[int, int, int, int]:
    """Validate the lengths of the four phases (stable, light drift, reversal, return)."""
    if not isinstance(phase_lengths, (tuple, list)) or len(phase_lengths) != len(PHASE_NAMES):
        raise ValueError(
            f"phase_lengths must be a sequence of {len(PHASE_NAMES)} ints "
            f"({', '.join(PHASE_NAMES)}), got {phase_lengths!r}"
        )
    return tuple(check_positive_int(f"phase_lengths[{i}]", n) for i, n in enumerate(phase_lengths))  # type: ignore[return-value]
