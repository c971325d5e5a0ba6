"""The statistics are calibrated against known truth on simulated data (numpy, seeded).

These tests fail when the statistics are subtly wrong: a 90% interval labelled
95%, one-sided p-values, a Monte Carlo p-value without the ``+1``, or
comparisons that are not paired by seed.

Sample sizes: the percentile bootstrap interval is too narrow at small n (it
uses the plug-in variance). On Binomial(40, Beta(2, 3)) / 40 per-seed success
rates its coverage of the mean was measured at about 0.91 with 10 seeds, 0.93
with 20, 0.94 with 50, 0.946 with 100 and 0.954 with 1,000, so coverage is
checked at 100 seeds, where the interval is calibrated to within about a point.
"""

import numpy as np
import pytest
from scipy import stats

from tepa_envs.agents.evaluation.analysis.evaluation import Evaluation, MethodRuns
from tepa_envs.agents.evaluation.analysis.statistics import (
    bootstrap_ci, bootstrap_cis, paired_permutation_test, paired_permutation_tests,
)
from tepa_envs.agents.evaluation.analysis.summary import summarize

PHASES = ("a", "b")


def test_95_percent_bootstrap_ci_covers_the_true_mean_95_percent_of_the_time():
    rng = np.random.default_rng(2024)
    n_seeds, n_datasets, true_mean = 100, 3000, 0.4
    # per-seed success rates of 40 tasks, seeds differing in difficulty; E = 2 / (2 + 3)
    per_seed = rng.binomial(40, rng.beta(2, 3, size=(n_seeds, n_datasets))) / 40
    cis = bootstrap_cis(per_seed)  # default arguments: the interval summarize reports as 95%
    coverage = np.mean([ci.ci_low <= true_mean <= ci.ci_high for ci in cis])
    assert 0.93 <= coverage <= 0.97, f"coverage {coverage:.3f} of a nominal 95% interval"
    # the single-series function has the same defaults
    for j in range(0, n_datasets, 30):
        single = bootstrap_ci(per_seed[:, j])
        assert (single.ci_low, single.ci_high) == pytest.approx((cis[j].ci_low, cis[j].ci_high), abs=1e-12)


@pytest.mark.parametrize("distribution", ["normal", "student-t3"])
def test_monte_carlo_p_values_are_uniform_under_the_null_and_never_below_the_floor(distribution):
    rng = np.random.default_rng(7)
    n_seeds, n_datasets, n_perm = 30, 1000, 199
    if distribution == "normal":
        diffs = rng.normal(0.0, 0.1, size=(n_datasets, n_seeds))
    else:
        diffs = 0.1 * rng.standard_t(3, size=(n_datasets, n_seeds))
    # a fresh set of sign patterns per dataset, as if each were a separate study
    p = np.array([paired_permutation_test(d, n_perm=n_perm, seed=i) for i, d in enumerate(diffs)])
    assert p.min() >= 1 / (n_perm + 1)
    assert stats.kstest(p, "uniform").pvalue > 0.01
    assert 0.03 <= np.mean(p <= 0.05) <= 0.07


def test_exact_p_values_are_uniform_under_the_null():
    diffs = np.random.default_rng(8).normal(0.0, 0.1, size=(10, 2000))
    p = np.array([t.p_value for t in paired_permutation_tests(diffs)])
    assert p.min() >= 2 / 2 ** 10
    assert stats.kstest(p, "uniform").pvalue > 0.01
    assert 0.03 <= np.mean(p <= 0.05) <= 0.07


def test_paired_test_is_more_powerful_than_an_unpaired_one_on_correlated_data():
    rng = np.random.default_rng(9)
    n_seeds, n_datasets = 30, 300
    difficulty = rng.uniform(0.1, 0.9, size=(n_seeds, n_datasets))  # shared by both methods on a seed
    baseline = difficulty + rng.normal(0.0, 0.03, size=difficulty.shape)
    method = difficulty + 0.03 + rng.normal(0.0, 0.03, size=difficulty.shape)
    paired = np.array([t.p_value for t in paired_permutation_tests(method - baseline, n_perm=999)])
    unpaired = stats.mannwhitneyu(method, baseline, axis=0).pvalue
    paired_power, unpaired_power = np.mean(paired < 0.05), np.mean(unpaired < 0.05)
    assert paired_power >= 0.8 and unpaired_power <= 0.2, (paired_power, unpaired_power)


def test_tests_are_two_sided_by_default():
    rng = np.random.default_rng(10)
    worse = rng.normal(-0.3, 0.1, size=40)
    assert paired_permutation_test(worse) < 0.001  # Monte Carlo
    assert paired_permutation_test(worse[:10]) == 2 / 2 ** 10  # exact
    assert paired_permutation_tests(worse[:, None])[0].p_value < 0.001
    for diffs in (rng.normal(0.05, 0.2, size=12), rng.normal(0.05, 0.2, size=40)):
        assert paired_permutation_test(diffs) == paired_permutation_test(-diffs)


def _evaluation(success: dict[str, np.ndarray]) -> Evaluation:
    n_seeds, n_tasks = next(iter(success.values())).shape
    runs = {method: MethodRuns(method, rows, [{}] * n_seeds) for method, rows in success.items()}
    return Evaluation("TEPA/RegimeDrift-v0", {}, {}, list(range(n_seeds)),
                      np.repeat([0, 1], n_tasks // 2), runs)


def test_summarize_is_two_sided():
    rng = np.random.default_rng(11)
    good = rng.random((30, 20)) < 0.8
    evaluation = _evaluation({"tepa": rng.random((30, 20)) < 0.3, "append-only": good,
                              "no-memory": rng.random((30, 20)) < 0.5})
    summary = summarize(evaluation, phase_names=PHASES)
    worse = {c.phase: c for c in summary.comparisons if (c.method, c.baseline) == ("tepa", "append-only")}
    for c in worse.values():
        assert c.diff < -0.3 and c.p_value < 0.001 and c.significant
    # each baseline is compared with the other: opposite differences, the same p
    forward = {c.phase: c for c in summary.comparisons if (c.method, c.baseline) == ("no-memory", "append-only")}
    backward = {c.phase: c for c in summary.comparisons if (c.method, c.baseline) == ("append-only", "no-memory")}
    for phase in forward:
        assert forward[phase].diff == pytest.approx(-backward[phase].diff)
        assert forward[phase].p_value == backward[phase].p_value


def _correlated_pair(n_seeds=40, n_tasks=20, seed=12):
    """Seeds differ a lot in difficulty; the method solves what the baseline solves, plus
    one more task on about 70% of the seeds: a small, consistent per-seed gain."""
    rng = np.random.default_rng(seed)
    baseline = np.zeros((n_seeds, n_tasks), bool)
    method = np.zeros((n_seeds, n_tasks), bool)
    for i in range(n_seeds):
        order = rng.permutation(n_tasks)
        solved = rng.integers(2, n_tasks - 3)
        baseline[i, order[:solved]] = True
        method[i, order[:solved + (rng.random() < 0.7)]] = True
    return method, baseline


def test_summarize_pairs_method_and_baseline_by_seed():
    method, baseline = _correlated_pair()
    summary = summarize(_evaluation({"tepa": method, "append-only": baseline}), phase_names=PHASES)
    [overall] = [c for c in summary.comparisons if c.phase == "overall"]
    per_seed_diff = method.mean(axis=1) - baseline.mean(axis=1)
    expected = bootstrap_ci(per_seed_diff, confidence=0.95)
    assert overall.diff == pytest.approx(per_seed_diff.mean())
    assert (overall.ci_low, overall.ci_high) == pytest.approx((expected.ci_low, expected.ci_high), abs=1e-12)
    assert overall.p_value == paired_permutation_test(per_seed_diff, alternative="two-sided")
    # paired, the small gain is clear
    assert 0.0 < overall.ci_low and overall.p_value < 0.001 and overall.significant


def test_breaking_the_seed_pairing_loses_the_effect():
    method, baseline = _correlated_pair()
    shuffled = method[np.random.default_rng(13).permutation(len(method))]  # same marginal, pairing broken
    summary = summarize(_evaluation({"tepa": shuffled, "append-only": baseline}), phase_names=PHASES)
    [overall] = [c for c in summary.comparisons if c.phase == "overall"]
    assert overall.diff == pytest.approx(method.mean() - baseline.mean())  # the mean difference is unchanged
    assert overall.ci_low < 0.0 < overall.ci_high and not overall.significant
