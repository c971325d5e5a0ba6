"""The project's errors, one vocabulary for every module.

* A wrong type raises ``TypeError`` and a wrong value ``ValueError``, each
  naming the field (through the checks in :mod:`tepa_envs.core.checks`).
* Gymnasium's own errors where they fit: :class:`ResetNeeded` (stepping before
  ``reset()`` or after the episode ended), :class:`DependencyNotInstalled` (an
  optional package is missing).
* Errors specific to this project derive from :class:`TepaError`, so a caller
  can catch every one of them at once; each also derives from the built-in
  error it refines, so ``except ValueError`` keeps working.
"""

from __future__ import annotations

from gymnasium.error import DependencyNotInstalled, InvalidAction, ResetNeeded

__all__ = [
    "DataFormatError", "DependencyNotInstalled", "InvalidAction", "ResetNeeded", "SandboxError", "TepaError",
    "TrialsUnavailable",
]


class TepaError(Exception):
    """Root of the errors raised by tepa-envs itself."""


class DataFormatError(TepaError, ValueError):
    """A data file or record does not follow the expected schema (e.g. a MemoryAgentBench row)."""


class SandboxError(TepaError, ValueError):
    """A path or operation the FileOps sandbox refuses (escape, link, special file,
    quota); names the path and the reason."""

    def __init__(self, path: object, reason: str) -> None:
        super().__init__(f"sandbox refused {path!r}: {reason}")
        self.path = path
        self.reason = reason


class TrialsUnavailable(TepaError, RuntimeError):
    """The environment offers no held-out trials (its ``offers_trials`` is ``False``)."""
