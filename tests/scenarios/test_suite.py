"""``tepa-bench suite``: identical results for any number of workers, the files it writes,
the leaderboard's statistics on data with a known answer, and the README block."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tepa_envs
from tepa_envs.agents.evaluation.analysis.leaderboard import Scenario, analyse
from tepa_envs.agents.evaluation.cli import main
from tepa_envs.agents.evaluation.engine.jobs import Job
from tepa_envs.agents.evaluation.engine.runner import run_job
from tepa_envs.agents.evaluation.outputs.files import verify_manifest
from tepa_envs.agents.evaluation.outputs.leaderboard import leaderboard_markdown
from tepa_envs.agents.evaluation.outputs.readme import update_readme
from tepa_envs.agents.evaluation.studies.suite import SUITE_SCENARIOS, scenario
from tepa_envs.agents.memories.registry import METHOD_NAMES


def test_the_suite_covers_the_paper_and_every_registered_scenario():
    assert SUITE_SCENARIOS == ("TEPA/RegimeDrift-v0", *tepa_envs.SCENARIOS, "TEPA/PreferenceStream-v0")
    assert scenario("TEPA/PreferenceStream-v0").reversal_phases == ("full_reversal",)
    assert scenario("TEPA/RegimeDrift-Recurring-v0").reversal_phases == ("regime_b", "back_to_a", "back_to_b")
    assert scenario("TEPA/RegimeDrift-v0").reversal_phases == ("full_reversal",)
    assert scenario("TEPA/RegimeDrift-Poisson-v0").phases == ("stable", "random_1", "random_2", "random_3")


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """The whole suite (every registered method, every scenario) on 2 seeds, with 1 and 2 workers."""
    out = {}
    for workers in (1, 2):
        directory = tmp_path_factory.mktemp(f"suite{workers}")
        assert main(["suite", "--seeds", "2", "--workers", str(workers), "--out", str(directory), "--quiet"]) == 0
        out[workers] = directory
    return out


def test_one_and_two_workers_give_identical_files(two_runs):
    for name in ("suite.json", "leaderboard.md", "metrics.md"):
        assert (two_runs[1] / name).read_bytes() == (two_runs[2] / name).read_bytes(), name


def test_the_suite_runs_every_registered_method_and_writes_a_complete_run(two_runs):
    data = json.loads((two_runs[1] / "suite.json").read_text())
    assert data["methods"] == list(METHOD_NAMES) and data["seeds"] == [0, 1]
    assert [s["env_id"] for s in data["scenarios"]] == list(SUITE_SCENARIOS)
    assert verify_manifest(two_runs[1])
    manifest = json.loads((two_runs[1] / "manifest.json").read_text())
    assert set(manifest["files"]) == {"suite.json", "leaderboard.md", "metrics.md", "heatmap.png"}
    assert (two_runs[1] / "heatmap.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for s in data["scenarios"]:
        assert s["phases"][-1] == "overall" and set(s["success"]) == set(METHOD_NAMES)
        assert s["best"] not in data["oracles"]
    contenders = [m for m in METHOD_NAMES if m not in data["oracles"]]
    pairs = len(contenders) * (len(contenders) - 1) // 2
    reversal = sum(len(s["reversal_phases"]) for s in data["scenarios"]) * (len(contenders) - 1)
    assert data["n_comparisons"] == pairs * len(SUITE_SCENARIOS) + reversal


def test_the_readme_block_is_the_leaderboard(two_runs, tmp_path):
    results = tmp_path / "results"
    (results / "suite").mkdir(parents=True)
    for name in ("suite.json", "leaderboard.md", "metrics.md", "heatmap.png", "manifest.json"):
        (results / "suite" / name).write_bytes((two_runs[1] / name).read_bytes())
    readme = tmp_path / "README.md"
    findings = "<!-- begin:findings -->\n| kept |\n<!-- end:findings -->\n"
    readme.write_text("# x\n\n<!-- begin:suite-leaderboard -->\nOLD-BLOCK\n<!-- end:suite-leaderboard -->\n"
                      "<!-- begin:suite-metrics -->\nOLD-METRICS\n<!-- end:suite-metrics -->\n"
                      + findings + "tail\n")
    # no other table is generated from it
    assert update_readme(readme, results) == ["suite-leaderboard", "suite-metrics"]
    text = readme.read_text()
    assert (two_runs[1] / "leaderboard.md").read_text() in text and "OLD-BLOCK" not in text and text.endswith("tail\n")
    assert (two_runs[1] / "metrics.md").read_text() in text and "OLD-METRICS" not in text
    assert findings in text  # a suite-only directory leaves the settings' tables alone


def test_the_leaderboard_shows_what_each_memory_showed(two_runs):
    data = json.loads((two_runs[1] / "suite.json").read_text())
    text = (two_runs[1] / "leaderboard.md").read_text()
    table = text[text.index("**What each memory showed**"):].split("\n\n")[1]
    rows = {line.split(" | ")[0].lstrip("| ").removesuffix(" (oracle)"): line.split(" | ")[1:]
            for line in table.splitlines()[2:]}
    assert set(rows) == set(data["methods"])
    for s, cell in zip(data["scenarios"], rows["append-only"]):
        views = s["metrics"]["append-only"]["views"]["phases"]["overall"]
        assert cell.rstrip(" |") == f"{views['correct_share']:.2f} · {views['persistence_2']:.2f}"
    assert all(cell.startswith("1.00") for cell in rows["oracle-view"])


@pytest.mark.parametrize("argv, message", [
    (["suite", "--scenarios", "TEPA/Nope-v0"], "unknown scenario"),
    (["suite", "--methods", "all,nope"], "unknown memory method 'nope'"),
    (["suite", "--seeds", "0"], "--seeds must be between"),
])
def test_bad_command_lines_are_usage_errors(argv, message, capsys, tmp_path):
    assert main([*argv, "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert message in capsys.readouterr().err


# ---------------------------------------------------------------- statistics, known answers
def _synthetic(n: int = 40):
    """Scenario "a": good > mid > bad clearly, twin identical to mid; scenario "b": all equal but
    bad falls below no-memory in its reversal phase. The oracle beats everyone."""
    rng = np.random.default_rng(0)
    infos = [Scenario("A", "a", ("p0", "p1"), ("p1",), {}), Scenario("B", "b", ("p0", "p1"), ("p1",), {})]
    methods = ["no-memory", "good", "mid", "twin", "bad", "oracle-reset"]
    noise = {m: rng.normal(0, 0.02, size=n) for m in methods}
    level = {"A": {"no-memory": 0.3, "good": 0.9, "mid": 0.6, "twin": 0.6, "bad": 0.35, "oracle-reset": 0.99},
             "B": {"no-memory": 0.5, "good": 0.5, "mid": 0.5, "twin": 0.5, "bad": 0.5, "oracle-reset": 0.99}}
    per_seed = {}
    for info in infos:
        for m in methods:
            base = level[info.env_id][m] + (noise[m] if m != "twin" else noise["mid"])
            p1 = base - (0.3 if (info.env_id == "B" and m == "bad") else 0.0)
            per_seed[info.env_id, m, "p0"] = base
            per_seed[info.env_id, m, "p1"] = p1
            per_seed[info.env_id, m, "overall"] = (base + p1) / 2
    return per_seed, infos, methods


def test_analyse_finds_the_known_answers():
    per_seed, infos, methods = _synthetic()
    data = analyse(per_seed, infos, methods, range(40), n_perm=20_000)
    a, b = data["scenarios"]
    assert a["best"] == "good" and a["within_ci_of_best"] == []  # the oracle is never the best
    assert "mid" not in a["within_ci_of_best"] and data["oracles"] == ["oracle-reset"]
    assert b["below_no_memory_in_reversal"] == {"bad": ["p1"]}
    assert ["mid", "twin"] in data["pairs_never_significant"]
    assert ["good", "mid"] not in data["pairs_never_significant"]
    ranks = data["ranks"]
    assert "oracle-reset" not in ranks and ranks["good"]["mean_rank"] < ranks["mid"]["mean_rank"]
    assert ranks["good"]["ci_low"] <= ranks["good"]["mean_rank"] <= ranks["good"]["ci_high"]
    text = leaderboard_markdown(data)
    assert "| good | " in text and "oracle-reset (oracle)" in text and "mid – twin" in text
    assert "b (p1)" in text  # bad, significantly below no memory in scenario b's reversal phase


def test_analyse_is_deterministic():
    per_seed, infos, methods = _synthetic()
    first = analyse(per_seed, infos, methods, range(40), n_perm=5000)
    assert json.dumps(first) == json.dumps(analyse(per_seed, infos, methods, range(40), n_perm=5000))


@pytest.mark.parametrize("env_id", SUITE_SCENARIOS)
def test_the_three_recency_methods_are_one_policy_as_the_readme_proves(env_id):
    for seed in range(2):
        lww, *others = [run_job(Job.resolve(env_id, m, seed))[0] for m in
                        ("lww", "temporal-recency", "conflict-aware-recency")]
        assert all(np.array_equal(lww, other) for other in others)
