"""Per-phase success with CIs, MPI, trial budgets and Holm-corrected paired comparisons."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from tepa_envs.agents.evaluation.analysis.evaluation import Evaluation
from tepa_envs.agents.evaluation.analysis.results import Comparison, MethodSummary, PhaseEstimate, Summary
from tepa_envs.agents.evaluation.analysis.settings import settings_for
from tepa_envs.agents.evaluation.analysis.statistics import (
    DEFAULT_N_PERM, bootstrap_cis, holm_bonferroni, memory_pollution_index, paired_permutation_tests,
)


def summarize(evaluation: Evaluation, *, baselines: Sequence[str] = ("append-only", "no-memory"),
              phase_names: Sequence[str] | None = None, alpha: float = 0.05,
              n_perm: int = DEFAULT_N_PERM) -> Summary:
    """Per-phase success with CIs, MPI, trial budgets and Holm-corrected paired comparisons.

    Comparisons are method minus baseline per seed (row ``i`` of both methods'
    success is seed ``evaluation.seeds[i]``): the mean difference with a 95%
    bootstrap CI, a two-sided paired sign-flip test (exact up to 16 seeds, else
    ``n_perm`` Monte Carlo sign patterns; ``p_at_floor`` when none was as
    extreme), Holm–Bonferroni corrected over the whole family, and
    ``significant = p_holm < alpha``. See ``statistics.py`` for the definitions.
    ``Summary.drift_metrics`` holds, per method whose every episode has them, the drift
    metrics pooled over the seeds (:meth:`MethodRuns.pooled_metrics`; empty when no
    episode recorded them). ``Summary.to_json()`` is the ``results.json`` layout
    (docs/results_schema.md).
    """
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be a number in (0, 1), got {alpha!r}")
    if isinstance(n_perm, bool) or not isinstance(n_perm, int) or n_perm < 1:
        raise ValueError(f"n_perm must be a positive int, got {n_perm!r}")
    if phase_names is None:
        phase_names = settings_for(evaluation.env_id).phase_names
    phases: list[tuple[str, int | None]] = [
        (name, i) for i, name in enumerate(phase_names) if np.any(evaluation.phase == i)
    ] + [("overall", None)]
    per_seed = {(method, name): evaluation.phase_success(method, index)
                for method in evaluation.methods for name, index in phases}
    cells = list(per_seed)
    pairs = [(method, baseline, name) for baseline in baselines if baseline in evaluation.runs
             for method in evaluation.methods if method != baseline for name, _ in phases]
    diffs = np.column_stack([per_seed[method, name] - per_seed[baseline, name] for method, baseline, name in pairs]
                            ) if pairs else np.empty((len(evaluation.seeds), 0))
    # one bootstrap over every success series and every paired difference, sharing the resamples
    cis = bootstrap_cis(np.column_stack([per_seed[cell] for cell in cells] + ([diffs] if pairs else [])))
    estimates = dict(zip(cells, cis))
    mpi: dict[tuple[str, str], float | None] = {cell: None for cell in cells}
    if "no-memory" in evaluation.runs:
        for method, name in cells:
            mpi[method, name] = memory_pollution_index(estimates["no-memory", name].mean,
                                                       estimates[method, name].mean)
    comparisons: list[Comparison] = []
    if pairs:
        tests = paired_permutation_tests(diffs, n_perm=n_perm, alternative="two-sided")
        adjusted = holm_bonferroni([test.p_value for test in tests])
        for (method, baseline, name), est, test, p_holm in zip(pairs, cis[len(cells):], tests, adjusted):
            comparisons.append(Comparison(method, baseline, name, est.mean, est.ci_low, est.ci_high,
                                          test.p_value, float(p_holm), bool(p_holm < alpha), test.at_floor))
    trials = {}
    for method, run in evaluation.runs.items():
        kinds = sorted({k for t in run.trials for k in t})
        trials[method] = {k: float(np.mean([t.get(k, 0) for t in run.trials])) for k in kinds}
        trials[method]["total"] = float(np.mean([sum(t.values()) for t in run.trials]))
    return Summary(
        env_id=evaluation.env_id,
        env_kwargs=evaluation.env_kwargs,
        reader_kwargs=evaluation.reader_kwargs,
        seeds=tuple(evaluation.seeds),
        methods=tuple(evaluation.methods),
        phases=tuple(name for name, _ in phases),
        phase_of_task=tuple(evaluation.phase.tolist()),
        estimates={method: MethodSummary(method, {
            name: PhaseEstimate(estimates[method, name].mean, estimates[method, name].ci_low,
                                estimates[method, name].ci_high, mpi[method, name])
            for name, _ in phases}) for method in evaluation.methods},
        comparisons=tuple(comparisons),
        trials_per_episode=trials,
        per_task_success={m: tuple(r.success.mean(axis=0).tolist()) for m, r in evaluation.runs.items()},
        drift_metrics=drift_metrics_of(evaluation),
        elapsed_s=evaluation.elapsed_s,
        alpha=float(alpha),
        n_perm=n_perm,
    )


def drift_metrics_of(evaluation: Evaluation) -> dict[str, dict[str, Any]]:
    """Method -> its drift metrics pooled over the seeds, for the methods whose every
    episode has them (:meth:`MethodRuns.pooled_metrics`), in method order."""
    pooled = {method: run.pooled_metrics() for method, run in evaluation.runs.items()}
    return {method: metrics for method, metrics in pooled.items() if metrics is not None}


__all__ = ["drift_metrics_of", "summarize"]
