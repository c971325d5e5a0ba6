"""What a memory shows, scored without a reader: view quality against the oracle.

Every retrieval a reading makes for the task's key is one *view*: the usable values
of the records the memory returned, in its order, and the task's correct value
(``info["oracle"]["correct"]``). A view is exactly one of:

* ``correct``: the first usable value is the correct one;
* ``stale``: the first usable value was the key's correct value earlier in the
  episode and no longer is (the memory holds on to a refuted value);
* ``buried``: the correct value is shown, but not first;
* ``empty``: no usable value is shown;
* ``wrong``: anything else (a value that was never correct for the key first).

Per phase (and ``overall``), :func:`view_metrics` gives each kind's share (``view
accuracy`` is the share of ``correct``); the *lock-in probe*: ``persistence_1`` and
``persistence_2``, among views of a key that has a stale value with at least 1
(resp. 2) failed uses since it last worked, the share showing such a refuted value
first (whether a memory lets go of a value the evidence has refuted; a reader that
follows it never produces the success that would replace it); and, per change of a key's correct value
(as :mod:`~tepa_envs.agents.evaluation.analysis.drift_metrics` defines it), the
*uses to a correct view*: how many presentations of the key, from the change on,
show something other than the new value before the first correct view (0 when the
memory shows the new value at the change itself); changes never shown correctly
before the key's next change or the episode's end are counted as ``never``.

These numbers do not depend on a reader: with the memory-blind behaviour policy
(``reader profile memory-blind``: the agent's actions never depend on the memory,
so every memory sees the same evidence) they are what a memory author optimises.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

VIEW_KINDS: tuple[str, ...] = ("correct", "stale", "buried", "empty", "wrong")


@dataclass(frozen=True)
class View:
    """One retrieval for the task's key: what the memory showed and what was right."""

    key: str
    phase: int
    correct: str
    shown: tuple[str, ...]
    """The usable values of the returned records, in the memory's order."""
    top_failures: int = 0
    """Failed uses of the first shown value (for this key) since it last worked."""
    refuted_failures: int = 0
    """The most failed uses since it last worked of any stale value of the key (one that was
    its correct value earlier in the episode and is not now)."""


def classify(view: View, earlier: set[str]) -> str:
    """The kind of ``view``; ``earlier`` holds the key's past correct values."""
    if not view.shown:
        return "empty"
    top = view.shown[0]
    if top == view.correct:
        return "correct"
    if top in earlier:
        return "stale"
    if view.correct in view.shown:
        return "buried"
    return "wrong"


def classify_all(views: Sequence[View]) -> list[str]:
    """The kind of every view, in order (a key's earlier correct values tracked as it goes)."""
    earlier: dict[str, set[str]] = {}
    last: dict[str, str] = {}
    kinds = []
    for view in views:
        past = earlier.setdefault(view.key, set())
        if view.key in last and last[view.key] != view.correct:
            past.add(last[view.key])
        past.discard(view.correct)  # a value correct again (a recurring regime) is not stale
        kinds.append(classify(view, past))
        last[view.key] = view.correct
    return kinds


PERSISTENCE_LEVELS: tuple[int, ...] = (1, 2)


def persistence(views: Sequence[View], kinds: Sequence[str]) -> dict[str, Any]:
    """``persistence_k`` (and its denominator ``refuted_k``) for every level of
    :data:`PERSISTENCE_LEVELS` (``None`` when no view had such a refuted value)."""
    out: dict[str, Any] = {}
    for level in PERSISTENCE_LEVELS:
        exposed = [(v, k) for v, k in zip(views, kinds) if v.refuted_failures >= level]
        kept = sum(1 for v, k in exposed if k == "stale" and v.top_failures >= level)
        out[f"refuted_{level}"] = len(exposed)
        out[f"persistence_{level}"] = kept / len(exposed) if exposed else None
    return out


def uses_to_correct_view(views: Sequence[View], kinds: Sequence[str]) -> tuple[list[int], int]:
    """Per change of a key's correct value: presentations before its first correct view;
    and how many changes were never shown correctly inside their window."""
    by_key: dict[str, list[int]] = {}
    for i, view in enumerate(views):
        by_key.setdefault(view.key, []).append(i)
    delays: list[int] = []
    never = 0
    for indices in by_key.values():
        starts = [j for a, j in zip(indices, indices[1:]) if views[a].correct != views[j].correct]
        for n, start in enumerate(starts):
            end = starts[n + 1] if n + 1 < len(starts) else len(views)
            window = [i for i in indices if start <= i < end]
            first = next((k for k, i in enumerate(window) if kinds[i] == "correct"), None)
            if first is None:
                never += 1
            else:
                delays.append(first)
    return delays, never


def view_metrics(views: Sequence[View], phase_names: Sequence[str] = ()) -> dict[str, Any]:
    """Share of each view kind and the persistence per phase (named by ``phase_names``,
    else by index) and overall, and the uses to a correct view."""
    kinds = classify_all(views)
    phases = np.array([v.phase for v in views], dtype=np.int64)
    if not phase_names:
        phase_names = [str(i) for i in range(int(phases.max()) + 1 if len(views) else 0)]
    out: dict[str, Any] = {"phases": {}}
    for index, name in [*enumerate(phase_names), (None, "overall")]:
        mask = np.ones(len(views), bool) if index is None else phases == index
        n = int(mask.sum())
        if n == 0:
            continue
        counts = {kind: int(sum(1 for k, m in zip(kinds, mask) if m and k == kind)) for kind in VIEW_KINDS}
        out["phases"][name] = {"n": n, **{f"{kind}_share": counts[kind] / n for kind in VIEW_KINDS},
                               **persistence([v for v, k, m in zip(views, kinds, mask) if m],
                                             [k for k, m in zip(kinds, mask) if m])}
    delays, never = uses_to_correct_view(views, kinds)
    out["changes"] = len(delays) + never
    out["uses_to_correct_view"] = {"mean": float(np.mean(delays)) if delays else None,
                                   "median": float(np.median(delays)) if delays else None, "never": never}
    out["counts"] = {kind: kinds.count(kind) for kind in VIEW_KINDS}
    return out


def pool_view_metrics(episodes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Episodes' view metrics pooled: shares weighted by views, delays over every change."""
    phases: dict[str, dict[str, float]] = {}
    kept: dict[str, dict[int, float]] = {}
    for episode in episodes:
        for name, row in episode["phases"].items():
            pooled = phases.setdefault(name, {"n": 0, **{f"{k}_share": 0.0 for k in VIEW_KINDS},
                                              **{f"refuted_{level}": 0 for level in PERSISTENCE_LEVELS}})
            pooled["n"] += row["n"]
            for kind in VIEW_KINDS:
                pooled[f"{kind}_share"] += row[f"{kind}_share"] * row["n"]
            for level in PERSISTENCE_LEVELS:
                pooled[f"refuted_{level}"] += row[f"refuted_{level}"]
                share = row[f"persistence_{level}"]
                if share is not None:
                    kept.setdefault(name, {}).setdefault(level, 0.0)
                    kept[name][level] += share * row[f"refuted_{level}"]
    rows: dict[str, dict[str, float | None]] = {}
    for name, pooled in phases.items():
        for kind in VIEW_KINDS:
            pooled[f"{kind}_share"] = pooled[f"{kind}_share"] / pooled["n"] if pooled["n"] else 0.0
        finished: dict[str, float | None] = dict(pooled)
        for level in PERSISTENCE_LEVELS:
            exposed = pooled[f"refuted_{level}"]
            finished[f"persistence_{level}"] = kept[name][level] / exposed if exposed else None
        rows[name] = finished
    means = [e["uses_to_correct_view"]["mean"] for e in episodes]
    detected = [e["changes"] - e["uses_to_correct_view"]["never"] for e in episodes]
    total_detected = sum(detected)
    mean = (sum(m * d for m, d in zip(means, detected) if m is not None) / total_detected
            if total_detected else None)
    return {"phases": rows, "changes": sum(e["changes"] for e in episodes),
            "uses_to_correct_view": {"mean": mean, "never": sum(e["uses_to_correct_view"]["never"]
                                                               for e in episodes)}}


__all__ = ["PERSISTENCE_LEVELS", "VIEW_KINDS", "View", "classify", "classify_all", "persistence",
           "pool_view_metrics", "uses_to_correct_view", "view_metrics"]
