"""What an agent may ask of a task environment, declared once.

A language agent turns a remembered value into an action and, for methods that
validate by execution, runs held-out trials. Every task environment offers the
members of :class:`TaskEnv`; agents reach them through
``env.get_wrapper_attr(name)``, so a wrapper can override any of them. The
mixin :class:`ValueActions` implements them for environments whose actions
index a tuple of named values.

Some members are optional: :class:`TaskEnvDefaults` gives each a default (nothing
stated, no trials, no known keys, no named phases), so an environment that
subclasses it declares only what it offers, and nobody ever asks an environment
whether it has a member (``tests/test_layout.py`` refuses such probes).
:class:`NamedObservation` declares the one capability outside the task contract:
naming the entries of a flat observation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Mapping, Protocol, Sequence, runtime_checkable

from tepa_envs.core.checks import check_choice, check_str, check_trial_kind
from tepa_envs.error import TrialsUnavailable

if TYPE_CHECKING:
    from tepa_envs.core.drift import DriftSchedule

TASK_ENV_MEMBERS: tuple[str, ...] = ("choices", "to_action", "stated_value", "offers_trials", "trial",
                                     "trials_spent", "known_keys", "phase_names", "reversal_phases")


@runtime_checkable
class TaskEnv(Protocol):
    """The contract between a task environment and the agents acting in it."""

    offers_trials: bool
    """Whether :meth:`trial` answers (``False``: it raises :class:`~tepa_envs.error.TrialsUnavailable`)."""

    def choices(self, key: str) -> tuple[str, ...]:
        """The values a reader may choose among for ``key`` (``()``: free-text answers)."""
        ...

    def to_action(self, value: str) -> Any:
        """The action that uses ``value``; ``ValueError`` for a value no action uses."""
        ...

    def stated_value(self, key: str, context: str) -> str | None:
        """The value the task's text states for ``key`` (a user saying what they want), or ``None``."""
        ...

    def trial(self, kind: str, key: str, value: str) -> bool:
        """Held-out trial: does ``value`` work for ``key`` now? Never advances the stream."""
        ...

    @property
    def trials_spent(self) -> Mapping[str, int]:
        """Trials run since the last reset, per kind."""
        ...

    def known_keys(self) -> tuple[str, ...]:
        """The keys of the evidence streamed so far, what a reader that kept the keys it was
        shown would know (``()``: tasks name their key; question readers use it)."""
        ...

    def phase_names(self) -> tuple[str, ...]:
        """The names of an episode's phases, in order (``()``: the episode has no named phases)."""
        ...

    def reversal_phases(self) -> tuple[str, ...]:
        """The phases in which every key's value changes at once, every remembered value going
        stale together (``()``: none); the evaluation scores them as the drift score."""
        ...


class TaskEnvDefaults:
    """Defaults of the optional parts of :class:`TaskEnv`: nothing stated, no trials, no
    known keys, no named phases."""

    offers_trials: ClassVar[bool] = False

    def stated_value(self, key: str, context: str) -> str | None:
        return None

    def trial(self, kind: str, key: str, value: str) -> bool:
        check_trial_kind(kind)
        raise TrialsUnavailable(f"{type(self).__name__} offers no held-out trials")

    @property
    def trials_spent(self) -> Mapping[str, int]:
        return {}

    def known_keys(self) -> tuple[str, ...]:
        return ()

    def phase_names(self) -> tuple[str, ...]:
        return ()

    def reversal_phases(self) -> tuple[str, ...]:
        return ()


class DriftPhases:
    """:meth:`TaskEnv.phase_names` and :meth:`TaskEnv.reversal_phases` of an environment
    whose drift is the :class:`~tepa_envs.core.drift.DriftSchedule` it keeps in
    :attr:`drift` (listed before the environment's base class, so it overrides the defaults)."""

    drift: DriftSchedule

    def phase_names(self) -> tuple[str, ...]:
        return tuple(self.drift.names)

    def reversal_phases(self) -> tuple[str, ...]:
        return tuple(self.drift.reversal_phases())


@runtime_checkable
class NamedObservation(Protocol):
    """An environment that names the entries of its flat observation, in order."""

    def observation_fields(self) -> tuple[str, ...]: ...


class ValueActions(TaskEnvDefaults):
    """Named values a reader chooses among, mapped to ``Discrete`` actions by index."""

    values: tuple[str, ...]

    def _set_values(self, values: Sequence[str]) -> None:
        self.values = tuple(values)
        self._value_index = {v: i for i, v in enumerate(self.values)}

    def choices(self, key: str) -> tuple[str, ...]:
        """The values a reader may choose among for ``key``."""
        return self.values

    def to_action(self, value: str) -> int:
        """The action that uses ``value``; ``TypeError`` for a non-string, ``ValueError``
        for an unknown value."""
        return self._value_index[check_choice("value", check_str("value", value), self._value_index)]
