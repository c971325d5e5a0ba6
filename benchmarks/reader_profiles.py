"""Which conclusions hold under which reader: every method ranked under every shipped
reader profile, and the SmolLM2 profile's predictions checked against the real model.

    python benchmarks/reader_profiles.py rank [--seeds 200] [--workers 2] [--out benchmarks/profiles/rankings.json]
    python benchmarks/reader_profiles.py validate [--seeds 200] [--out benchmarks/profiles/validation.json]
    python benchmarks/reader_profiles.py readme [--rankings ...] [--validation ...]

* ``rank``: every registered method on the controlled, preference, ManyKeys and
  Poisson scenarios under each profile of :data:`~tepa_envs.agents.readers.profile.PROFILES`
  (the same seeds for every method and profile), per method the mean success on the
  scenario's focus phase; the ranking under each profile; Kendall's tau between every
  two profiles' means; each headline claim (``studies.profiles.CLAIMS``) as a paired
  difference with its 95 % bootstrap CI under each profile, marked as holding only
  when the CI lies on the claimed side of 0; and, on shared memory-blind traces,
  Kendall's tau between each reader-free view measure and closed-loop success.
* ``validate``: the ``smollm2-135m`` profile (calibrated on held-out prompts by
  ``tepa-bench calibrate``) predicts, through the simulated reader, each method's
  success on controlled drift; the real model's success on the same environment
  comes from the committed LM study (``benchmarks/lm/lm_study.jsonl``, greedy,
  seeds 0..9). Per method: predicted, measured (bootstrap CI over the study's
  seeds), their difference, and Kendall's tau between the two orders.
* ``readme``: the claims and the validation as README blocks (``reader-profiles``,
  ``profile-validation``), every table on the generated page ``docs/reader_profiles.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

import tepa_envs  # noqa: F401
from tepa_envs.agents.evaluation import evaluate, settings_for
from tepa_envs.agents.evaluation.analysis.statistics import bootstrap_ci
from tepa_envs.agents.evaluation.outputs.blocks import BlockError, write_block
from tepa_envs.agents.evaluation.studies.profiles import profile_rankings, shared_traces
from tepa_envs.agents.memories.registry import METHOD_NAMES
from tepa_envs.agents.readers.profile import PROFILES, load_profile

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
STUDY = HERE / "lm" / "lm_study.jsonl"
SCENARIOS: dict[str, tuple[str, str]] = {
    "controlled": ("TEPA/RegimeDrift-v0", "full_reversal"),
    "preference": ("TEPA/PreferenceStream-v0", "overall"),
    "many-keys": ("TEPA/RegimeDrift-ManyKeys-v0", "overall"),
    "poisson": ("TEPA/RegimeDrift-Poisson-v0", "overall"),
}
"""Scenario -> (environment, focus phase): the headline settings and two multi-key ones."""


def focus_index(env_id: str, focus: str) -> int | None:
    return None if focus == "overall" else list(settings_for(env_id).phase_names).index(focus)


def rank(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"seeds": args.seeds, "profiles": list(PROFILES), "methods": list(METHOD_NAMES),
                           "scenarios": {}}
    for scenario, (env_id, focus) in SCENARIOS.items():
        index = focus_index(env_id, focus)
        result = profile_rankings(env_id, METHOD_NAMES, range(args.seeds), index, workers=args.workers)
        closed = evaluate(env_id, list(METHOD_NAMES), range(args.seeds), workers=args.workers, metrics=False)
        traces = shared_traces(env_id, METHOD_NAMES, range(args.seeds), closed, index, workers=args.workers)
        out["scenarios"][scenario] = {**result, "focus_name": focus, "shared_traces": traces}
        print(f"{scenario}: done", file=sys.stderr, flush=True)
    return out


def validate(args: argparse.Namespace) -> dict[str, Any]:
    rows = [json.loads(line) for line in STUDY.read_text().splitlines() if line.strip()]
    env_id = "TEPA/RegimeDrift-v0"
    measured_rows = [r for r in rows if r["env"] == env_id and r["reader"] == "local-lm"]
    methods = list(dict.fromkeys(r["method"] for r in measured_rows))
    profile = load_profile("smollm2-135m")
    evaluation = evaluate(env_id, methods, range(args.seeds), workers=args.workers,
                          reader_kwargs=profile.reader_kwargs(), metrics=False)
    out: dict[str, Any] = {"env_id": env_id, "profile": profile.to_dict(), "predicted_seeds": args.seeds,
                           "measured_seeds": sorted({r["seed"] for r in measured_rows}), "methods": {}}
    for method in methods:
        per_seed = np.array([r["success"] for r in measured_rows if r["method"] == method])
        measured = bootstrap_ci(per_seed)
        predicted = bootstrap_ci(evaluation.phase_success(method, None))
        out["methods"][method] = {"predicted": predicted.mean, "predicted_ci": [predicted.ci_low, predicted.ci_high],
                                  "measured": measured.mean, "measured_ci": [measured.ci_low, measured.ci_high],
                                  "diff": predicted.mean - measured.mean,
                                  "inside": bool(measured.ci_low <= predicted.mean <= measured.ci_high)}
    predicted_means = [v["predicted"] for v in out["methods"].values()]
    measured_means = [v["measured"] for v in out["methods"].values()]
    out["kendall_tau"] = float(stats.kendalltau(predicted_means, measured_means).statistic)
    out["mean_abs_diff"] = float(np.mean(np.abs(np.subtract(predicted_means, measured_means))))
    return out


# ------------------------------------------------------------------------------ README blocks
def rankings_markdown(data: dict[str, Any]) -> str:
    profiles = data["profiles"]
    lines = [f"Mean success on each scenario's focus phase, {data['seeds']} seeds per cell (the same for every "
             "method and profile); rank in brackets. Profiles: " + ", ".join(f"`{p}`" for p in profiles) + ".", ""]
    for scenario, result in data["scenarios"].items():
        tau = ", ".join(f"{k.replace('|', '/')} {v:+.2f}" for k, v in result["kendall_tau"].items() if v is not None)
        lines += [f"**{scenario}** (`{result['env_id']}`, {result['focus_name']}); Kendall's tau between "
                  f"profiles: {tau}", "", "| method | " + " | ".join(profiles) + " |", "|---|" + "---|" * len(profiles)]
        for method in data["methods"]:
            cells = [f"{result['means'][p][method]:.3f} ({result['ranking'][p].index(method) + 1})" for p in profiles]
            lines.append(f"| {method} | " + " | ".join(cells) + " |")
        lines += ["", "| claim | " + " | ".join(profiles) + " |", "|---|" + "---|" * len(profiles)]
        for claim, rows in result["claims"].items():
            cells = [f"{'holds' if r['holds'] else 'fails'} {r['diff']:+.3f} [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]"
                     for r in (rows[p] for p in profiles)]
            lines.append(f"| {claim} | " + " | ".join(cells) + " |")
        traces = result["shared_traces"]
        agreement = ", ".join(f"{k} {v:+.2f}" for k, v in traces["kendall_tau_with_closed_loop"].items()
                              if v is not None)
        lines += ["", f"Shared memory-blind traces: Kendall's tau with closed-loop success (default reader) of "
                  f"{agreement}; best views: " + ", ".join(
                      f"{m} {traces['views'][m]['phases']['overall']['correct_share']:.3f}"
                      for m in traces["view_accuracy_ranking"][:4]) + ".", ""]
    return "\n".join(lines)


def validation_markdown(data: dict[str, Any]) -> str:
    p = data["profile"]
    lines = [f"`smollm2-135m` profile: follow {p['follow_plain']:.2f} (one value shown), {p['follow_validity']:.2f} "
             f"(validity shown), {p['follow_conflict']:.2f} (conflicting records); stated {p['stated_prob']:.2f}; "
             f"explores {p['empty_explore_prob']:.2f} when nothing is shown ({sum(p['counts'].values())} decisions). "
             f"Predicted on {data['predicted_seeds']} seeds; measured on seeds "
             f"{data['measured_seeds'][0]}..{data['measured_seeds'][-1]} of the LM study (`{data['env_id']}`, overall).",
             "", "| method | predicted | measured [95 % CI] | predicted − measured |", "|---|---|---|---|"]
    for method, row in data["methods"].items():
        lines.append(f"| {method} | {row['predicted']:.3f} | {row['measured']:.3f} "
                     f"[{row['measured_ci'][0]:.3f}, {row['measured_ci'][1]:.3f}] | {row['diff']:+.3f} |")
    inside = sum(r["inside"] for r in data["methods"].values())
    lines += ["", f"Kendall's tau between the predicted and the measured order: {data['kendall_tau']:+.2f}; mean "
              f"absolute difference {data['mean_abs_diff']:.3f}; {inside} of {len(data['methods'])} predictions "
              "inside the measured CI."]
    return "\n".join(lines)


def claims_markdown(data: dict[str, Any]) -> str:
    """The README's summary: each headline claim per scenario, holding or failing under each profile."""
    profiles = data["profiles"]
    lines = ["| scenario | claim | " + " | ".join(profiles) + " |", "|---|---|" + "---|" * len(profiles)]
    for scenario, result in data["scenarios"].items():
        for claim, rows in result["claims"].items():
            cells = [f"{'**holds**' if rows[p]['holds'] else 'fails'} ({rows[p]['diff']:+.3f})" for p in profiles]
            lines.append(f"| {scenario} | {claim} | " + " | ".join(cells) + " |")
    lines += ["", "TEPA's rank among the " + str(len(data["methods"])) + " methods (oracles included): " + "; ".join(
        f"{scenario} " + ", ".join(f"{p} {r['ranking'][p].index('tepa') + 1}" for p in profiles)
        for scenario, r in data["scenarios"].items()) + ".",
        "", "Kendall's tau between the `default` and the other profiles' method means: " + "; ".join(
        f"{scenario} " + ", ".join(f"{k.split('|')[1]} {v:+.2f}" for k, v in r["kendall_tau"].items()
                                   if k.startswith("default|") and v is not None)
        for scenario, r in data["scenarios"].items()) + ".",
        f"{data['seeds']} seeds per cell; every table in full: `docs/reader_profiles.md`."]
    return "\n".join(lines)


def write_readme_block(name: str, body: str) -> None:
    """One generated block, wherever it lives (README.md or a page under docs/)."""
    try:
        write_block(name, body + "\n", ROOT)
    except BlockError as error:
        raise SystemExit(str(error)) from None


def write_page(data: dict[str, Any], validation: dict[str, Any]) -> None:
    page = HERE.parent / "docs" / "reader_profiles.md"
    text = ("# Rankings under every reader profile\n\n<!-- generated by benchmarks/reader_profiles.py readme; "
            "do not edit -->\n\n" + rankings_markdown(data) + "\n\n## The calibrated SmolLM2-135M profile against the "
            "real model\n\n" + validation_markdown(validation) + "\n")
    tmp = page.with_name(f".{page.name}.tmp")
    tmp.write_text(text)
    tmp.replace(page)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("rank", "validate", "readme"))
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rankings", default=str(HERE / "profiles" / "rankings.json"))
    parser.add_argument("--validation", default=str(HERE / "profiles" / "validation.json"))
    args = parser.parse_args()
    if args.command == "readme":
        rankings = json.loads(Path(args.rankings).read_text())
        validation = json.loads(Path(args.validation).read_text())
        write_readme_block("reader-profiles", claims_markdown(rankings))
        write_readme_block("profile-validation", validation_markdown(validation))
        write_page(rankings, validation)
        return
    data = rank(args) if args.command == "rank" else validate(args)
    target = Path(args.rankings if args.command == "rank" else args.validation)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    tmp.replace(target)
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
