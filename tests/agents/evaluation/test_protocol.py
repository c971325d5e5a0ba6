"""The protocol: the precision rule, block spreads, limits, and README tables generated from its output."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from tepa_envs.agents.evaluation.analysis.evaluation import Evaluation, MethodRuns
from tepa_envs.agents.evaluation.engine.evaluate import evaluate
from tepa_envs.agents.evaluation.engine.jobs import MethodSpec
from tepa_envs.agents.evaluation.outputs.files import ManifestError
from tepa_envs.agents.evaluation.outputs.readme import stated_table, update_readme
from tepa_envs.agents.evaluation.studies.protocol import (
    QUICK, Protocol, block_spread, evaluate_to_precision, half_widths, merge, seeds_needed,
)
from tepa_envs.agents.evaluation.studies.reproduce import reproduce_setting, stated

SMALL = {"phase_lengths": (5, 5, 5, 5)}


def _evaluation(per_seed: np.ndarray) -> Evaluation:
    success = np.repeat(per_seed[:, None], 4, axis=1).astype(bool)
    return Evaluation("TEPA/RegimeDrift-v0", {}, {}, list(range(per_seed.size)), np.array([0, 1, 2, 3]),
                      {"m": MethodRuns("m", success, [{} for _ in per_seed])})


def test_seeds_needed_scales_with_the_square_of_the_half_width_and_respects_the_cap():
    rng = np.random.default_rng(0)
    evaluation = _evaluation(rng.random(100) < 0.5)
    width = half_widths(evaluation)["m"]
    assert width == pytest.approx(1.96 * 0.5 / 10, rel=0.05)
    needed = seeds_needed(evaluation, width / 2, block=50, cap=10_000)
    assert needed % 50 == 0 and 400 <= needed < 450
    assert seeds_needed(evaluation, width / 2, block=50, cap=300) == 300
    assert seeds_needed(evaluation, width * 2, block=50, cap=10_000) == 100


def test_block_spread_is_the_range_of_disjoint_block_means():
    values = np.array([0.0] * 50 + [1.0] * 50 + [0.5] * 49)
    assert block_spread(values, 50) == (0.0, 1.0)
    assert block_spread(values[:60], 50) is None


def test_precision_rule_extends_every_method_and_keeps_pairing():
    protocol = Protocol(seeds=4, max_seeds=12, block=2, max_half_width=0.05)
    extended = evaluate_to_precision("TEPA/RegimeDrift-v0", ["lww", "no-memory"], protocol, env_kwargs=SMALL)
    assert extended.seeds == list(range(12))
    direct = evaluate("TEPA/RegimeDrift-v0", ["lww", "no-memory"], range(12), env_kwargs=SMALL)
    for method in ("lww", "no-memory"):
        assert np.array_equal(extended.runs[method].success, direct.runs[method].success)
    with pytest.raises(ValueError, match="same methods"):
        merge(extended, evaluate("TEPA/RegimeDrift-v0", ["lww"], range(2), env_kwargs=SMALL))


def test_method_specs_run_under_their_label():
    evaluation = evaluate("TEPA/RegimeDrift-v0", ["tepa", MethodSpec("tepa fresh=3", "tepa", {"theta_prop_fresh": 3})],
                          range(3), env_kwargs=SMALL)
    assert evaluation.methods == ["tepa", "tepa fresh=3"]
    with pytest.raises(ValueError, match="listed twice"):
        evaluate("TEPA/RegimeDrift-v0", ["tepa", MethodSpec("tepa", "lww")], range(1), env_kwargs=SMALL)


def test_readme_tables_are_generated_from_a_reproduce_directory(tmp_path):
    protocol = replace(QUICK, seeds=4, max_seeds=4, block=2, robustness_seeds=2, study_seeds=2,
                       follow_probs=(0.95,))
    reproduce_setting("controlled", protocol, tmp_path / "controlled", log=lambda message: None)
    results = json.loads((tmp_path / "controlled" / "results.json").read_text())
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- begin:controlled -->\nstale 0.123\n<!-- end:controlled -->\n"
                      "<!-- begin:unknown -->\nkept\n<!-- end:unknown -->\n")
    (tmp_path / "docs").mkdir()
    replaced = update_readme(readme, tmp_path)
    text = readme.read_text()
    assert replaced == ["controlled"] and "stale 0.123" not in text and "kept" in text
    figure = (tmp_path / "controlled" / "success.png").read_bytes()
    assert (tmp_path / "docs" / "success_controlled.png").read_bytes() == figure  # beside its table
    tepa = results["summary"]["tepa"]["full_reversal"]
    assert f"{tepa['mean']:.3f} [{tepa['ci_low']:.3f}, {tepa['ci_high']:.3f}]" in text
    assert "| view acc. (full reversal) | keeps refuted 2+ (full reversal) |" in text
    for method in ("tepa", "append-only"):
        views = results["drift_metrics"][method]["views"]["phases"]["full_reversal"]
        row = next(line for line in text.splitlines() if line.startswith(f"| {method} |"))
        assert row.split(" | ")[-3:-1] == [f"{views['correct_share']:.3f}", f"{views['persistence_2']:.3f}"]
    for name in ("protocol.json", "robustness.json", "ablation.json", "trial_cost.json", "key_noise.json",
                 "n_keys.json"):
        assert (tmp_path / "controlled" / name).exists(), name
    (tmp_path / "controlled" / "protocol.json").write_text("{}")
    with pytest.raises(ManifestError):
        update_readme(readme, tmp_path)


def test_the_stated_study_crosses_the_stream_and_the_reader_on_the_same_seeds(tmp_path):
    data = stated(replace(QUICK, robustness_seeds=4), 1, rates=(0.0, 1.0), probs=(0.0, 1.0))
    assert [(c["stated_rate"], c["stated_prob"]) for c in data["cells"]] == [(0.0, 0.0), (0.0, 1.0), (1.0, 0.0),
                                                                             (1.0, 1.0)]
    cells = {(c["stated_rate"], c["stated_prob"]): c["overall_success"] for c in data["cells"]}
    # nothing stated: the reader's weight on a stated value cannot matter
    assert cells[0.0, 0.0] == cells[0.0, 1.0]
    # every session stated and always taken: every memory scores what no memory scores
    assert set(cells[1.0, 1.0].values()) == {cells[1.0, 1.0]["no-memory"]}
    direct = evaluate("TEPA/PreferenceStream-v0", ["tepa"], range(data["seeds"]), env_kwargs={"stated_rate": 1.0},
                      reader_kwargs={"stated_prob": 0.0})
    assert cells[1.0, 0.0]["tepa"] == float(direct.phase_success("tepa", None).mean())
    (tmp_path / "stated.json").write_text(json.dumps(data))
    table = stated_table(tmp_path / "stated.json")
    assert "| rate 1, prob 0 |" in table and f"| tepa | {cells[0.0, 0.0]['tepa']:.3f} |" in table
