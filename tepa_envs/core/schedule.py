"""The four-phase drift schedule shared by the task-stream environments.

Phases: stable, light drift (a fraction of keys change), full reversal (every
key changes to a value it has not had), partial return (a fraction of keys go
back to their stable value).
"""

from __future__ import annotations

import numpy as np

from tepa_envs.core import PHASE_NAMES, check_int, check_phase_lengths, check_probability


class PhaseSchedule:
    """Maps a task index to its phase."""

    def __init__(self, phase_lengths: tuple[int, int, int, int]) -> None:
        self.lengths = check_phase_lengths(phase_lengths)
        self.starts = tuple(int(s) for s in np.cumsum((0,) + self.lengths[:-1]))
        self.total = int(sum(self.lengths))
        self._phase_of = np.repeat(np.arange(len(self.lengths)), self.lengths)
        self._phase_list = self._phase_of.tolist()
        self._starts_set = frozenset(self.starts[1:])

    def phase_of(self, t: int) -> int:
        return self._phase_list[t] if t < self.total else self._phase_list[-1]

    def phase_array(self) -> np.ndarray:
        return self._phase_of.copy()

    def name_of(self, t: int) -> str:
        return PHASE_NAMES[self.phase_of(t)]

    def starts_phase(self, t: int) -> bool:
        return t in self._starts_set


def changed_count(fraction: float, n_keys: int) -> int:
    """Keys affected by a fractional change: at least one when the fraction is positive."""
    if fraction <= 0.0:
        return 0
    return min(n_keys, max(1, int(round(fraction * n_keys))))


def draw_phase_values(rng: np.random.Generator, n_keys: int, n_values: int,
                      light_fraction: float, return_fraction: float) -> np.ndarray:
    """Correct value index per phase and key, shape ``(4, n_keys)``."""
    check_probability("light_fraction", light_fraction)
    check_probability("return_fraction", return_fraction)
    check_int("n_values", n_values, low=2)  # drift needs another value to change to
    values = np.empty((len(PHASE_NAMES), n_keys), dtype=np.int64)
    values[0] = rng.integers(0, n_values, size=n_keys)
    values[1] = values[0]
    light = rng.choice(n_keys, size=changed_count(light_fraction, n_keys), replace=False)
    for k in light:
        values[1, k] = _other(rng, n_values, {int(values[0, k])})
    for k in range(n_keys):
        excluded = {int(values[0, k]), int(values[1, k])}
        if len(excluded) >= n_values:
            excluded = {int(values[1, k])}
        values[2, k] = _other(rng, n_values, excluded)
    values[3] = values[2]
    back = rng.choice(n_keys, size=changed_count(return_fraction, n_keys), replace=False)
    values[3, back] = values[0, back]
    return values


def _other(rng: np.random.Generator, n_values: int, excluded: set[int]) -> int:
    options = [v for v in range(n_values) if v not in excluded]
    return int(options[int(rng.integers(len(options)))])
