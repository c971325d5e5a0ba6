"""``tepa-bench reproduce``: every study behind the README, written as JSON.

Per setting (``controlled``, ``executable``, ``preference``) into ``OUT/<setting>/``:

* ``results.json`` / ``results.csv`` / ``success.png``: every shipped method on
  the protocol's seeds (:func:`~tepa_envs.agents.evaluation.studies.protocol.evaluate_to_precision`);
* ``protocol.json``: seeds, half-widths, block spreads, the limits, trials per episode;
* ``robustness.json``: rankings across the reader grid, Kendall's tau;
* studies of their own: ``key_noise.json`` and ``n_keys.json`` (controlled),
  ``ablation.json`` (TEPA's named choices), ``trial_cost.json`` (trials paid with tasks),
  ``stated.json`` (preference: every method over ``stated_rate`` x ``stated_prob``).

``facts/results.json`` holds the FactConsolidation rows: synthetic and, where the
official MemoryAgentBench files are found (``$TEPA_MAB_DATA`` or the shared folder
beside a checkout), real, with each question's provenance
(:func:`~tepa_envs.agents.evaluation.studies.facts.reproduce_facts`). Every file is written
atomically, and each subdirectory gets ``manifest.json`` last (run id, seeds,
methods, versions, sha256 of every file; :func:`~tepa_envs.agents.evaluation.outputs.files.verify_manifest`
tells a complete setting from one a killed run left half-written). ``tepa-bench readme``
turns the directory into the README's tables.
"""

from __future__ import annotations

import inspect
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from scipy import stats

from tepa_envs.agents.evaluation.analysis.evaluation import Evaluation
from tepa_envs.agents.evaluation.analysis.leaderboard import ORACLES
from tepa_envs.agents.evaluation.analysis.paper import KEY_NOISE_LEVELS, KEY_NOISE_PAPER, SETTINGS, Setting
from tepa_envs.agents.evaluation.analysis.results import Summary
from tepa_envs.agents.evaluation.analysis.settings import settings_for
from tepa_envs.agents.evaluation.analysis.summary import summarize
from tepa_envs.agents.evaluation.engine.evaluate import evaluate
from tepa_envs.agents.evaluation.engine.jobs import MethodSpec, method_label
from tepa_envs.agents.evaluation.engine.progress import Progress, ProgressFactory
from tepa_envs.agents.evaluation.outputs.files import begin_run, prepare_output_dir, write_json_atomic, write_manifest
from tepa_envs.agents.evaluation.outputs.report import write_results
from tepa_envs.agents.evaluation.studies.facts import DEFAULT_READERS, reproduce_facts
from tepa_envs.agents.evaluation.studies.profiles import profile_rankings, shared_traces
from tepa_envs.agents.evaluation.studies.protocol import (
    Protocol, evaluate_to_precision, limits, precision_report, protocol_name, robustness,
)
from tepa_envs.agents.memories.registry import METHOD_NAMES
from tepa_envs.agents.memories.tepa_choices import CHOICE_NAMES, PAPER_LITERAL_READINGS, PRESETS
from tepa_envs.agents.readers.evidence_reader import EvidenceReader
from tepa_envs.preferences.env import PreferenceStreamEnv

Log = Callable[[str], None]
N_KEYS_LEVELS: tuple[int, ...] = (1, 2, 4)
MAIN_PROFILE_SHARES: tuple[float, ...] = (0.5, 0.8, 0.9, 1.0)
STATED_RATES: tuple[float, ...] = (0.0, 0.5, 0.85, 1.0)
"""PreferenceStream's ``stated_rate`` levels of the stated study: never, half the sessions,
the default, every session states the preference."""
STATED_PROBS: tuple[float, ...] = (0.0, 0.5, 1.0)
"""The reader's ``stated_prob`` levels of the stated study: ignores a stated value, the
default weight, always takes it."""
BASELINES: tuple[str, ...] = ("append-only", "no-memory", "tepa")
"""Every method is compared with these (``tepa`` as a baseline shows where TEPA loses)."""
TRIAL_METHODS: tuple[str, ...] = ("tepa-full", "lww-validation")
V0_FLIPS: tuple[tuple[str, Any], ...] = (
    ("theta_prop_fresh", 3), ("assertion_supersedes", False), ("window_outcomes", "support_and_conflict"),
    ("failed_candidate", "count"), ("failed_candidate", "ignore"), ("assertions_in_window", True),
    ("window_seed", "candidate_history"), ("revoke_check", "after_every_update"), ("revoke_check", "after_support"),
    ("tie_break", "first_created"), ("candidate_counting", "consecutive"))
"""One-choice changes away from the ``v0`` preset."""
PAPER_FLIPS: tuple[tuple[str, Any], ...] = tuple(
    (name, PRESETS["v0"][name]) for name in CHOICE_NAMES if PRESETS["paper"][name] != PRESETS["v0"][name]
) + tuple((name, value) for name, values in PAPER_LITERAL_READINGS.items() for value in values[1:]
          if value != PRESETS["v0"][name])
"""One-choice changes away from the ``paper`` preset: back to v0's value, and every other
equally literal reading of a point the paper is silent on."""
PAPER = MethodSpec("tepa preset=paper", "tepa", {"preset": "paper"})
ABLATIONS: tuple[MethodSpec, ...] = (
    tuple(MethodSpec(f"tepa {name}={value}", "tepa", {name: value}) for name, value in V0_FLIPS)
    + (PAPER,)
    + tuple(MethodSpec(f"tepa preset=paper, {name}={value}", "tepa", {"preset": "paper", name: value})
            for name, value in PAPER_FLIPS)
    + (MethodSpec("tepa-full contamination=count", "tepa-full", {"contamination": "count"}),)
)
"""TEPA variants for the ablation table: each differs in one named choice from ``tepa``
(the v0 preset) or from ``tepa preset=paper`` (the paper's rules read literally), so every
choice is flipped inside both presets; and TEPA-Full with a failed contamination check
counted against the candidate (the paper's "promote if >= 60 % pass" read literally)."""
LITERAL_PAPER_READINGS: tuple[str, ...] = (PAPER.label,) + tuple(
    f"tepa preset=paper, {name}={value}" for name, values in PAPER_LITERAL_READINGS.items() for value in values[1:])
"""The ablation rows that are equally literal readings of the paper (their range is reported)."""


def focus_index(setting: Setting) -> int | None:
    names = settings_for(setting.env_id).phase_names
    return names.index(setting.focus_phase) if setting.focus_phase in names else None


def trials_per_episode(evaluation: Evaluation) -> dict[str, float]:
    return {m: float(sum(sum(t.values()) for t in run.trials) / len(run.trials))
            for m, run in evaluation.runs.items()}


def _silent(label: str) -> Progress:
    return Progress(label, "off")


def reproduce_setting(name: str, protocol: Protocol, out: Path, *, workers: int = 1, alpha: float = 0.05,
                      log: Log = print, progress: ProgressFactory = _silent,
                      reader_kwargs: dict[str, Any] | None = None) -> Summary:
    """The headline run of one setting and its protocol, robustness and side studies;
    each stage is logged and shows its progress (``progress`` makes one per stage).
    ``reader_kwargs`` (e.g. a reader profile's) apply to every study's reader."""
    setting = SETTINGS[name]
    reader_kwargs = dict(reader_kwargs or {})
    phase_names = settings_for(setting.env_id).phase_names
    methods = list(setting.methods)
    log(f"{name}: {len(methods)} methods on {setting.env_id}, {protocol.seeds}+ seeds "
        f"({protocol_name(protocol)} protocol)")
    with progress(f"{name}: every method") as bar:
        evaluation = evaluate_to_precision(setting.env_id, methods, protocol, env_kwargs=dict(setting.env_kwargs),
                                           reader_kwargs=reader_kwargs, workers=workers, progress=bar)
    summary = summarize(evaluation, alpha=alpha, baselines=BASELINES).with_setting(setting)
    prepare_output_dir(out)
    begin_run(out)  # from here on the directory mixes two runs until the manifest is written
    written = write_results(summary, out, setting)

    def write(name: str, data: Any) -> None:
        write_json_atomic(out / name, data)
        written.append(name)

    report = precision_report(evaluation, protocol, phase_names)
    report["trials_per_episode"] = trials_per_episode(evaluation)
    report["focus_phase"] = setting.focus_phase
    report["protocol"] = protocol_name(protocol)
    with progress(f"{name}: oracle bound, perfect reader") as bar:
        report["limits"] = limits(evaluation, protocol, workers=workers, progress=bar)
    write("protocol.json", report)
    focus = focus_index(setting)
    side = _robustness_protocol(protocol, setting.env_id)
    with progress(f"{name}: robustness grid") as bar:
        write("robustness.json", robustness(
            setting.env_id, methods, side, focus, env_kwargs=dict(setting.env_kwargs),
            vary_stated=name == "preference", workers=workers, progress=bar, reader_kwargs=reader_kwargs))
    with progress(f"{name}: reader profiles") as bar:
        write("profiles.json", profile_rankings(
            setting.env_id, methods, range(side.robustness_seeds), focus, env_kwargs=dict(setting.env_kwargs),
            reader_kwargs=reader_kwargs, workers=workers, progress=bar))
    with progress(f"{name}: shared traces") as bar:
        write("shared_traces.json", shared_traces(
            setting.env_id, methods, range(side.robustness_seeds), evaluation, focus,
            env_kwargs=dict(setting.env_kwargs), workers=workers, progress=bar))
    if ABLATIONS and name in ("controlled", "preference"):
        with progress(f"{name}: TEPA ablation") as bar:
            write("ablation.json", ablation(setting, protocol, workers, bar, reader_kwargs))
    if name in ("controlled", "preference"):
        with progress(f"{name}: trials paid with tasks") as bar:
            write("trial_cost.json", trial_cost(setting, protocol, workers, bar, reader_kwargs))
    if name == "preference":
        with progress("preference: main profile share") as bar:
            write("main_profile_share.json", main_profile_share(protocol, workers, bar, reader_kwargs))
        with progress("preference: stated rate x stated prob") as bar:
            write("stated.json", stated(protocol, workers, bar, reader_kwargs))
    if name == "controlled":
        with progress("controlled: key noise") as bar:
            write("key_noise.json", key_noise(protocol, workers, bar, reader_kwargs))
        with progress("controlled: number of keys") as bar:
            write("n_keys.json", n_keys(protocol, workers, bar, reader_kwargs))
    write_manifest(out, written, seeds=summary.seeds, methods=summary.methods, setting=name,
                   env_id=setting.env_id, alpha=alpha)
    return summary


def _robustness_protocol(protocol: Protocol, env_id: str) -> Protocol:
    seeds = min(protocol.robustness_seeds, max(1, protocol.cap_for(env_id) // 8))
    if env_id == "TEPA/PreferenceStream-v0":  # a 4 x 3 grid instead of 4 readers
        seeds = max(1, seeds // 2)
    return replace(protocol, robustness_seeds=seeds)


def _focus_means(evaluation: Evaluation, focus: int | None) -> dict[str, float]:
    return {m: float(evaluation.phase_success(m, focus).mean()) for m in evaluation.methods}


def ablation(setting: Setting, protocol: Protocol, workers: int, progress: Progress | None = None,
             reader_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """TEPA and each one-choice variant on the setting's focus phase, paired by seed."""
    variants: list[str | MethodSpec] = ["tepa", "tepa-full", *ABLATIONS]
    evaluation = evaluate(setting.env_id, variants, range(protocol.study_seeds),
                          env_kwargs=dict(setting.env_kwargs), workers=workers, progress=progress,
                          reader_kwargs=reader_kwargs)
    focus = focus_index(setting)
    success = _focus_means(evaluation, focus)
    literal = [success[label] for label in LITERAL_PAPER_READINGS]
    return {"env_id": setting.env_id, "seeds": protocol.study_seeds, "focus_phase": setting.focus_phase,
            "variants": {method_label(v): ({} if isinstance(v, str) else v.kwargs) for v in variants},
            "baselines": {method_label(v): _ablation_baseline(v) for v in variants},
            "success": success,
            "overall": _focus_means(evaluation, None),
            "literal_paper_readings": {"variants": list(LITERAL_PAPER_READINGS), "min": min(literal),
                                       "max": max(literal)}}


def _ablation_baseline(variant: str | MethodSpec) -> str:
    """The row an ablation variant is compared with: the preset (or method) it departs from."""
    if isinstance(variant, str):
        return variant
    if variant.spec == "tepa-full":
        return "tepa-full"
    return PAPER.label if variant.kwargs.get("preset") == "paper" and variant != PAPER else "tepa"


def trial_cost(setting: Setting, protocol: Protocol, workers: int,
               progress: Progress | None = None, reader_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """Trial-validating methods with free trials and with each trial paid by one task."""
    focus = focus_index(setting)
    rows: dict[str, Any] = {}
    for mode in ("free", "task"):
        evaluation = evaluate(setting.env_id, ["no-memory", "tepa", *TRIAL_METHODS], range(protocol.study_seeds),
                              env_kwargs={**setting.env_kwargs, "trial_cost": mode}, workers=workers,
                              progress=progress, reader_kwargs=reader_kwargs)
        rows[mode] = {"success": _focus_means(evaluation, focus), "overall": _focus_means(evaluation, None),
                      "trials_per_episode": trials_per_episode(evaluation)}
    return {"env_id": setting.env_id, "seeds": protocol.study_seeds, "focus_phase": setting.focus_phase,
            "modes": rows}


def sweep(env_id: str, parameter: str, levels: Sequence[Any], protocol: Protocol, workers: int,
          progress: Progress | None = None, reader_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """Full-reversal and overall success of every method at each level of one env argument."""
    seeds = protocol.robustness_seeds
    reversal: dict[str, list[float]] = {m: [] for m in METHOD_NAMES}
    overall: dict[str, list[float]] = {m: [] for m in METHOD_NAMES}
    for level in levels:
        evaluation = evaluate(env_id, METHOD_NAMES, range(seeds), env_kwargs={parameter: level}, workers=workers,
                              progress=progress, reader_kwargs=reader_kwargs)
        for method in METHOD_NAMES:
            reversal[method].append(float(evaluation.phase_success(method, 2).mean()))
            overall[method].append(float(evaluation.phase_success(method, None).mean()))
    return {"env_id": env_id, "parameter": parameter, "levels": list(levels), "seeds": seeds,
            "full_reversal_success": reversal, "overall_success": overall}


def key_noise(protocol: Protocol, workers: int, progress: Progress | None = None,
              reader_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every method as a share of the evidence is filed under a corrupted key."""
    return {**sweep("TEPA/RegimeDrift-v0", "key_noise", KEY_NOISE_LEVELS, protocol, workers, progress, reader_kwargs),
            "paper": {m: list(v) for m, v in KEY_NOISE_PAPER.items()}}


def n_keys(protocol: Protocol, workers: int, progress: Progress | None = None,
           reader_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every method as the number of conflict keys grows."""
    return sweep("TEPA/RegimeDrift-v0", "n_keys", N_KEYS_LEVELS, protocol, workers, progress, reader_kwargs)


def main_profile_share(protocol: Protocol, workers: int, progress: Progress | None = None,
                       reader_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every method as the user's main profile takes a larger share of the sessions."""
    return sweep("TEPA/PreferenceStream-v0", "main_profile_share", MAIN_PROFILE_SHARES, protocol, workers, progress, reader_kwargs)


def stated(protocol: Protocol, workers: int, progress: Progress | None = None,
           reader_kwargs: dict[str, Any] | None = None, *, rates: Sequence[float] = STATED_RATES,
           probs: Sequence[float] = STATED_PROBS) -> dict[str, Any]:
    """Every method's overall success on the preference stream as a function of how often a
    session states the preference (the environment's ``stated_rate``) and how much the
    reader weighs a stated value (its ``stated_prob``), on the same seeds in every cell;
    each cell's ranking's Kendall tau against the default cell's."""
    seeds = _robustness_protocol(protocol, "TEPA/PreferenceStream-v0").robustness_seeds
    default = (inspect.signature(PreferenceStreamEnv).parameters["stated_rate"].default, EvidenceReader().stated_prob)
    cells: list[dict[str, Any]] = []
    for rate in rates:
        for prob in probs:
            evaluation = evaluate("TEPA/PreferenceStream-v0", METHOD_NAMES, range(seeds),
                                  env_kwargs={"stated_rate": rate}, workers=workers, progress=progress,
                                  reader_kwargs={**(reader_kwargs or {}), "stated_prob": prob})
            cells.append({"stated_rate": rate, "stated_prob": prob, "overall_success": _focus_means(evaluation, None)})
    base = min(cells, key=lambda c: abs(c["stated_rate"] - default[0]) + abs(c["stated_prob"] - default[1]))
    for cell in cells:
        tau = stats.kendalltau(list(base["overall_success"].values()), list(cell["overall_success"].values()))
        cell["kendall_tau"] = None if np.isnan(tau.statistic) else float(tau.statistic)
        means = cell["overall_success"]
        cell["best"] = max((m for m in means if m not in ORACLES), key=lambda m: means[m])
    return {"env_id": "TEPA/PreferenceStream-v0", "seeds": seeds, "stated_rates": list(rates),
            "stated_probs": list(probs), "default": {"stated_rate": default[0], "stated_prob": default[1]},
            "methods": list(METHOD_NAMES), "cells": cells}


def reproduce_facts_rows(workers: int, progress: Progress | None = None, local_lm: bool = False,
                         log: Log | None = None) -> list[dict[str, Any]]:
    """Every method under every question reader (``local-lm`` only when asked for)."""
    readers = (*DEFAULT_READERS, "local-lm") if local_lm else DEFAULT_READERS
    return reproduce_facts(methods=METHOD_NAMES, workers=workers, progress=progress, readers=readers, log=log)


def reproduce_all(names: Sequence[str], protocol: Protocol, out: Path, *, workers: int = 1,
                  alpha: float = 0.05, log: Log = print, progress: ProgressFactory = _silent,
                  reader_kwargs: dict[str, Any] | None = None, facts_local_lm: bool = False) -> None:
    for name in names:
        if name == "facts":
            log("facts: every split and length")
            with progress("facts: every split and length") as bar:
                rows = (reproduce_facts_rows(workers, bar, local_lm=True, log=log) if facts_local_lm
                        else reproduce_facts_rows(workers, bar))
            prepare_output_dir(out / "facts")
            begin_run(out / "facts")
            write_json_atomic(out / "facts" / "results.json", rows)
            write_manifest(out / "facts", ["results.json"], seeds=[0], setting="facts",
                           methods=list(dict.fromkeys(row["method"] for row in rows if "method" in row)))
        else:
            reproduce_setting(name, protocol, out / name, workers=workers, alpha=alpha, log=log, progress=progress,
                              reader_kwargs=reader_kwargs)
