"""Every memory under every change-notification level (issue 33, item 1): the leaderboard's
column per level.

    python benchmarks/notify_levels.py [--seeds 200] [--out notify_levels.json]
    python benchmarks/notify_levels.py --docs notify_levels.json   # the docs block only

Runs each method of :data:`METHODS` on each scenario of :data:`SCENARIOS` at each level
of ``notify`` (``none``, ``detected`` at the environment's default detector,
``known``), on the same seeds (paired: the world of a seed is identical across levels
and methods, :mod:`tepa_envs.core.notify`), with the default reader, through the one
episode loop (:func:`~tepa_envs.agents.run_episode`), and writes the
``<!-- begin:notify-levels -->`` block of ``docs/environments/notification.md``: overall
success per method and level, and for ``detected`` the paired difference to the best
non-oracle method at ``known`` with its 95 % CI (normal approximation over seeds).

A method reads the notification only through its named option (``lww on_notify=clear``,
``tepa on_notify=revoke``, ...); a method without one runs identically at every level
(its row repeats: the world does not depend on the level). ``oracle-reset`` reads the
oracle, not the notification: it is the ``known`` end of the dial, listed as a bound.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import tepa_envs  # noqa: F401  (registers the environments)
from tepa_envs.agents import MemoryAgent, run_episode
from tepa_envs.agents.evaluation.outputs.blocks import BlockError, write_block
from tepa_envs.agents.evaluation.outputs.files import write_json_atomic
from tepa_envs.agents.memories.registry import make_memory
from tepa_envs.core.notify import DEFAULT_DETECT_DELAY, DEFAULT_FALSE_ALARM_RATE, NOTIFY_LEVELS

ROOT = Path(__file__).resolve().parents[1]
BLOCK = "notify-levels"
SCENARIOS: tuple[str, ...] = ("TEPA/RegimeDrift-v0", "TEPA/RegimeDrift-ManyKeys-v0", "TEPA/PreferenceStream-v0")
LEVELS: tuple[str, ...] = ("none", "detected", "known")
ORACLE = "oracle-reset"


@dataclass(frozen=True)
class Method:
    """A row: a registered memory with its options."""

    label: str
    name: str
    kwargs: dict[str, Any] = field(default_factory=dict)


METHODS: tuple[Method, ...] = (
    Method("no-memory", "no-memory"),
    Method("lww", "lww"),
    Method("lww on_notify=clear", "lww", {"on_notify": "clear"}),
    Method("append-only on_notify=clear", "append-only", {"on_notify": "clear"}),
    Method("tepa", "tepa"),
    Method("tepa on_notify=demote", "tepa", {"on_notify": "demote"}),
    Method("tepa on_notify=revoke", "tepa", {"on_notify": "revoke"}),
    Method(ORACLE, ORACLE),
)


def run(seeds: int) -> dict[str, Any]:
    """Per scenario, method and level: every seed's overall success."""
    assert set(LEVELS) == set(NOTIFY_LEVELS)
    started = time.perf_counter()
    results: dict[str, dict[str, dict[str, list[float]]]] = {}
    for env_id in SCENARIOS:
        results[env_id] = {}
        for level in LEVELS:
            env = gym.make(env_id, notify=level)
            for method in METHODS:
                scores = results[env_id].setdefault(method.label, {}).setdefault(level, [])
                for seed in range(seeds):
                    episode = run_episode(env, MemoryAgent(make_memory(method.name, **method.kwargs)), seed=seed)
                    scores.append(float(episode.success.mean()))
            env.close()
    return {"seeds": seeds, "scenarios": list(SCENARIOS), "levels": list(LEVELS),
            "methods": [m.label for m in METHODS], "detect_delay": DEFAULT_DETECT_DELAY,
            "false_alarm_rate": DEFAULT_FALSE_ALARM_RATE, "results": results,
            "seconds": round(time.perf_counter() - started, 1)}


def _paired(a: list[float], b: list[float]) -> tuple[float, float]:
    """Mean of ``a - b`` over seeds and the half-width of its 95 % CI (normal approximation)."""
    diff = np.asarray(a) - np.asarray(b)
    half = 1.96 * float(diff.std(ddof=1)) / math.sqrt(len(diff)) if len(diff) > 1 else 0.0
    return float(diff.mean()), half


def summary(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per scenario: the best non-oracle method at ``known`` and at ``detected``, and the paired
    gaps to that ``known`` score."""
    out: dict[str, dict[str, Any]] = {}
    for env_id in data["scenarios"]:
        scores = data["results"][env_id]
        candidates = [m for m in data["methods"] if m != ORACLE]
        best_known = max(candidates, key=lambda m: np.mean(scores[m]["known"]))
        best_detected = max(candidates, key=lambda m: np.mean(scores[m]["detected"]))
        best_none = max(candidates, key=lambda m: np.mean(scores[m]["none"]))
        gap, half = _paired(scores[best_detected]["detected"], scores[best_known]["known"])
        known_mean, none_mean = float(np.mean(scores[best_known]["known"])), float(np.mean(scores[best_none]["none"]))
        closed = (float(np.mean(scores[best_detected]["detected"])) - none_mean) / (known_mean - none_mean) \
            if known_mean > none_mean else float("nan")
        out[env_id] = {"best_known": best_known, "best_detected": best_detected, "best_none": best_none,
                       "gap": gap, "half": half, "closed": closed}
    return out


def table(data: dict[str, Any]) -> str:
    """The docs block: one table per scenario, then one sentence each on detected against known."""
    lines = [f"{data['seeds']} seeds per scenario (seeds 0–{data['seeds'] - 1}, the same worlds at every level and "
             f"for every method), default reader; `detected` at the default detector (`detect_delay = "
             f"{data['detect_delay']:g}`, `false_alarm_rate = {data['false_alarm_rate']:g}`). Cells: mean overall "
             "success; *detected − best known*: the paired difference between the method at `detected` and the "
             "best non-oracle method at `known`, with its 95 % CI. Generated by "
             f"`python benchmarks/notify_levels.py` ({data['seconds']:.0f} s).\n"]
    notes = summary(data)
    for env_id in data["scenarios"]:
        scores = data["results"][env_id]
        best = notes[env_id]["best_known"]
        lines += [f"**`{env_id}`**\n", "| method | none | detected | known | detected − best known |",
                  "|---|---|---|---|---|"]
        for method in data["methods"]:
            cells = [f"{np.mean(scores[method][level]):.3f}" for level in data["levels"]]
            gap, half = _paired(scores[method]["detected"], scores[best]["known"])
            label = f"{method} (bound, reads the oracle)" if method == ORACLE else method
            lines.append(f"| {label} | {' | '.join(cells)} | {gap:+.3f} ± {half:.3f} |")
        lines.append("")
    lines.append("**Does any memory come close to `known` at `detected`?**\n")
    for env_id in data["scenarios"]:
        n = notes[env_id]
        scores = data["results"][env_id]
        lines.append(f"* `{env_id}`: best at `detected` is {n['best_detected']} "
                     f"({np.mean(scores[n['best_detected']]['detected']):.3f}), "
                     f"{n['gap']:+.3f} ± {n['half']:.3f} from the best at `known` ({n['best_known']}, "
                     f"{np.mean(scores[n['best_known']]['known']):.3f}); it closes "
                     f"{100 * n['closed']:.0f} % of the gap between the best at `none` ({n['best_none']}, "
                     f"{np.mean(scores[n['best_none']]['none']):.3f}) and `known`.")
    return "\n".join(lines) + "\n"


def write_docs(data: dict[str, Any]) -> None:
    try:
        print(f"{write_block(BLOCK, table(data), ROOT)}: {BLOCK} block written")
    except BlockError as error:
        raise SystemExit(str(error)) from None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--out", default="notify_levels.json")
    parser.add_argument("--docs", metavar="JSON", help="only write the docs block from a finished run")
    args = parser.parse_args()
    if args.docs:
        data = json.loads(Path(args.docs).read_text(encoding="utf-8"))
    else:
        if args.seeds < 2:
            raise SystemExit("--seeds must be at least 2 (the CI needs two paired seeds)")
        data = run(args.seeds)
        write_json_atomic(Path(args.out), data)
    write_docs(data)
    print(table(data))


if __name__ == "__main__":
    main()
