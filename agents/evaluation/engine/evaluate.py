"""``evaluate()``: every method on every seed of one environment, on the one executor.

Each (method, seed) episode is an independent :class:`~tepa_envs.agents.evaluation.engine.jobs.Job`,
run by :func:`~tepa_envs.agents.evaluation.engine.executor.run_jobs` (the executor
``tepa-bench run`` and ``sweep`` use too), so the numbers do not depend on how many
worker processes run them.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np

from tepa_envs.agents.evaluation.analysis.evaluation import Evaluation, MethodRuns
from tepa_envs.agents.evaluation.engine.executor import ProgressHook, run_jobs
from tepa_envs.agents.evaluation.engine.jobs import MethodSpec, build_jobs, method_label
from tepa_envs.agents.evaluation.engine.runner import describe_job, run_job, run_job_with_metrics
from tepa_envs.agents.evaluation.engine.validate import validate_methods


def evaluate(env_id: str, methods: Sequence[str | MethodSpec], seeds: Sequence[int], *,
             env_kwargs: dict[str, Any] | None = None, workers: int = 1,
             progress: ProgressHook | None = None, reader_kwargs: dict[str, Any] | None = None,
             metrics: bool = True) -> Evaluation:
    """Run every method on every seed of ``env_id``, each episode with its drift metrics
    (:func:`~tepa_envs.agents.evaluation.engine.runner.run_job_with_metrics`;
    ``metrics=False``: :func:`~tepa_envs.agents.evaluation.engine.runner.run_job`, the
    same success without them and without their cost, about 10-15 % of an episode's time).

    ``reader_kwargs`` override the reader of the environment's settings for every
    method alike (e.g. ``{"follow_prob": 0.99}`` for a sensitivity analysis).

    >>> evaluation = evaluate("TEPA/RegimeDrift-v0", ["tepa", "no-memory"], seeds=range(2))
    >>> evaluation.methods
    ['tepa', 'no-memory']
    >>> evaluation.runs["tepa"].success.shape  # seeds x tasks
    (2, 160)
    """
    env_kwargs = dict(env_kwargs or {})
    reader_kwargs = dict(reader_kwargs or {})
    if isinstance(methods, (str, MethodSpec)):
        raise TypeError(f"methods must be a list of names, import paths or MethodSpec, got {methods!r}")
    methods = list(methods)
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("need at least one seed")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive int, got {workers!r}")
    validate_methods(env_id, env_kwargs, methods, reader_kwargs)
    jobs = build_jobs(env_id, methods, seeds, env_kwargs=env_kwargs, reader_kwargs=reader_kwargs)
    started = time.perf_counter()
    outputs = run_jobs(jobs, run_job_with_metrics if metrics else run_job, workers, progress, describe=describe_job)
    runs: dict[str, MethodRuns] = {}
    phase = outputs[0][1]
    for m_index, method in enumerate(methods):
        block = outputs[m_index * len(seeds):(m_index + 1) * len(seeds)]
        label = method_label(method)
        runs[label] = MethodRuns(label, np.stack([b[0] for b in block]), [b[2] for b in block],
                                 [b[3] for b in block] if metrics else [])
    return Evaluation(env_id, env_kwargs, reader_kwargs, seeds, phase, runs, time.perf_counter() - started)


__all__ = ["evaluate"]
