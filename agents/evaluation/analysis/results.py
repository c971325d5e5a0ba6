"""Typed results of an evaluation, and their ``results.json`` form.

``summarize()`` returns a :class:`Summary`; ``Summary.to_json()`` gives the
plain dict written to ``results.json`` and ``Summary.from_json()`` reads one
back. The layout of that file is documented field by field in
``docs/results_schema.md``; :data:`SCHEMA_VERSION` is written into it as
``"schema_version"`` and is bumped whenever a field is removed, renamed or
changes meaning (adding a field does not bump it).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from tepa_envs.agents.evaluation.analysis.paper import Setting
from tepa_envs.agents.evaluation.analysis.statistics import EXACT_MAX_SEEDS

SCHEMA_VERSION = 1
"""Version of the ``results.json`` layout written by :meth:`Summary.to_json`."""

LEGACY_ALPHA = 0.01
"""The significance threshold of files written before ``alpha`` was recorded (``significant`` was ``p_holm < 0.01``)."""

LEGACY_N_PERM = 50_000
"""The Monte Carlo permutation count of files written before ``n_perm`` was recorded."""


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)


@dataclass(frozen=True, slots=True)
class PhaseEstimate:
    """Success of one method over the tasks of one phase: mean over seeds with a bootstrap 95% CI.

    ``mpi`` is the memory pollution index against ``no-memory`` (NaN when
    ``no-memory`` never succeeds in the phase, ``None`` when ``no-memory`` was
    not evaluated; then the key is absent from the JSON).
    """

    mean: float
    ci_low: float
    ci_high: float
    mpi: float | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mean": self.mean, "ci_low": self.ci_low, "ci_high": self.ci_high}
        if self.mpi is not None:
            out["mpi"] = self.mpi
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> PhaseEstimate:
        return cls(float(d["mean"]), float(d["ci_low"]), float(d["ci_high"]), _float_or_none(d.get("mpi")))


@dataclass(frozen=True, slots=True)
class Comparison:
    """``method`` minus ``baseline`` in one phase, paired by seed.

    ``diff`` with its 95% bootstrap CI is the effect size. ``p_value`` is a
    two-sided paired sign-flip test (exact up to 16 seeds, else Monte Carlo
    with ``Summary.n_perm`` patterns); ``p_at_floor`` says no Monte Carlo
    pattern was as extreme, so ``p_value`` is the floor ``1 / (n_perm + 1)``,
    a bound rather than an estimate (and ``p_holm`` is ``m / (n_perm + 1)``,
    ``m`` the number of comparisons). ``p_holm`` is Holm–Bonferroni corrected
    over every comparison of the summary, and ``significant`` is
    ``p_holm < Summary.alpha``. See ``statistics.py`` for the definitions.
    """

    method: str
    baseline: str
    phase: str
    diff: float
    ci_low: float
    ci_high: float
    p_value: float
    p_holm: float
    significant: bool
    p_at_floor: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "baseline": self.baseline, "phase": self.phase, "diff": self.diff,
                "ci_low": self.ci_low, "ci_high": self.ci_high, "p_value": self.p_value,
                "p_at_floor": self.p_at_floor, "p_holm": self.p_holm, "significant": self.significant}

    @classmethod
    def from_json(cls, d: Mapping[str, Any], *, p_floor: float | None = None) -> Comparison:
        """``p_floor``: the Monte Carlo floor ``1 / (n_perm + 1)``, to infer ``p_at_floor``
        for files written before it was recorded (``None``: exact tests, never at the floor)."""
        p_value = float(d["p_value"])
        if "p_at_floor" in d:
            at_floor = bool(d["p_at_floor"])
        else:
            at_floor = p_floor is not None and p_value <= p_floor * (1 + 1e-9)
        return cls(str(d["method"]), str(d["baseline"]), str(d["phase"]), float(d["diff"]),
                   float(d["ci_low"]), float(d["ci_high"]), p_value, float(d["p_holm"]),
                   bool(d["significant"]), at_floor)


@dataclass(frozen=True, slots=True)
class MethodSummary:
    """Per-phase estimates of one method, in phase order (``results.json``: ``summary[method]``)."""

    method: str
    phases: dict[str, PhaseEstimate]

    def __getitem__(self, phase: str) -> PhaseEstimate:
        return self.phases[phase]

    def to_json(self) -> dict[str, Any]:
        return {phase: estimate.to_json() for phase, estimate in self.phases.items()}

    @classmethod
    def from_json(cls, method: str, d: Mapping[str, Any]) -> MethodSummary:
        return cls(method, {str(phase): PhaseEstimate.from_json(cell) for phase, cell in d.items()})


@dataclass(frozen=True, slots=True)
class Summary:
    """Everything ``summarize()`` reports about one evaluation.

    ``estimates`` is written as ``"summary"`` in ``results.json``; every other
    attribute keeps its JSON key. ``setting`` and ``paper`` are set (by
    :meth:`with_setting`) only for ``tepa-bench reproduce``. ``alpha`` is the
    significance threshold of ``Comparison.significant`` and ``n_perm`` the
    number of Monte Carlo sign patterns of the tests (unused with up to 16 seeds,
    where the tests are exact). ``drift_metrics`` maps a method to its drift metrics
    pooled over the seeds (:func:`~tepa_envs.agents.evaluation.drift_metrics.pool_metrics`;
    only methods whose every episode recorded them, so empty for an environment they do
    not apply to or a store written before they were recorded).
    """

    env_id: str
    env_kwargs: dict[str, Any]
    reader_kwargs: dict[str, Any]
    seeds: tuple[int, ...]
    methods: tuple[str, ...]
    phases: tuple[str, ...]
    phase_of_task: tuple[int, ...]
    estimates: dict[str, MethodSummary]
    comparisons: tuple[Comparison, ...]
    trials_per_episode: dict[str, dict[str, float]]
    per_task_success: dict[str, tuple[float, ...]]
    elapsed_s: float
    setting: str | None = None
    paper: dict[str, dict[str, float]] | None = None
    alpha: float = 0.05
    n_perm: int = 50_000
    drift_metrics: dict[str, dict[str, Any]] = field(default_factory=dict)

    def estimate(self, method: str, phase: str) -> PhaseEstimate:
        """The estimate of ``method`` in ``phase`` (``"overall"`` for all tasks)."""
        return self.estimates[method].phases[phase]

    def with_setting(self, setting: Setting) -> Summary:
        """A copy recording the reproduced setting's name and the paper's numbers."""
        return replace(self, setting=setting.name, paper=copy.deepcopy(dict(setting.paper)))

    def to_json(self) -> dict[str, Any]:
        """The ``results.json`` dict: plain JSON types, ``schema_version`` first."""
        out: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "env_id": self.env_id,
            "env_kwargs": copy.deepcopy(self.env_kwargs),
            "reader_kwargs": copy.deepcopy(self.reader_kwargs),
            "seeds": list(self.seeds),
            "methods": list(self.methods),
            "phases": list(self.phases),
            "phase_of_task": list(self.phase_of_task),
            "summary": {method: summary.to_json() for method, summary in self.estimates.items()},
            "comparisons": [comparison.to_json() for comparison in self.comparisons],
            "alpha": self.alpha,
            "n_perm": self.n_perm,
            "trials_per_episode": {method: dict(kinds) for method, kinds in self.trials_per_episode.items()},
            "per_task_success": {method: list(values) for method, values in self.per_task_success.items()},
            "drift_metrics": copy.deepcopy(self.drift_metrics),
            "elapsed_s": self.elapsed_s,
        }
        if self.setting is not None:
            out["setting"] = self.setting
        if self.paper is not None:
            out["paper"] = copy.deepcopy(self.paper)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Summary:
        """Read a ``results.json`` dict back (files written before schema versions, i.e. version 0, too)."""
        version = d.get("schema_version", 0)
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise ValueError(f"results.json: schema_version must be a non-negative int, got {version!r}")
        if version > SCHEMA_VERSION:
            raise ValueError(f"results.json has schema_version {version}, newer than {SCHEMA_VERSION} "
                             "which this version of tepa-envs reads; upgrade tepa-envs")
        try:
            paper = d.get("paper")
            n_perm = int(d.get("n_perm", LEGACY_N_PERM))
            p_floor = 1.0 / (n_perm + 1) if len(d["seeds"]) > EXACT_MAX_SEEDS else None
            return cls(
                env_id=str(d["env_id"]),
                env_kwargs=copy.deepcopy(dict(d["env_kwargs"])),
                reader_kwargs=copy.deepcopy(dict(d.get("reader_kwargs", {}))),
                seeds=tuple(int(s) for s in d["seeds"]),
                methods=tuple(str(m) for m in d["methods"]),
                phases=tuple(str(p) for p in d["phases"]),
                phase_of_task=tuple(int(p) for p in d["phase_of_task"]),
                estimates={str(m): MethodSummary.from_json(str(m), cells) for m, cells in d["summary"].items()},
                comparisons=tuple(Comparison.from_json(c, p_floor=p_floor) for c in d["comparisons"]),
                trials_per_episode={str(m): {str(k): float(v) for k, v in kinds.items()}
                                    for m, kinds in d["trials_per_episode"].items()},
                per_task_success={str(m): tuple(float(x) for x in values)
                                  for m, values in d["per_task_success"].items()},
                elapsed_s=float(d["elapsed_s"]),
                setting=None if d.get("setting") is None else str(d["setting"]),
                paper=None if paper is None else {str(m): {str(p): float(x) for p, x in phases.items()}
                                                  for m, phases in paper.items()},
                alpha=float(d.get("alpha", LEGACY_ALPHA)),
                n_perm=n_perm,
                drift_metrics={str(m): copy.deepcopy(dict(x)) for m, x in d.get("drift_metrics", {}).items()},
            )
        except KeyError as exc:
            raise ValueError(f"results.json: missing field {exc.args[0]!r}") from None

