"""Argument and evidence checks shared by every module: ``TypeError`` for a wrong
type, ``ValueError`` for a wrong value, each naming the field."""

from __future__ import annotations

import math
from typing import Collection, TypeVar

import numpy as np

from tepa_envs.core.types import PHASE_NAMES, TRIAL_KINDS

T = TypeVar("T")

MAX_PHASE_LENGTH = 10**6
"""Largest length of one phase: a stream of at most ``4 * MAX_PHASE_LENGTH`` tasks.
The environments allocate a few numbers per task at ``reset`` (tens of bytes per
task), so the bound keeps one episode's world within a few hundred MB and refuses
a typo such as ``10**12`` at once instead of failing with ``MemoryError``."""


def check_number(name: str, value: float) -> float:
    """Validate a real number (``bool`` is refused; NaN is left to the caller's range check)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    return float(value)


def check_probability(name: str, value: float) -> float:
    """Validate a threshold or rate in [0, 1]."""
    value = check_number(name, value)
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value}")
    return value


def check_int(name: str, value: int, *, low: int | None = None, high: int | None = None) -> int:
    """Validate an int (NumPy integers included, ``bool`` refused) in ``[low, high]``
    (either bound may be omitted); returns it as a Python ``int``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"in [{low}, {high}]" if low is not None and high is not None else (
            f">= {low}" if low is not None else f"<= {high}")
        raise ValueError(f"{name} must be {bounds}, got {value}")
    return int(value)


def check_positive_int(name: str, value: int) -> int:
    """Validate a window size or count (>= 1)."""
    return check_int(name, value, low=1)


def check_str(name: str, value: object) -> str:
    """Validate a string (any content)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    return value


def check_choice(name: str, value: T, choices: Collection[object]) -> T:
    """Validate that ``value`` is one of ``choices`` (``ValueError`` listing them otherwise,
    also for an unhashable value when ``choices`` is a set or a dict)."""
    try:
        known = value in choices
    except TypeError:
        known = False
    if not known:
        raise ValueError(f"{name} must be one of {', '.join(map(str, choices))}, got {value!r}")
    return value


def check_trial_kind(kind: object) -> str:
    """Validate a trial kind (one of :data:`TRIAL_KINDS`)."""
    return check_choice("trial kind", kind, TRIAL_KINDS)  # type: ignore[return-value]


def check_phase_lengths(phase_lengths: object) -> tuple[int, int, int, int]:
    """Validate the lengths of the four phases (stable, light drift, reversal, return):
    a tuple or list of exactly four ints, each in ``[1, MAX_PHASE_LENGTH]``. O(1): the
    length is checked before any element is looked at."""
    if not isinstance(phase_lengths, (tuple, list)):
        raise TypeError(f"phase_lengths must be a tuple or list of ints, got {type(phase_lengths).__name__}")
    if len(phase_lengths) != len(PHASE_NAMES):
        shown = repr(phase_lengths) if len(phase_lengths) <= 8 else f"{len(phase_lengths)} items"
        raise ValueError(
            f"phase_lengths must be a sequence of {len(PHASE_NAMES)} ints "
            f"({', '.join(PHASE_NAMES)}), got {shown}"
        )
    return tuple(check_int(f"phase_lengths[{i}]", n, low=1, high=MAX_PHASE_LENGTH)  # type: ignore[return-value]
                 for i, n in enumerate(phase_lengths))
