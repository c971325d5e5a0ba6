"""Trial validation shared by TEPA-Full and LWW + validation.

A candidate value for a key is checked by executing up to three held-out trial
tasks through the environment's ``trial(kind, key, value)`` callback:

* support: the candidate works for its key now (pass when the trial succeeds);
* counterfactual: the incumbent value no longer works (pass when it fails);
* contamination: an unrelated key's established value still works, so the
  change is local rather than a broken environment (pass when it succeeds).

The candidate passes when at least ``pass_ratio`` of the trials run pass and at
least one support trial passes. Trials whose subject does not exist (no
incumbent, no unrelated key) are not run and not counted.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from dataclasses import dataclass

from tepa_envs.core import TRIAL_KINDS, TrialFn, check_positive_int, check_probability


@dataclass(frozen=True, slots=True)
class TrialOutcome:
    passed: bool
    run: int
    passes: int
    support_passed: bool
    incumbent_failed: bool | None


class TrialGate:
    """Runs the three trials and keeps count of the budget spent."""

    def __init__(self, *, pass_ratio: float = 0.6, min_support_passes: int = 1) -> None:
        self.pass_ratio = check_probability("pass_ratio", pass_ratio)
        self.min_support_passes = check_positive_int("min_support_passes", min_support_passes)
        self.spent: Counter[str] = Counter()

    @property
    def budget_spent(self) -> int:
        return sum(self.spent.values())

    def reset(self) -> None:
        self.spent.clear()

    def validate(self, trial: TrialFn, key: str, candidate: str, incumbent: str | None,
                 unrelated: tuple[str, str] | None) -> TrialOutcome:
        results: list[bool] = []
        support_ok = self._run(trial, "support", key, candidate)
        results.append(support_ok)
        incumbent_failed: bool | None = None
        if incumbent is not None and incumbent != candidate:
            incumbent_failed = not self._run(trial, "counterfactual", key, incumbent)
            results.append(incumbent_failed)
        if unrelated is not None:
            results.append(self._run(trial, "contamination", *unrelated))
        passes = sum(results)
        passed = (support_ok and int(support_ok) >= self.min_support_passes
                  and passes / len(results) >= self.pass_ratio)
        return TrialOutcome(passed, len(results), passes, support_ok, incumbent_failed)

    def _run(self, trial: TrialFn, kind: str, key: str, value: str) -> bool:
        assert kind in TRIAL_KINDS
        outcome = trial(kind, key, value)
        if not isinstance(outcome, (bool, np.bool_)):
            raise TypeError(f"trial callback must return a bool, got {type(outcome).__name__}")
        self.spent[kind] += 1
        return bool(outcome)
