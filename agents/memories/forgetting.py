"""Memories that forget: reactively after failures, or at the true phase boundary."""

from __future__ import annotations

from tepa_envs.core import Evidence, Record, check_positive_int

from tepa_envs.agents.memories.baselines import AppendOnly
from tepa_envs.agents.memories.protocol import MemoryBase


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


class OracleReset(MemoryBase):
    """Diagnostic upper bound: a base memory cleared at every true phase boundary.

    Only this method is told the boundaries (through :meth:`on_phase_boundary`).

    Args:
        base: the memory cleared at each boundary (default: append-only).
    """

    name = "oracle-reset"

    def __init__(self, *, base: MemoryBase | None = None) -> None:
        super().__init__()
        if base is not None and not isinstance(base, MemoryBase):
            raise TypeError(f"base must be a MemoryBase, got {type(base).__name__}")
        self.base = base if base is not None else AppendOnly()
        self.boundaries_seen = 0

    def on_phase_boundary(self) -> None:
        self.base.reset()
        self.boundaries_seen += 1

    def _observe(self, evidence: Evidence) -> None:
        self.base.observe(evidence)

    def _retrieve(self, key: str, context: str) -> list[Record]:
        return self.base.retrieve(key, context)

    def _reset(self) -> None:
        self.base.reset()
        self.boundaries_seen = 0
