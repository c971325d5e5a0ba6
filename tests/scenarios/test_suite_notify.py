"""``tepa-bench suite --notify``: every method under each change-notification level, on the
same worlds, checked against direct episodes and against the dial's known end."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

from tepa_envs.agents import MemoryAgent, run_episode
from tepa_envs.agents.evaluation.analysis.notify_levels import notify_table
from tepa_envs.agents.evaluation.cli import main
from tepa_envs.agents.evaluation.studies.suite import check_notify_levels, run_suite
from tepa_envs.agents.memories.registry import make_memory

SCENARIOS = ("TEPA/RegimeDrift-v0", "TEPA/PreferenceStream-v0")
METHODS = ["no-memory", "lww", "tepa", "oracle-reset"]
SEEDS = [0, 1, 2]


@pytest.fixture(scope="module")
def run():
    return run_suite(METHODS, SEEDS, scenarios=SCENARIOS, notify=("none", "detected", "known"), n_perm=200)


def _direct(env_id: str, method: str, kwargs: dict, level: str, seed: int) -> float:
    env = gym.make(env_id, notify=level)
    try:
        return float(run_episode(env, MemoryAgent(make_memory(method, **kwargs)), seed=seed).success.mean())
    finally:
        env.close()


def test_each_cell_is_the_mean_of_direct_episodes_at_that_level(run):
    table = run["notify_levels"]
    assert table["levels"] == ["none", "detected", "known"]
    assert table["methods"] == [*METHODS, "lww on_notify=clear",
                                "tepa on_notify=demote", "tepa on_notify=revoke"]
    for env_id in SCENARIOS:
        for level in ("detected", "known"):
            direct = np.mean([_direct(env_id, "lww", {"on_notify": "clear"}, level, s) for s in SEEDS])
            assert table["per_scenario"][env_id][level]["lww on_notify=clear"] == pytest.approx(direct)
        direct = np.mean([_direct(env_id, "tepa", {"on_notify": "revoke"}, "detected", s) for s in SEEDS])
        assert table["per_scenario"][env_id]["detected"]["tepa on_notify=revoke"] == pytest.approx(direct)


def test_a_method_that_ignores_notifications_scores_the_same_at_every_level(run):
    table = run["notify_levels"]
    for method in ("no-memory", "lww", "tepa", "oracle-reset"):
        means = {table["success"][level][method]["mean"] for level in table["levels"]}
        assert len(means) == 1, method


def test_clearing_on_a_known_change_is_the_oracle_reset_bound(run):
    table = run["notify_levels"]
    for env_id in SCENARIOS:
        assert table["per_scenario"][env_id]["known"]["lww on_notify=clear"] == pytest.approx(
            table["per_scenario"][env_id]["known"]["oracle-reset"])
    assert table["best"]["known"] not in ("oracle-reset", "oracle-view")
    gap = table["to_best_known"]["known"][table["best"]["known"]]
    assert gap["mean"] == 0.0 and gap["ci_low"] == 0.0 == gap["ci_high"]


def test_the_leaderboard_is_computed_at_the_first_level_and_unchanged_by_the_others(run):
    alone = run_suite(METHODS, SEEDS, scenarios=SCENARIOS, n_perm=200)
    assert alone["notify"] == run["notify"] == "none" and "notify_levels" not in alone
    assert {k: v for k, v in run.items() if k != "notify_levels"} == alone


def test_notify_table_pools_scenarios_per_seed_and_refuses_missing_cells():
    per_seed = {(lv, e, m): np.full(4, value) for lv, value in (("none", 0.2), ("known", 0.6))
                for e in ("a", "b") for m in ("x", "o")}
    per_seed["known", "b", "x"] = np.array([1.0, 1.0, 0.0, 0.0])
    table = notify_table(per_seed, ["none", "known"], ["a", "b"], ["x", "o"], ["o"])
    assert table["success"]["known"]["x"]["mean"] == pytest.approx(0.55)
    assert table["best"] == {"none": "x", "known": "x"}
    assert table["to_best_known"]["none"]["x"]["mean"] == pytest.approx(-0.35)
    del per_seed["none", "a", "o"]
    with pytest.raises(ValueError, match="lacks 1 cells"):
        notify_table(per_seed, ["none", "known"], ["a", "b"], ["x", "o"], ["o"])


@pytest.mark.parametrize("levels, error", [("none", TypeError), (["none", 1], TypeError), ([], ValueError),
                                            (["none", "none"], ValueError), (["told"], ValueError)])
def test_bad_levels_are_refused(levels, error):
    with pytest.raises(error, match="notify"):
        check_notify_levels(levels)


def test_the_cli_writes_the_table_by_level(tmp_path, capsys):
    argv = ["suite", "--seeds", "2", "--scenarios", "TEPA/RegimeDrift-v0", "--methods", "lww,tepa",
            "--notify", "known,none", "--out", str(tmp_path / "s"), "--quiet"]
    assert main(argv) == 0
    data = json.loads((tmp_path / "s" / "suite.json").read_text())
    assert data["notify"] == "known" and data["notify_levels"]["levels"] == ["known", "none"]
    assert "**By change notification**" in (tmp_path / "s" / "leaderboard.md").read_text()
    assert "by change notification" in capsys.readouterr().out
    assert main([*argv[:-3], "--notify", "none,sometimes", "--out", str(tmp_path / "t")]) == 2
    assert "--notify" in capsys.readouterr().err and not (tmp_path / "t").exists()
