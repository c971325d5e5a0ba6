"""Trial validation shared by TEPA-Full and LWW + validation.

A candidate value for a key is checked by executing up to three held-out trial
tasks (a budget of three) through the environment's ``trial(kind, key, value)``
callback:

* support: the candidate works for its key now (passes when the trial succeeds);
* counterfactual: the incumbent value no longer works (passes when it fails);
* contamination: an unrelated key's established value still works, so the
  memory around the change is sound (passes when it succeeds).

The candidate is promoted when its support trial passes and at least
``pass_ratio`` of the trials judged pass. What a failed contamination check
means is a named choice (``contamination``), since the paper only says "promote
if >= 60 % pass":

* ``"blame_unrelated"`` (default, what every reported number used): it is
  evidence against the *unrelated* memory, not against the candidate: it is
  reported (so the memory can revoke that stale value) and left out of the
  candidate's ratio;
* ``"count"`` (the paper read literally): it is one failed trial of the
  candidate's three, counted in its ratio, and blames nothing else.

Trials whose subject does not exist (no incumbent, no unrelated key) are not run
and not counted.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from tepa_envs.core import TRIAL_KINDS, TrialFn, check_choice, check_probability

CONTAMINATION_READINGS: tuple[str, ...] = ("blame_unrelated", "count")
"""What a failed contamination check means (see the module docstring); the first is the default."""


@dataclass(frozen=True, slots=True)
class TrialOutcome:
    passed: bool
    incumbent_failed: bool | None
    unrelated_failed: bool | None


class TrialGate:
    """Runs the trials, judges the candidate, and counts the budget spent per kind."""

    def __init__(self, *, pass_ratio: float = 0.6, contamination: str = "blame_unrelated") -> None:
        self.pass_ratio = check_probability("pass_ratio", pass_ratio)
        self.contamination = check_choice("contamination", contamination, CONTAMINATION_READINGS)
        self.spent: Counter[str] = Counter()

    @property
    def budget_spent(self) -> int:
        return sum(self.spent.values())

    def reset(self) -> None:
        self.spent.clear()

    def validate(self, trial: TrialFn, key: str, candidate: str, incumbent: str | None,
                 unrelated: tuple[str, str] | None) -> TrialOutcome:
        support_ok = self._run(trial, "support", key, candidate)
        judged = [support_ok]
        incumbent_failed: bool | None = None
        if incumbent is not None and incumbent != candidate:
            incumbent_failed = not self._run(trial, "counterfactual", key, incumbent)
            judged.append(incumbent_failed)
        unrelated_failed: bool | None = None
        if unrelated is not None:
            unrelated_failed = not self._run(trial, "contamination", *unrelated)
            if self.contamination == "count":
                judged.append(not unrelated_failed)
                unrelated_failed = None  # counted against the candidate, blamed on nothing else
            elif not unrelated_failed:
                judged.append(True)
        passed = support_ok and sum(judged) / len(judged) >= self.pass_ratio
        return TrialOutcome(passed, incumbent_failed, unrelated_failed)

    def _run(self, trial: TrialFn, kind: str, key: str, value: str) -> bool:
        assert kind in TRIAL_KINDS
        outcome = trial(kind, key, value)
        if not isinstance(outcome, (bool, np.bool_)):
            raise TypeError(f"trial callback must return a bool, got {type(outcome).__name__}")
        self.spent[kind] += 1
        return bool(outcome)
