"""LWW + validation: last-write-wins whose replacements must pass trials."""

from __future__ import annotations

from tepa_envs.core import Evidence

from tepa_envs.agents.memories.baselines import LastWriteWins, asserts_value
from tepa_envs.agents.memories.trials import TrialGate


class LWWValidation(LastWriteWins):
    """LWW that only replaces a key's value after the candidate passes TEPA-Full's trials.

    A value for a key with no current value is written at once, as in LWW; an
    unrelated value that fails its contamination check is dropped.
    Without a trial callback it behaves exactly like LWW.

    Args:
        pass_ratio: fraction of trials that must pass (paper: 0.6).
    """

    name = "lww-validation"

    def __init__(self, *, pass_ratio: float = 0.6) -> None:
        self.gate = TrialGate(pass_ratio=pass_ratio)
        super().__init__()

    @property
    def trial_budget_spent(self) -> int:
        return self.gate.budget_spent

    def _reset(self) -> None:
        super()._reset()
        self.gate.reset()

    def _observe(self, evidence: Evidence) -> None:
        if not asserts_value(evidence):
            return
        current = self._current.get(evidence.key)
        if current is None or current.value == evidence.value or self.trial is None:
            self._write(evidence)
            return
        unrelated = next(((k, e.value) for k, e in reversed(self._current.items())
                          if k != evidence.key), None)
        result = self.gate.validate(self.trial, evidence.key, evidence.value, current.value, unrelated)
        if unrelated is not None and result.unrelated_failed:
            del self._current[unrelated[0]]  # LWW's way to drop a value shown stale
        if result.passed:
            self._write(evidence)
