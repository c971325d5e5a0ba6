"""The benchmark protocol behind every headline number.

* **Seeds and precision.** A setting runs on ``seeds`` seeds (default 1,000);
  when a method's 95 % CI half-width on any phase's success exceeds
  ``max_half_width`` (0.015), the setting is extended, for every method alike
  so comparisons stay paired, to the seed count that the observed spread says
  reaches it (rounded up to whole blocks, at most ``max_seeds``). Settings
  whose environment is too slow for that (real file I/O) use their own cap,
  reported beside their half-widths.
* **Blocks.** Each headline number is reported with the range of its means over
  disjoint blocks of ``block`` consecutive seeds, so nobody can pick a block.
* **Limits.** Beside every setting: the oracle-reset bound with the setting's
  reader and with a perfect reader (``follow_prob = 1``).
* **Robustness.** The methods' ranking on a setting's focus phase across a grid
  of reader settings, with Kendall's tau against the default reader's ranking.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from scipy import stats

from tepa_envs.agents.evaluation.analysis.evaluation import Evaluation, MethodRuns
from tepa_envs.agents.evaluation.analysis.statistics import bootstrap_ci
from tepa_envs.agents.evaluation.engine.evaluate import evaluate
from tepa_envs.agents.evaluation.engine.executor import ProgressHook
from tepa_envs.agents.readers.evidence_reader import EvidenceReader
from tepa_envs.core.checks import check_int, check_probability

Progress = ProgressHook


@dataclass(frozen=True)
class Protocol:
    """The protocol's parameters (see the module docstring)."""

    seeds: int = 1000
    max_half_width: float = 0.015
    max_seeds: int = 4000
    block: int = 50
    robustness_seeds: int = 200
    study_seeds: int = 500
    follow_probs: tuple[float, ...] = (0.8, 0.9, 0.95, 1.0)
    stated_probs: tuple[float, ...] = (0.0, 0.5, 1.0)
    seed_caps: dict[str, int] = field(default_factory=lambda: {"TEPA/FileOps-v0": 400})

    def __post_init__(self) -> None:
        check_int("seeds", self.seeds, low=1)
        check_int("block", self.block, low=1)
        check_int("max_seeds", self.max_seeds, low=self.seeds)
        check_int("robustness_seeds", self.robustness_seeds, low=1)
        check_int("study_seeds", self.study_seeds, low=1)
        check_probability("max_half_width", self.max_half_width)
        for p in (*self.follow_probs, *self.stated_probs):
            check_probability("reader grid value", p)

    def cap_for(self, env_id: str) -> int:
        return min(self.max_seeds, self.seed_caps.get(env_id, self.max_seeds))


FULL = Protocol()
"""The benchmark protocol behind the README's headline tables (``tepa-bench reproduce
--full``): 1,000+ seeds to a half-width of 0.015, 200 seeds per reader setting, 500
per side study."""

STANDARD = Protocol(seeds=300, max_half_width=0.03, max_seeds=300, block=50, robustness_seeds=40,
                    study_seeds=80, seed_caps={"TEPA/FileOps-v0": 100})
"""The default of ``tepa-bench reproduce``: the full protocol's studies at a size that
finishes ``controlled`` in about a minute on 2 cores (300 seeds, 40 per reader setting and
side study, 80 per ablation); the half-widths it reaches are stated in ``protocol.json``,
so its numbers are a first look, not the headline."""

QUICK = Protocol(seeds=20, max_seeds=40, block=10, robustness_seeds=10, study_seeds=10,
                 follow_probs=(0.9, 1.0), stated_probs=(0.5,), seed_caps={"TEPA/FileOps-v0": 20})
"""A protocol small enough for tests and smoke runs (its numbers are not headline numbers)."""

PROTOCOLS: dict[str, Protocol] = {"quick": QUICK, "standard": STANDARD, "full": FULL}
"""The named sizes of ``tepa-bench reproduce`` (``--quick``, the default, ``--full``)."""


def protocol_name(protocol: Protocol) -> str:
    """The name of ``protocol`` in :data:`PROTOCOLS`, or ``"custom"``."""
    return next((name for name, p in PROTOCOLS.items() if p == protocol), "custom")


def phase_indices(evaluation: Evaluation) -> list[int | None]:
    """Every phase present in the stream, then ``None`` for the whole stream."""
    return [int(p) for p in np.unique(evaluation.phase)] + [None]


def half_widths(evaluation: Evaluation) -> dict[str, float]:
    """Per method, the largest 95 % CI half-width (normal approximation) over the phases."""
    n = len(evaluation.seeds)
    out = {}
    for method in evaluation.methods:
        widths = [1.96 * float(np.std(evaluation.phase_success(method, p), ddof=1)) / math.sqrt(n) if n > 1
                  else float("inf") for p in phase_indices(evaluation)]
        out[method] = max(widths)
    return out


def seeds_needed(evaluation: Evaluation, target: float, block: int, cap: int) -> int:
    """Seeds at which the widest half-width would reach ``target`` (whole blocks, at most ``cap``)."""
    n = len(evaluation.seeds)
    widest = max(half_widths(evaluation).values())
    if widest <= target:
        return n
    needed = math.ceil(n * (widest / target) ** 2)
    return min(cap, block * math.ceil(needed / block))


def merge(first: Evaluation, second: Evaluation) -> Evaluation:
    """The two evaluations of the same methods on consecutive seed ranges, as one."""
    if first.methods != second.methods or not np.array_equal(first.phase, second.phase):
        raise ValueError("can only merge evaluations of the same methods on the same stream")
    runs = {m: MethodRuns(m, np.concatenate([first.runs[m].success, second.runs[m].success]),
                          first.runs[m].trials + second.runs[m].trials,
                          first.runs[m].metrics + second.runs[m].metrics) for m in first.methods}
    return Evaluation(first.env_id, first.env_kwargs, first.reader_kwargs, first.seeds + second.seeds,
                      first.phase, runs, first.elapsed_s + second.elapsed_s)


def evaluate_to_precision(env_id: str, methods: Sequence[Any], protocol: Protocol, *,
                          env_kwargs: dict[str, Any] | None = None, reader_kwargs: dict[str, Any] | None = None,
                          workers: int = 1, progress: Progress | None = None) -> Evaluation:
    """:func:`evaluate` on ``protocol.seeds`` seeds (at most the environment's cap),
    extended by the precision rule."""
    start = min(protocol.seeds, protocol.cap_for(env_id))
    first = evaluate(env_id, methods, range(start), env_kwargs=env_kwargs, reader_kwargs=reader_kwargs,
                     workers=workers, progress=progress)
    total = seeds_needed(first, protocol.max_half_width, protocol.block, protocol.cap_for(env_id))
    if total <= start:
        return first
    rest = evaluate(env_id, methods, range(start, total), env_kwargs=env_kwargs,
                    reader_kwargs=reader_kwargs, workers=workers, progress=progress)
    return merge(first, rest)


def block_spread(per_seed: np.ndarray, block: int) -> tuple[float, float] | None:
    """Smallest and largest mean over disjoint blocks of ``block`` consecutive seeds
    (``None`` when there are fewer than two blocks)."""
    n_blocks = per_seed.size // block
    if n_blocks < 2:
        return None
    means = per_seed[: n_blocks * block].reshape(n_blocks, block).mean(axis=1)
    return float(means.min()), float(means.max())


def precision_report(evaluation: Evaluation, protocol: Protocol, phase_names: Sequence[str]) -> dict[str, Any]:
    """Seeds, each method's half-width and block spread per phase, for protocol.json."""
    widths = half_widths(evaluation)
    report: dict[str, Any] = {"seeds": len(evaluation.seeds), "block": protocol.block,
                              "max_half_width": protocol.max_half_width,
                              "seed_cap": protocol.cap_for(evaluation.env_id), "methods": {}}
    for method in evaluation.methods:
        phases = {}
        for index in phase_indices(evaluation):
            name = "overall" if index is None else phase_names[index]
            per_seed = evaluation.phase_success(method, index)
            spread = block_spread(per_seed, protocol.block)
            phases[name] = {"mean": float(per_seed.mean()),
                            "block_min": None if spread is None else spread[0],
                            "block_max": None if spread is None else spread[1]}
        report["methods"][method] = {"max_half_width": widths[method], "phases": phases}
    return report


def limits(headline: Evaluation, protocol: Protocol, *, workers: int = 1,
           progress: Progress | None = None) -> dict[str, dict[str, float]]:
    """The oracle bounds per phase, each with the headline's reader (its row) and with a
    perfect reader (``follow_prob = 1``, on ``protocol.seeds`` seeds): ``oracle-reset``
    (told when each key's value changes) and, when the headline ran it, ``oracle-view``
    (shows the true value: the most any memory can give the reader)."""
    n = min(len(headline.seeds), protocol.seeds)
    oracles = [m for m in ("oracle-reset", "oracle-view") if m in headline.runs or m == "oracle-reset"]
    perfect = evaluate(headline.env_id, oracles, range(n), env_kwargs=headline.env_kwargs,
                       reader_kwargs={**headline.reader_kwargs, "follow_prob": 1.0}, workers=workers,
                       progress=progress)
    out: dict[str, dict[str, float]] = {}
    for oracle in oracles:
        label = oracle.replace("-", "_")
        for name, evaluation in ((label, headline), (f"{label}_perfect_reader", perfect)):
            if oracle in evaluation.runs:
                out[name] = {str(p): float(evaluation.phase_success(oracle, p).mean())
                             for p in phase_indices(evaluation)}
    return out


def ranking(evaluation: Evaluation, phase: int | None) -> list[str]:
    """Methods from best to worst on ``phase`` (ties keep the evaluation's order)."""
    means = {m: float(evaluation.phase_success(m, phase).mean()) for m in evaluation.methods}
    return sorted(evaluation.methods, key=lambda m: -means[m])


def robustness(env_id: str, methods: Sequence[str], protocol: Protocol, focus: int | None, *,
               env_kwargs: dict[str, Any] | None = None, vary_stated: bool, workers: int = 1,
               progress: Progress | None = None, reader_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """Rankings on the focus phase across the reader grid (each point over ``reader_kwargs``),
    with Kendall's tau of each setting's mean successes against those of the default reader."""
    grid = [{"follow_prob": f, "stated_prob": s} for f in protocol.follow_probs
            for s in (protocol.stated_probs if vary_stated else (None,))]
    base = dict(reader_kwargs or {})
    rows: list[dict[str, Any]] = []
    for point in grid:
        reader_kwargs = {**base, **{k: v for k, v in point.items() if v is not None}}
        evaluation = evaluate(env_id, methods, range(protocol.robustness_seeds), env_kwargs=env_kwargs,
                              reader_kwargs=reader_kwargs, workers=workers, progress=progress)
        means = [float(evaluation.phase_success(m, focus).mean()) for m in methods]
        rows.append({"reader": reader_kwargs, "means": dict(zip(methods, means)),
                     "ranking": ranking(evaluation, focus)})
    default = _default_row(rows)
    default_means = list(default["means"].values())
    for row in rows:
        tau = stats.kendalltau(default_means, list(row["means"].values())).statistic
        row["kendall_tau"] = None if np.isnan(tau) else float(tau)
    return {"env_id": env_id, "seeds": protocol.robustness_seeds, "focus_phase": focus,
            "default_reader": default["reader"], "rows": rows}


def _default_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The grid row closest to the reader's documented defaults."""
    reader = EvidenceReader()
    return min(rows, key=lambda r: (abs(r["reader"].get("follow_prob", reader.follow_prob) - reader.follow_prob)
                                    + abs(r["reader"].get("stated_prob", reader.stated_prob) - reader.stated_prob)))


def estimate_row(evaluation: Evaluation, method: str, phase: int | None) -> dict[str, float]:
    """Mean and bootstrap 95 % CI of ``method`` on ``phase``."""
    est = bootstrap_ci(evaluation.phase_success(method, phase))
    return {"mean": est.mean, "ci_low": est.ci_low, "ci_high": est.ci_high}
