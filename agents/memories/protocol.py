"""The memory protocol, the optional memory hooks, and a validating base class.

A memory method is any object with ``name``, ``observe``, ``retrieve`` and
``reset`` (:class:`Memory`). A method that needs more from the agent loop
subclasses :class:`MemoryHooks` and overrides the hooks it uses; every hook has a
no-op default, and the loop reaches them through :func:`hooks_of`, never by
looking attributes up.

What a memory may offer beyond the protocol is declared too: an audit log
(:class:`AuditedMemory`), its records' states by id (:class:`ReportsStates`),
both checked with ``isinstance``, and records whose ``score`` is a validity
(:attr:`MemoryHooks.scores_are_validity`)."""

from __future__ import annotations

from typing import ClassVar, Protocol, runtime_checkable

from tepa_envs.core import AuditEvent, Evidence, LifecycleState, Record, TrialFn, check_str, validate_evidence


@runtime_checkable
class Memory(Protocol):
    """What every memory method offers. A user's method needs only these three."""

    name: str

    def observe(self, evidence: Evidence) -> None: ...

    def retrieve(self, key: str, context: str = "") -> list[Record]: ...

    def reset(self) -> None: ...


@runtime_checkable
class AuditedMemory(Protocol):
    """A memory that logs every change of a record's standing (the TEPA family, TwoStrike):
    the drift metrics read its revocations from :attr:`audit_log`."""

    @property
    def audit_log(self) -> tuple[AuditEvent, ...]:
        """Every lifecycle transition so far, in order (append-only)."""
        ...


@runtime_checkable
class ReportsStates(Protocol):
    """A memory that reports the current state of each record by its id (TEPA); replaying
    its :attr:`~AuditedMemory.audit_log` must give the same states."""

    def states(self) -> dict[int, LifecycleState]: ...


class MemoryHooks:
    """Optional hooks the agent loop calls on every memory that subclasses this class.

    * :meth:`bind_trial`: after each reset, the environment's held-out trial
      function (``None`` when the environment offers no trials); methods that
      validate candidates by execution keep it.
    * :meth:`on_phase_boundary`: the task now presented starts a new true phase
      (diagnostic oracle methods only act on it).
    * :meth:`on_oracle`: the task now presented has ``key`` and its true value is
      ``correct`` (``info["oracle"]["correct"]``), told before the memory is asked
      for it (diagnostic oracle methods only act on it: ``oracle-reset`` clears a key
      whose true value changed, ``oracle-view`` shows it).
    * :meth:`on_notify`: the environment's change notification
      (``info["notified"]``, :mod:`tepa_envs.core.notify`) is raised on the task now
      presented, whose key is ``key``: with ``notify="known"`` its correct value changed
      since the key was last presented; with ``"detected"`` a noisy detector says so.
      Told after the step's evidence is written and before the memory is asked for
      the task; a method uses it only through a named option (``on_notify``), off by
      default.
    * :attr:`trial_budget_spent`: trials this memory ran since its last reset.

    And one declared capability: :attr:`scores_are_validity`.
    """

    scores_are_validity: ClassVar[bool] = False
    """Whether each record's ``score`` is the memory's posterior validity of its value, so a
    language-model reader shows it as such (:func:`~tepa_envs.agents.readers.prompt.shows_validity`)."""

    def bind_trial(self, trial: TrialFn | None) -> None:
        """Keep (or drop, with ``None``) the environment's trial function."""

    def on_phase_boundary(self) -> None:
        """The task now presented starts a new true phase."""

    def on_oracle(self, key: str, correct: str) -> None:
        """The task now presented has ``key``, whose true value is ``correct``."""

    def on_notify(self, key: str) -> None:
        """The change notification is raised on the task now presented, whose key is ``key``."""

    @property
    def trial_budget_spent(self) -> int:
        return 0


NO_HOOKS = MemoryHooks()


def hooks_of(memory: Memory) -> MemoryHooks:
    """``memory`` itself when it subclasses :class:`MemoryHooks`, else hooks that do nothing."""
    return memory if isinstance(memory, MemoryHooks) else NO_HOOKS


class MemoryBase(MemoryHooks):
    """Validates input before any state changes, so bad evidence loses nothing.

    Evidence its constructor already validated (:func:`~tepa_envs.core.types.is_checked`)
    is only checked for time order; anything else is validated in full.

    Subclasses implement ``_observe``, ``_retrieve`` and ``_reset``; methods that
    validate by execution use :attr:`trial`, set by :meth:`bind_trial`.
    """

    name: str = "memory"
    trial: TrialFn | None = None

    def bind_trial(self, trial: TrialFn | None) -> None:
        if trial is not None and not callable(trial):
            raise TypeError(f"trial must be callable or None, got {type(trial).__name__}")
        self.trial = trial

    def __init__(self) -> None:
        self._last_t = 0  # evidence times are >= 0: nothing is refused as "backwards" before the first

    def observe(self, evidence: Evidence) -> None:
        # Trusted fast path: evidence its constructor validated (is_checked, inlined) needs only
        # the time-order check; anything else is validated in full. Both before any state changes.
        if type(evidence) is Evidence:
            try:
                checked = evidence._checked  # type: ignore[attr-defined]
            except AttributeError:
                checked = False
        else:
            checked = False
        if checked is not True or evidence.t < self._last_t:
            validate_evidence(evidence, self._last_t)
        self._observe(evidence)
        self._last_t = evidence.t

    def retrieve(self, key: str, context: str = "") -> list[Record]:
        if type(key) is not str or type(context) is not str:
            check_str("key", key), check_str("context", context)
        return self._retrieve(key, context)

    def reset(self) -> None:
        self._last_t = 0
        self._reset()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

    def _observe(self, evidence: Evidence) -> None:
        raise NotImplementedError

    def _retrieve(self, key: str, context: str) -> list[Record]:
        raise NotImplementedError

    def _reset(self) -> None:
        raise NotImplementedError
