"""Paired statistics against hand-computed values and reference implementations.

Calibration against known truth (coverage, null uniformity, power, pairing) is
in test_calibration.py.
"""

import tracemalloc

import numpy as np
import pytest
from scipy import stats

from tepa_envs.agents.evaluation.analysis.statistics import (
    PermutationTest, bootstrap_ci, bootstrap_cis, holm_bonferroni, memory_pollution_index, paired_permutation_test,
    paired_permutation_tests, smallest_p_value,
)


def test_holm_matches_hand_computation():
    adjusted = holm_bonferroni([0.01, 0.04, 0.03, 0.005])
    np.testing.assert_allclose(adjusted, [0.03, 0.06, 0.06, 0.02])
    assert holm_bonferroni([0.5, 0.9]).max() <= 1.0


def test_exact_permutation_p_for_small_samples():
    # all five differences positive: only the identity (and, two-sided, its mirror) is as extreme
    assert paired_permutation_test([0.1] * 5, alternative="greater") == pytest.approx(1 / 32)
    assert paired_permutation_test([0.1] * 5) == pytest.approx(2 / 32)
    assert paired_permutation_test([-0.1] * 5) == pytest.approx(2 / 32)
    assert paired_permutation_test([-0.1] * 5, alternative="less") == pytest.approx(1 / 32)
    assert paired_permutation_test([0.0] * 5) == 1.0
    # by hand: d = (1, 2, -3), T = 0; every one of the 8 patterns has |T| >= 0
    assert paired_permutation_test([1.0, 2.0, -3.0]) == 1.0
    # d = (1, 2, 4): the 8 patterns give T = ±1 ±2 ±4 = -7, -5, ..., 5, 7 once each
    assert paired_permutation_test([1.0, 2.0, 4.0]) == 2 / 8  # |T| >= 7
    assert paired_permutation_test([1.0, 2.0, -4.0]) == 8 / 8  # |T| >= 1
    assert paired_permutation_test([1.0, 2.0, -4.0], alternative="greater") == 5 / 8  # T >= -1
    assert paired_permutation_test([1.0, -2.0, 4.0], alternative="less") == 6 / 8  # T <= 3
    assert paired_permutation_tests(np.array([[1.0], [2.0], [4.0]]))[0] == PermutationTest(0.25, False, True, 8)


def test_monte_carlo_p_is_hits_plus_one_over_b_plus_one_and_flags_the_floor():
    rng = np.random.default_rng(1)
    strong = rng.normal(1.0, 0.2, size=40)
    [test] = paired_permutation_tests(strong[:, None], n_perm=999)
    assert test == PermutationTest(1 / 1000, True, False, 999)
    assert paired_permutation_test(-strong, n_perm=999) == 1 / 1000
    # the p-value is a multiple of 1/(B+1), at least 1/(B+1), and matches a direct count
    diffs = rng.normal(0.1, 1.0, size=30)
    result = paired_permutation_tests(diffs[:, None], n_perm=999, seed=3)[0]
    assert not result.at_floor and result.p_value > 1 / 1000
    assert round(result.p_value * 1000) == pytest.approx(result.p_value * 1000)
    assert paired_permutation_test(np.zeros(40), n_perm=999) == 1.0


def test_monte_carlo_sign_patterns_are_fair_independent_and_seeded():
    from tepa_envs.agents.evaluation.analysis.statistics import _random_sign_chunks

    signs = np.concatenate(list(_random_sign_chunks(70, 20000, 0)))
    assert signs.shape == (20000, 70) and set(np.unique(signs)) == {-1.0, 1.0}
    assert abs(signs.mean()) < 0.01 and np.abs(np.corrcoef(signs[:, :8].T) - np.eye(8)).max() < 0.05
    again = np.concatenate(list(_random_sign_chunks(70, 20000, 0)))
    other = np.concatenate(list(_random_sign_chunks(70, 20000, 1)))
    assert np.array_equal(signs, again) and not np.array_equal(signs, other)


def test_batched_tests_equal_single_tests_and_do_not_depend_on_the_batch():
    rng = np.random.default_rng(2)
    for n in (8, 40):
        diffs = rng.normal(0.05, 0.3, size=(n, 5))
        batch = paired_permutation_tests(diffs, n_perm=2000)
        assert [t.p_value for t in batch] == [paired_permutation_test(diffs[:, j], n_perm=2000) for j in range(5)]
        assert paired_permutation_tests(diffs[:, 2:4], n_perm=2000) == batch[2:4]


def test_monte_carlo_memory_is_bounded_for_many_seeds():
    diffs = np.random.default_rng(3).normal(0.0, 1.0, size=(2000, 3))
    tracemalloc.start()
    try:
        paired_permutation_tests(diffs, n_perm=50_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2 ** 20, f"peak {peak / 2 ** 20:.0f} MB (a 50,000 x 2,000 sign matrix would be 800 MB)"


def test_smallest_p_value():
    assert smallest_p_value(10) == 2 / 1024 and smallest_p_value(10, alternative="greater") == 1 / 1024
    assert smallest_p_value(17, n_perm=999) == 1 / 1000
    assert paired_permutation_test(np.ones(10)) == smallest_p_value(10)


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


@pytest.mark.parametrize("n", [5, 50, 700])  # 700 seeds: the resamples are generated in chunks
def test_bootstrap_ci_is_the_95_percent_percentile_interval_of_the_documented_resamples(n):
    values = np.random.default_rng(n).random(n)
    idx = np.random.default_rng(0).integers(0, n, size=(5000, n))
    low, high = np.quantile(values[idx].mean(axis=1), [0.025, 0.975])
    estimate = bootstrap_ci(values)
    assert estimate.mean == values.mean()
    assert (estimate.ci_low, estimate.ci_high) == pytest.approx((low, high), rel=1e-12, abs=1e-12)
    batch = bootstrap_cis(np.column_stack([values, 1 - values]))
    assert (batch[0].ci_low, batch[0].ci_high) == pytest.approx((low, high), rel=1e-12, abs=1e-12)
    assert batch[1].ci_low == pytest.approx(1 - high) and batch[1].ci_high == pytest.approx(1 - low)


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
    with pytest.raises(ValueError, match="n_perm"):
        paired_permutation_test([0.1] * 20, n_perm=0)
    with pytest.raises(ValueError):
        holm_bonferroni([1.5])


def test_summary_statistics_follow_the_definitions():
    from tepa_envs.agents.evaluation.analysis.summary import summarize
    from tepa_envs.agents.evaluation.engine.evaluate import evaluate
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
    assert summary.alpha == 0.05 and summary.to_json()["alpha"] == 0.05
    for c in comparisons:
        assert c.significant == (c.p_holm < summary.alpha)
        index = None if c.phase == "overall" else PHASE_NAMES.index(c.phase)
        diff = evaluation.phase_success(c.method, index) - evaluation.phase_success(c.baseline, index)
        assert c.diff == pytest.approx(diff.mean())
        assert c.p_value == paired_permutation_test(diff, alternative="two-sided")
        assert not c.p_at_floor  # 4 seeds: exact test
    strict = summarize(evaluation, alpha=0.001)
    assert strict.alpha == 0.001 and all(c.significant == (c.p_holm < 0.001) for c in strict.comparisons)
    for bad in (0, 1, 1.5, -0.1, True, "0.05"):
        with pytest.raises(ValueError, match="alpha"):
            summarize(evaluation, alpha=bad)


def _hand_built_evaluation(n_seeds, effects, n_tasks=20, seed=0):
    """Methods solving a random share of tasks with per-method success probability offsets."""
    from tepa_envs.agents.evaluation.analysis.evaluation import Evaluation, MethodRuns

    rng = np.random.default_rng(seed)
    runs = {method: MethodRuns(method, rng.random((n_seeds, n_tasks)) < 0.3 + effect, [{}] * n_seeds)
            for method, effect in effects.items()}
    return Evaluation("TEPA/RegimeDrift-v0", {}, {}, list(range(n_seeds)), np.repeat([0, 1], n_tasks // 2), runs)


def test_summary_reports_floor_p_values_and_their_holm_bound():
    from tepa_envs.agents.evaluation.analysis.summary import summarize
    from tepa_envs.agents.evaluation.outputs.report import format_table

    evaluation = _hand_built_evaluation(60, {"tepa": 0.6, "lww": 0.02, "no-memory": 0.0, "append-only": 0.0})
    summary = summarize(evaluation, phase_names=("a", "b"), n_perm=999)
    m = len(summary.comparisons)
    assert summary.n_perm == 999 and m == 2 * 3 * 3
    floor = [c for c in summary.comparisons if c.p_at_floor]
    assert floor and all(c.method == "tepa" or c.baseline == "tepa" for c in floor)
    for c in summary.comparisons:
        assert c.p_value >= 1 / 1000 and c.p_holm >= c.p_value
        if c.p_at_floor:
            assert c.p_value == 1 / 1000 and c.p_holm == pytest.approx(m / 1000) and c.significant
    table = format_table(summary)
    assert f"Holm–Bonferroni over m = {m} tests, alpha = 0.05" in table
    assert "B = 999" in table and "< 1/(B+1) = 1.0e-03" in table and "< 1.8e-02" in table  # m/(B+1) = 18/1000


def test_files_written_before_alpha_and_the_floor_flag_are_read_with_their_old_meaning():
    from tepa_envs.agents.evaluation.analysis.results import Summary
    from tepa_envs.agents.evaluation.analysis.summary import summarize

    evaluation = _hand_built_evaluation(30, {"tepa": 0.6, "no-memory": 0.0, "append-only": 0.05})
    summary = summarize(evaluation, phase_names=("a", "b"))
    assert any(c.p_at_floor for c in summary.comparisons) and not all(c.p_at_floor for c in summary.comparisons)
    legacy = summary.to_json()
    del legacy["alpha"], legacy["n_perm"]
    for c in legacy["comparisons"]:
        del c["p_at_floor"]
    back = Summary.from_json(legacy)
    assert back.alpha == 0.01 and back.n_perm == 50_000  # `significant` used to be p_holm < 0.01
    assert [c.p_at_floor for c in back.comparisons] == [c.p_at_floor for c in summary.comparisons]


def test_cli_alpha_is_applied_recorded_and_checked(tmp_path, capsys):
    import json

    from tepa_envs.agents.evaluation.cli import build_parser, main

    assert build_parser().parse_args(["run", "TEPA/RegimeDrift-v0", "--methods", "tepa"]).alpha == 0.05
    assert build_parser().parse_args(["reproduce", "controlled", "--alpha", "0.01"]).alpha == 0.01
    out = tmp_path / "out"
    assert main(["run", "TEPA/RegimeDrift-v0", "--methods", "tepa,no-memory,append-only", "--seeds", "3",
                 "--workers", "1", "--out", str(out), "--quiet", "--alpha", "0.3",
                 "--env-kwargs", '{"phase_lengths": [5, 5, 5, 5]}']) == 0
    assert "alpha = 0.3" in capsys.readouterr().out
    results = json.loads((out / "results.json").read_text())
    assert results["alpha"] == 0.3
    assert all(c["significant"] == (c["p_holm"] < 0.3) for c in results["comparisons"])
    for bad in ("0", "1", "-0.5"):
        assert main(["run", "TEPA/RegimeDrift-v0", "--methods", "tepa", "--alpha", bad]) == 2
        assert "--alpha must be in (0, 1)" in capsys.readouterr().err
