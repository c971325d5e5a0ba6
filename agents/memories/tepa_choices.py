"""The implementation choices of TEPA that the paper's rules leave open, each
named and validated, and the two presets that fix them all.

The paper (arXiv 2608.07429) gives TEPA's thresholds but not, for example, which
outcomes enter a precedent's recent-outcome window or what a failed use does to
a value that is not yet a precedent. Every such choice is a field of
:class:`TEPAChoices` and a keyword argument of :class:`~tepa_envs.agents.memories.tepa.TEPA`;
a preset fixes all of them at once:

* ``"v0"``: the behaviour every number the project reports was produced with
  (the default).
* ``"paper"``: the paper's rules read literally; where the paper is silent,
  the simplest reading (:data:`PAPER_READINGS` gives the one-line reason for each).

What each value does is documented on :class:`TEPAChoices`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from types import MappingProxyType
from typing import Any, Mapping

from tepa_envs.core import check_choice, check_positive_int, check_str

#: The allowed values of every choice given by name (the first is v0's).
CHOICE_VALUES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "window_outcomes": ("own_uses", "support_and_conflict"),
    "failed_candidate": ("discard", "count", "ignore"),
    "window_seed": ("proposing_outcome", "candidate_history"),
    "revoke_check": ("after_conflict", "after_every_update", "after_support"),
    "tie_break": ("recently_updated", "first_created", "last_created"),
    "candidate_counting": ("cumulative", "consecutive"),
})
BOOL_CHOICES: tuple[str, ...] = ("assertion_supersedes", "assertions_in_window")

#: ``theta_prop_fresh`` in a preset: ``None`` means "equal to ``theta_prop``".
PRESETS: Mapping[str, Mapping[str, Any]] = MappingProxyType({
    "v0": MappingProxyType({
        "theta_prop_fresh": 1, "assertion_supersedes": True, "window_outcomes": "own_uses",
        "failed_candidate": "discard", "assertions_in_window": False, "window_seed": "proposing_outcome",
        "revoke_check": "after_conflict", "tie_break": "recently_updated", "candidate_counting": "cumulative",
    }),
    "paper": MappingProxyType({
        "theta_prop_fresh": None, "assertion_supersedes": False, "window_outcomes": "support_and_conflict",
        "failed_candidate": "count", "assertions_in_window": False, "window_seed": "candidate_history",
        "revoke_check": "after_every_update", "tie_break": "first_created", "candidate_counting": "cumulative",
    }),
})
PRESET_NAMES: tuple[str, ...] = tuple(PRESETS)

#: Choices the paper leaves open where more than one reading is equally literal: the
#: ``"paper"`` preset takes the first; a report of the paper's rules gives the range over all.
PAPER_LITERAL_READINGS: Mapping[str, tuple[Any, ...]] = MappingProxyType({
    "revoke_check": ("after_every_update", "after_support", "after_conflict"),
})

#: Why the ``"paper"`` preset reads each choice the way it does.
PAPER_READINGS: Mapping[str, str] = MappingProxyType({
    "theta_prop_fresh": "the paper states one proposal threshold (theta_prop) and no separate one for a key "
                        "without a live precedent, so every proposal waits for theta_prop supports",
    "assertion_supersedes": "the paper's only revocation rules are the posterior and recent-success rules, so a "
                            "conflicting assertion is one more conflict, not a revocation of its own",
    "window_outcomes": "the recent-success rule is over the precedent's last n_rec outcomes and a competitor's "
                       "success counts as a conflict for it, so the window holds every counted outcome",
    "failed_candidate": "validity is defined over a value's supports and failures and nothing says failures "
                        "before proposal are forgotten, so they are kept as conflicts",
    "assertions_in_window": "an assertion has no outcome and the rule is over outcomes, so it does not enter "
                            "the window",
    "window_seed": "the window is the value's last n_rec outcomes and the paper does not restart it at "
                   "proposal, so it starts with the outcomes the candidate gathered",
    "revoke_check": "the revocation rules are conditions on a precedent's state with no trigger stated, so "
                    "they are checked after every update",
    "tie_break": "the paper ranks by validity alone; a stable sort keeps equal precedents in creation order",
    "candidate_counting": "the proposal rule counts supports, not runs of supports",
})


@dataclass(frozen=True)
class TEPAChoices:
    """The resolved implementation choices of one TEPA memory (``memory.choices``).

    Fields (v0's value first; ``"paper"``'s reading in :data:`PAPER_READINGS`):

    * ``theta_prop_fresh`` (int >= 1; v0 1, paper = ``theta_prop``): supports
      before a value is proposed for a key with no live precedent (a fresh key,
      or one whose precedents were all revoked).
    * ``assertion_supersedes`` (bool; v0 True, paper False): ``True``: a newer
      assertion of a different value revokes every live precedent of the key at
      once (a stated fact supersedes an older one). ``False``: it counts as one
      conflict against each of them, and they are revoked only by the posterior
      or recent-success rules.
    * ``window_outcomes`` (v0 ``"own_uses"``, paper ``"support_and_conflict"``):
      which outcomes enter a precedent's recent-outcome window. ``"own_uses"``:
      only uses of its own value (a success is a hit, a failure a miss); a
      success of another value of the key, though counted as a conflict, does
      not enter. ``"support_and_conflict"``: every outcome counted in its
      support or conflict, so a success of another value enters as a miss (a
      failure of another value counts for neither and never enters).
    * ``failed_candidate`` (v0 ``"discard"``, paper ``"count"``): a failed use
      of a value with no live precedent. ``"discard"``: drops the candidate's
      accumulated supports (it starts again from zero). ``"count"``: kept as a
      conflict against the candidate (created if need be); the precedent is
      proposed with those conflicts, so its validity at proposal can fall below
      ``theta_pro``. ``"ignore"``: leaves the candidate unchanged.
    * ``assertions_in_window`` (bool; v0 False, paper False): whether an
      assertion (``outcome=None``) enters windows: as a hit for the value it
      asserts and, with ``"support_and_conflict"``, as a miss for a different
      live value it does not supersede.
    * ``window_seed`` (v0 ``"proposing_outcome"``, paper ``"candidate_history"``):
      what a new precedent's window starts with. ``"proposing_outcome"``: only
      the outcome that proposed it. ``"candidate_history"``: the candidate's
      last ``n_rec`` window entries (its supports and, with ``"count"``, its
      failures), the proposing outcome last.
    * ``revoke_check`` (v0 ``"after_conflict"``, paper ``"after_every_update"``):
      when the revocation rules are checked. ``"after_conflict"``: only after a
      precedent gains a conflict. ``"after_every_update"``: also after a support
      and at proposal (a support can fill the window or reach ``n_min``
      observations while the rates are still below threshold).
      ``"after_support"``: after a conflict and after a support of an existing
      precedent, but not in the step a value is proposed. The paper is silent on
      the proposal step, so all three are literal readings of it
      (:data:`PAPER_LITERAL_READINGS`).
    * ``tie_break`` (v0 ``"recently_updated"``, paper ``"first_created"``):
      order of retrieved precedents of equal validity: most recently updated
      first; oldest first; newest first.
    * ``candidate_counting`` (v0 ``"cumulative"``, paper ``"cumulative"``): how a
      candidate's supports are counted. ``"cumulative"``: they accumulate per
      (key, value) until proposal (reset only by ``failed_candidate="discard"``).
      ``"consecutive"``: evidence for another value of the key (a success or an
      assertion) drops the candidate, so it needs its supports in an unbroken run.
    """

    theta_prop_fresh: int
    assertion_supersedes: bool
    window_outcomes: str
    failed_candidate: str
    assertions_in_window: bool
    window_seed: str
    revoke_check: str
    tie_break: str
    candidate_counting: str

    def __post_init__(self) -> None:
        check_positive_int("theta_prop_fresh", self.theta_prop_fresh)
        for name in BOOL_CHOICES:
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
        for name, allowed in CHOICE_VALUES.items():
            check_choice(name, check_str(name, getattr(self, name)), allowed)

    @classmethod
    def from_preset(cls, preset: str = "v0", *, theta_prop: int = 3, **choices: Any) -> TEPAChoices:
        """The choices of ``preset`` (``"v0"`` or ``"paper"``) with ``choices`` applied by name,
        for TEPA's grouped form ``TEPA(choices=...)``; ``theta_prop`` resolves the ``"paper"``
        preset's ``theta_prop_fresh`` (equal to it): pass TEPA's ``theta_prop`` when it is not 3."""
        check_positive_int("theta_prop", theta_prop)
        return resolve_choices(preset, theta_prop, **choices)

    def as_dict(self) -> dict[str, Any]:
        """The choices by name, for reports."""
        return asdict(self)

    def differences(self, other: TEPAChoices) -> dict[str, tuple[Any, Any]]:
        """The choices that differ from ``other``: name -> (this value, other's value)."""
        return {f.name: (getattr(self, f.name), getattr(other, f.name)) for f in fields(self)
                if getattr(self, f.name) != getattr(other, f.name)}


CHOICE_NAMES: tuple[str, ...] = tuple(f.name for f in fields(TEPAChoices))


def resolve_choices(preset: str, theta_prop: int, **explicit: Any) -> TEPAChoices:
    """The choices of ``preset`` with every explicit (non-``None``) value applied.

    ``theta_prop`` resolves a preset's ``theta_prop_fresh=None`` ("equal to
    theta_prop"). Raises ``TypeError``/``ValueError`` naming the argument; nothing
    is stored anywhere before every value is valid.
    """
    check_choice("preset", check_str("preset", preset), PRESET_NAMES)
    unknown = sorted(set(explicit) - set(CHOICE_NAMES))
    if unknown:
        raise TypeError(f"unknown TEPA choice(s): {', '.join(unknown)}; valid: {', '.join(CHOICE_NAMES)}")
    values = dict(PRESETS[preset])
    values.update({name: value for name, value in explicit.items() if value is not None})
    if values["theta_prop_fresh"] is None:
        values["theta_prop_fresh"] = theta_prop
    return TEPAChoices(**values)
