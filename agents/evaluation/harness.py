"""Methods × seeds evaluation with paired statistics per phase.

``JobError`` and ``run_jobs`` come from :mod:`~tepa_envs.agents.evaluation.pool`.

Each (method, seed) episode is an independent job, so the numbers do not depend
on how many worker processes run them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import gymnasium as gym
import numpy as np

import tepa_envs  # noqa: F401  (registers the environments)

from tepa_envs.agents.readers.agent import MemoryAgent, run_episode
from tepa_envs.agents.readers.factory import make_reader
from tepa_envs.agents.readers.task_access import task_access
from tepa_envs.agents.evaluation.drift_metrics import EpisodeTrace, episode_metrics, pool_metrics, trace_episode
from tepa_envs.agents.evaluation.results import Comparison, MethodSummary, PhaseEstimate, Summary
from tepa_envs.agents.evaluation.settings import settings_for
from tepa_envs.agents.memories.protocol import Memory
from tepa_envs.agents.memories.registry import make_memory
from tepa_envs.agents.evaluation.statistics import (
    DEFAULT_N_PERM, bootstrap_cis, holm_bonferroni, memory_pollution_index, paired_permutation_tests,
)

from tepa_envs.agents.evaluation.pool import JobError, Progress, run_jobs


@dataclass
class MethodRuns:
    """Per-seed, per-task success of one method, with its per-seed trials and drift metrics."""

    name: str
    success: np.ndarray  # (n_seeds, n_tasks) bool
    trials: list[dict[str, int]] = field(default_factory=list)
    metrics: list[dict[str, Any] | None] = field(default_factory=list)
    """Per seed (the rows of ``success``), the episode's drift metrics
    (:func:`~tepa_envs.agents.evaluation.drift_metrics.episode_metrics`), ``None`` for an
    episode without them (an environment they do not apply to, see :func:`run_job_with_metrics`,
    or a store row written before they were recorded); empty when none were recorded."""

    def pooled_metrics(self) -> dict[str, Any] | None:
        """:func:`~tepa_envs.agents.evaluation.drift_metrics.pool_metrics` over the seeds,
        ``None`` unless every seed's episode has its metrics."""
        if not self.metrics or len(self.metrics) != len(self.success) or any(m is None for m in self.metrics):
            return None
        return pool_metrics(self.metrics)  # type: ignore[arg-type]


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


@dataclass(frozen=True)
class MethodSpec:
    """A method run under its own label with extra constructor arguments, e.g. an
    ablation: ``MethodSpec("tepa failed=count", "tepa", {"failed_candidate": "count"})``."""

    label: str
    spec: str
    kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.label, str) or not self.label:
            raise TypeError(f"label must be a non-empty str, got {self.label!r}")
        if not isinstance(self.spec, str):
            raise TypeError(f"spec must be a method name or import path (str), got {type(self.spec).__name__}")
        if not isinstance(self.kwargs, dict):
            raise TypeError(f"kwargs must be a dict, got {type(self.kwargs).__name__}")


def method_label(method: str | MethodSpec) -> str:
    """The name a method's results are reported under."""
    return method.label if isinstance(method, MethodSpec) else method


def make_agent(env_id: str, method: str | MethodSpec | Memory,
               reader_kwargs: dict[str, Any] | None = None) -> MemoryAgent:
    """The agent the harness runs for ``method`` on ``env_id``: the settings
    table's reader (with ``reader_kwargs`` applied, the same for every method),
    method arguments and reading strategy."""
    settings = settings_for(env_id)
    reader = make_reader(reader_kwargs, settings.reader_kwargs)  # "reader": simulated (default), local-lm, openai
    if isinstance(method, MethodSpec):
        memory = make_memory(method.spec, **{**settings.kwargs_for(method.spec), **method.kwargs})
    else:
        memory = make_memory(method, **settings.kwargs_for(method))
    return MemoryAgent(memory, reader, reading=settings.reading)


def run_job(job: tuple[str, dict[str, Any], str | MethodSpec, int, dict[str, Any]]
            ) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """One (method, seed) episode: per-task success, phases and trials spent."""
    env_id, env_kwargs, method, seed, reader_kwargs = job
    env = gym.make(env_id, **env_kwargs)
    try:
        agent = make_agent(env_id, method, reader_kwargs)
        result = run_episode(env, agent, seed, decide_phases=settings_for(env_id).decide_phases)
    finally:
        env.close()
    return result.success, result.phase, result.trials


def metrics_apply(trace: EpisodeTrace) -> bool:
    """Whether the drift metrics describe an episode: every scored task presents a key
    (``info["key"]``) and the environment tells its correct value (``info["oracle"]["correct"]``).
    Not so for ``TEPA/FactConsolidation-v0``, whose questions are unkeyed (``key == ""``)."""
    return bool(trace.keys) and all(trace.keys) and all(trace.correct)


def _retrievals_recordable(memory: Any) -> bool:
    """Whether :func:`~tepa_envs.agents.evaluation.drift_metrics.trace_episode` can record
    ``memory``'s retrievals (it sets ``retrieve`` as an instance attribute for the episode)."""
    try:
        memory.retrieve = memory.retrieve
    except Exception:  # __slots__, a frozen dataclass, a refusing __setattr__
        return False
    try:
        del memory.retrieve
    except Exception:
        pass
    return True


def run_job_with_metrics(job: tuple[str, dict[str, Any], str | MethodSpec, int, dict[str, Any]]
                         ) -> tuple[np.ndarray, np.ndarray, dict[str, int], dict[str, Any] | None]:
    """:func:`run_job` with the episode's drift metrics as a fourth element: the episode
    runs under :func:`~tepa_envs.agents.evaluation.drift_metrics.trace_episode`, which
    never changes a decision (success, phases and trials are :func:`run_job`'s), and the
    metrics are :func:`~tepa_envs.agents.evaluation.drift_metrics.episode_metrics` of its
    trace (what :func:`~tepa_envs.agents.evaluation.drift_metrics.run_traced_job` returns).
    They are ``None`` where they do not apply (:func:`metrics_apply`: unkeyed tasks, no
    oracle correct value, e.g. ``TEPA/FactConsolidation-v0``) or cannot be recorded (a
    memory that takes no instance attributes); the episode is run all the same."""
    env_id, env_kwargs, method, seed, reader_kwargs = job
    env = gym.make(env_id, **env_kwargs)
    try:
        agent = make_agent(env_id, method, reader_kwargs)
        decide_phases = settings_for(env_id).decide_phases
        if not _retrievals_recordable(agent.memory):
            return (*run_job_result(run_episode(env, agent, seed, decide_phases=decide_phases)), None)
        result, trace = trace_episode(env, agent, seed, decide_phases=decide_phases)
    finally:
        env.close()
    return (*run_job_result(result), episode_metrics(trace) if metrics_apply(trace) else None)


def run_job_result(result: Any) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """What :func:`run_job` returns of an episode's result."""
    return result.success, result.phase, result.trials


def check_method(method: object) -> None:
    """``TypeError`` unless ``method`` is a name, an import path or a :class:`MethodSpec`."""
    if isinstance(method, (str, MethodSpec)):
        return
    if isinstance(method, type):
        raise TypeError(f"methods must be names, import paths or MethodSpec; got the class {method.__qualname__} "
                        f"— pass '{method.__module__}:{method.__qualname__}'")
    raise TypeError(f"methods must be names, import paths or MethodSpec; got {type(method).__name__} {method!r:.60}")


def validate_methods(env_id: str, env_kwargs: dict[str, Any], methods: Sequence[str | MethodSpec],
                     reader_kwargs: dict[str, Any] | None = None) -> None:
    """Fail fast, before any process starts, on an unknown method, bad kwargs, or an
    environment without the task contract (:class:`~tepa_envs.core.contracts.TaskEnv`)."""
    check_env_id(env_id)
    if isinstance(methods, (str, MethodSpec)):
        raise TypeError(f"methods must be a list of names, import paths or MethodSpec, got {methods!r}")
    if not methods:
        raise ValueError("no methods given")
    for method in methods:
        check_method(method)
    labels = [method_label(m) for m in methods]
    if len(set(labels)) != len(labels):
        raise ValueError(f"methods listed twice: {', '.join(sorted(m for m in labels if labels.count(m) > 1))}")
    env = gym.make(env_id, **env_kwargs)
    try:
        task_access(env)
    except TypeError as exc:
        raise TypeError(f"{env_id} cannot be evaluated: {exc}") from None
    finally:
        env.close()
    for method in methods:
        make_agent(env_id, method, reader_kwargs)


# ----------------------------------------------------------------- errors raised by jobs
def describe_job(job: tuple[str, dict[str, Any], str | MethodSpec, int, dict[str, Any]]) -> str:
    """``method M, seed S`` for a :func:`run_job` job."""
    return f"method {method_label(job[2])}, seed {job[3]}"


def evaluate(env_id: str, methods: Sequence[str | MethodSpec], seeds: Sequence[int], *,
             env_kwargs: dict[str, Any] | None = None, workers: int = 1,
             progress: Progress | None = None, reader_kwargs: dict[str, Any] | None = None,
             metrics: bool = True) -> Evaluation:
    """Run every method on every seed of ``env_id``, each episode with its drift metrics
    (:func:`run_job_with_metrics`; ``metrics=False``: :func:`run_job`, the same success
    without them and without their cost, about 10-15 % of an episode's time).

    ``reader_kwargs`` override the reader of the environment's settings for every
    method alike (e.g. ``{"follow_prob": 0.99}`` for a sensitivity analysis).
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
    jobs = [(env_id, env_kwargs, m, s, reader_kwargs) for m in methods for s in seeds]
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


__all__ = ["Evaluation", "JobError", "MethodRuns", "MethodSpec", "check_env_id", "drift_metrics_of", "evaluate",
           "make_agent", "method_label", "metrics_apply", "run_job", "run_job_with_metrics", "run_jobs", "summarize",
           "validate_methods"]
