"""TEPA's parameters: the paper's thresholds and prior as one frozen, validated
:class:`TEPAParams`, and how TEPA's constructor arguments resolve into it and into
:class:`~tepa_envs.agents.memories.tepa_choices.TEPAChoices`.

TEPA takes its configuration in either of two forms, never both at once:

* grouped: ``TEPA(params=TEPAParams(theta_rev=0.4), choices=TEPAChoices.from_preset("paper"))``;
* keywords (the form the registry, the CLI and spec files use):
  ``TEPA(theta_rev=0.4, preset="paper")``; every keyword left ``None`` takes its
  default (the :class:`TEPAParams` field's, or the preset's choice).

Either way a bad value raises ``TypeError``/``ValueError`` naming the field before
anything is stored. :class:`TEPABase` is that constructor, and the configuration as a
memory's attributes (settable, validated); the rules build on it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from tepa_envs.core import check_number, check_positive_int, check_probability

from tepa_envs.agents.memories.baselines import check_on_notify
from tepa_envs.agents.memories.protocol import MemoryBase
from tepa_envs.agents.memories.tepa_choices import PRESET_NAMES, TEPAChoices, resolve_choices

ON_NOTIFY: tuple[str, ...] = ("ignore", "demote", "revoke")
"""Values of TEPA's ``on_notify`` option."""


@dataclass(frozen=True)
class TEPAParams:
    """TEPA's numbers: the evidence thresholds and prior the paper fixes, and ``top_k``.

    A precedent's validity is the posterior mean ``q = (s + alpha) / (s + f + alpha + beta)``
    over its supports ``s`` and conflicts ``f``.

    Fields (the paper's values are the defaults):

    * ``alpha``, ``beta`` (> 0; 1, 1): the Beta prior of the validity posterior.
    * ``theta_rev`` (in [0, 1]; 0.3): the posterior rule revokes a precedent whose
      ``q`` is below this after ``n_min`` observations.
    * ``n_min`` (int >= 1; 5): observations (support + conflict) before the posterior
      rule applies.
    * ``theta_rec`` (in [0, 1]; 0.34): the recent-success rule revokes a precedent
      whose last ``n_rec`` outcomes succeed at a rate below this.
    * ``n_rec`` (int >= 1; 3): the size of the recent-outcome window.
    * ``theta_pro`` (in [0, 1]; 0.6): a hypothesis is promoted once ``q`` reaches this.
    * ``theta_prop`` (int >= 1; 3): supports before a value that challenges a live
      precedent is proposed (a key with no live precedent uses the choice
      ``theta_prop_fresh``).
    * ``top_k`` (int >= 1; 3): at most this many active precedents are retrieved per key.

    Numbers are normalised (``alpha``, ``beta`` and the thresholds to ``float``, the
    counts to ``int``), so equal settings compare equal.
    """

    alpha: float = 1.0
    beta: float = 1.0
    theta_rev: float = 0.3
    n_min: int = 5
    theta_rec: float = 0.34
    n_rec: int = 3
    theta_pro: float = 0.6
    theta_prop: int = 3
    top_k: int = 3

    def __post_init__(self) -> None:
        normalised: dict[str, float] = {}
        for name in ("alpha", "beta"):
            prior = getattr(self, name)
            normalised[name] = check_number(name, prior)
            if not normalised[name] > 0:
                raise ValueError(f"{name} must be > 0, got {prior!r}")
        for name in ("theta_rev", "theta_rec", "theta_pro"):
            normalised[name] = check_probability(name, getattr(self, name))
        for name in ("n_min", "n_rec", "theta_prop", "top_k"):
            normalised[name] = check_positive_int(name, getattr(self, name))
        for name, value in normalised.items():
            object.__setattr__(self, name, value)

    def as_dict(self) -> dict[str, Any]:
        """The parameters by name, for reports."""
        return asdict(self)


def resolve_params(params: TEPAParams | None, **keywords: Any) -> TEPAParams:
    """``params``, or the :class:`TEPAParams` of the keywords that are not ``None``
    (``TypeError`` when both are given)."""
    given = sorted(name for name, value in keywords.items() if value is not None)
    if params is None:
        return TEPAParams(**{name: keywords[name] for name in given})
    if not isinstance(params, TEPAParams):
        raise TypeError(f"params must be a TEPAParams, got {type(params).__name__}")
    if given:
        raise TypeError(f"give TEPA's parameters as params= or as keywords, not both: got params and "
                        f"{', '.join(given)}")
    return params


def resolve_config_choices(choices: TEPAChoices | None, preset: str | None, theta_prop: int,
                           **keywords: Any) -> tuple[str | None, TEPAChoices]:
    """The preset's name and the resolved choices: ``choices`` as given (named after the preset
    it equals, ``None`` if none), or ``preset``'s (default ``"v0"``) with every keyword that is
    not ``None`` applied (``TypeError`` when ``choices`` comes with a preset or keywords)."""
    if choices is None:
        name = "v0" if preset is None else preset
        return name, resolve_choices(name, theta_prop, **keywords)
    if not isinstance(choices, TEPAChoices):
        raise TypeError(f"choices must be a TEPAChoices, got {type(choices).__name__}")
    given = sorted(name for name, value in keywords.items() if value is not None)
    if preset is not None or given:
        extra = ", ".join((["preset"] if preset is not None else []) + given)
        raise TypeError(f"give TEPA's choices as choices= or as preset and keywords, not both: got choices "
                        f"and {extra}")
    return next((name for name in PRESET_NAMES if resolve_choices(name, theta_prop) == choices), None), choices


def _param(name: str, doc: str) -> property:
    """A field of :class:`TEPAParams` as an attribute: setting it replaces :attr:`TEPABase.params`
    (validated), and later reasons quote the new value."""

    def get(self: TEPABase) -> Any:
        return getattr(self._params, name)

    def set(self: TEPABase, value: Any) -> None:
        self.params = replace(self._params, **{name: value})

    return property(get, set, doc=doc)


class TEPABase(MemoryBase):
    """TEPA's constructor and configuration: the arguments resolved into :attr:`params` and
    :attr:`choices`, exposed as attributes (settable, validated), and copied by
    :meth:`_configure` into the private attributes the rules read. A subclass supplies
    ``_reset`` and the rules (:class:`~tepa_envs.agents.memories.tepa_rules.TEPARules`)."""

    alpha = _param("alpha", "Beta prior's alpha of the validity posterior.")
    beta = _param("beta", "Beta prior's beta of the validity posterior.")
    theta_rev = _param("theta_rev", "Revoke when the posterior falls below this after ``n_min`` observations.")
    n_min = _param("n_min", "Observations (support + conflict) before the posterior rule applies.")
    theta_rec = _param("theta_rec", "Revoke when the recent success rate is below this.")
    n_rec = _param("n_rec", "Size of the recent-outcome window.")
    theta_pro = _param("theta_pro", "Promote a hypothesis once its posterior reaches this.")
    theta_prop = _param("theta_prop", "Supports before a value challenging a live precedent is proposed.")
    top_k = _param("top_k", "At most this many active precedents are retrieved per key.")

    def __init__(self, *, params: TEPAParams | None = None, choices: TEPAChoices | None = None,
                 preset: str | None = None, alpha: float | None = None, beta: float | None = None,
                 theta_rev: float | None = None, n_min: int | None = None, theta_rec: float | None = None,
                 n_rec: int | None = None, theta_pro: float | None = None, theta_prop: int | None = None,
                 theta_prop_fresh: int | None = None, assertion_supersedes: bool | None = None,
                 window_outcomes: str | None = None, failed_candidate: str | None = None,
                 assertions_in_window: bool | None = None, window_seed: str | None = None,
                 revoke_check: str | None = None, tie_break: str | None = None,
                 candidate_counting: str | None = None, revocation: bool = True, top_k: int | None = None,
                 on_notify: str = "ignore") -> None:
        # Everything is validated into locals first: a refused argument changes nothing.
        on_notify = check_on_notify(on_notify, ON_NOTIFY)
        params = resolve_params(params, alpha=alpha, beta=beta, theta_rev=theta_rev, n_min=n_min,
                                theta_rec=theta_rec, n_rec=n_rec, theta_pro=theta_pro, theta_prop=theta_prop,
                                top_k=top_k)
        if not isinstance(revocation, bool):
            raise TypeError(f"revocation must be a bool, got {type(revocation).__name__}")
        preset_name, choices = resolve_config_choices(
            choices, preset, params.theta_prop, theta_prop_fresh=theta_prop_fresh,
            assertion_supersedes=assertion_supersedes, window_outcomes=window_outcomes,
            failed_candidate=failed_candidate, assertions_in_window=assertions_in_window, window_seed=window_seed,
            revoke_check=revoke_check, tie_break=tie_break, candidate_counting=candidate_counting)
        super().__init__()
        self.preset: str | None = preset_name
        """The preset the choices come from (``None``: choices given that match no preset)."""
        self.on_notify_action = on_notify
        self._params, self._choices, self._revocation = params, choices, revocation
        self._reset()  # which calls _configure

    @property
    def params(self) -> TEPAParams:
        """The thresholds and prior in force (settable: later reasons quote the new values)."""
        return self._params

    @params.setter
    def params(self, params: TEPAParams) -> None:
        if not isinstance(params, TEPAParams):
            raise TypeError(f"params must be a TEPAParams, got {type(params).__name__}")
        self._params = params
        self._configure()

    @property
    def choices(self) -> TEPAChoices:
        """The resolved implementation choices (settable)."""
        return self._choices

    @choices.setter
    def choices(self, choices: TEPAChoices) -> None:
        if not isinstance(choices, TEPAChoices):
            raise TypeError(f"choices must be a TEPAChoices, got {type(choices).__name__}")
        self._choices = choices
        self._configure()

    @property
    def theta_prop_fresh(self) -> int:
        """Supports before a value is proposed for a key with no live precedent (a choice)."""
        return self._choices.theta_prop_fresh

    @theta_prop_fresh.setter
    def theta_prop_fresh(self, value: int) -> None:
        self.choices = replace(self._choices, theta_prop_fresh=value)

    @property
    def revocation(self) -> bool:
        """``False``: no precedent is ever revoked (the NoRev ablation)."""
        return self._revocation

    @revocation.setter
    def revocation(self, revocation: bool) -> None:
        if not isinstance(revocation, bool):
            raise TypeError(f"revocation must be a bool, got {type(revocation).__name__}")
        self._revocation = revocation
        self._configure()

    def _configure(self) -> None:
        """Copy the parameters and choices the rules read on every evidence into attributes (one
        look-up each; the rest are read from :attr:`params` and :attr:`choices`). CPython (3.11)
        keeps up to 30 attributes of an instance in its fastest form: TEPA has 29."""
        p, c = self._params, self._choices
        self._alpha, self._beta = p.alpha, p.beta
        self._theta_rev, self._theta_rec, self._theta_pro = p.theta_rev, p.theta_rec, p.theta_pro
        self._n_min, self._n_rec = p.n_min, p.n_rec
        self._supersede = self._revocation and c.assertion_supersedes
        self._window_conflicts = c.window_outcomes == "support_and_conflict"
        self._window_assertions = c.assertions_in_window
        self._seed_from_history = c.window_seed == "candidate_history"
        self._check_after_support = c.revoke_check in ("after_every_update", "after_support")
        self._consecutive = c.candidate_counting == "consecutive"
        self._discard_failed = c.failed_candidate == "discard"


__all__ = ["ON_NOTIFY", "TEPABase", "TEPAParams", "resolve_config_choices", "resolve_params"]
