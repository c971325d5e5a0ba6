"""The raw outcome of an evaluation: per method, per-seed and per-task success.

:class:`Evaluation` is what the engine returns (``evaluate()``, a results store)
and what :func:`~tepa_envs.agents.evaluation.analysis.summary.summarize` reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tepa_envs.agents.evaluation.analysis.drift_metrics import pool_metrics


@dataclass
class MethodRuns:
    """Per-seed, per-task success of one method, with its per-seed trials and drift metrics."""

    name: str
    success: np.ndarray  # (n_seeds, n_tasks) bool
    trials: list[dict[str, int]] = field(default_factory=list)
    metrics: list[dict[str, Any] | None] = field(default_factory=list)
    """Per seed (the rows of ``success``), the episode's drift metrics
    (:func:`~tepa_envs.agents.evaluation.analysis.drift_metrics.episode_metrics`), ``None`` for an
    episode without them (an environment they do not apply to, see
    :func:`~tepa_envs.agents.evaluation.engine.runner.run_job_with_metrics`,
    or a store row written before they were recorded); empty when none were recorded."""

    def pooled_metrics(self) -> dict[str, Any] | None:
        """:func:`~tepa_envs.agents.evaluation.analysis.drift_metrics.pool_metrics` over the seeds,
        ``None`` unless every seed's episode has its metrics."""
        if not self.metrics or len(self.metrics) != len(self.success) or any(m is None for m in self.metrics):
            return None
        return pool_metrics(self.metrics)  # type: ignore[arg-type]


@dataclass
class Evaluation:
    """Every method's runs on the same seeds of one environment (row ``i`` of every
    method's ``success`` is seed ``seeds[i]``), and the phase of every task."""

    env_id: str
    env_kwargs: dict[str, Any]
    reader_kwargs: dict[str, Any]
    seeds: list[int]
    phase: np.ndarray  # (n_tasks,) phase index of every task
    runs: dict[str, MethodRuns]
    elapsed_s: float = 0.0

    @property
    def methods(self) -> list[str]:
        return list(self.runs)

    def phase_success(self, method: str, phase: int | None) -> np.ndarray:
        """Per-seed success over the tasks of ``phase`` (``None``: all tasks)."""
        success = self.runs[method].success
        mask = np.ones(self.phase.size, bool) if phase is None else self.phase == phase
        return success[:, mask].mean(axis=1)


__all__ = ["Evaluation", "MethodRuns"]
