"""The suite's statistics: paired comparisons over scenarios, the best method per
scenario, mean ranks with bootstrap CIs, and the pairs never told apart.

:func:`analyse` turns per-seed success ``(env_id, method, phase)`` into the
``suite.json`` dict; what it computes is defined in
:mod:`~tepa_envs.agents.evaluation.studies.suite`, which runs the episodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Any, Sequence

import numpy as np
from scipy.stats import rankdata

from tepa_envs.agents.evaluation.analysis.statistics import bootstrap_cis, holm_bonferroni, paired_permutation_tests

SUITE_N_PERM = 200_000
"""Monte Carlo sign patterns per comparison: with about 1,500 comparisons in the family, the
smallest Holm-corrected p (m / (B + 1)) stays near 0.0075, well below alpha = 0.05."""
PERMUTATION_BLOCK = 64
"""Comparisons tested together (their null statistics take ``2**20 / n_seeds * 64 * 8`` bytes)."""
RANK_BOOTSTRAP = 2000
"""Bootstrap resamples of the mean-rank CI."""
ORACLES: tuple[str, ...] = ("oracle-reset", "oracle-view")
"""Methods told the true phase boundaries: shown, never the best, left out of ranks and pairs."""
BASELINE = "no-memory"
OVERALL = "overall"


@dataclass(frozen=True)
class Scenario:
    """A suite scenario: its phases (in order) and which of them are reversal phases."""

    env_id: str
    short: str
    phases: tuple[str, ...]
    reversal_phases: tuple[str, ...]
    kwargs: dict[str, Any]


def analyse(per_seed: dict[tuple[str, str, str], np.ndarray], infos: Sequence[Scenario], methods: Sequence[str],
            seeds: Sequence[int], *, alpha: float = 0.05, n_perm: int = SUITE_N_PERM) -> dict[str, Any]:
    """The statistics of :mod:`~tepa_envs.agents.evaluation.studies.suite`'s docstring from per-seed success
    ``(env_id, method, phase)``."""
    contenders = [m for m in methods if m not in ORACLES]
    cells = list(per_seed)
    comparisons: list[dict[str, Any]] = []
    diffs: list[np.ndarray] = []
    for info in infos:
        for a, b in combinations(contenders, 2):
            comparisons.append({"kind": "pair", "env_id": info.env_id, "phase": OVERALL, "method": a, "other": b})
            diffs.append(per_seed[info.env_id, a, OVERALL] - per_seed[info.env_id, b, OVERALL])
        if BASELINE in contenders:
            for phase in info.reversal_phases:
                if (info.env_id, BASELINE, phase) not in per_seed:
                    continue
                for method in contenders:
                    if method == BASELINE:
                        continue
                    comparisons.append({"kind": "reversal", "env_id": info.env_id, "phase": phase,
                                        "method": method, "other": BASELINE})
                    diffs.append(per_seed[info.env_id, method, phase] - per_seed[info.env_id, BASELINE, phase])
    columns = [per_seed[c] for c in cells] + diffs
    cis = bootstrap_cis(np.column_stack(columns))
    estimates = dict(zip(cells, cis[:len(cells)]))
    if diffs:
        # Column blocks bound the memory of the null statistics (sign patterns x comparisons);
        # the tests share their sign patterns, so the p-values do not depend on the blocks.
        matrix = np.column_stack(diffs)
        tests = [test for start in range(0, matrix.shape[1], PERMUTATION_BLOCK)
                 for test in paired_permutation_tests(matrix[:, start:start + PERMUTATION_BLOCK], n_perm=n_perm)]
        adjusted = holm_bonferroni([t.p_value for t in tests])
        for comparison, est, test, p_holm in zip(comparisons, cis[len(cells):], tests, adjusted):
            comparison.update(diff=est.mean, ci_low=est.ci_low, ci_high=est.ci_high, p_value=test.p_value,
                              p_at_floor=test.at_floor, p_holm=float(p_holm), significant=bool(p_holm < alpha))
    pair_index = {(c["env_id"], c["method"], c["other"]): c for c in comparisons if c["kind"] == "pair"}

    def versus(env_id: str, method: str, other: str) -> dict[str, Any]:
        """``method − other`` on overall success (the stored comparison, flipped when needed)."""
        if (env_id, method, other) in pair_index:
            return pair_index[env_id, method, other]
        c = pair_index[env_id, other, method]
        return {**c, "method": method, "other": other, "diff": -c["diff"], "ci_low": -c["ci_high"],
                "ci_high": -c["ci_low"]}

    scenarios_out = []
    for info in infos:
        phases = [p for p in info.phases if (info.env_id, methods[0], p) in per_seed] + [OVERALL]
        success = {m: {p: {"mean": estimates[info.env_id, m, p].mean, "ci_low": estimates[info.env_id, m, p].ci_low,
                           "ci_high": estimates[info.env_id, m, p].ci_high} for p in phases} for m in methods}
        best = max(contenders, key=lambda m: success[m][OVERALL]["mean"]) if contenders else None
        within: list[str] = []
        not_worse: list[str] = []
        if best is not None:
            within = [m for m in contenders if m != best and versus(info.env_id, m, best)["ci_high"] >= 0.0]
            not_worse = [m for m in contenders if m != best and not versus(info.env_id, m, best)["significant"]]
        below = {m: [c["phase"] for c in comparisons if c["kind"] == "reversal" and c["env_id"] == info.env_id
                     and c["method"] == m and c["significant"] and c["diff"] < 0] for m in contenders}
        scenarios_out.append({
            "env_id": info.env_id, "short": info.short, "kwargs": info.kwargs, "phases": phases,
            "reversal_phases": list(info.reversal_phases), "success": success, "best": best,
            "within_ci_of_best": within, "not_significantly_below_best": not_worse,
            "below_no_memory_in_reversal": {m: p for m, p in below.items() if p},
        })
    significant_pairs = {(c["method"], c["other"]) for c in comparisons if c["kind"] == "pair" and c["significant"]}
    never = [[a, b] for a, b in combinations(contenders, 2) if (a, b) not in significant_pairs]
    return {
        "suite_version": 1,
        "scenarios": scenarios_out,
        "methods": list(methods),
        "oracles": [m for m in methods if m in ORACLES],
        "seeds": [int(s) for s in seeds],
        "alpha": float(alpha),
        "n_perm": int(n_perm),
        "n_comparisons": len(comparisons),
        "comparisons": comparisons,
        "ranks": mean_ranks(per_seed, infos, contenders),
        "pairs_never_significant": never,
    }


def mean_ranks(per_seed: dict[tuple[str, str, str], np.ndarray], infos: Sequence[Scenario],
               methods: Sequence[str]) -> dict[str, dict[str, float]]:
    """Mean over scenarios of each method's rank on overall success (1 = best, ties averaged),
    with a 95 % bootstrap CI over seeds (one resample shared by every scenario)."""
    if not methods:
        return {}
    stacked = np.stack([np.column_stack([per_seed[info.env_id, m, OVERALL] for m in methods]) for info in infos])
    n = stacked.shape[1]  # scenarios x seeds x methods

    def ranks_of(means: np.ndarray) -> np.ndarray:  # (..., scenarios, methods) -> mean rank per method
        return rankdata(-means, axis=-1).mean(axis=-2)

    point = ranks_of(stacked.mean(axis=1))
    rng = np.random.default_rng(0)
    samples = np.empty((RANK_BOOTSTRAP, len(methods)))
    chunk = max(1, 2**20 // max(n, 1))
    for start in range(0, RANK_BOOTSTRAP, chunk):
        rows = min(chunk, RANK_BOOTSTRAP - start)
        idx = rng.integers(0, n, size=(rows, n))
        counts = np.zeros((rows, n))
        np.add.at(counts, (np.repeat(np.arange(rows), n), idx.ravel()), 1.0)
        means = np.einsum("rn,snm->rsm", counts, stacked) / n
        samples[start:start + rows] = ranks_of(means)
    low, high = np.quantile(samples, [0.025, 0.975], axis=0)
    return {m: {"mean_rank": float(point[i]), "ci_low": float(low[i]), "ci_high": float(high[i])}
            for i, m in enumerate(methods)}


__all__ = ["BASELINE", "ORACLES", "OVERALL", "PERMUTATION_BLOCK", "RANK_BOOTSTRAP", "SUITE_N_PERM", "Scenario",
           "analyse", "mean_ranks"]
