"""Drift metrics beyond phase success: detection delay, false revocations, regret, recovery.

Every metric is computed from what every method exposes through the memory
protocol (the records :meth:`~tepa_envs.agents.memories.protocol.Memory.retrieve`
returns) plus the environment's oracle info (``info["oracle"]["correct"]``, the
right value of the task presented), and, for methods that keep one, the audit
log of revocations (``memory.audit_log``: the TEPA family). Recording never
changes a decision: :func:`trace_episode` runs the harness's own
:func:`~tepa_envs.agents.readers.agent.run_episode` with a pass-through
environment wrapper and a retrieval recorder that returns the memory's records
unchanged (so ``success`` is identical to :func:`~tepa_envs.agents.evaluation.harness.run_job`'s).

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

import gymnasium as gym
import numpy as np

from tepa_envs.core import check_int, check_probability

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
        p = previous.get(k)
        if p is not None and correct[p] == correct[t] and shown[p] == correct[p] and shown[t] != correct[t]:
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
    }


def _summary(values: list[int]) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "median": None}
    return {"mean": float(np.mean(values)), "median": float(np.median(values))}


def pool_metrics(episodes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Pool per-episode metrics (one per seed, in seed order) into the numbers reported:
    rates per 1,000 tasks over all tasks, delay and recovery over every change, and the
    cumulative regret per episode as the mean over seeds with a 95 % bootstrap CI."""
    from tepa_envs.agents.evaluation.statistics import bootstrap_cis

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
    }


# ------------------------------------------------------------------------ recording
class _TraceEnv(gym.Wrapper):
    """Passes every call through unchanged; notes each scored task's key, correct value and choice.

    Kept cheap (it runs on every step of every episode ``tepa-bench run`` evaluates): a
    scored step notes one tuple, which :meth:`flush` appends to the trace after the
    episode; a key's choices and their actions are looked up once per episode, before
    the key's first step (the agent still asks the environment for its choices itself)."""

    def __init__(self, env: gym.Env, trace: EpisodeTrace) -> None:
        super().__init__(env)
        self.trace = trace
        self.info: Mapping[str, Any] = {}
        self.key = ""
        """The presented task's key (``info["key"]``)."""
        self.pending_shown = ""
        self.retrieved = False
        self._choices: dict[str, tuple[str, ...]] = {}
        self._values: dict[str, dict[Any, str]] = {}
        self._scored: list[tuple[str, Any, str, str]] = []

    def reset(self, **kwargs: Any) -> Any:
        obs, info = self.env.reset(**kwargs)
        self.flush()
        self.info, self.key, self.pending_shown, self.retrieved = info, info.get("key", ""), "", False
        self._choices, self._values = {}, {}  # a key's choices may differ between episodes
        return obs, info

    def key_choices(self, key: str) -> tuple[str, ...]:
        """The environment's choices for ``key``, asked once per episode."""
        choices = self._choices.get(key)
        if choices is None:
            choices = self._choices[key] = tuple(self.env.get_wrapper_attr("choices")(key))
        return choices

    def step(self, action: Any) -> Any:
        key = self.key
        values = self._values.get(key)
        if values is None:
            values = self._values[key] = self._actions_of(key)
        shown = self.pending_shown
        correct = self.info.get("oracle", {}).get("correct", "")
        out = self.env.step(action)
        after = out[-1]
        if "success" in after:
            self._scored.append((key, correct, shown, _value_of(values, action)))
        self.info, self.key, self.pending_shown, self.retrieved = after, after.get("key", ""), "", False
        return out

    def flush(self) -> None:
        """Append the scored tasks noted since the last flush to the trace."""
        if not self._scored:
            return
        keys, correct, shown, chosen = zip(*self._scored)
        self.trace.keys.extend(keys)
        self.trace.correct.extend(c if type(c) is str else str(c) for c in correct)
        self.trace.shown.extend(shown)
        self.trace.chosen.extend(chosen)
        self._scored = []

    def _actions_of(self, key: str) -> dict[Any, str]:
        to_action = self.env.get_wrapper_attr("to_action")
        return {_hashable(to_action(value)): value for value in self.key_choices(key)}

    def note_retrieval(self, key: str, records: Sequence[Any]) -> None:
        """The first retrieval for the presented task's key: what it shows."""
        if self.retrieved or key != self.key:
            return
        self.retrieved = True
        choices = self._choices.get(key)
        if choices is None:
            choices = self.key_choices(key)
        for r in records:
            if not choices or r.value in choices:
                self.pending_shown = r.value
                return


def _value_of(values: Mapping[Any, str], action: Any) -> str:
    """The value whose action is ``action`` (``values``: action -> value of the key's
    choices), else the action itself when it is a string (free text), else ``""``."""
    if type(action) is int or type(action) is str:  # the common actions, their own dict keys
        found = values.get(action)
    else:
        found = values.get(_hashable(action))
    if found is not None:
        return found
    return action if isinstance(action, str) else ""


def _hashable(action: Any) -> Any:
    """An action as a dict key (array actions by their bytes)."""
    if isinstance(action, np.ndarray):
        return (action.dtype.str, action.shape, action.tobytes())
    if isinstance(action, np.generic):
        return action.item()
    try:
        hash(action)
    except TypeError:
        return repr(action)
    return action


def trace_episode(env: gym.Env, agent: Any, seed: int, *,
                  decide_phases: tuple[int, ...] | None = None) -> tuple[Any, EpisodeTrace]:
    """:func:`~tepa_envs.agents.readers.agent.run_episode` of ``agent`` on ``env`` with the
    metrics' trace recorded alongside (the episode result is unchanged)."""
    from tepa_envs.agents.readers.agent import run_episode

    trace = EpisodeTrace()
    traced = _TraceEnv(env, trace)
    memory = agent.memory
    original = memory.retrieve

    def retrieve(key: str, context: str = "") -> list[Any]:
        records = original(key, context)
        if not traced.retrieved and key == traced.key:  # what traced.note_retrieval checks first, inlined
            traced.note_retrieval(key, records)
        return records

    try:
        memory.retrieve = retrieve  # an instance attribute: isinstance and identity are unchanged
    except AttributeError:
        raise TypeError(f"{type(memory).__name__} takes no instance attributes (e.g. __slots__), so its "
                        "retrievals cannot be recorded for the drift metrics; give it a __dict__") from None
    try:
        result = run_episode(traced, agent, seed, decide_phases=decide_phases)
    finally:
        del memory.retrieve
    traced.flush()
    log = getattr(memory, "audit_log", None)
    if isinstance(log, (tuple, list)):
        trace.revocations = [(int(e.t), e.key, e.value) for e in log if str(getattr(e.to_state, "value", e.to_state))
                             == REVOKED]
    return result, trace


def run_traced_job(job: tuple[str, dict[str, Any], Any, int, dict[str, Any]]
                   ) -> tuple[np.ndarray, np.ndarray, dict[str, int], dict[str, Any]]:
    """:func:`~tepa_envs.agents.evaluation.harness.run_job_with_metrics` for the suite, where
    every episode must have its metrics: ``TypeError`` when they could not be recorded."""
    from tepa_envs.agents.evaluation.harness import method_label, run_job_with_metrics

    success, phase, trials, metrics = run_job_with_metrics(job)
    if metrics is None:
        raise TypeError(f"no drift metrics for {method_label(job[2])} on {job[0]}: its tasks carry no key and "
                        "correct value, or its memory takes no instance attributes (e.g. __slots__), so its "
                        "retrievals cannot be recorded; give it a __dict__")
    return success, phase, trials, metrics


# ------------------------------------------------------------------------- markdown
def _num(x: float | None, digits: int = 1) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


METRICS_HEADER: tuple[str, ...] = ("method", "changes", "delay", "undetected", "false rev./1k", "stale/1k", "regret",
                                   "recovery", "unrecovered / unjudged")
"""The columns of a metrics table (:func:`metrics_cells` gives a row's cells after the method)."""


def metrics_cells(metrics: Mapping[str, Any]) -> list[str]:
    """One method's :func:`pool_metrics` as the cells of a metrics table row, after the
    method's name (:data:`METRICS_HEADER`): changes, delay mean [median], undetected,
    false revocations and stale retrievals per 1k, regret mean (95 % CI), recovery
    mean [median], unrecovered / unjudged."""
    d, r, g = metrics["detection_delay"], metrics["recovery"], metrics["regret"]
    return [str(metrics["changes"]), f"{_num(d['mean'])} [{_num(d['median'], 0)}]", str(d["undetected"]),
            _num(metrics["false_revocations_per_1k"]), _num(metrics["stale_retrievals_per_1k"]),
            f"{_num(g['mean'])} ({_num(g['ci_low'])}–{_num(g['ci_high'])})",
            f"{_num(r['mean'])} [{_num(r['median'], 0)}]", f"{r['unrecovered']} / {r['unjudged']}"]


def metrics_markdown(data: Mapping[str, Any]) -> str:
    """The README's ``suite-metrics`` block: one table per scenario (rows: methods)."""
    out = ["Per scenario, pooled over the suite's seeds (definitions: "
           "`tepa_envs/agents/evaluation/drift_metrics.py`). **delay**: mean [median] tasks from a key's change "
           "to the first retrieval for it that no longer shows the stale value, with the changes never detected "
           "before the key's next change or the episode's end; **false rev./1k**: revocations of a still-correct "
           "value per 1,000 tasks (audit log for the TEPA family, else correct-value losses); **stale/1k**: "
           "retrievals showing the stale value after a change; **regret**: tasks per episode where the choice "
           "was not the correct value (mean, 95 % CI); **recovery**: mean [median] tasks from a change until "
           f"the method chooses right in {RECOVERY_LEVEL:.0%} of the key's next {RECOVERY_WINDOW} "
           "presentations, with the changes never recovered (changes whose key is presented fewer than "
           f"{RECOVERY_WINDOW} times before its next change are not judged).\n"]
    header = list(METRICS_HEADER)
    for s in data["scenarios"]:
        metrics = s.get("metrics")
        if not metrics:
            continue
        lines = [f"\n**{s['short']}** (`{s['env_id']}`)\n\n", "| " + " | ".join(header) + " |\n",
                 "|" + "---|" * len(header) + "\n"]
        for m in data["methods"]:
            row = [m, *metrics_cells(metrics[m])]
            lines.append("| " + " | ".join(row) + " |\n")
        out += lines
    return "".join(out)


__all__ = ["Change", "EpisodeTrace", "METRICS_HEADER", "PER", "RECOVERY_LEVEL", "RECOVERY_WINDOW", "changes_of",
           "episode_metrics", "metrics_cells", "metrics_markdown", "pool_metrics", "run_traced_job", "trace_episode"]
