"""``tepa-bench suite``: every registered memory method on every drift scenario, and a leaderboard.

The scenarios (:data:`SUITE_SCENARIOS`) are ``TEPA/RegimeDrift-v0`` (the paper's
protocol), the registered drift scenarios (``tepa_envs.SCENARIOS``: noisy,
recurring, gradual, async, Poisson, many keys, Zipf, noisy many keys) and
``TEPA/PreferenceStream-v0`` (the paper's four phases on a simulated user who
states the current preference in most sessions' text, so the memory competes with
what the reader is told, with one-off wrong feedback). The methods are every name in
the registry (``METHOD_NAMES``, so a method registered there joins the suite) plus
any ``package.module:Class`` given with ``--methods``.

Every (scenario, method, seed) episode is one job of the engine's executor
(:func:`~tepa_envs.agents.evaluation.engine.runner.run_traced_job`: the one episode loop
with the drift metrics recorded alongside, decisions unchanged), all scenarios in one run,
so results do not depend on ``--workers``. The statistics are computed by
:func:`~tepa_envs.agents.evaluation.analysis.leaderboard.analyse`, the files written by
:func:`~tepa_envs.agents.evaluation.outputs.leaderboard.write_suite`. Statistics, all paired by seed (two
methods on one seed see the same task stream, and on noisy scenarios the same
outcome draws):

* **Success** per scenario, method and phase (and ``overall``): mean over seeds
  with a 95 % percentile-bootstrap CI (:func:`~tepa_envs.agents.evaluation.analysis.statistics.bootstrap_cis`).
* **Comparisons**, one family, Holm–Bonferroni corrected over all of it
  (significant when the corrected p is below ``alpha``, default 0.05), each a
  two-sided paired sign-flip test with :data:`SUITE_N_PERM` Monte Carlo sign
  patterns and the paired difference with its bootstrap CI:
  every pair of non-oracle methods on each scenario's overall success, and each
  non-oracle method against ``no-memory`` on each *reversal phase* (a phase whose
  change applies to every key, :meth:`~tepa_envs.core.drift.DriftSchedule.reversal_phases`).
* **Best non-oracle** per scenario: the highest overall mean among the methods
  that are not told the true phase boundaries (``oracle-reset`` is). A method is
  **within the CI of the best** when the 95 % CI of its paired difference to the
  best (method − best, overall) reaches 0.
* **Mean rank** over scenarios (rank 1 = best overall success among non-oracle
  methods, ties averaged), with a 95 % bootstrap CI: seeds are resampled
  (:data:`RANK_BOOTSTRAP` resamples from ``numpy.random.default_rng(0)``), the
  same resample for every scenario, and the ranks recomputed.
* **Pairs not significantly different anywhere**: non-oracle pairs with no
  significant comparison on any scenario.
* **Drift metrics** per scenario and method (every method, oracles included):
  detection delay, false revocations per 1,000 tasks, stale retrievals, cumulative
  regret against the oracle that knows the correct value, and recovery time, as
  defined in :mod:`~tepa_envs.agents.evaluation.analysis.drift_metrics` and pooled over seeds
  by :func:`~tepa_envs.agents.evaluation.analysis.drift_metrics.pool_metrics`.

Written to ``--out`` (default ``results/suite``), each file atomically:
``suite.json`` (everything above; no timings, so it is byte-identical for any
``--workers``), ``leaderboard.md`` (:func:`~tepa_envs.agents.evaluation.outputs.leaderboard.leaderboard_markdown`, also the
README's ``suite-leaderboard`` block), ``metrics.md`` (the drift metrics, also the
README's ``suite-metrics`` block), ``heatmap.png`` (overall success, methods
× scenarios) and ``manifest.json`` last.

``suite.json`` layout (``suite_version`` 1): ``methods``, ``oracles``, ``seeds``,
``alpha``, ``n_perm``, ``n_comparisons``; ``scenarios``, one object each with
``env_id``, ``short``, ``kwargs`` (the registered ones), ``phases`` (in order, then
``overall``), ``reversal_phases``, ``success`` (method -> phase -> ``mean``,
``ci_low``, ``ci_high``), ``best``, ``within_ci_of_best``,
``not_significantly_below_best`` (Holm), ``below_no_memory_in_reversal`` (method ->
the reversal phases where it is significantly below ``no-memory``), ``metrics`` (method ->
:func:`~tepa_envs.agents.evaluation.analysis.drift_metrics.pool_metrics`);
``notify``, the change-notification level everything above was run at (``"none"`` unless
``--notify`` starts with another); with more than one level, ``notify_levels``: every method
and the :data:`NOTIFY_VARIANTS` of the methods run at each level, the same seeds
(:func:`~tepa_envs.agents.evaluation.analysis.notify_levels.notify_table`: ``levels``,
``methods``, ``success`` level -> method -> mean and CI over scenarios, ``best`` per level,
``to_best_known`` level -> method -> the paired difference to the best non-oracle method at
``known``, ``per_scenario`` env_id -> level -> method -> mean);
``comparisons``, each with ``kind`` (``"pair"`` or ``"reversal"``), ``env_id``,
``phase``, ``method``, ``other``, ``diff`` (method − other) with ``ci_low``/``ci_high``,
``p_value``, ``p_at_floor``, ``p_holm``, ``significant``; ``ranks`` (method ->
``mean_rank``, ``ci_low``, ``ci_high``); ``pairs_never_significant``.
"""

from __future__ import annotations

from typing import Any, Sequence

import gymnasium as gym
import numpy as np

import tepa_envs
from tepa_envs.agents.evaluation.analysis.drift_metrics import pool_metrics
from tepa_envs.agents.evaluation.analysis.leaderboard import ORACLES, OVERALL, SUITE_N_PERM, Scenario, analyse
from tepa_envs.agents.evaluation.analysis.notify_levels import notify_table
from tepa_envs.agents.evaluation.engine.executor import ProgressHook, run_jobs
from tepa_envs.agents.evaluation.engine.jobs import Job, Method, MethodSpec, build_jobs, method_label
from tepa_envs.agents.evaluation.engine.runner import describe_job, run_traced_job
from tepa_envs.agents.evaluation.engine.validate import validate_methods
from tepa_envs.core.contracts import TaskEnv
from tepa_envs.core.notify import NOTIFY_LEVELS

SUITE_SCENARIOS: tuple[str, ...] = ("TEPA/RegimeDrift-v0", *tepa_envs.SCENARIOS, "TEPA/PreferenceStream-v0")
"""The suite's scenarios, in the leaderboard's order."""
SHORT_NAMES: dict[str, str] = {env_id: env_id.removeprefix("TEPA/RegimeDrift-").removesuffix("-v0").lower()
                               for env_id in SUITE_SCENARIOS}
SHORT_NAMES["TEPA/RegimeDrift-v0"] = "paper"
SHORT_NAMES["TEPA/PreferenceStream-v0"] = "preference"
NOTIFY_VARIANTS: tuple[MethodSpec, ...] = (
    *(MethodSpec(f"{name} on_notify=clear", name, {"on_notify": "clear"})
      for name in ("append-only", "lww", "temporal-recency", "conflict-aware-recency")),
    MethodSpec("tepa on_notify=demote", "tepa", {"on_notify": "demote"}),
    MethodSpec("tepa on_notify=revoke", "tepa", {"on_notify": "revoke"}),
)
"""The registered methods' named options that act on a change notification, added to the
notification-level table (not to the leaderboard) when ``notify`` names more than one level;
a variant joins when its method is in the run."""
DEFAULT_SEEDS = 300
"""Seeds per scenario by default: the whole suite (every registered method, ten scenarios)
runs within 10 minutes on 2 cores, and a phase's 95 % CI half-width is about 0.01–0.03."""


def scenario(env_id: str) -> Scenario:
    """The phases of ``env_id`` (its schedule's segment names) and its reversal phases."""
    env = gym.make(env_id)
    try:
        unwrapped = env.unwrapped
        if not isinstance(unwrapped, TaskEnv):
            raise TypeError(f"{env_id} is not a task environment (tepa_envs.core.contracts.TaskEnv)")
        phases, reversal = unwrapped.phase_names(), unwrapped.reversal_phases()
    finally:
        env.close()
    return Scenario(env_id, SHORT_NAMES.get(env_id, env_id), phases, reversal, dict(gym.spec(env_id).kwargs))


# ------------------------------------------------------------------------------ running
def check_notify_levels(notify: Sequence[str]) -> tuple[str, ...]:
    """``notify`` as a tuple: ``TypeError`` unless a sequence of str, ``ValueError`` unless
    non-empty, without repeats, each one of :data:`~tepa_envs.core.notify.NOTIFY_LEVELS`."""
    if isinstance(notify, str) or not isinstance(notify, Sequence) or not all(isinstance(v, str) for v in notify):
        raise TypeError(f"notify must be a sequence of level names (str), got {notify!r}")
    levels = tuple(notify)
    unknown = [v for v in levels if v not in NOTIFY_LEVELS]
    if unknown or not levels or len(set(levels)) != len(levels):
        raise ValueError(f"notify must name each of {', '.join(NOTIFY_LEVELS)} at most once, at least one; "
                         f"got {', '.join(levels) or 'none'}")
    return levels


def _level_jobs(env_id: str, methods: Sequence[Method], seeds: Sequence[int], level: str,
                reader_kwargs: dict[str, Any] | None) -> list[Job]:
    env_kwargs = None if level == "none" else {"notify": level}  # "none" is the registered default: same jobs
    return build_jobs(env_id, methods, seeds, env_kwargs=env_kwargs, reader_kwargs=reader_kwargs)


def run_suite(methods: Sequence[str], seeds: Sequence[int], *, scenarios: Sequence[str] = SUITE_SCENARIOS,
              workers: int = 1, alpha: float = 0.05, n_perm: int = SUITE_N_PERM,
              progress: ProgressHook | None = None, reader_kwargs: dict[str, Any] | None = None,
              notify: Sequence[str] = ("none",)) -> dict[str, Any]:
    """Run every method on every seed of every scenario and return the ``suite.json`` dict
    (``reader_kwargs``, e.g. a reader profile's, for every episode; recorded when given).

    The leaderboard is computed at ``notify[0]``; with more than one level, every method and
    the :data:`NOTIFY_VARIANTS` of the methods given also run at every level (the same seeds:
    a seed's world does not depend on the level) for the ``notify`` section."""
    methods = list(methods)
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("no seeds given")
    levels = check_notify_levels(notify)
    infos = [scenario(env_id) for env_id in scenarios]
    for info in infos:
        validate_methods(info.env_id, {}, methods)
    variants = [v for v in NOTIFY_VARIANTS if v.spec in methods] if len(levels) > 1 else []
    jobs = [job for info in infos for job in _level_jobs(info.env_id, methods, seeds, levels[0], reader_kwargs)]
    extra = [job for level in levels for info in infos
             for job in _level_jobs(info.env_id, methods[:0] if level == levels[0] else methods, seeds, level,
                                    reader_kwargs) + _level_jobs(info.env_id, variants, seeds, level, reader_kwargs)]
    outputs = run_jobs(jobs + extra, run_traced_job, workers, progress, describe=describe_job)
    per_seed: dict[tuple[str, str, str], np.ndarray] = {}
    metrics: dict[str, dict[str, Any]] = {}
    block = len(methods) * len(seeds)
    for s_index, info in enumerate(infos):
        phase = outputs[s_index * block][1]
        masks = {name: phase == i for i, name in enumerate(info.phases) if np.any(phase == i)}
        for m_index, method in enumerate(methods):
            start = s_index * block + m_index * len(seeds)
            success = np.stack([out[0] for out in outputs[start:start + len(seeds)]]).astype(np.float64)
            label = method_label(method)
            for name, mask in masks.items():
                per_seed[info.env_id, label, name] = success[:, mask].mean(axis=1)
            per_seed[info.env_id, label, OVERALL] = success.mean(axis=1)
            episodes = [out[3] for out in outputs[start:start + len(seeds)]]
            metrics.setdefault(info.env_id, {})[label] = pool_metrics(episodes)
    labels = [method_label(m) for m in methods]
    data = analyse(per_seed, infos, labels, seeds, alpha=alpha, n_perm=n_perm)
    for entry in data["scenarios"]:
        entry["metrics"] = metrics[entry["env_id"]]
    if reader_kwargs:
        data["reader_kwargs"] = dict(reader_kwargs)
    data["notify"] = levels[0]
    if len(levels) > 1:
        overall: dict[tuple[str, str, str], np.ndarray] = {
            (levels[0], e, m): per_seed[e, m, OVERALL] for e in scenarios for m in labels}
        for job, out in zip(extra, outputs[len(jobs):]):
            level = job.env_kwargs.get("notify", "none")
            overall.setdefault((level, job.env_id, job.label), np.empty(len(seeds)))[seeds.index(job.seed)] = \
                float(np.mean(out[0]))
        rows = labels + [v.label for v in variants]
        data["notify_levels"] = notify_table(overall, levels, list(scenarios), rows, ORACLES)
    return data


__all__ = ["DEFAULT_SEEDS", "NOTIFY_VARIANTS", "SHORT_NAMES", "SUITE_SCENARIOS", "check_notify_levels",
           "run_suite", "scenario"]
