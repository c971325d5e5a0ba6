"""Drift metrics beyond phase success: detection delay, false revocations, regret, recovery.

Every metric is computed from what every method exposes through the memory
protocol (the records :meth:`~tepa_envs.agents.memories.protocol.Memory.retrieve`
returns) plus the environment's oracle info (``info["oracle"]["correct"]``, the
right value of the task presented), and, for methods that keep one, the audit
log of revocations (``memory.audit_log``: the TEPA family). This module computes
them from an :class:`EpisodeTrace`; the trace is recorded by an observer of the
one episode loop (:class:`~tepa_envs.agents.evaluation.engine.tracing.DriftTracer`),
which never changes a decision (so ``success`` is identical to an untraced
:func:`~tepa_envs.agents.evaluation.engine.runner.run_job`'s).

Definitions, per episode, over the scored tasks ``t = 0 .. T-1`` (task ``t`` has
key ``k_t``, oracle correct value ``c_t``, the value the memory *shows* ``s_t`` and
the value the agent *chose* ``a_t``):

* **shows**: ``s_t`` is the value of the top-ranked record the reader would follow:
  the first record of the first retrieval for ``k_t`` while the agent decides task
  ``t`` whose value is one of the task's choices (any value for free-text tasks);
  ``""`` when no such record is shown.
* **change**: a task ``t`` whose correct value differs from the correct value at the
  previous task with the same key (the first presentation of a key is no change).
  The change's time is that task: the first moment any method could notice it (a
  key's change while the key is not presented is seen at its next presentation).
  Its *old* (stale) value is ``c`` at the previous presentation; its *window* runs
  to the key's next change or the episode's end. In a gradual change the oracle's
  correct value is drawn per task during the ramp, so each flip is a change.
* **detection delay**: tasks ``t' - t`` from a change at ``t`` to the first
  presentation ``t' >= t`` of the key in the window whose shown value is not the
  old value (0 when the memory does not show the stale value at the change
  itself). Changes never detected inside their window are counted as
  ``undetected``, never dropped.
* **stale retrievals**: presentations inside a change's window that show the old
  value (while it is not the correct one).
* **correct-value losses**: presentations ``t`` of a key whose previous
  presentation showed the correct value, with no change in between, that no
  longer show it (a still-correct value lost).
* **false revocations**: for a method with an audit log, revocation events
  (``to_state == "revoked"``) of a value that is the key's correct value at the
  event's time (the correct value at the key's last presentation at or before it);
  for a method without one, its correct-value losses (``false_revocation_source``
  says which).
* **regret** (cumulative, against the oracle that knows the correct value and
  chooses it on every task): the number of tasks where the chosen value is not
  the correct one. Decisions, not outcomes, so noisy outcomes add no noise to it;
  with deterministic outcomes it equals the oracle's successes minus the method's.
* **recovery time**: tasks from a change to the first presentation of the key in
  the window from which the method chooses the correct value in at least
  :data:`RECOVERY_LEVEL` (90 %) of the next :data:`RECOVERY_WINDOW` presentations
  of the key, all inside the window: 90 % of the oracle's rate of correct choices,
  which is 1. Changes never recovered inside their window are counted as
  ``unrecovered``; a change whose window holds fewer than :data:`RECOVERY_WINDOW`
  presentations cannot be judged and is counted as ``unjudged`` (so a short tail of
  lucky choices is never a recovery).

Rates are per 1,000 scored tasks. Pooled over seeds, delays and recovery times
are the mean and median over every detected (recovered) change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from tepa_envs.agents.evaluation.analysis.statistics import bootstrap_cis
from tepa_envs.core import check_int, check_probability

from tepa_envs.agents.evaluation.analysis.view_quality import View, pool_view_metrics, view_metrics

RECOVERY_LEVEL = 0.9
"""Share of the oracle's rate of correct choices (1) a method must reach to have recovered."""
RECOVERY_WINDOW = 5
"""Presentations of the changed key over which the recovery rate is measured."""
PER = 1000
"""Rates are per this many scored tasks."""
REVOKED = "revoked"


# ------------------------------------------------------------------------ the trace
@dataclass
class EpisodeTrace:
    """What the metrics need from one episode, one entry per scored task."""

    keys: list[str] = field(default_factory=list)
    correct: list[str] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)
    chosen: list[str] = field(default_factory=list)
    revocations: list[tuple[int, str, str]] | None = None
    """``(t, key, value)`` of every revocation in the memory's audit log; ``None``: no audit log."""
    phase_names: tuple[str, ...] = ()
    """The environment's phase names (the view metrics' phases; by index when empty)."""
    views: list[View] = field(default_factory=list)
    """Per scored task, everything the memory showed for its key (the reader-free view
    metrics, :mod:`~tepa_envs.agents.evaluation.analysis.view_quality`); empty when not recorded."""


def _check_trace(trace: EpisodeTrace) -> int:
    if not isinstance(trace, EpisodeTrace):
        raise TypeError(f"trace must be an EpisodeTrace, got {type(trace).__name__}")
    n = len(trace.keys)
    for name in ("correct", "shown", "chosen"):
        values = getattr(trace, name)
        if len(values) != n:
            raise ValueError(f"trace.{name} must have one entry per task ({n}), got {len(values)}")
        if all(type(v) is str for v in values):  # the common case, checked fast
            continue
        for i, v in enumerate(values):
            if not isinstance(v, str):
                raise TypeError(f"trace.{name}[{i}] must be a str, got {type(v).__name__}")
    return n


@dataclass(frozen=True)
class Change:
    t: int
    key: str
    old: str
    new: str
    presentations: tuple[int, ...]
    """The tasks presenting the key from the change to the end of its window."""


def changes_of(keys: Sequence[str], correct: Sequence[str]) -> list[Change]:
    """Every change of the module docstring, in order of time."""
    last: dict[str, tuple[int, str]] = {}
    starts: list[tuple[int, str, str, str]] = []
    by_key: dict[str, list[int]] = {}
    for t, (k, c) in enumerate(zip(keys, correct)):
        by_key.setdefault(k, []).append(t)
        if k in last and last[k][1] != c:
            starts.append((t, k, last[k][1], c))
        last[k] = (t, c)
    out = []
    for i, (t, k, old, new) in enumerate(starts):
        end = next((s[0] for s in starts[i + 1:] if s[1] == k), len(keys))
        out.append(Change(t, k, old, new, tuple(p for p in by_key[k] if t <= p < end)))
    return out


def episode_metrics(trace: EpisodeTrace, *, recovery_level: float = RECOVERY_LEVEL,
                    recovery_window: int = RECOVERY_WINDOW) -> dict[str, Any]:
    """The metrics of the module docstring for one episode (JSON-ready counts and lists)."""
    n = _check_trace(trace)
    recovery_level = check_probability("recovery_level", recovery_level)
    recovery_window = check_int("recovery_window", recovery_window, low=1)
    keys, correct, shown, chosen = trace.keys, trace.correct, trace.shown, trace.chosen
    changes = changes_of(keys, correct)
    delays: list[int] = []
    recoveries: list[int] = []
    stale = unjudged = 0
    for change in changes:
        detected = next((p for p in change.presentations if shown[p] != change.old), None)
        if detected is not None:
            delays.append(detected - change.t)
        stale += sum(1 for p in change.presentations if shown[p] == change.old != correct[p])
        hits = [chosen[p] == correct[p] for p in change.presentations]
        if len(hits) < recovery_window:
            unjudged += 1
            continue
        for i, p in enumerate(change.presentations[:len(hits) - recovery_window + 1]):
            if sum(hits[i:i + recovery_window]) >= recovery_level * recovery_window - 1e-9:
                recoveries.append(p - change.t)
                break
    losses = 0
    previous: dict[str, int] = {}
    for t, k in enumerate(keys):
        before = previous.get(k)
        if (before is not None and correct[before] == correct[t] and shown[before] == correct[before]
                and shown[t] != correct[t]):
            losses += 1
        previous[k] = t
    if trace.revocations is None:
        false_revocations, source = losses, "correct-value losses"
    else:
        false_revocations, source = 0, "audit log"
        by_key: dict[str, list[int]] = {}
        for t, k in enumerate(keys):
            by_key.setdefault(k, []).append(t)
        for t_event, k, value in trace.revocations:
            seen = [p for p in by_key.get(k, ()) if p <= t_event]
            if seen and correct[seen[-1]] == value:
                false_revocations += 1
    return {
        "tasks": n,
        "changes": len(changes),
        "delays": delays,
        "undetected": len(changes) - len(delays),
        "recoveries": recoveries,
        "unrecovered": len(changes) - len(recoveries) - unjudged,
        "unjudged": unjudged,
        "stale_retrievals": stale,
        "correct_value_losses": losses,
        "false_revocations": false_revocations,
        "false_revocation_source": source,
        "regret": sum(1 for a, c in zip(chosen, correct) if a != c),
        **({"views": view_metrics(trace.views, trace.phase_names)} if trace.views else {}),
    }


def _summary(values: list[int]) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "median": None}
    return {"mean": float(np.mean(values)), "median": float(np.median(values))}


def pool_metrics(episodes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Pool per-episode metrics (one per seed, in seed order) into the numbers reported:
    rates per 1,000 tasks over all tasks, delay and recovery over every change, and the
    cumulative regret per episode as the mean over seeds with a 95 % bootstrap CI."""
    if not episodes:
        raise ValueError("episodes must hold at least one episode's metrics")
    tasks = sum(e["tasks"] for e in episodes)
    changes = sum(e["changes"] for e in episodes)
    delays = [d for e in episodes for d in e["delays"]]
    recoveries = [r for e in episodes for r in e["recoveries"]]
    regret = np.array([[float(e["regret"])] for e in episodes])
    est = bootstrap_cis(regret)[0] if len(episodes) > 1 else None
    sources = sorted({e["false_revocation_source"] for e in episodes})

    def per_k(name: str) -> float:
        return PER * sum(e[name] for e in episodes) / tasks if tasks else 0.0

    return {
        "changes": changes,
        "detection_delay": {**_summary(delays), "detected": len(delays), "undetected": changes - len(delays)},
        "false_revocations_per_1k": per_k("false_revocations"),
        "false_revocation_source": " + ".join(sources),
        "stale_retrievals_per_1k": per_k("stale_retrievals"),
        "correct_value_losses_per_1k": per_k("correct_value_losses"),
        "regret": {"mean": float(regret.mean()),
                   "ci_low": est.ci_low if est is not None else float(regret.mean()),
                   "ci_high": est.ci_high if est is not None else float(regret.mean()),
                   "per_1k": PER * float(regret.sum()) / tasks if tasks else 0.0},
        "recovery": {**_summary(recoveries), "recovered": len(recoveries),
                     "unrecovered": sum(e["unrecovered"] for e in episodes),
                     "unjudged": sum(e["unjudged"] for e in episodes)},
        **({"views": pool_view_metrics([e["views"] for e in episodes])}
           if all("views" in e for e in episodes) else {}),
    }


def metrics_apply(trace: EpisodeTrace) -> bool:
    """Whether the drift metrics describe an episode: every scored task presents a key
    (``info["key"]``) and the environment tells its correct value (``info["oracle"]["correct"]``).
    Not so for ``TEPA/FactConsolidation-v0``, whose questions are unkeyed (``key == ""``)."""
    return bool(trace.keys) and all(trace.keys) and all(trace.correct)


__all__ = ["Change", "EpisodeTrace", "PER", "RECOVERY_LEVEL", "RECOVERY_WINDOW", "REVOKED", "changes_of",
           "episode_metrics", "metrics_apply", "pool_metrics"]
