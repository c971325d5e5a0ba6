"""TEPA-Full: TEPA whose hypotheses are promoted only after passing trials."""

from __future__ import annotations

from tepa_envs.core import check_positive_int

from tepa_envs.agents.memories.tepa import TEPA
from tepa_envs.agents.memories.tepa_rules import ACTIVE, Precedent
from tepa_envs.agents.memories.trials import TrialGate


class TEPAFull(TEPA):
    """TEPA plus trial validation before promotion.

    When the environment offers a ``trial`` callback (the agent wires it in),
    a hypothesis is promoted only if it passes :class:`TrialGate`; a promoted
    challenger whose counterfactual trial showed the incumbent failing revokes
    that incumbent, and an unrelated precedent that failed its contamination
    check is revoked as stale. A hypothesis that fails its trials is tried again after
    ``retry_after`` further supports. Without a trial callback TEPA-Full
    promotes by the posterior rule, exactly like TEPA.

    Args:
        pass_ratio: fraction of trials that must pass (paper: 0.6).
        retry_after: supports between two trial rounds of the same hypothesis.
        contamination: what a failed contamination check means:
            ``"blame_unrelated"`` (default: the unrelated precedent is revoked and the
            check leaves the candidate's ratio) or ``"count"`` (the paper read
            literally: one failed trial of the candidate; nothing is revoked).
        **kwargs: TEPA's thresholds.
    """

    name = "tepa-full"

    def __init__(self, *, pass_ratio: float = 0.6, retry_after: int = 3, contamination: str = "blame_unrelated",
                 **kwargs: object) -> None:
        self.gate = TrialGate(pass_ratio=pass_ratio, contamination=contamination)
        self.retry_after = check_positive_int("retry_after", retry_after)
        super().__init__(**kwargs)  # type: ignore[arg-type]

    @property
    def trial_budget_spent(self) -> int:
        return self.gate.budget_spent

    def _reset(self) -> None:
        super()._reset()
        self.gate.reset()
        self._trialed_at: dict[int, int] = {}

    def _consider_promotion(self, live: list[Precedent], precedent: Precedent, t: int) -> None:
        if self.trial is None:
            super()._consider_promotion(live, precedent, t)
            return
        last = self._trialed_at.get(precedent.id)
        if last is not None and precedent.support - last < self.retry_after:
            return
        self._trialed_at[precedent.id] = precedent.support
        incumbent = self._incumbent(live, precedent)
        unrelated = self._unrelated(precedent.key)
        result = self.gate.validate(self.trial, precedent.key, precedent.value,
                                    incumbent.value if incumbent else None,
                                    (unrelated.key, unrelated.value) if unrelated else None)
        if unrelated is not None and result.unrelated_failed and self.revocation:
            self._revoke(self._live[unrelated.key], unrelated, t,
                         "contamination trial: no longer works")
        if not result.passed:
            return
        self._promote(precedent, t, "passed trials")
        if incumbent is not None and result.incumbent_failed and self.revocation:
            self._revoke(live, incumbent, t, "counterfactual trial: incumbent no longer works")

    @staticmethod
    def _incumbent(live: list[Precedent], precedent: Precedent) -> Precedent | None:
        active = [p for p in live if p.state is ACTIVE and p is not precedent]
        return max(active, key=lambda p: (p.support, p.updated), default=None)

    def _unrelated(self, key: str) -> Precedent | None:
        """The most recently created active precedent of another key."""
        for p in reversed(self._by_id):
            if p.key != key and p.state is ACTIVE:
                return p
        return None
