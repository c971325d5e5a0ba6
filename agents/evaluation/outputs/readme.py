"""``tepa-bench readme``: the result tables of the README and the documentation pages,
generated from a ``reproduce`` directory.

Each generated table is marked with ``<!-- begin:NAME -->`` and ``<!-- end:NAME -->``,
in ``README.md`` or in a page under ``docs/``; :func:`update_readme` replaces what lies
between them and nothing else (through :mod:`~tepa_envs.agents.evaluation.outputs.blocks`,
the one block writer), so no number in a table is typed by hand. A table whose inputs
are absent is left as it is, and the findings table keeps the rows of the settings the
directory does not hold: a generator never removes what it did not regenerate.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from tepa_envs.agents.evaluation.analysis.leaderboard import ORACLES
from tepa_envs.agents.evaluation.outputs.blocks import MARKER, blocks, markdown_files, merge_rows, write_blocks
from tepa_envs.agents.evaluation.outputs.facts_tables import facts_markdown
from tepa_envs.agents.evaluation.outputs.files import check_manifest, write_bytes_atomic
from tepa_envs.agents.evaluation.outputs.leaderboard import readme_metrics, readme_table
from tepa_envs.agents.evaluation.outputs.report import format_p
from tepa_envs.agents.evaluation.outputs.tables import markdown_table

FIGURES: tuple[tuple[str, str], ...] = (
    ("controlled/success.png", "docs/success_controlled.png"),
    ("executable/success.png", "docs/results/success_executable.png"),
    ("preference/success.png", "docs/results/success_preference.png"),
    ("suite/heatmap.png", "docs/results/suite_heatmap.png"),
)
"""Figures of a results directory and where the documentation shows them (copied by
:func:`update_readme` beside the tables generated from the same run)."""
SHORT_PHASES = {"stable": "stable", "light_drift": "light drift", "full_reversal": "full reversal",
                "partial_return": "partial return", "overall": "overall"}
__all__ = ["FIGURES", "MARKER", "copy_figures", "tables", "update_readme"]


def _load(path: Path) -> Any:
    return json.loads(path.read_text()) if path.exists() else None


def _f(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _p(comparison: dict[str, Any]) -> str:
    return format_p(comparison["p_holm"], comparison.get("p_at_floor", False))


def setting_table(directory: Path, phases: tuple[str, ...]) -> str:
    """Every method: success with 95 % CI and block range per phase, trials, MPI, limit gap, paper."""
    results = _load(directory / "results.json")
    protocol = _load(directory / "protocol.json")
    focus = protocol["focus_phase"]
    limit = protocol["limits"]["oracle_reset_perfect_reader"]
    limit_focus = _phase_value(limit, results, focus)
    header = ["method"] + [f"{SHORT_PHASES[p]} [95% CI] (50-seed blocks)" for p in phases]
    header += ["trials / episode", f"MPI ({SHORT_PHASES[focus]})", f"gap to limit ({SHORT_PHASES[focus]})",
               f"view acc. ({SHORT_PHASES[focus]})", f"keeps refuted 2+ ({SHORT_PHASES[focus]})", "paper"]
    rows = []
    for method in results["methods"]:
        row = [method]
        for phase in phases:
            cell = results["summary"][method][phase]
            blocks = protocol["methods"][method]["phases"][phase]
            spread = ("" if blocks["block_min"] is None
                      else f" ({_f(blocks['block_min'], 2)}–{_f(blocks['block_max'], 2)})")
            row.append(f"{_f(cell['mean'])} [{_f(cell['ci_low'])}, {_f(cell['ci_high'])}]{spread}")
        trials = protocol["trials_per_episode"].get(method, 0.0)
        row.append(f"{trials:.1f}" if trials else "0")
        row.append(_f(results["summary"][method][focus].get("mpi"), 2))
        row.append(f"{results['summary'][method][focus]['mean'] - limit_focus:+.3f}")
        row += _view_cells(results["drift_metrics"].get(method, {}), focus)
        row.append(_f(results.get("paper", {}).get(method, {}).get(focus)))
        rows.append(row)
    widest = max(m["max_half_width"] for m in protocol["methods"].values())
    note = (f"\n{protocol['seeds']} seeds (cap {protocol['seed_cap']}); the widest 95 % CI half-width of any "
            f"method on any phase is {widest:.4f} (target {protocol['max_half_width']}). Limit on "
            f"{SHORT_PHASES[focus]}: oracle reset with a perfect reader (`follow_prob = 1`) "
            f"{limit_focus:.3f}, with this reader {_phase_value(protocol['limits']['oracle_reset'], results, focus):.3f}"
            + _view_limit(protocol, results, focus) + ". View acc.: the share of tasks where the memory "
            "showed the correct value first; keeps refuted 2+: where a value that failed twice since it last "
            "worked was still shown first (both scored against the oracle without the reader, on the evidence "
            "this reader produced; [definitions](../results_schema.md)).\n")
    return markdown_table(header, rows) + note


def _view_cells(metrics: dict[str, Any], phase: str) -> list[str]:
    """View accuracy and the lock-in probe of one method on ``phase`` ("—" where not recorded)."""
    row = metrics.get("views", {}).get("phases", {}).get(phase)
    if row is None:
        return ["—", "—"]
    return [_f(row["correct_share"]), _f(row["persistence_2"])]


def _phase_value(by_index: dict[str, float], results: dict[str, Any], phase: str) -> float:
    """A value keyed by phase index (``"None"``: the whole stream), looked up by phase name."""
    return by_index["None"] if phase == "overall" else by_index[str(results["phases"].index(phase))]


def comparisons_table(directory: Path, pairs: list[tuple[str, str]]) -> str:
    """Paired differences (method − baseline) per phase, with Holm-corrected p."""
    results = _load(directory / "results.json")
    found = {(c["method"], c["baseline"], c["phase"]): c for c in results["comparisons"]}
    rows = []
    for method, baseline in pairs:
        for phase in ("full_reversal", "overall"):
            c = found.get((method, baseline, phase))
            if c is None:
                continue
            rows.append([f"{method} − {baseline}", SHORT_PHASES[phase],
                         f"{c['diff']:+.3f} [{c['ci_low']:+.3f}, {c['ci_high']:+.3f}]", _p(c),
                         "yes" if c["significant"] else "no"])
    alpha = results.get("alpha", 0.05)
    return (markdown_table(["difference", "phase", "mean [95% CI]", "Holm p", f"significant at α = {alpha}"], rows)
            + f"\nHolm–Bonferroni over all {len(results['comparisons'])} comparisons of the run.\n")


def _view_limit(protocol: dict[str, Any], results: dict[str, Any], focus: str) -> str:
    """The oracle-view ceiling beside the oracle-reset limit, when the run measured it."""
    limits = protocol["limits"]
    if "oracle_view" not in limits:
        return ""
    return (f"; oracle view (the memory that shows the true value: the most any memory gives a reader) "
            f"{_phase_value(limits['oracle_view_perfect_reader'], results, focus):.3f} with a perfect reader, "
            f"{_phase_value(limits['oracle_view'], results, focus):.3f} with this reader")


def findings_table(results_dir: Path, names: tuple[str, ...]) -> str:
    """Per setting, every method whose success on the focus phase is above TEPA's, paired by seed."""
    rows = []
    for name in names:
        results = _load(results_dir / name / "results.json")
        if results is None:
            continue
        focus = results["setting_focus_phase"] if "setting_focus_phase" in results else (
            "overall" if name == "preference" else "full_reversal")
        tepa = results["summary"]["tepa"][focus]["mean"]
        above = [c for c in results["comparisons"]
                 if c["baseline"] == "tepa" and c["phase"] == focus and c["diff"] >= 0.0005]
        for c in sorted(above, key=lambda c: -c["diff"]):
            rows.append([name, SHORT_PHASES[focus], f"{tepa:.3f}", c["method"],
                         f"{c['diff']:+.3f} [{c['ci_low']:+.3f}, {c['ci_high']:+.3f}]", _p(c),
                         "yes" if c["significant"] else "no"])
        if not above:
            rows.append([name, SHORT_PHASES[focus], f"{tepa:.3f}", "(none)", "—", "—", "—"])
    table = markdown_table(["setting", "phase", "TEPA", "method above TEPA", "method − TEPA [95% CI]", "Holm p",
                    "significant"], rows)
    studies = []
    for path, label, key in ((results_dir / "controlled" / "n_keys.json", "controlled, n_keys = {}",
                              "full_reversal_success"),
                             (results_dir / "controlled" / "key_noise.json", "controlled, {:.0%} noisy keys",
                              "full_reversal_success"),
                             (results_dir / "preference" / "main_profile_share.json",
                              "preference, main_profile_share = {}", "overall_success")):
        study = _load(path)
        if study is None:
            continue
        for i, level in enumerate(study["levels"]):
            tepa = study[key]["tepa"][i]
            above = sorted(((values[i] - tepa, method) for method, values in study[key].items()
                            if method not in ORACLES and values[i] - tepa >= 0.0005), reverse=True)
            studies.append([label.format(level), "overall" if key == "overall_success" else "full reversal",
                            f"{tepa:.3f}", ", ".join(f"{m} {d:+.3f}" for d, m in above) or "(none)",
                            str(study["seeds"])])
    if not studies:
        return table
    return (table + "\nSecondary studies (means over seeds, not paired-tested; the oracle bounds left out):\n\n"
            + markdown_table(["study", "phase", "TEPA", "methods above TEPA (difference)", "seeds"], studies))


def study_table(path: Path, levels_label: Callable[[Any], str]) -> str:
    data = _load(path)
    header = ["method"] + [levels_label(level) for level in data["levels"]]
    rows = [[m] + [_f(x) for x in values] for m, values in data["full_reversal_success"].items()]
    paper = data.get("paper") or {}
    for method, values in paper.items():
        rows.append([f"{method} (paper)"] + [_f(x) for x in values])
    return markdown_table(header, rows) + f"\n{data['seeds']} seeds per cell; full-reversal success.\n"


def stated_table(path: Path) -> str:
    """The preference stream's overall success per method over ``stated_rate`` x ``stated_prob``."""
    data = _load(path)
    cells = data["cells"]
    header = ["method"] + [f"rate {c['stated_rate']:g}, prob {c['stated_prob']:g}" for c in cells]
    rows = []
    for method in data["methods"]:
        row = [method]
        for cell in cells:
            text = _f(cell["overall_success"][method])
            row.append(f"**{text}**" if cell["best"] == method else text)
        rows.append(row)
    rows.append(["*Kendall τ vs the default cell*"] + [_f(c["kendall_tau"], 2) for c in cells])
    default = data["default"]
    return (markdown_table(header, rows)
            + f"\n{data['seeds']} seeds per cell, the same in every cell; overall success; rate: the share of "
              "sessions whose text states the preference (the environment's `stated_rate`); prob: how often the "
              "reader takes a stated value over a different one the memory shows first (its `stated_prob`); "
              "**bold**: the best non-oracle "
              f"method of the cell; default cell: rate {default['stated_rate']:g}, prob {default['stated_prob']:g}.\n")


def robustness_table(path: Path) -> str:
    data = _load(path)
    rows = []
    for row in data["rows"]:
        reader = ", ".join(f"{k} = {v}" for k, v in row["reader"].items())
        ranking = row["ranking"]
        tau = row["kendall_tau"]
        rows.append([reader, " > ".join(ranking[:4]), str(ranking.index("tepa") + 1), _f(tau, 2)])
    return (markdown_table(["reader", "best four (focus phase)", "TEPA's rank", "Kendall τ vs default"], rows)
            + f"\n{data['seeds']} seeds per reader setting; τ compares every method's mean success "
              f"with the default reader's ({', '.join(f'{k} = {v}' for k, v in data['default_reader'].items())}).\n")


def ablation_table(path: Path) -> str:
    data = _load(path)
    baselines = data.get("baselines", {label: "tepa" for label in data["variants"]})
    with_overall = data["focus_phase"] != "overall"
    rows = [[label, json.dumps(kwargs) if kwargs else "(defaults)", _f(data["success"][label]), baselines[label],
             f"{data['success'][label] - data['success'][baselines[label]]:+.3f}"]
            + ([_f(data["overall"][label])] if with_overall else [])
            for label, kwargs in data["variants"].items()]
    header = (["variant", "choice", SHORT_PHASES[data["focus_phase"]], "compared with", "difference"]
              + (["overall"] if with_overall else []))
    text = markdown_table(header, rows) + f"\n{data['seeds']} seeds, paired."
    literal = data.get("literal_paper_readings")
    if literal:
        text += (f" The paper's rules, read literally where it is silent in each equally literal way "
                 f"({', '.join(literal['variants'])}): {SHORT_PHASES[data['focus_phase']]} "
                 f"{literal['min']:.3f} to {literal['max']:.3f}.")
    return text + "\n"


def trial_cost_table(path: Path) -> str:
    data = _load(path)
    free, task = data["modes"]["free"], data["modes"]["task"]
    focus = SHORT_PHASES[data["focus_phase"]]
    with_overall = data["focus_phase"] != "overall"
    rows = [[m, _f(free["success"][m]), _f(task["success"][m])]
            + ([_f(free["overall"][m]), _f(task["overall"][m])] if with_overall else [])
            + [f"{free['trials_per_episode'][m]:.1f}"] for m in free["success"]]
    header = (["method", f"{focus}, free trials", f"{focus}, trial = a task"]
              + (["overall, free", "overall, trial = a task"] if with_overall else []) + ["trials / episode"])
    return markdown_table(header, rows) + f"\n{data['seeds']} seeds.\n"


def facts_table(path: Path) -> str:
    return facts_markdown(_load(path))


def tables(results_dir: Path) -> dict[str, str]:
    """Every generated table by marker name (those whose inputs exist in ``results_dir``).

    Every setting directory read must hold a complete run (its manifest matches its
    files); a torn or hand-edited directory raises :class:`ManifestError`."""
    for name in ("controlled", "executable", "preference", "facts"):
        if (results_dir / name).is_dir():
            check_manifest(results_dir / name)
    out: dict[str, str] = {}
    for name in ("controlled", "executable", "preference"):
        directory = results_dir / name
        if not (directory / "results.json").exists():
            continue
        out[name] = setting_table(directory, ("full_reversal", "overall"))
        out[f"{name}-comparisons"] = comparisons_table(directory, [
            ("tepa", "append-only"), ("tepa", "no-memory"), ("lww", "no-memory"), ("reactive-forgetting", "no-memory"),
            ("tepa-full", "no-memory"), ("append-only", "no-memory")])
        if (directory / "robustness.json").exists():
            out[f"{name}-robustness"] = robustness_table(directory / "robustness.json")
        if (directory / "ablation.json").exists():
            out[f"{name}-ablation"] = ablation_table(directory / "ablation.json")
        if (directory / "trial_cost.json").exists():
            out[f"{name}-trial-cost"] = trial_cost_table(directory / "trial_cost.json")
    if any((results_dir / name / "results.json").exists() for name in ("controlled", "executable", "preference")):
        out["findings"] = findings_table(results_dir, ("controlled", "executable", "preference"))
    controlled = results_dir / "controlled"
    if (controlled / "key_noise.json").exists():
        out["key-noise"] = study_table(controlled / "key_noise.json", lambda x: f"{x:.0%} noisy keys")
    if (controlled / "n_keys.json").exists():
        out["n-keys"] = study_table(controlled / "n_keys.json", lambda x: f"n_keys = {x}")
    share = results_dir / "preference" / "main_profile_share.json"
    if share.exists():
        out["main-profile-share"] = study_table(share, lambda x: f"main_profile_share = {x}")
    if (results_dir / "preference" / "stated.json").exists():
        out["preference-stated"] = stated_table(results_dir / "preference" / "stated.json")
    if (results_dir / "facts" / "results.json").exists():
        out["facts"] = facts_table(results_dir / "facts" / "results.json")
    if (results_dir / "suite" / "suite.json").exists():  # `tepa-bench suite --out results/suite`
        check_manifest(results_dir / "suite")
        out["suite-leaderboard"] = readme_table(results_dir / "suite")
        if all("metrics" in s for s in _load(results_dir / "suite" / "suite.json")["scenarios"]):
            out["suite-metrics"] = readme_metrics(results_dir / "suite")
    return out


def copy_figures(results_dir: Path, root: Path) -> list[Path]:
    """Copy each figure of :data:`FIGURES` that ``results_dir`` holds to its place under
    ``root`` (only where ``root`` has a ``docs/`` folder; its setting's manifest was checked
    by :func:`tables`); returns the files written."""
    written = []
    for source, target in FIGURES:
        path, destination = results_dir / source, root / target
        if path.is_file() and (root / "docs").is_dir():
            destination.parent.mkdir(parents=True, exist_ok=True)
            data = path.read_bytes()
            if not destination.is_file() or destination.read_bytes() != data:
                write_bytes_atomic(destination, data)
            written.append(destination)
    return written


def update_readme(readme: Path, results_dir: Path) -> list[str]:
    """Replace every marked table whose inputs exist, in ``readme`` or in any page of the
    ``docs/`` folder beside it; returns the names replaced, in the order they appear.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> _ = (root / "README.md").write_text("<!-- begin:speed -->\\nkept\\n<!-- end:speed -->\\n")
    >>> update_readme(root / "README.md", root)  # an empty results directory: nothing to write
    []
    >>> (root / "README.md").read_text()
    '<!-- begin:speed -->\\nkept\\n<!-- end:speed -->\\n'
    """
    readme = Path(readme)
    generated = tables(Path(results_dir))
    files = markdown_files(readme.parent, readme)
    present = {name: body for path in files for name, body in blocks(path.read_text(encoding="utf-8")).items()}
    if "findings" in generated and "findings" in present:
        settings: set[str] = {name for name in ("controlled", "executable", "preference") if name in generated}
        studies = ({"controlled"} if {"key-noise", "n-keys"} & set(generated) else set()) | (
            {"preference"} if "main-profile-share" in generated else set())
        generated["findings"] = merge_rows(present["findings"], generated["findings"],
                                           {"setting": settings, "study": studies})
    bodies = {name: body for name, body in generated.items() if name in present}
    write_blocks(bodies, readme.parent, readme)
    copy_figures(Path(results_dir), readme.parent)
    order = [m.group("name") for path in files for m in MARKER.finditer(path.read_text(encoding="utf-8"))]
    return [name for name in order if name in bodies]
