"""Memories that forget: reactively after failures (the oracle bounds that forget at the
true change, :class:`OracleReset`, live in :mod:`~tepa_envs.agents.memories.oracles` and
are importable from here as before)."""

from __future__ import annotations

from tepa_envs.core import Evidence, check_positive_int

from tepa_envs.agents.memories.baselines import AppendOnly
from tepa_envs.agents.memories.oracles import OracleReset


class ReactiveForgetting(AppendOnly):
    """Append-only memory wiped clean after ``patience`` consecutive failures.

    The cleanup is global: a run of failures anywhere erases every key, since
    the method cannot tell which memories went stale.

    Args:
        patience: consecutive failed outcomes that trigger the cleanup.
        top_k: at most this many values are retrieved per key.
        retrieval: ``"key"`` or ``"lexical"`` (see :class:`AppendOnly`).
    """

    name = "reactive-forgetting"

    def __init__(self, *, patience: int = 3, top_k: int = 5, retrieval: str = "key") -> None:
        self.patience = check_positive_int("patience", patience)
        super().__init__(top_k=top_k, retrieval=retrieval)

    def _reset(self) -> None:
        super()._reset()
        self._failure_run = 0
        self.cleanups = 0

    def _observe(self, evidence: Evidence) -> None:
        if evidence.outcome is False:
            self._failure_run += 1
            if self._failure_run >= self.patience:
                self._values.clear()
                self._failure_run = 0
                self.cleanups += 1
            return
        if evidence.outcome is True:
            self._failure_run = 0
        super()._observe(evidence)


__all__ = ["OracleReset", "ReactiveForgetting"]
