"""Change-point baselines: value memories that drop what they hold for a key when a
detector says the key's world changed.

Every method here keeps, for each key, the values it *holds* and their outcome
statistics since the key's last alarm. The same evidence as every other method
maps to outcomes as follows (1 = the value worked, 0 = it failed):

* a success (``outcome=True``) of value ``v``: a 1 for ``v``; ``v`` is held from
  its first success on (a success says nothing about another value: in a noisy
  world a wrong value can succeed by chance, and a stale value fails on its own
  when it is used);
* a failure (``outcome=False``) of a held ``v``: a 0 for ``v``; a failure of a value
  not held is ignored, as the value baselines ignore failures (it asserts nothing
  about any value, and exploration failures must not raise alarms);
* an assertion (``outcome=None``) of ``v``: a 0 for every other held value of the key
  (a stated value contradicts them), then a 1 for ``v``.

Retrieval shows the key's held values, at most ``top_k``: the detector memories
rank them like append-only (support since the last alarm, then recency); the
discounted Beta ranks by its discounted posterior mean. ``Record.support`` and
``Record.conflict`` are the value's 1s and 0s since the key's last alarm.

* ``discounted-beta`` (:class:`DiscountedBeta`): exponential forgetting; every
  piece of evidence for a key first multiplies the support and conflict of each
  of its values by ``gamma``. A value whose discounted posterior mean falls below
  1/2 (more discounted evidence against than for) is dropped (its alarm).
* ``cusum`` (:class:`CUSUMMemory`), ``bocpd`` (:class:`BOCPDMemory`), ``adwin``
  (:class:`ADWINMemory`): one detector of
  :mod:`~tepa_envs.agents.memories.changepoint_detectors` per held value, fed the
  value's outcomes; an alarm on any of them is an alarm for the key, and the
  memory drops everything it held for that key (a change restarts the key's
  statistics: those collected before it describe the old regime).

Every alarm is recorded in :attr:`ChangePointMemory.alarms` as ``(t, key, value)``.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from tepa_envs.core import Evidence, LifecycleState, Record, check_positive_int

from tepa_envs.agents.memories.changepoint_detectors import (
    ADWIN,
    BernoulliCUSUM,
    BetaBernoulliBOCPD,
    check_open_unit,
    check_positive,
)
from tepa_envs.agents.memories.protocol import MemoryBase

ACTIVE = LifecycleState.ACTIVE


class HeldValue:
    """A value a change-point memory holds for one key."""

    __slots__ = ("value", "support", "conflict", "created", "updated", "detector", "s", "f")

    def __init__(self, value: str, t: int, detector: Any = None) -> None:
        self.value = value
        self.support = 0
        self.conflict = 0
        self.created = t
        self.updated = t
        self.detector = detector
        self.s = 0.0  # discounted support (DiscountedBeta only)
        self.f = 0.0  # discounted conflict


class ChangePointMemory(MemoryBase):
    """Base of the change-point memories: the outcome mapping, the held values and retrieval.

    Subclasses implement :meth:`_new_detector` and may override :meth:`_outcome`
    (feed one outcome to a held value; return whether it raised an alarm) and
    :meth:`_rank`.
    """

    name = "changepoint"

    def __init__(self, *, top_k: int = 5) -> None:
        self.top_k = check_positive_int("top_k", top_k)
        super().__init__()
        self._reset()

    # ----------------------------------------------------------------- protocol
    def _reset(self) -> None:
        self._held: dict[str, dict[str, HeldValue]] = {}
        self.alarms: list[tuple[int, str, str]] = []

    def _observe(self, evidence: Evidence) -> None:
        key, value, t, outcome = evidence.key, evidence.value, evidence.t, evidence.outcome
        held = self._held.get(key)
        self._tick(held)
        if outcome is None and held:
            for other in [h for h in held.values() if h.value != value]:
                other.conflict += 1
                other.updated = t
                if self._outcome(other, 0):
                    self._alarm(key, other, t)
                    if self._held.get(key) is not held:  # the key was reset
                        break
            held = self._held.get(key)
        if outcome is False:
            entry = held.get(value) if held else None
            if entry is not None:
                entry.conflict += 1
                entry.updated = t
                if self._outcome(entry, 0):
                    self._alarm(key, entry, t)
            return
        if held is None:
            held = self._held[key] = {}
        entry = held.get(value)
        if entry is None:
            entry = held[value] = HeldValue(value, t, self._new_detector())
        entry.support += 1
        entry.updated = t
        if self._outcome(entry, 1):
            self._alarm(key, entry, t)

    def _retrieve(self, key: str, context: str) -> list[Record]:
        held = self._held.get(key)
        if not held:
            return []
        entries = list(held.values())
        if len(entries) > 1:
            entries = self._rank(entries)[: self.top_k]
        return [Record(key, h.value, h.support, h.conflict, ACTIVE, h.created, h.updated, self._score(h))
                for h in entries]

    # ------------------------------------------------------------------- hooks
    def _new_detector(self) -> Any:
        raise NotImplementedError

    def _tick(self, held: dict[str, HeldValue] | None) -> None:
        """Evidence for the key arrived (before its outcomes are fed)."""

    def _outcome(self, entry: HeldValue, x: int) -> bool:
        return bool(entry.detector.update(x))

    def _alarm(self, key: str, entry: HeldValue, t: int) -> None:
        """An alarm on ``entry``: drop everything held for ``key``."""
        self.alarms.append((t, key, entry.value))
        self._held.pop(key, None)

    def _rank(self, entries: list[HeldValue]) -> list[HeldValue]:
        return sorted(entries, key=lambda h: (-h.support, -h.updated))

    def _score(self, entry: HeldValue) -> float:
        return (entry.support + 1.0) / (entry.support + entry.conflict + 2.0)

    def held(self, key: str) -> dict[str, tuple[int, int]]:
        """The values held for ``key`` with their (support, conflict) since its last alarm."""
        return {v: (h.support, h.conflict) for v, h in self._held.get(key, {}).items()}


class DiscountedBeta(ChangePointMemory):
    """Discounted Beta: support and conflict forgotten exponentially, per key.

    Each piece of evidence for a key multiplies the discounted support ``s`` and
    conflict ``f`` of every value held for it by ``gamma``, then adds the outcomes
    (see the module docstring). A value's validity is the posterior mean
    ``(s + alpha) / (s + f + alpha + beta)``; retrieval ranks by it (ties: most
    recently updated first). A value whose mean falls below ``alpha / (alpha +
    beta)`` (the prior mean: 1/2) is dropped: more discounted evidence against it
    than for it.

    Defaults: ``gamma = 0.9``, a memory of ``1 / (1 - gamma) = 10`` observations
    of the key (the discounted counts never exceed 10). A single failure never
    unseats a value with two or more recent successes, and a value that fails at
    every use after a run of successes is dropped after at most 7 failures (6 after
    20 successes; 7 in the limit of a long run, where its discounted support must
    halve: ``0.9**k < 1/2``). ``alpha = beta = 1``: the uniform prior, as in TEPA.

    Args:
        gamma: discount per piece of evidence for the key, in (0, 1).
        alpha, beta: Beta prior of a value's success probability (> 0).
        top_k: at most this many values are retrieved per key.
    """

    name = "discounted-beta"

    def __init__(self, *, gamma: float = 0.9, alpha: float = 1.0, beta: float = 1.0, top_k: int = 5) -> None:
        self.gamma = check_open_unit("gamma", gamma)
        self.alpha, self.beta = check_positive("alpha", alpha), check_positive("beta", beta)
        super().__init__(top_k=top_k)

    def _new_detector(self) -> None:
        return None

    def _tick(self, held: dict[str, HeldValue] | None) -> None:
        if held:
            gamma = self.gamma
            for entry in held.values():
                entry.s *= gamma
                entry.f *= gamma

    def _outcome(self, entry: HeldValue, x: int) -> bool:
        if x:
            entry.s += 1.0
        else:
            entry.f += 1.0
        return self._score(entry) < self.alpha / (self.alpha + self.beta)

    def _alarm(self, key: str, entry: HeldValue, t: int) -> None:
        """Only the value whose mean fell below the prior mean is dropped."""
        self.alarms.append((t, key, entry.value))
        held = self._held[key]
        del held[entry.value]
        if not held:
            del self._held[key]

    def _score(self, entry: HeldValue) -> float:
        return (entry.s + self.alpha) / (entry.s + entry.f + self.alpha + self.beta)

    def _rank(self, entries: list[HeldValue]) -> list[HeldValue]:
        return sorted(entries, key=lambda h: (-self._score(h), -h.updated))

    def discounted(self, key: str) -> dict[str, tuple[float, float]]:
        """The discounted (support, conflict) of each value held for ``key``."""
        return {v: (h.s, h.f) for v, h in self._held.get(key, {}).items()}


class CUSUMMemory(ChangePointMemory):
    """Per-key Bernoulli CUSUM (:class:`~tepa_envs.agents.memories.changepoint_detectors.BernoulliCUSUM`)
    on each held value's failure rate.

    Defaults, from the chart's design rules rather than from any result:
    ``p0 = 0.1``: a value that is still right may fail one use in ten (transient
    failures are tolerated); ``p1 = 0.5``: the chart is tuned to a value that fails
    as often as a coin flip; ``h = ln 100``: by Lorden's bound the in-control
    average run length is at least ``e^h = 100`` uses, i.e. about one false alarm per
    100 uses of a value failing at the tolerated rate. With these, each failure adds
    ``ln 5 = 1.61`` and each success subtracts ``ln(9/5) = 0.59``: three consecutive
    failures raise the alarm (as reactive forgetting's patience of 3, but per key).

    Args:
        p0, p1: in-control and out-of-control failure rates, ``0 < p0 < p1 < 1``.
        h: alarm threshold (> 0).
        top_k: at most this many values are retrieved per key.
    """

    name = "cusum"

    def __init__(self, *, p0: float = 0.1, p1: float = 0.5, h: float = math.log(100.0), top_k: int = 5) -> None:
        prototype = BernoulliCUSUM(p0, p1, h)  # validates the three, naming the field
        self.p0, self.p1, self.h = prototype.p0, prototype.p1, prototype.h
        super().__init__(top_k=top_k)

    def _new_detector(self) -> BernoulliCUSUM:
        return BernoulliCUSUM(self.p0, self.p1, self.h)


class BOCPDMemory(ChangePointMemory):
    """Per-key Bayesian online change-point detection (Adams & MacKay 2007,
    :class:`~tepa_envs.agents.memories.changepoint_detectors.BetaBernoulliBOCPD`)
    on each held value's outcomes.

    Defaults: ``hazard = 0.01``: a change is expected once in 100 outcomes of a
    value, a weak prior for streams of a few hundred tasks (the method's only free
    number; a smaller hazard asks for more failures before an alarm); ``a = b = 1``:
    the uniform Beta prior of each run's success rate, as TEPA's; ``max_run_length =
    1000``: exact inference for runs up to 1,000 outcomes (the approximation beyond
    it merges longer runs, see the detector).

    Args:
        hazard: constant change probability per outcome, in (0, 1).
        a, b: Beta prior of a run's success probability (> 0).
        max_run_length: run lengths tracked exactly (>= 1).
        top_k: at most this many values are retrieved per key.
    """

    name = "bocpd"

    def __init__(self, *, hazard: float = 0.01, a: float = 1.0, b: float = 1.0, max_run_length: int = 1000,
                 top_k: int = 5) -> None:
        prototype = BetaBernoulliBOCPD(hazard, a, b, max_run_length)
        self.hazard, self.a, self.b, self.max_run_length = prototype.hazard, prototype.a, prototype.b, \
            prototype.max_run_length
        super().__init__(top_k=top_k)

    def _new_detector(self) -> BetaBernoulliBOCPD:
        return BetaBernoulliBOCPD(self.hazard, self.a, self.b, self.max_run_length)


class ADWINMemory(ChangePointMemory):
    """Per-key ADWIN (:class:`~tepa_envs.agents.memories.changepoint_detectors.ADWIN`)
    on each held value's outcomes (two-sided: any change of its success rate).

    Defaults are the published ones, except the clock: ``delta = 0.002``,
    ``max_buckets = 5``, ``min_window_length = 5`` and ``grace_period = 10`` as in
    MOA and ``river``; ``clock = 1`` tests at every outcome, as the algorithm is
    published (MOA and ``river`` test every 32 outcomes to save time on long
    streams; a value here sees tens of outcomes, and a check every 32 would delay
    each alarm by up to 31 uses). ADWIN's bound is built for long streams: on
    Bernoulli outcomes it needs well over ten failures after a run of successes
    before it cuts.

    Args:
        delta, clock, max_buckets, min_window_length, grace_period: see the detector.
        top_k: at most this many values are retrieved per key.
    """

    name = "adwin"

    def __init__(self, *, delta: float = 0.002, clock: int = 1, max_buckets: int = 5, min_window_length: int = 5,
                 grace_period: int = 10, top_k: int = 5) -> None:
        prototype = ADWIN(delta, clock, max_buckets, min_window_length, grace_period)
        self._settings: dict[str, Any] = dict(delta=prototype.delta, clock=prototype.clock,
                                              max_buckets=prototype.max_buckets,
                                              min_window_length=prototype.min_window_length,
                                              grace_period=prototype.grace_period)
        for field, value in self._settings.items():
            setattr(self, field, value)
        super().__init__(top_k=top_k)

    def _new_detector(self) -> ADWIN:
        return ADWIN(**self._settings)


DETECTOR_MEMORIES: dict[str, Callable[..., ChangePointMemory]] = {
    "discounted-beta": DiscountedBeta,
    "cusum": CUSUMMemory,
    "bocpd": BOCPDMemory,
    "adwin": ADWINMemory,
}
