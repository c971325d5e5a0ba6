"""Change-point detectors and the memories built on them.

Each detector raises its alarm at a hand-computed step on a textbook stream (a run
of successes, then failures). Of the four, ``river`` offers only ADWIN
(``river.drift.ADWIN``); ours alarms at the same step as river's on the same streams.
river's ``PageHinkley`` is a CUSUM of deviations from the running mean, not the
Bernoulli likelihood-ratio CUSUM, and river has no BOCPD and no discounted Beta, so
those are checked against closed forms or an exhaustive enumeration instead.
"""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import combinations

import numpy as np
import pytest

from tepa_envs.agents import METHOD_NAMES, make_memory
from tepa_envs.agents.memories.changepoint import ADWINMemory, BOCPDMemory, CUSUMMemory, DiscountedBeta
from tepa_envs.agents.memories.changepoint_detectors import ADWIN, BernoulliCUSUM, BetaBernoulliBOCPD
from tepa_envs.core import Evidence

KEY, OTHER = "summarize/finance/csv", "classify/health/json"
NAMES = ("discounted-beta", "cusum", "bocpd", "adwin")


def first_alarm(detector, stream):
    """Index of the first outcome at which ``detector`` alarms (None: never)."""
    for i, x in enumerate(stream):
        if detector.update(x):
            return i
    return None


# ------------------------------------------------------------------- CUSUM
def test_cusum_alarms_at_the_third_consecutive_failure():
    # Defaults p0 = 0.1, p1 = 0.5, h = ln 100 = 4.605: a failure adds ln 5 = 1.609, a
    # success adds ln(0.5 / 0.9) = -0.588 (floored at 0). After any run of successes
    # S = 0; failures give 1.609, 3.219, 4.828 >= 4.605: the third failure alarms.
    cusum = BernoulliCUSUM(0.1, 0.5, math.log(100))
    assert first_alarm(cusum, [1] * 20 + [0] * 10) == 22
    assert cusum.statistic == 0.0  # restarted after the alarm


def test_cusum_alarm_with_a_success_in_between():
    # F S F F F: a = ln 5 = 1.609, b = ln(5/9) = -0.588: a, a + b = 1.022, 2a + b = 2.631,
    # 3a + b = 4.240 (< 4.605), then 4a + b = 5.850 >= 4.605: the fifth outcome alarms.
    a, b = math.log(5), math.log(5 / 9)
    cusum = BernoulliCUSUM(0.1, 0.5, math.log(100))
    for x, expected in zip([0, 1, 0, 0], [a, a + b, 2 * a + b, 3 * a + b]):
        assert not cusum.update(x)
        assert cusum.statistic == pytest.approx(expected)
    assert cusum.update(0) and cusum.statistic == 0.0


# ------------------------------------------------------------------- BOCPD
def segment_likelihood(segment):
    """Beta(1, 1)-Bernoulli marginal likelihood of one run: s! f! / (s + f + 1)!."""
    s = sum(segment)
    f = len(segment) - s
    return Fraction(math.factorial(s) * math.factorial(f), math.factorial(s + f + 1))


def enumerated_run_length_posterior(stream, hazard):
    """P(r_t | x_1..t) by enumerating every set of change points (the definition, not
    the recursion): a change after each observation with probability ``hazard``; r_t = 0
    is a change right after x_t, r_t = r >= 1 the last r observations in one run."""
    t = len(stream)
    joint = [Fraction(0)] * (t + 1)
    total = Fraction(0)
    for m in range(t):
        for cuts in combinations(range(1, t), m):
            p = Fraction(1)
            for i in range(1, t):
                p *= hazard if i in cuts else 1 - hazard
            bounds = [0, *cuts, t]
            for start, end in zip(bounds, bounds[1:]):
                p *= segment_likelihood(stream[start:end])
            total += p
            joint[t - (cuts[-1] if cuts else 0)] += (1 - hazard) * p
    joint[0] = hazard * total
    norm = sum(joint)
    return [j / norm for j in joint]


def enumerated_first_alarm(stream, hazard):
    for t in range(1, len(stream) + 1):
        posterior = enumerated_run_length_posterior(stream[:t], hazard)
        if max(range(t + 1), key=lambda r: (posterior[r], r)) < t:
            return t - 1
    return None


@pytest.mark.parametrize("successes, hazard, expected", [
    (8, Fraction(1, 100), 11),   # the default hazard: the fourth failure after eight successes
    (5, Fraction(1, 10), 6),     # the second failure
    (8, Fraction(1, 10), 9),     # the second failure
    (8, Fraction(1, 4), 8),      # the first failure
    (3, Fraction(1, 100), None),  # three successes are too little evidence for a change
])
def test_bocpd_alarms_where_the_enumerated_posterior_says(successes, hazard, expected):
    stream = [1] * successes + [0] * 5
    assert enumerated_first_alarm(stream, hazard) == expected
    assert first_alarm(BetaBernoulliBOCPD(float(hazard)), stream) == expected


def test_bocpd_posterior_matches_the_enumeration_exactly():
    stream = [1, 1, 0, 1, 1, 1, 0, 0, 1]
    detector = BetaBernoulliBOCPD(0.2, max_run_length=100)
    for t, x in enumerate(stream, start=1):
        alarm = detector.update(x)
        if alarm:
            break
        expected = [float(p) for p in enumerated_run_length_posterior(stream[:t], Fraction(1, 5))]
        np.testing.assert_allclose(detector.run_length_posterior(), expected, rtol=1e-12)


def test_bocpd_bounded_run_length_keeps_alarming():
    detector = BetaBernoulliBOCPD(0.01, max_run_length=5)
    assert first_alarm(detector, [1] * 50 + [0] * 20) is not None
    assert len(detector.run_length_posterior()) <= 6


# ------------------------------------------------------------------- ADWIN
def reference_adwin_first_alarm(stream, delta=0.002, min_len=5, grace=10):
    """ADWIN's test at every split of the whole window (no buckets), at every step."""
    for t in range(1, len(stream) + 1):
        window = stream[:t]
        n = len(window)
        if not n > grace:
            continue
        mean = sum(window) / n
        variance = sum((x - mean) ** 2 for x in window)
        d = math.log(2 * math.log(n) / delta)
        for n0 in range(min_len, n - min_len + 1):
            n1 = n - n0
            gap = sum(window[:n0]) / n0 - sum(window[n0:]) / n1
            m = 1 / (n0 - min_len + 1) + 1 / (n1 - min_len + 1)
            if abs(gap) > math.sqrt(2 * m * (variance / n) * d) + 2 / 3 * d * m:
                return t - 1
    return None


def test_adwin_alarms_at_the_hand_computed_step():
    # 30 successes, then failures; every split tested (buckets never merge). At 60
    # observations (30 + 30): var/n = 0.25, d = ln(2 ln 60 / 0.002) = 8.317, the split
    # 30 | 30 has m = 2/26 and eps = sqrt(2 m 0.25 d) + 2/3 d m = 0.992 < 1 = |gap|: cut.
    # At 59 observations the best splits give eps = 1.006 (gap 1), 1.006 (gap 0.967)
    # and 0.993 (gap 0.968): no cut. So the alarm is at index 59, the 30th failure.
    stream = [1] * 30 + [0] * 40
    assert reference_adwin_first_alarm(stream) == 59
    assert first_alarm(ADWIN(max_buckets=10 ** 6), stream) == 59
    assert first_alarm(ADWIN(max_buckets=10 ** 6, min_window_length=5, grace_period=10), [1] * 10 + [0] * 100) \
        is None  # ten successes are too few for the bound to ever cut


def river_first_alarm(detector, stream):
    alarms = []
    for i, x in enumerate(stream):
        detector.update(x)
        if detector.drift_detected:
            alarms.append(i)
    return alarms


def our_alarms(detector, stream):
    return [i for i, x in enumerate(stream) if detector.update(x)]


def textbook_streams():
    yield [1] * 30 + [0] * 100
    yield [1] * 200 + [0] * 100
    yield [0] * 50 + [1] * 150
    rng = np.random.default_rng(7)
    yield list((rng.random(1000) < 0.9).astype(int)) + list((rng.random(1000) < 0.3).astype(int))
    for seed in range(12):  # piecewise-constant Bernoulli rates with random change points
        rng = np.random.default_rng(seed)
        stream: list[int] = []
        while len(stream) < 800:
            stream += list((rng.random(int(rng.integers(10, 300))) < rng.random()).astype(int))
        yield stream


@pytest.mark.parametrize("params", [
    {},                                      # river's defaults (clock 32)
    {"clock": 1},                            # the published algorithm (our memory's default)
    {"delta": 0.05, "clock": 4, "max_buckets": 3, "min_window_length": 3, "grace_period": 20},
])
def test_adwin_alarms_at_the_same_steps_as_river(params):
    river_drift = pytest.importorskip("river.drift")
    ours_params = {"clock": 32, **params}
    for stream in textbook_streams():
        assert our_alarms(ADWIN(**ours_params), stream) == river_first_alarm(river_drift.ADWIN(**params), stream)


# ----------------------------------------------------------- discounted Beta
def test_discounted_beta_drops_a_value_at_the_hand_computed_failure():
    # gamma = 0.9: after 20 successes s = (1 - 0.9**20) / 0.1 = 8.784. After k failures
    # s = 8.784 * 0.9**k and f = (1 - 0.9**k) / 0.1; k = 5: 5.187 > 4.095, k = 6:
    # 4.668 < 4.686, so the sixth failure drops it.
    memory = DiscountedBeta()
    t = 0
    for _ in range(20):
        memory.observe(Evidence(KEY, "tool_0", t, True))
        t += 1
    for k in range(1, 7):
        assert memory.retrieve(KEY)[0].value == "tool_0"
        memory.observe(Evidence(KEY, "tool_0", t, False))
        if k == 5:
            s, f = memory.discounted(KEY)["tool_0"]
            assert s == pytest.approx(8.7842 * 0.9 ** 5, abs=1e-3) and f == pytest.approx(4.0951, abs=1e-3)
        t += 1
    assert memory.retrieve(KEY) == [] and memory.alarms == [(25, KEY, "tool_0")]


def test_discounted_beta_ranks_by_discounted_mean_and_forgets_per_key():
    memory = DiscountedBeta(gamma=0.5)
    for t, (value, outcome) in enumerate([("a", True), ("a", True), ("a", False), ("b", True), ("b", True)]):
        memory.observe(Evidence(KEY, value, t, outcome))
    memory.observe(Evidence(OTHER, "z", 5, True))
    # a: s = 1, then 0.5 + 1 = 1.5; the failure at t = 2 gives s = 0.75 < f = 1: dropped.
    # b then holds s = 1.5; the other key is neither discounted nor dropped.
    assert [r.value for r in memory.retrieve(KEY)] == ["b"]
    assert memory.alarms == [(2, KEY, "a")]
    assert [r.value for r in memory.retrieve(OTHER)] == ["z"]


# ---------------------------------------------------------------- memories
def test_detector_memories_drop_the_key_on_an_alarm_and_keep_other_keys():
    for memory, failures in ((CUSUMMemory(), 3), (BOCPDMemory(), 2), (ADWINMemory(max_buckets=10 ** 6), 30)):
        t = 0
        for _ in range(30):
            memory.observe(Evidence(KEY, "tool_0", t, True))
            memory.observe(Evidence(OTHER, "tool_1", t, True))
            t += 1
        for k in range(1, failures + 1):
            assert memory.retrieve(KEY)[0].value == "tool_0", (memory.name, k)
            memory.observe(Evidence(KEY, "tool_0", t, False))
            t += 1
        assert memory.retrieve(KEY) == [], memory.name
        assert memory.alarms == [(t - 1, KEY, "tool_0")], memory.name
        assert [r.value for r in memory.retrieve(OTHER)] == ["tool_1"]
        memory.observe(Evidence(KEY, "tool_2", t, True))  # relearned from scratch
        assert [(r.value, r.support, r.conflict) for r in memory.retrieve(KEY)] == [("tool_2", 1, 0)]


def test_outcome_mapping_failures_of_unheld_values_and_assertions():
    memory = CUSUMMemory()
    for t in range(10):
        memory.observe(Evidence(KEY, "tool_0", t, False))  # never held: ignored, no alarm
    assert memory.retrieve(KEY) == [] and memory.alarms == []
    memory.observe(Evidence(KEY, "tool_0", 10, True))
    memory.observe(Evidence(KEY, "tool_1", 11, True))  # a success says nothing about tool_0
    assert memory.held(KEY) == {"tool_0": (1, 0), "tool_1": (1, 0)}
    memory.observe(Evidence(KEY, "tool_2", 12, None))  # an assertion: a 0 for every other held value
    assert memory.held(KEY) == {"tool_0": (1, 1), "tool_1": (1, 1), "tool_2": (1, 0)}
    memory.observe(Evidence(KEY, "tool_2", 13, None))
    memory.observe(Evidence(KEY, "tool_2", 14, None))  # third 0 for tool_0 and tool_1: alarm, key reset,
    assert memory.alarms == [(14, KEY, "tool_0")]     # then the assertion itself is kept
    assert memory.held(KEY) == {"tool_2": (1, 0)}


def test_ranking_support_then_recency_and_top_k():
    memory = BOCPDMemory(top_k=2)
    for t, value in enumerate(["a", "b", "b", "c", "a"]):
        memory.observe(Evidence(KEY, value, t, True))
    assert [(r.value, r.support) for r in memory.retrieve(KEY)] == [("a", 2), ("b", 2)]


def test_the_new_methods_are_registered_and_covered_by_the_loops_over_all_methods():
    assert set(NAMES) <= set(METHOD_NAMES)
    for name in NAMES:
        memory = make_memory(name)
        assert memory.name == name and memory.retrieve(KEY) == []


@pytest.mark.parametrize("name, kwargs, error, field", [
    ("discounted-beta", {"gamma": 1.0}, ValueError, "gamma"),
    ("discounted-beta", {"gamma": "0.9"}, TypeError, "gamma"),
    ("discounted-beta", {"alpha": 0}, ValueError, "alpha"),
    ("discounted-beta", {"top_k": 0}, ValueError, "top_k"),
    ("cusum", {"p0": 0.6}, ValueError, "p0"),
    ("cusum", {"p1": 1.0}, ValueError, "p1"),
    ("cusum", {"h": -1.0}, ValueError, "h"),
    ("cusum", {"h": float("inf")}, ValueError, "h"),
    ("cusum", {"p0": True}, TypeError, "p0"),
    ("bocpd", {"hazard": 0.0}, ValueError, "hazard"),
    ("bocpd", {"hazard": float("nan")}, ValueError, "hazard"),
    ("bocpd", {"a": -1}, ValueError, "a"),
    ("bocpd", {"max_run_length": 0}, ValueError, "max_run_length"),
    ("bocpd", {"max_run_length": 2.5}, TypeError, "max_run_length"),
    ("adwin", {"delta": 1.5}, ValueError, "delta"),
    ("adwin", {"clock": 0}, ValueError, "clock"),
    ("adwin", {"max_buckets": "5"}, TypeError, "max_buckets"),
    ("adwin", {"min_window_length": 0}, ValueError, "min_window_length"),
    ("adwin", {"grace_period": -1}, ValueError, "grace_period"),
])
def test_bad_parameters_are_refused_naming_the_field(name, kwargs, error, field):
    with pytest.raises(error, match=field):
        make_memory(name, **kwargs)


def test_detectors_refuse_bad_outcomes_before_any_state_change():
    for detector in (BernoulliCUSUM(0.1, 0.5, 4.0), BetaBernoulliBOCPD(0.1), ADWIN()):
        detector.update(1)
        before = repr(vars(detector))
        for bad in (2, 0.5, "1", None):
            with pytest.raises(TypeError, match="outcome"):
                detector.update(bad)
        assert repr(vars(detector)) == before
