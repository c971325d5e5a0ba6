"""Which conclusions hold under which reader, and what memories show on shared traces.

* :func:`profile_rankings`: every method under each headline reader profile
  (:data:`~tepa_envs.agents.readers.profile.PROFILES`: ``ideal``, ``default``,
  ``never-explore`` and the ``smollm2-135m`` profile calibrated from the packaged
  model) on the same seeds: per method the mean success on the focus phase, the
  ranking under each profile, Kendall's tau between every two profiles, and each
  headline claim (:data:`CLAIMS`) as a paired difference with its 95 % bootstrap CI,
  holding under a profile only when the CI lies on the claimed side of 0.
* :func:`shared_traces`: every method read by the ``memory-blind`` behaviour policy,
  whose actions never depend on the memory, so every memory (except those that run
  their own trials) receives the same evidence; per method the reader-free view
  metrics (:mod:`~tepa_envs.agents.evaluation.analysis.view_quality`) and, against
  a closed-loop evaluation of the same methods, Kendall's tau between each
  reader-free measure and closed-loop success.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
from scipy import stats

from tepa_envs.agents.evaluation.analysis.evaluation import Evaluation
from tepa_envs.agents.evaluation.analysis.statistics import bootstrap_ci
from tepa_envs.agents.evaluation.engine.evaluate import evaluate
from tepa_envs.agents.evaluation.engine.progress import Progress
from tepa_envs.agents.readers.factory import with_profile
from tepa_envs.agents.readers.profile import PROFILES

CLAIMS: tuple[tuple[str, str, str], ...] = (
    ("append-only pollutes (below no memory)", "no-memory", "append-only"),
    ("TEPA beats append-only", "tepa", "append-only"),
    ("TEPA beats last-write-wins", "tepa", "lww"),
    ("TEPA beats reactive forgetting", "tepa", "reactive-forgetting"),
    ("TEPA beats no memory", "tepa", "no-memory"),
)
"""(claim, better, worse): the claim is that ``better`` has higher success than ``worse``."""
BEHAVIOUR_PROFILE = "memory-blind"
"""The reader profile of shared traces (its choices never depend on the memory)."""
READER_FREE_MEASURES: tuple[str, ...] = ("correct_share", "stale_share", "persistence_2")
"""The reader-free measures whose rank agreement with the closed loop is reported."""


def _kendall(a: Sequence[float], b: Sequence[float]) -> float | None:
    tau = stats.kendalltau(list(a), list(b)).statistic
    return None if np.isnan(tau) else float(tau)


def focus_success(evaluation: Evaluation, method: str, focus: int | None) -> np.ndarray:
    return evaluation.phase_success(method, focus)


def profile_rankings(env_id: str, methods: Sequence[str], seeds: Sequence[int], focus: int | None, *,
                     env_kwargs: Mapping[str, Any] | None = None, reader_kwargs: Mapping[str, Any] | None = None,
                     profiles: Sequence[str] = PROFILES, workers: int = 1,
                     progress: Progress | None = None) -> dict[str, Any]:
    """Means, rankings, tau and claims under every profile (module docstring)."""
    per_profile: dict[str, dict[str, np.ndarray]] = {}
    for profile in profiles:
        evaluation = evaluate(env_id, list(methods), seeds, env_kwargs=dict(env_kwargs or {}), workers=workers,
                              reader_kwargs=with_profile(dict(reader_kwargs or {}), profile), metrics=False,
                              progress=progress)
        per_profile[profile] = {m: focus_success(evaluation, m, focus) for m in evaluation.methods}
    means = {p: {m: float(v.mean()) for m, v in runs.items()} for p, runs in per_profile.items()}
    tau = {f"{a}|{b}": _kendall(list(means[a].values()), list(means[b].values()))
           for i, a in enumerate(profiles) for b in profiles[i + 1:]}
    claims: dict[str, dict[str, Any]] = {}
    for claim, better, worse in CLAIMS:
        if better not in means[profiles[0]] or worse not in means[profiles[0]]:
            continue
        rows = {}
        for profile, runs in per_profile.items():
            est = bootstrap_ci(runs[better] - runs[worse])
            rows[profile] = {"diff": est.mean, "ci_low": est.ci_low, "ci_high": est.ci_high,
                             "holds": bool(est.ci_low > 0)}
        claims[claim] = rows
    return {"env_id": env_id, "seeds": len(seeds), "focus": focus, "profiles": list(profiles), "means": means,
            "ranking": {p: sorted(m, key=lambda k: -m[k]) for p, m in means.items()},
            "kendall_tau": tau, "claims": claims,
            "holds_under_every_profile": [c for c, rows in claims.items() if all(r["holds"] for r in rows.values())]}


def shared_traces(env_id: str, methods: Sequence[str], seeds: Sequence[int], closed_loop: Evaluation,
                  focus: int | None, *, env_kwargs: Mapping[str, Any] | None = None, workers: int = 1,
                  progress: Progress | None = None) -> dict[str, Any]:
    """View metrics of every method on memory-blind traces and their rank agreement with
    ``closed_loop``'s success on ``focus`` (module docstring)."""
    evaluation = evaluate(env_id, list(methods), seeds, env_kwargs=dict(env_kwargs or {}), workers=workers,
                          reader_kwargs=with_profile({}, BEHAVIOUR_PROFILE), progress=progress)
    views = {m: run.pooled_metrics()["views"] for m, run in evaluation.runs.items()  # type: ignore[index]
             if run.pooled_metrics() is not None and "views" in run.pooled_metrics()}  # type: ignore[operator]
    ranked = [m for m in methods if m in views and m in closed_loop.runs]
    success = [float(closed_loop.phase_success(m, focus).mean()) for m in ranked]
    agreement: dict[str, Any] = {}
    for measure in READER_FREE_MEASURES:
        values = [views[m]["phases"]["overall"][measure] for m in ranked]
        if any(v is None for v in values):
            agreement[measure] = None
            continue
        agreement[measure] = _kendall(values, success)
    return {"env_id": env_id, "seeds": len(seeds), "behaviour_profile": BEHAVIOUR_PROFILE, "views": views,
            "closed_loop_success": dict(zip(ranked, success)), "kendall_tau_with_closed_loop": agreement,
            "view_accuracy_ranking": sorted(views, key=lambda m: -views[m]["phases"]["overall"]["correct_share"])}


__all__ = ["BEHAVIOUR_PROFILE", "CLAIMS", "READER_FREE_MEASURES", "profile_rankings", "shared_traces"]
