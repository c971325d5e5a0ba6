"""Methods × seeds evaluation with paired statistics per phase.

Each (method, seed) episode is an independent job, so the numbers do not depend
on how many worker processes run them.
"""

from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import gymnasium as gym
import numpy as np

import tepa_envs  # noqa: F401  (registers the environments)
from tepa_envs.core import PHASE_NAMES

from tepa_envs.agents.readers.agent import MemoryAgent, run_episode
from tepa_envs.agents.readers.evidence_reader import EvidenceReader
from tepa_envs.agents.memories.registry import make_memory_for
from tepa_envs.agents.evaluation.statistics import bootstrap_ci, holm_bonferroni, memory_pollution_index, paired_permutation_test

Progress = Callable[[int, int], None]


@dataclass
class MethodRuns:
    """Per-seed, per-task success of one method."""

    name: str
    success: np.ndarray  # (n_seeds, n_tasks) bool
    trials: list[dict[str, int]] = field(default_factory=list)


@dataclass
class Evaluation:
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


def check_env_id(env_id: str) -> None:
    if env_id not in gym.envs.registry:
        tepa_ids = sorted(i for i in gym.envs.registry if i.startswith("TEPA/"))
        raise ValueError(f"unknown environment {env_id!r}; registered TEPA environments: {', '.join(tepa_ids)}")


def _run_job(job: tuple[str, dict[str, Any], str, int, dict[str, Any]]
             ) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    env_id, env_kwargs, method, seed, reader_kwargs = job
    env = gym.make(env_id, **env_kwargs)
    try:
        memory = make_memory_for(env, method)
        result = run_episode(env, MemoryAgent(memory, EvidenceReader.for_env(env, **reader_kwargs)), seed)
    finally:
        env.close()
    return result.success, result.phase, result.trials


def validate_methods(env_id: str, env_kwargs: dict[str, Any], methods: Sequence[str],
                     reader_kwargs: dict[str, Any] | None = None) -> None:
    """Fail fast, before any process starts, on an unknown method or bad kwargs."""
    check_env_id(env_id)
    if not methods:
        raise ValueError("no methods given")
    if len(set(methods)) != len(methods):
        raise ValueError(f"methods listed twice: {', '.join(sorted(m for m in methods if methods.count(m) > 1))}")
    env = gym.make(env_id, **env_kwargs)
    try:
        try:
            EvidenceReader.for_env(env, **(reader_kwargs or {}))
        except TypeError as exc:
            raise TypeError(f"bad reader kwargs {reader_kwargs}: {exc}; valid: follow_prob, stated_prob, seed") from None
        for method in methods:
            make_memory_for(env, method)
    finally:
        env.close()


def evaluate(env_id: str, methods: Sequence[str], seeds: Sequence[int], *,
             env_kwargs: dict[str, Any] | None = None, workers: int = 1,
             progress: Progress | None = None, reader_kwargs: dict[str, Any] | None = None) -> Evaluation:
    """Run every method on every seed of ``env_id``.

    ``reader_kwargs`` override the environment's ``reader_params`` for every
    method alike (e.g. ``{"follow_prob": 0.99}`` for a sensitivity analysis).
    """
    env_kwargs = dict(env_kwargs or {})
    reader_kwargs = dict(reader_kwargs or {})
    methods = list(methods)
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("need at least one seed")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive int, got {workers!r}")
    validate_methods(env_id, env_kwargs, methods, reader_kwargs)
    jobs = [(env_id, env_kwargs, m, s, reader_kwargs) for m in methods for s in seeds]
    started = time.perf_counter()
    outputs: list[Any] = []
    if workers == 1:
        for i, job in enumerate(jobs):
            outputs.append(_run_job(job))
            if progress:
                progress(i + 1, len(jobs))
    else:
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        with ProcessPoolExecutor(max_workers=workers) as pool:
            chunk = max(1, len(jobs) // (workers * 8))
            for i, out in enumerate(pool.map(_run_job, jobs, chunksize=chunk)):
                outputs.append(out)
                if progress:
                    progress(i + 1, len(jobs))
    runs: dict[str, MethodRuns] = {}
    phase = outputs[0][1]
    for m_index, method in enumerate(methods):
        block = outputs[m_index * len(seeds):(m_index + 1) * len(seeds)]
        runs[method] = MethodRuns(method, np.stack([b[0] for b in block]), [b[2] for b in block])
    return Evaluation(env_id, env_kwargs, reader_kwargs, seeds, phase, runs, time.perf_counter() - started)


def summarize(evaluation: Evaluation, *, baselines: Sequence[str] = ("append-only", "no-memory"),
              phase_names: Sequence[str] = PHASE_NAMES) -> dict[str, Any]:
    """Per-phase success with CIs, MPI, trial budgets and Holm-corrected paired comparisons.

    Comparisons are method minus baseline per seed; p-values are two-sided paired
    sign-flip permutation tests, Holm–Bonferroni corrected over the whole family.
    """
    phases: list[tuple[str, int | None]] = [
        (name, i) for i, name in enumerate(phase_names) if np.any(evaluation.phase == i)
    ] + [("overall", None)]
    summary: dict[str, dict[str, Any]] = {}
    for method in evaluation.methods:
        summary[method] = {}
        for name, index in phases:
            est = bootstrap_ci(evaluation.phase_success(method, index))
            summary[method][name] = {"mean": est.mean, "ci_low": est.ci_low, "ci_high": est.ci_high}
    if "no-memory" in evaluation.runs:
        for method in evaluation.methods:
            for name, _ in phases:
                summary[method][name]["mpi"] = memory_pollution_index(
                    summary["no-memory"][name]["mean"], summary[method][name]["mean"])
    comparisons = []
    for baseline in baselines:
        if baseline not in evaluation.runs:
            continue
        for method in evaluation.methods:
            if method == baseline:
                continue
            for name, index in phases:
                diff = evaluation.phase_success(method, index) - evaluation.phase_success(baseline, index)
                est = bootstrap_ci(diff)
                comparisons.append({
                    "method": method, "baseline": baseline, "phase": name, "diff": est.mean,
                    "ci_low": est.ci_low, "ci_high": est.ci_high,
                    "p_value": paired_permutation_test(diff, alternative="two-sided", n_perm=50000),
                })
    if comparisons:
        adjusted = holm_bonferroni([c["p_value"] for c in comparisons])
        for comparison, p_holm in zip(comparisons, adjusted):
            comparison["p_holm"] = float(p_holm)
            comparison["significant"] = bool(p_holm < 0.01)
    trials = {}
    for method, run in evaluation.runs.items():
        kinds = sorted({k for t in run.trials for k in t})
        trials[method] = {k: float(np.mean([t.get(k, 0) for t in run.trials])) for k in kinds}
        trials[method]["total"] = float(np.mean([sum(t.values()) for t in run.trials]))
    return {
        "env_id": evaluation.env_id,
        "env_kwargs": evaluation.env_kwargs,
        "reader_kwargs": evaluation.reader_kwargs,
        "seeds": evaluation.seeds,
        "methods": evaluation.methods,
        "phases": [name for name, _ in phases],
        "phase_of_task": evaluation.phase.tolist(),
        "summary": summary,
        "comparisons": comparisons,
        "trials_per_episode": trials,
        "per_task_success": {m: r.success.mean(axis=0).tolist() for m, r in evaluation.runs.items()},
        "elapsed_s": evaluation.elapsed_s,
    }
