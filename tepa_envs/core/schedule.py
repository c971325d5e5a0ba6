"""Phases of a task stream, and the paper's four-phase values.

:class:`PhaseSchedule` maps a task index to its phase (a segment of a
:class:`~tepa_envs.core.drift.DriftSchedule`; by default the paper's four phases:
stable, light drift (a fraction of keys change), full reversal (every key changes
to a value it has not had), partial return (a fraction of keys go back to their
stable value)). :func:`draw_phase_values` draws the four phases' values with the
shared schedule code (:func:`~tepa_envs.core.drift.draw_timeline`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from tepa_envs.core import PHASE_NAMES, check_int, check_phase_lengths, check_probability
from tepa_envs.core.drift import DriftSchedule, changed_count, draw_timeline, four_phase

__all__ = ["PhaseSchedule", "changed_count", "draw_phase_values"]


class PhaseSchedule:
    """Maps a task index to its phase.

    ``PhaseSchedule(phase_lengths)``: the paper's four phases (lengths checked by
    :func:`~tepa_envs.core.checks.check_phase_lengths`); ``PhaseSchedule.of(schedule)``:
    the segments of a :class:`~tepa_envs.core.drift.DriftSchedule`, named by it.
    """

    def __init__(self, phase_lengths: Sequence[int], names: Sequence[str] | None = None) -> None:
        if names is None:
            self.lengths: tuple[int, ...] = check_phase_lengths(phase_lengths)
            self.names: tuple[str, ...] = PHASE_NAMES
        else:
            self.lengths = tuple(int(n) for n in phase_lengths)
            self.names = tuple(names)
            if len(self.names) != len(self.lengths) or min(self.lengths) < 1:
                raise ValueError("a PhaseSchedule needs one name per phase and positive lengths")
        self.starts = tuple(int(s) for s in np.cumsum((0,) + self.lengths[:-1]))
        self.total = int(sum(self.lengths))
        self._phase_of = np.repeat(np.arange(len(self.lengths)), self.lengths)
        self._phase_list = self._phase_of.tolist()
        self._starts_set = frozenset(self.starts[1:])

    @classmethod
    def of(cls, schedule: DriftSchedule) -> PhaseSchedule:
        """The phases of a drift schedule: one per segment, with its name."""
        return cls(schedule.lengths, schedule.names)

    def phase_of(self, t: int) -> int:
        return self._phase_list[t] if t < self.total else self._phase_list[-1]

    def phase_array(self) -> np.ndarray:
        return self._phase_of.copy()

    def name_of(self, t: int) -> str:
        return self.names[self.phase_of(t)]

    def starts_phase(self, t: int) -> bool:
        return t in self._starts_set


def draw_phase_values(rng: np.random.Generator, n_keys: int, n_values: int,
                      light_fraction: float, return_fraction: float) -> np.ndarray:
    """Correct value index per phase and key, shape ``(4, n_keys)``: the ``"paper"``
    schedule's values (:func:`~tepa_envs.core.drift.four_phase`), drawn by
    :func:`~tepa_envs.core.drift.draw_timeline` (the draws do not depend on the phase lengths)."""
    check_probability("light_fraction", light_fraction)
    check_probability("return_fraction", return_fraction)
    check_int("n_values", n_values, low=2)  # drift needs another value to change to
    schedule = four_phase((1, 1, 1, 1), light_fraction, return_fraction)
    return draw_timeline(rng, schedule, n_keys, n_values).values
