"""Paired statistics against hand-computed values."""

import numpy as np
import pytest
from scipy import stats

from tepa_envs.agents.evaluation.statistics import (
    bootstrap_ci, holm_bonferroni, memory_pollution_index, paired_permutation_test,
)


def test_holm_matches_hand_computation():
    adjusted = holm_bonferroni([0.01, 0.04, 0.03, 0.005])
    np.testing.assert_allclose(adjusted, [0.03, 0.06, 0.06, 0.02])
    assert holm_bonferroni([0.5, 0.9]).max() <= 1.0


def test_exact_permutation_p_for_small_samples():
    # all five differences positive: only the identity sign pattern is as extreme
    assert paired_permutation_test([0.1] * 5) == pytest.approx(1 / 32)
    assert paired_permutation_test([0.1] * 5, alternative="two-sided") == pytest.approx(2 / 32)
    assert paired_permutation_test([0.0] * 5) == 1.0


def test_monte_carlo_permutation_agrees_with_a_t_test_on_large_effects():
    rng = np.random.default_rng(0)
    diffs = rng.normal(0.3, 0.5, size=50)
    p = paired_permutation_test(diffs, alternative="greater")
    assert p < 0.01 and stats.ttest_1samp(diffs, 0, alternative="greater").pvalue < 0.01
    null = rng.normal(0.0, 0.5, size=50)
    assert paired_permutation_test(null, alternative="two-sided") > 0.05


def test_bootstrap_ci_brackets_the_mean_and_is_deterministic():
    values = np.linspace(0, 1, 50)
    first, second = bootstrap_ci(values), bootstrap_ci(values)
    assert first == second
    assert first.mean == pytest.approx(0.5)
    assert first.ci_low < first.mean < first.ci_high


def test_mpi_sign_convention():
    assert memory_pollution_index(0.3, 0.2) == pytest.approx(1 / 3)
    assert memory_pollution_index(0.3, 0.6) == pytest.approx(-1.0)
    assert np.isnan(memory_pollution_index(0.0, 0.5))


@pytest.mark.parametrize("bad", [[], [[0.1, 0.2]], [np.nan, 0.1]])
def test_bad_input_is_refused(bad):
    with pytest.raises(ValueError):
        bootstrap_ci(bad)
    with pytest.raises(ValueError):
        paired_permutation_test(bad)


def test_bad_alternative_and_p_values():
    with pytest.raises(ValueError, match="alternative"):
        paired_permutation_test([0.1, 0.2], alternative="bigger")
    with pytest.raises(ValueError):
        holm_bonferroni([1.5])


def test_summary_statistics_follow_the_definitions():
    from tepa_envs.agents.evaluation.harness import evaluate, summarize
    from tepa_envs.core import PHASE_NAMES

    evaluation = evaluate("TEPA/RegimeDrift-v0", ["tepa", "no-memory", "append-only"], range(4),
                          env_kwargs={"phase_lengths": [5, 5, 5, 5]})
    summary = summarize(evaluation)
    for method in summary.methods:
        assert summary.estimate(method, "overall").mean == pytest.approx(evaluation.phase_success(method, None).mean())
        for phase in summary.phases:
            expected = memory_pollution_index(summary.estimate("no-memory", phase).mean,
                                              summary.estimate(method, phase).mean)
            assert summary.estimate(method, phase).mpi == pytest.approx(expected, nan_ok=True)
    comparisons = summary.comparisons
    np.testing.assert_allclose([c.p_holm for c in comparisons], holm_bonferroni([c.p_value for c in comparisons]))
    for c in comparisons:
        assert c.significant == (c.p_holm < 0.01)
        index = None if c.phase == "overall" else PHASE_NAMES.index(c.phase)
        diff = evaluation.phase_success(c.method, index) - evaluation.phase_success(c.baseline, index)
        assert c.diff == pytest.approx(diff.mean())
        assert c.p_value == paired_permutation_test(diff, alternative="two-sided", n_perm=50000)
