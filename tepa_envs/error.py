"""The project's errors, one vocabulary for every module.

* A wrong type raises ``TypeError`` and a wrong value ``ValueError``, each
  naming the field (through the checks in :mod:`tepa_envs.core.checks`).
* Gymnasium's own errors where they fit: :class:`ResetNeeded` (stepping before
  ``reset()`` or after the episode ended, asking a ``MemoryAgent`` to act
  before its ``reset``, using a FileOps ``Sandbox`` that is closed),
  :class:`DependencyNotInstalled` (an optional package is missing, e.g.
  pandas for parquet files; the message gives the ``pip install`` command).
* Invalid actions follow the same rule as every other argument: an action of
  the wrong type (``"tool_0"``, ``1.5``) raises ``TypeError``, an integer
  outside the action space ``ValueError``. Gymnasium's :class:`InvalidAction`
  is re-exported for completeness but not raised: it derives from neither
  built-in error, and Gymnasium's own core environments do not use it either
  (they assert ``action_space.contains(action)``).
* Errors specific to this project derive from :class:`TepaError`, so a caller
  can catch every one of them at once; each also derives from the built-in
  error it refines, so ``except ValueError`` keeps working. A closed sandbox
  raises ``ResetNeeded``, not :class:`SandboxError`: the fix is to call
  ``reset()``, not to change a path, and ``SandboxError`` stays the refusal of
  a path or an operation.
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
