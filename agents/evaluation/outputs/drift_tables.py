"""The drift metrics as table cells and as the README's ``suite-metrics`` block
(definitions: :mod:`~tepa_envs.agents.evaluation.analysis.drift_metrics`)."""

from __future__ import annotations

from typing import Any, Mapping

from tepa_envs.agents.evaluation.analysis.drift_metrics import RECOVERY_LEVEL, RECOVERY_WINDOW
from tepa_envs.agents.evaluation.outputs.tables import markdown_table


def _num(x: float | None, digits: int = 1) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


METRICS_HEADER: tuple[str, ...] = ("method", "changes", "delay", "undetected", "false rev./1k", "stale/1k", "regret",
                                   "recovery", "unrecovered / unjudged")
"""The columns of a metrics table (:func:`metrics_cells` gives a row's cells after the method)."""


def metrics_cells(metrics: Mapping[str, Any]) -> list[str]:
    """One method's :func:`~tepa_envs.agents.evaluation.analysis.drift_metrics.pool_metrics` as the cells of a metrics table row, after the
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
    # the README holds this text as generated: it stays byte for byte, old definitions path included
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
    for s in data["scenarios"]:
        metrics = s.get("metrics")
        if not metrics:
            continue
        out.append(f"\n**{s['short']}** (`{s['env_id']}`)\n\n")
        out.append(markdown_table(METRICS_HEADER, [[m, *metrics_cells(metrics[m])] for m in data["methods"]]))
    return "".join(out)


__all__ = ["METRICS_HEADER", "metrics_cells", "metrics_markdown"]
