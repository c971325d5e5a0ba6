"""The RL study's files: ``rl.json``, ``rl.csv``, ``curves.png``, ``rl.md`` and ``manifest.json`` (last).

``rl.json`` (``rl_version`` 2): ``spec`` (the study's settings, ``engine`` among them, agents,
environments, training seeds, held-out seeds as ``[first, count]``), ``notes``, ``agents``, ``oracles``,
``twins`` (agents on the fully observed twin),
``train_seeds``, ``unit_s`` (the units' wall seconds summed), ``smallest_p_value`` (the floor of the sign-flip test at this many
seeds), ``alpha``, ``versions`` (the engine's libraries: torch, stable-baselines3, sb3-contrib or ray;
gymnasium, numpy, python, torch threads), ``memory_agents`` (PPO with a memory that is not an oracle), ``wall_s`` (this run's), ``units`` (planned, skipped,
trained); ``envs``, one object each with ``env_id``, ``label``, ``kwargs``, ``phases``,
``drift_phases``, ``drift_score`` (``"reversal"`` or ``"after first change"``) and
``agents``: label -> ``success`` (phase, ``overall``, ``drift`` -> ``mean``, ``ci_low``,
``ci_high``), ``per_seed_drift``, ``curve`` (``steps``, ``mean``, ``ci_low``, ``ci_high``),
``steps_to_90`` (``mean``, ``ci_low``, ``ci_high``), ``timing`` (mean seconds per unit:
``env_s``, ``policy_s``, ``update_s``, ``eval_s``, ``total_s``; ``env_steps_per_s``,
``train_steps_per_s``) and ``path``; ``comparisons``, each with ``env``, ``agent``,
``other``, ``metric``, ``diff`` (agent - other, mean and CI), ``p_value``, ``p_holm``,
``significant``.

``rl.csv``: one row per environment, agent and score (each phase, ``overall``,
``drift``) with mean and CI, plus the steps to 90 % and the timing columns.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from tepa_envs.agents.evaluation.outputs.files import (
    write_figure_atomic, write_json_atomic, write_manifest, write_text_atomic,
)

FILES: tuple[str, ...] = ("rl.json", "rl.csv", "curves.png", "rl.md")
MIN_GAP = 0.05
"""A twin gap below this is reported as no gap (the share of it an agent closes would be noise)."""
BLOCK = "rl-study"
"""The generated block in ``docs/rl.md``."""


def _ci(estimate: dict[str, float], digits: int = 2) -> str:
    return f"{estimate['mean']:.{digits}f} [{estimate['ci_low']:.{digits}f}, {estimate['ci_high']:.{digits}f}]"


def _steps(estimate: dict[str, float]) -> str:
    return (f"{estimate['mean'] / 1000:.1f}k [{estimate['ci_low'] / 1000:.1f}k, "
            f"{estimate['ci_high'] / 1000:.1f}k]")


def csv_text(data: dict[str, Any]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["env", "env_id", "agent", "score", "mean", "ci_low", "ci_high", "steps_to_90", "path",
                     "env_steps_per_s", "train_steps_per_s", "env_s", "policy_s", "update_s", "eval_s", "total_s"])
    for env in data["envs"]:
        for agent, row in env["agents"].items():
            t = row["timing"]
            for score, est in row["success"].items():
                writer.writerow([env["label"], env["env_id"], agent, score, f"{est['mean']:.6f}",
                                 f"{est['ci_low']:.6f}", f"{est['ci_high']:.6f}", f"{row['steps_to_90']['mean']:.0f}",
                                 row["path"], f"{t['env_steps_per_s']:.0f}", f"{t['train_steps_per_s']:.0f}",
                                 *(f"{t[k]:.3f}" for k in ("env_s", "policy_s", "update_s", "eval_s", "total_s"))])
    return out.getvalue()


def winners(data: dict[str, Any]) -> list[str]:
    """One generated sentence per environment: the best agent that is neither an oracle nor on the
    twin, the best explicit memory against ``ppo`` and ``recurrent-ppo``, the LSTM against ``ppo``
    (Holm), the bound and the twin's ceiling."""
    lines = []
    tests = {(c["env"], c["agent"], c["other"]): c for c in data["comparisons"]}
    memories = set(data.get("memory_agents", []))
    bounds = set(data["oracles"]) | set(data["twins"])

    def versus(env: str, agent: str, other: str) -> str | None:
        c = tests.get((env, agent, other))
        if c is None:
            return None
        verdict = "significantly" if c["significant"] else "not significantly"
        sign = "above" if c["diff"]["mean"] >= 0 else "below"
        return (f"{verdict} {sign} {other} (diff {c['diff']['mean']:+.2f} "
                f"[{c['diff']['ci_low']:+.2f}, {c['diff']['ci_high']:+.2f}], Holm p = {c['p_holm']:.3g})")

    for env in data["envs"]:
        label = env["label"]
        scores = {a: row["success"]["drift"]["mean"] for a, row in env["agents"].items()
                  if a not in bounds and "drift" in row["success"]}
        if not scores:
            continue
        best = max(scores, key=lambda a: scores[a])
        parts = [f"best is **{best}** ({scores[best]:.2f})"]
        explicit = {a: v for a, v in scores.items() if a in memories}
        if explicit:
            top = max(explicit, key=lambda a: explicit[a])
            found = [v for v in (versus(label, top, "ppo"), versus(label, top, "recurrent-ppo")) if v]
            parts.append(f"best explicit memory **{top}** ({explicit[top]:.2f})"
                         + (": " + ", ".join(found) if found else ""))
        lstm = versus(label, "recurrent-ppo", "ppo")
        if lstm:
            parts.append(f"recurrent-ppo ({scores.get('recurrent-ppo', float('nan')):.2f}) is {lstm}")
        bound = [f"{o} {env['agents'][o]['success']['drift']['mean']:.2f}" for o in data["oracles"]
                 if o in env["agents"] and "drift" in env["agents"][o]["success"]]
        if bound:
            parts.append(f"bound: {', '.join(bound)}")
        for twin in data["twins"]:
            if twin in env["agents"] and "drift" in env["agents"][twin]["success"]:
                gap = versus(label, twin, "ppo")
                parts.append(f"ceiling: {twin} {env['agents'][twin]['success']['drift']['mean']:.2f}"
                             + (f", {gap}" if gap else ""))
        lines.append(f"* **{label}** ({env['drift_score']} score): " + "; ".join(parts) + ".")
    return lines


def markdown(data: dict[str, Any], figure: str | None = None) -> str:
    """The ``rl-study`` block: size, drift-score and overall tables, steps to 90 %, time split, winners
    (and the image ``figure``, a path relative to the page, when given)."""
    spec = data["spec"]
    envs = data["envs"]
    agents = data["agents"]
    lines = [f"Size `{spec['name']}`: {len(data['train_seeds'])} training seeds per cell, "
             f"{spec['timesteps']:,} training steps per unit, {spec['eval_episodes']} held-out episodes "
             f"(curves: {spec['curve_episodes']} at each of {spec['checkpoints']} checkpoints), "
             f"engine `{spec['engine']}`; " + ", ".join(f"{k} {v}" for k, v in data["versions"].items())
             + f"; the {data['units']['planned']} units took {data['unit_s'] / 60:.0f} CPU-minutes in all (sum of "
             f"their wall times, one thread each). Mean [95 % bootstrap CI across training seeds].", ""]
    lines += ["Final drift score (success in the reversal phase; Poisson: after the first change):", "",
              "| agent | " + " | ".join(e["label"] for e in envs) + " |",
              "|---|" + "---|" * len(envs)]
    for agent in agents:
        lines.append(f"| {agent} | " + " | ".join(_ci(e["agents"][agent]["success"]["drift"]) for e in envs) + " |")
    lines += ["", "Final overall success:", "", "| agent | " + " | ".join(e["label"] for e in envs) + " |",
              "|---|" + "---|" * len(envs)]
    for agent in agents:
        lines.append(f"| {agent} | " + " | ".join(_ci(e["agents"][agent]["success"]["overall"]) for e in envs) + " |")
    lines += ["", "Sample efficiency: environment steps until the drift score first reaches 90 % of its final "
              "value (checkpoint resolution; 0 means the untrained policy already scored that much, i.e. "
              "training gained little on this score):", "",
              "| agent | " + " | ".join(e["label"] for e in envs) + " |", "|---|" + "---|" * len(envs)]
    for agent in agents:
        lines.append(f"| {agent} | " + " | ".join(_steps(e["agents"][agent]["steps_to_90"]) for e in envs) + " |")
    lines += ["", "Time split of training (mean over environments and seeds; seconds per unit; "
              "env+memory steps/s = training steps / time in environment and memory steps):", "",
              "| agent | path | env+memory steps/s | env+memory s | policy forward s | PPO update s | eval s | "
              "training steps/s |", "|---|---|---|---|---|---|---|---|"]
    for agent in agents:
        rows = [e["agents"][agent] for e in envs]
        paths = sorted({r["path"] for r in rows})

        def mean(key: str) -> float:
            return sum(r["timing"][key] for r in rows) / len(rows)

        lines.append(f"| {agent} | {', '.join(paths)} | {mean('env_steps_per_s'):,.0f} | {mean('env_s'):.1f} | "
                     f"{mean('policy_s'):.1f} | {mean('update_s'):.1f} | {mean('eval_s'):.1f} | "
                     f"{mean('train_steps_per_s'):,.0f} |")
    lines += twin_gap(data)
    lines += ["", "Who wins where (drift score; oracle and twin agents excluded; paired sign-flip tests by "
              f"training seed, Holm over {len(data['comparisons'])} comparisons; with {len(data['train_seeds'])} seeds the "
              f"smallest possible p is {data['smallest_p_value']:.3g}):", ""]
    lines += winners(data)
    if figure:
        lines += ["", f"![Drift-phase success against environment steps]({figure})"]
    return "\n".join(line for line in lines).rstrip() + "\n"


def twin_gap(data: dict[str, Any]) -> list[str]:
    """The partial-observability table: per environment the gap ``twin - ppo`` in drift score and
    the share of it each other agent closes, ``(agent - ppo) / (twin - ppo)`` (empty without a
    twin agent or ``ppo``)."""
    envs, twins = data["envs"], data["twins"]
    if not twins or "ppo" not in data["agents"]:
        return []
    twin = twins[0]

    def drift(env: dict[str, Any], agent: str) -> float:
        return float(env["agents"][agent]["success"].get("drift", {"mean": float("nan")})["mean"])

    gaps = [drift(e, twin) - drift(e, "ppo") for e in envs]
    lines = ["", f"The partial-observability gap: drift score of {twin} (the same PPO on the fully observed "
             f"twin) minus ppo's, and the share of that gap each agent closes, (agent - ppo) / ({twin} - ppo); "
             f"'-' where the gap is under {MIN_GAP:.2f}:", "",
             "| | " + " | ".join(e["label"] for e in envs) + " |", "|---|" + "---|" * len(envs),
             f"| gap ({twin} - ppo) | " + " | ".join(f"{g:+.2f}" for g in gaps) + " |"]
    for agent in data["agents"]:
        if agent in ("ppo", twin):
            continue
        cells = [f"{(drift(e, agent) - drift(e, 'ppo')) / g:.2f}" if g >= MIN_GAP else "-"
                 for e, g in zip(envs, gaps)]
        lines.append(f"| {agent} | " + " | ".join(cells) + " |")
    return lines


def curves_figure(data: dict[str, Any]) -> Any:
    """Drift score against environment steps per environment: mean and CI band across training seeds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = data["envs"]
    fig, axes = plt.subplots(1, len(envs), figsize=(4.2 * len(envs), 3.6), squeeze=False)
    colors = plt.get_cmap("tab10")
    for ax, env in zip(axes[0], envs):
        for k, (agent, row) in enumerate(env["agents"].items()):
            curve = row["curve"]
            style = "--" if agent in data["oracles"] else (":" if agent in data["twins"] else "-")
            ax.plot(curve["steps"], curve["mean"], style, color=colors(k % 10), label=agent, lw=1.5)
            ax.fill_between(curve["steps"], curve["ci_low"], curve["ci_high"], color=colors(k % 10), alpha=0.15)
        ax.set_title(f"{env['label']} ({env['drift_score']})", fontsize=10)
        ax.set_xlabel("environment steps")
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("drift-phase success")
    axes[0][-1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def write_rl(data: dict[str, Any], out: Path) -> list[str]:
    """Write every file of :data:`FILES` into ``out`` atomically, then ``manifest.json``; the names written."""
    write_json_atomic(out / "rl.json", data)
    write_text_atomic(out / "rl.csv", csv_text(data))
    figure = curves_figure(data)
    try:
        write_figure_atomic(figure, out / "curves.png")
    finally:
        import matplotlib.pyplot as plt

        plt.close(figure)
    write_text_atomic(out / "rl.md", markdown(data))
    write_manifest(out, FILES, seeds=data["train_seeds"], methods=data["agents"], study="rl",
                   library_versions=data["versions"])
    return list(FILES)


__all__ = ["BLOCK", "FILES", "MIN_GAP", "csv_text", "curves_figure", "markdown", "twin_gap", "winners", "write_rl"]
