"""The memory protocol and a validating base class for the shipped methods."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from tepa_envs.core import Evidence, Record, TrialFn, validate_evidence


@runtime_checkable
class Memory(Protocol):
    """What every memory method offers. A user's method needs only these three."""

    name: str

    def observe(self, evidence: Evidence) -> None: ...

    def retrieve(self, key: str, context: str = "") -> list[Record]: ...

    def reset(self) -> None: ...


class MemoryBase:
    """Validates input before any state changes, so bad evidence loses nothing.

    Subclasses implement ``_observe``, ``_retrieve`` and ``_reset``.
    """

    name: str = "memory"
    trial: TrialFn | None = None

    def __init__(self) -> None:
        self._last_t: int | None = None

    def observe(self, evidence: Evidence) -> None:
        validate_evidence(evidence, self._last_t)
        self._observe(evidence)
        self._last_t = evidence.t

    def retrieve(self, key: str, context: str = "") -> list[Record]:
        if not isinstance(key, str):
            raise TypeError(f"key must be a str, got {type(key).__name__}")
        if not isinstance(context, str):
            raise TypeError(f"context must be a str, got {type(context).__name__}")
        return self._retrieve(key, context)

    def reset(self) -> None:
        self._last_t = None
        self._reset()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

    def _observe(self, evidence: Evidence) -> None:
        raise NotImplementedError

    def _retrieve(self, key: str, context: str) -> list[Record]:
        raise NotImplementedError

    def _reset(self) -> None:
        raise NotImplementedError
