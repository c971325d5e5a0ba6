"""The job runner: one :class:`~tepa_envs.agents.evaluation.engine.jobs.Job` as one episode.

Every job runs the one episode loop,
:func:`~tepa_envs.agents.readers.agent.run_episode`, with the agent its job
describes (:func:`make_agent`; the settings were resolved when the job was built).
An episode's numbers depend on its job only, never on the process that runs it.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

import tepa_envs  # noqa: F401  (registers the environments)
from tepa_envs.agents.evaluation.analysis.drift_metrics import episode_metrics, metrics_apply
from tepa_envs.agents.evaluation.engine.jobs import Job
from tepa_envs.agents.evaluation.engine.tracing import trace_episode
from tepa_envs.agents.memories.registry import make_memory
from tepa_envs.agents.readers.agent import EpisodeResult, MemoryAgent, run_episode
from tepa_envs.agents.readers.factory import make_reader

JobOutput = tuple[np.ndarray, np.ndarray, dict[str, int]]
"""An episode's per-task success, per-task phase and trials spent per kind."""
MetricsOutput = tuple[np.ndarray, np.ndarray, dict[str, int], "dict[str, Any] | None"]
"""A :data:`JobOutput` and the episode's drift metrics (``None`` where they do not apply)."""


def make_agent(job: Job) -> MemoryAgent:
    """The agent of ``job``: its reader (the run's reader kwargs over the settings'
    defaults, the same for every method), its memory and its reading strategy."""
    reader = make_reader(job.reader_kwargs, job.reader_defaults)  # "reader": simulated (default), local-lm, openai
    return MemoryAgent(make_memory(job.memory, **job.memory_kwargs), reader, reading=job.reading)


def outputs_of(result: EpisodeResult) -> JobOutput:
    """What a job returns of an episode's result."""
    return result.success, result.phase, result.trials


def run_job(job: Job) -> JobOutput:
    """One (method, seed) episode: per-task success, phases and trials spent."""
    env = gym.make(job.env_id, **job.env_kwargs)
    try:
        result = run_episode(env, make_agent(job), job.seed, decide_phases=job.decide_phases)
    finally:
        env.close()
    return outputs_of(result)


def run_job_with_metrics(job: Job) -> MetricsOutput:
    """:func:`run_job` with the episode's drift metrics as a fourth element: the episode
    runs with a :class:`~tepa_envs.agents.evaluation.engine.tracing.DriftTracer`
    watching, which never changes a decision (success, phases and trials are
    :func:`run_job`'s), and the metrics are
    :func:`~tepa_envs.agents.evaluation.analysis.drift_metrics.episode_metrics` of its
    trace. They are ``None`` where they do not apply
    (:func:`~tepa_envs.agents.evaluation.analysis.drift_metrics.metrics_apply`: unkeyed
    tasks, no oracle correct value, e.g. ``TEPA/FactConsolidation-v0``)."""
    env = gym.make(job.env_id, **job.env_kwargs)
    try:
        result, trace = trace_episode(env, make_agent(job), job.seed, decide_phases=job.decide_phases)
    finally:
        env.close()
    return (*outputs_of(result), episode_metrics(trace) if metrics_apply(trace) else None)


def run_traced_job(job: Job) -> tuple[np.ndarray, np.ndarray, dict[str, int], dict[str, Any]]:
    """:func:`run_job_with_metrics` for the suite, where every episode must have its
    metrics: ``TypeError`` when they do not apply."""
    success, phase, trials, metrics = run_job_with_metrics(job)
    if metrics is None:
        raise TypeError(f"no drift metrics for {job.label} on {job.env_id}: its tasks carry no key and "
                        "correct value")
    return success, phase, trials, metrics


def describe_job(job: Job) -> str:
    """``method M, seed S``: the job, as an error names it."""
    return job.describe()


__all__ = ["JobOutput", "MetricsOutput", "describe_job", "make_agent", "outputs_of", "run_job",
           "run_job_with_metrics", "run_traced_job"]
