"""The suite's notification-level table: every method under each change-notification level.

:func:`notify_table` turns per-seed overall success ``(level, env_id, method)`` into the
``notify`` section of ``suite.json`` (layout in :mod:`~tepa_envs.agents.evaluation.studies.suite`):

* per level and method, overall success averaged over the scenarios, with a 95 %
  percentile-bootstrap CI over seeds (a seed's value is its mean over the scenarios, so
  the resampling keeps the pairing: one seed is one world in every scenario and level);
* per level, the best non-oracle method (highest mean over scenarios);
* per method, its paired difference at every level to the best non-oracle method at
  ``known`` (same seeds, same worlds), with a 95 % bootstrap CI: at ``detected`` it
  answers "does any memory come close to being told?";
* per scenario, level and method, the overall mean (the cells of the full table).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from tepa_envs.agents.evaluation.analysis.statistics import bootstrap_cis

KNOWN = "known"
"""The level at which the environment tells the agent every true change: the dial's informed end."""


def _estimate(per_seed: np.ndarray) -> dict[str, float]:
    estimate = bootstrap_cis(per_seed[:, None])[0]
    return {"mean": estimate.mean, "ci_low": estimate.ci_low, "ci_high": estimate.ci_high}


def _best(success: dict[str, dict[str, float]], contenders: list[str]) -> str:
    """The contender with the highest mean, the first listed among ties."""
    return max(contenders, key=lambda m: (success[m]["mean"], -contenders.index(m)))


def notify_table(per_seed: dict[tuple[str, str, str], np.ndarray], levels: Sequence[str], env_ids: Sequence[str],
                 methods: Sequence[str], oracles: Sequence[str]) -> dict[str, Any]:
    """The ``notify`` section of ``suite.json`` from per-seed overall success
    ``(level, env_id, method) -> (n_seeds,)``; every key must be present."""
    missing = [(lv, e, m) for lv in levels for e in env_ids for m in methods if (lv, e, m) not in per_seed]
    if missing:
        raise ValueError(f"per_seed lacks {len(missing)} cells, e.g. {missing[0]}")
    contenders = [m for m in methods if m not in oracles]
    pooled = {(lv, m): np.mean([per_seed[lv, e, m] for e in env_ids], axis=0) for lv in levels for m in methods}
    success = {lv: {m: _estimate(pooled[lv, m]) for m in methods} for lv in levels}
    best = {lv: _best(success[lv], contenders) for lv in levels} if contenders else {}
    table: dict[str, Any] = {
        "levels": list(levels), "methods": list(methods), "success": success, "best": best,
        "per_scenario": {e: {lv: {m: float(per_seed[lv, e, m].mean()) for m in methods} for lv in levels}
                         for e in env_ids},
    }
    if KNOWN in levels and contenders:
        reference = pooled[KNOWN, best[KNOWN]]
        table["to_best_known"] = {lv: {m: _estimate(pooled[lv, m] - reference) for m in methods} for lv in levels}
    return table


__all__ = ["KNOWN", "notify_table"]
