"""Change-point detectors on a stream of Bernoulli outcomes (1 = the value worked, 0 = it failed).

Each detector's :meth:`update` takes one outcome and returns whether it raises an
alarm at that step. Parameters are validated in the constructor (``TypeError`` or
``ValueError`` naming the field) before any state is set. The memories built on them
are in :mod:`tepa_envs.agents.memories.changepoint`.

* :class:`BernoulliCUSUM`: Page's CUSUM of the log-likelihood ratio of a failure
  rate ``p1`` against ``p0`` (Reynolds & Stoumbos 1999, a CUSUM chart for a
  proportion inspected continuously); one-sided: it watches for more failures.
* :class:`BetaBernoulliBOCPD`: Bayesian online change-point detection (Adams &
  MacKay 2007) with a constant hazard and a Beta-Bernoulli model of each run;
  the alarm is the most probable run length becoming shorter than the stream.
* :class:`ADWIN`: adaptive windowing (Bifet & Gavaldà 2007, the ADWIN2 variant with
  an exponential histogram of buckets), with the cut statistic, bucket scheme and
  ``clock``/``min_window_length``/``grace_period`` conventions of MOA and ``river``;
  ``tests/agents/memories/test_changepoint.py`` checks that it alarms at the same
  step as ``river.drift.ADWIN`` on the same streams.
"""

from __future__ import annotations

import math

import numpy as np

from tepa_envs.core import check_int, check_number


def check_open_unit(name: str, value: float) -> float:
    """A probability strictly between 0 and 1 (a rate a likelihood ratio can be taken of)."""
    value = check_number(name, value)
    if math.isnan(value) or not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {value!r}")
    return float(value)


def check_positive(name: str, value: float) -> float:
    """A finite number > 0."""
    value = check_number(name, value)
    if not (math.isfinite(value) and value > 0.0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def check_outcome(x: object) -> int:
    """An outcome: ``True``/``False`` or the ints 1/0."""
    if isinstance(x, (bool, np.bool_)):
        return int(x)
    if isinstance(x, (int, np.integer)) and int(x) in (0, 1):
        return int(x)
    raise TypeError(f"outcome must be a bool or 0/1, got {x!r}")


class BernoulliCUSUM:
    """One-sided Bernoulli CUSUM for an increase of the failure rate from ``p0`` to ``p1``.

    ``S_0 = 0`` and ``S_t = max(0, S_{t-1} + W_t)`` with ``W_t = ln(p1 / p0)`` after a
    failure and ``ln((1 - p1) / (1 - p0))`` after a success; the alarm is ``S_t >= h``
    (Page 1954; Reynolds & Stoumbos 1999). After an alarm the statistic restarts at 0.
    Lorden (1971): the in-control average run length is at least about ``e^h``.

    Args:
        p0: failure rate of a value that is still right (in control), ``0 < p0 < p1``.
        p1: failure rate the chart is tuned to detect, ``p0 < p1 < 1``.
        h: alarm threshold (> 0).
    """

    def __init__(self, p0: float, p1: float, h: float) -> None:
        p0, p1, h = check_open_unit("p0", p0), check_open_unit("p1", p1), check_positive("h", h)
        if not p0 < p1:
            raise ValueError(f"p0 must be below p1 (a CUSUM for more failures), got p0={p0}, p1={p1}")
        self.p0, self.p1, self.h = p0, p1, h
        self.failure_step = math.log(p1 / p0)
        self.success_step = math.log((1.0 - p1) / (1.0 - p0))
        self.statistic = 0.0
        self.n = 0

    def update(self, x: object) -> bool:
        success = check_outcome(x)
        self.n += 1
        self.statistic = max(0.0, self.statistic + (self.success_step if success else self.failure_step))
        if self.statistic >= self.h:
            self.statistic = 0.0
            return True
        return False


class BetaBernoulliBOCPD:
    """Bayesian online change-point detection (Adams & MacKay 2007), Beta-Bernoulli runs.

    The run length ``r_t`` is the number of observations since the last change point.
    Each run's success probability has a ``Beta(a, b)`` prior, a change happens before
    any observation with the constant probability ``hazard``, and the posterior
    ``P(r_t | x_1..t)`` is updated exactly by the message-passing recursion of the
    paper (growth with probability ``1 - hazard``, a change with ``hazard``, each
    weighted by the run's predictive probability of ``x_t``).

    Alarm: the most probable run length (ties to the longer run) is shorter than
    the number of observations since the detector started, i.e. the most probable
    explanation of the stream so far has a change point inside it. After an alarm the
    detector restarts from its prior (the memory drops what it held).

    Run lengths above ``max_run_length`` are merged into one hypothesis "at least
    ``max_run_length`` observations", which carries the statistics of the longest run
    (a bounded-memory approximation; exact until the stream is longer than
    ``max_run_length``).

    Args:
        hazard: constant prior probability of a change before each observation, in (0, 1).
        a, b: Beta prior of a run's success probability (> 0 each).
        max_run_length: largest run length tracked exactly (>= 1).
    """

    def __init__(self, hazard: float, a: float = 1.0, b: float = 1.0, max_run_length: int = 1000) -> None:
        hazard = check_open_unit("hazard", hazard)
        a, b = check_positive("a", a), check_positive("b", b)
        max_run_length = check_int("max_run_length", max_run_length, low=1)
        self.hazard, self.a, self.b, self.max_run_length = hazard, a, b, max_run_length
        self.restart()

    def restart(self) -> None:
        self.probs = np.ones(1)              # P(r_t = r | x_1..t) for r = 0..len-1
        self.successes = np.zeros(1)         # successes in the run
        self.trials = np.zeros(1)            # observations in the run (r, or more for the merged last one)
        self.n = 0                           # observations since the start (or last alarm)

    def run_length_posterior(self) -> np.ndarray:
        return self.probs.copy()

    def map_run_length(self) -> int:
        """Most probable run length, ties to the longer run."""
        reversed_probs = self.probs[::-1]
        return len(self.probs) - 1 - int(np.argmax(reversed_probs))

    def update(self, x: object) -> bool:
        success = check_outcome(x)
        p_success = (self.a + self.successes) / (self.a + self.b + self.trials)
        predictive = p_success if success else 1.0 - p_success
        weighted = self.probs * predictive
        grown = np.empty(len(self.probs) + 1)
        grown[0] = self.hazard * weighted.sum()
        grown[1:] = (1.0 - self.hazard) * weighted
        successes = np.empty(len(grown))
        successes[0] = 0.0
        successes[1:] = self.successes + success
        trials = np.empty(len(grown))
        trials[0] = 0.0
        trials[1:] = self.trials + 1.0
        if len(grown) > self.max_run_length + 1:
            # merge the longest run into "at least max_run_length", with the longest run's statistics
            grown[-2] += grown[-1]
            successes[-2], trials[-2] = successes[-1], trials[-1]
            grown, successes, trials = grown[:-1], successes[:-1], trials[:-1]
        self.probs = grown / grown.sum()
        self.successes, self.trials = successes, trials
        self.n += 1
        if self.map_run_length() < min(self.n, self.max_run_length):
            self.restart()
            return True
        return False


class _Bucket:
    """One row of ADWIN's exponential histogram: up to ``max_buckets + 1`` buckets of
    ``2**level`` observations each, oldest first."""

    __slots__ = ("totals", "variances")

    def __init__(self) -> None:
        self.totals: list[float] = []
        self.variances: list[float] = []


class ADWIN:
    """ADWIN (Bifet & Gavaldà 2007) with the ADWIN2 exponential histogram.

    The window is kept as rows of buckets; row ``i`` holds buckets of ``2**i``
    observations, and when a row holds ``max_buckets + 1`` buckets its two oldest are
    merged into one bucket of the next row. Every ``clock`` observations, once more
    than ``grace_period`` are in the window, each split of the window at a bucket
    boundary into an older part ``W0`` (``n0`` observations) and a newer ``W1`` (``n1``)
    with both at least ``min_window_length`` long is tested:
    ``|mean(W0) - mean(W1)| > eps`` with ``d = ln(2 ln(n) / delta)``,
    ``m = 1 / (n0 - min_window_length + 1) + 1 / (n1 - min_window_length + 1)`` and
    ``eps = sqrt(2 m var d) + 2/3 d m`` (``n`` the window length, ``var`` its
    variance). On a cut the oldest bucket is dropped and the test repeats; the step
    alarms if any cut was found. As in ``river.drift.ADWIN``, the step after an alarm
    starts from an empty window.

    Args:
        delta: confidence of the cut test, in (0, 1).
        clock: test every ``clock`` observations (1: at every step, as published).
        max_buckets: buckets of each size kept before two are merged (>= 1).
        min_window_length: shortest sub-window a cut may leave (>= 1).
        grace_period: no test until the window holds more than this many observations (>= 0).
    """

    def __init__(self, delta: float = 0.002, clock: int = 1, max_buckets: int = 5,
                 min_window_length: int = 5, grace_period: int = 10) -> None:
        delta = check_open_unit("delta", delta)
        clock = check_int("clock", clock, low=1)
        max_buckets = check_int("max_buckets", max_buckets, low=1)
        min_window_length = check_int("min_window_length", min_window_length, low=1)
        grace_period = check_int("grace_period", grace_period, low=0)
        self.delta, self.clock, self.max_buckets = delta, clock, max_buckets
        self.min_window_length, self.grace_period = min_window_length, grace_period
        self.restart()
        self.n_detections = 0

    def restart(self) -> None:
        self.rows: list[_Bucket] = [_Bucket()]
        self.width = 0.0
        self.total = 0.0
        self.variance = 0.0
        self.tick = 0
        self.alarmed = False

    @property
    def estimation(self) -> float:
        return self.total / self.width if self.width else 0.0

    def update(self, x: object) -> bool:
        value = float(check_outcome(x))
        if self.alarmed:
            self.restart()
        self._insert(value)
        self.alarmed = self._detect()
        if self.alarmed:
            self.n_detections += 1
        return self.alarmed

    def _insert(self, value: float) -> None:
        row = self.rows[0]
        row.totals.append(value)
        row.variances.append(0.0)
        self.width += 1.0
        if self.width > 1.0:
            deviation = value - self.total / (self.width - 1.0)
            self.variance += (self.width - 1.0) * deviation * deviation / self.width
        self.total += value
        level = 0
        while len(self.rows[level].totals) == self.max_buckets + 1:
            row = self.rows[level]
            size = float(2 ** level)
            mean0, mean1 = row.totals[0] / size, row.totals[1] / size
            merged_total = row.totals[0] + row.totals[1]
            merged_variance = row.variances[0] + row.variances[1] + size * 0.5 * (mean0 - mean1) * (mean0 - mean1)
            if level + 1 == len(self.rows):
                self.rows.append(_Bucket())
            self.rows[level + 1].totals.append(merged_total)
            self.rows[level + 1].variances.append(merged_variance)
            del row.totals[:2], row.variances[:2]
            level += 1

    def _drop_oldest(self) -> None:
        level = len(self.rows) - 1
        row = self.rows[level]
        size = float(2 ** level)
        total, variance = row.totals[0], row.variances[0]
        self.width -= size
        self.total -= total
        mean, window_mean = total / size, self.total / self.width
        self.variance -= variance + size * self.width * (mean - window_mean) * (mean - window_mean) / (size + self.width)
        del row.totals[0], row.variances[0]
        if not row.totals:
            self.rows.pop()

    def _cut(self, n0: float, n1: float, mean_gap: float) -> bool:
        d = math.log(2.0 * math.log(self.width) / self.delta)
        m = 1.0 / (n0 - self.min_window_length + 1.0) + 1.0 / (n1 - self.min_window_length + 1.0)
        eps = math.sqrt(2.0 * m * (self.variance / self.width) * d) + 2.0 / 3.0 * d * m
        return abs(mean_gap) > eps

    def _detect(self) -> bool:
        self.tick += 1
        if self.tick % self.clock != 0 or not self.width > self.grace_period:
            return False
        detected = False
        shrinking = True
        while shrinking:
            shrinking = False
            n0, n1, u0, u1 = 0.0, self.width, 0.0, self.total
            for level in range(len(self.rows) - 1, -1, -1):
                size = float(2 ** level)
                totals = self.rows[level].totals
                last = len(totals) - 1
                for k, total in enumerate(totals):
                    n0 += size
                    n1 -= size
                    u0 += total
                    u1 -= total
                    if level == 0 and k == last:
                        break  # W1 would be empty
                    if (n1 >= self.min_window_length and n0 >= self.min_window_length
                            and self._cut(n0, n1, u0 / n0 - u1 / n1)):
                        detected = shrinking = True
                        self._drop_oldest()
                        break
                if shrinking:
                    break
        return detected
