"""``tepa-bench rl``: the quick size end to end (output schema), resuming a killed study
without redoing finished units, and bad specs refused before anything is written."""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("stable_baselines3", reason="the RL study needs Stable-Baselines3 (pip install 'tepa-envs[rl]')")

from tepa_envs.agents.evaluation.cli.app import main  # noqa: E402
from tepa_envs.agents.evaluation.engine.store import Store  # noqa: E402
from tepa_envs.agents.evaluation.outputs.files import verify_manifest  # noqa: E402
from tepa_envs.agents.evaluation.studies.rl_agents import train_unit  # noqa: E402
from tepa_envs.agents.evaluation.studies.rl_study import (  # noqa: E402
    AGENTS, CEILING_AGENTS, ENVS, SIZES, builtin_spec, finished_units, load_rl_spec, parse_rl_spec, prepare_store, read_units,
    run_study,
)

try:
    import sb3_contrib  # noqa: F401
    HAVE_CONTRIB = True
except ImportError:
    HAVE_CONTRIB = False

TINY = {"name": "rl-tiny", "agents": ["ppo", "ppo+tepa"], "envs": ["TEPA/RegimeDrift-v0"], "train_seeds": 3,
        "timesteps": 1024, "checkpoints": 2, "eval_episodes": 4, "curve_episodes": 2,
        "hyper": {"n_envs": 4, "n_steps": 128, "batch_size": 128, "n_epochs": 1}}
"""Six units of two rollouts each: about a second apiece."""


@pytest.mark.skipif(not HAVE_CONTRIB, reason="the quick size includes recurrent-ppo, which needs sb3-contrib")
def test_quick_size_end_to_end_writes_the_documented_schema(tmp_path, capsys):
    out = tmp_path / "rl"
    assert main(["rl", "--quick", "--out", str(out), "--quiet"]) == 0
    assert verify_manifest(out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["files"]) == {"rl.json", "rl.csv", "curves.png", "rl.md"}
    assert {"torch", "stable-baselines3", "sb3-contrib"} <= set(manifest["library_versions"])
    data = json.loads((out / "rl.json").read_text())
    assert data["rl_version"] == 2 and data["agents"] == list(CEILING_AGENTS)
    assert data["oracles"] == ["ppo+oracle-reset"] and data["twins"] == ["ppo-mdp-twin"]
    assert data["spec"]["engine"] == "sb3" and "ppo-mdp-twin" not in data["memory_agents"]
    assert data["versions"]["torch_threads"] == "1" and data["units"]["trained"] == len(CEILING_AGENTS) * 2 * 2
    assert [e["env_id"] for e in data["envs"]] == ["TEPA/RegimeDrift-v0", "TEPA/RegimeDrift-Poisson-v0"]
    paths = set()
    for env in data["envs"]:
        assert env["drift_score"] == ("reversal" if env["label"] == "paper" else "after first change")
        for agent in CEILING_AGENTS:
            row = env["agents"][agent]
            assert set(row["success"]) >= {*env["phases"][:1], "overall", "drift"}
            for est in row["success"].values():
                assert 0.0 <= est["ci_low"] <= est["mean"] <= est["ci_high"] <= 1.0
            curve = row["curve"]
            assert len(curve["steps"]) == len(curve["mean"]) == len(curve["ci_low"]) == 3  # 2 checkpoints + final
            assert curve["steps"][0] == 0 and curve["steps"] == sorted(curve["steps"])
            assert curve["steps"][0] <= row["steps_to_90"]["mean"] <= curve["steps"][-1]
            assert len(row["per_seed_drift"]) == 2
            assert {"env_s", "policy_s", "update_s", "eval_s", "total_s", "env_steps_per_s"} <= set(row["timing"])
            paths.add(row["path"])
    assert paths == {"native", "python"}  # batched memories on RegimeDrift, per-env wrappers for the others
    assert {(c["agent"], c["other"]) for c in data["comparisons"]} >= {("ppo+tepa", "ppo"),
                                                                      ("ppo+tepa", "recurrent-ppo"),
                                                                      ("ppo-mdp-twin", "ppo")}
    with open(out / "rl.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {r["agent"] for r in rows} == set(CEILING_AGENTS) and {"drift", "overall"} <= {r["score"] for r in rows}
    table = (out / "rl.md").read_text()
    assert "| ppo+tepa |" in table and "Who wins where" in table and "steps/s" in table
    assert "| gap (ppo-mdp-twin - ppo) |" in table and "ceiling: ppo-mdp-twin" in table
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_killed_study_resumes_without_redoing_finished_units(tmp_path):
    spec = parse_rl_spec(TINY)
    trained: list[str] = []

    def kill_after_two(job):
        trained.append(job.describe())
        if len(trained) == 2:
            raise KeyboardInterrupt  # the study is killed right after its second unit is stored

    with Store.open(tmp_path / "rl.db") as store:
        with pytest.raises(KeyboardInterrupt):
            run_study(spec, store, on_unit=kill_after_two)
        assert len(finished_units(store, spec)) == 2
        first = store.connection.execute("SELECT unit_id, finished_utc FROM rl_units ORDER BY unit_id").fetchall()
        episodes = store.count()
        assert episodes == 2 * (4 + 2 * 2)  # final evaluation + two checkpoints' curve episodes, per unit

        again: list[str] = []
        outcome = run_study(spec, store, on_unit=lambda job: again.append(job.describe()))
        assert (outcome.planned, outcome.skipped, outcome.trained) == (6, 2, 4)
        assert set(again).isdisjoint(trained[:2]) and len(again) == 4
        kept = dict(store.connection.execute("SELECT unit_id, finished_utc FROM rl_units").fetchall())
        assert all(kept[unit] == when for unit, when in first)  # the finished units were not rewritten
        assert store.count() == 6 * (4 + 2 * 2)

        # a unit killed between its episodes and its row is trained again, its stored episodes kept
        store.connection.execute("DELETE FROM rl_units WHERE unit_id = ?", (first[0][0],))
        outcome = run_study(spec, store)
        assert (outcome.skipped, outcome.trained) == (5, 1) and store.count() == 6 * (4 + 2 * 2)
        assert run_study(spec, store).trained == 0
        assert store.check() == []  # still a sound store for `tepa-bench store check`
        assert len(read_units(store, spec)) == 6


@pytest.mark.parametrize("change, error, field", [
    ({"agents": ["ppo+no-such-memory"]}, ValueError, "agents[0]"),
    ({"agents": ["ppo", "ppo"]}, ValueError, "agents"),
    ({"agents": [{"label": "x", "algorithm": "sac"}]}, ValueError, "agents[0].algorithm"),
    ({"envs": ["TEPA/NoSuchEnv-v0"]}, ValueError, "envs[0].id"),
    ({"envs": [{"id": "TEPA/RegimeDrift-v0", "kwargs": {"n_keys": -1}}]}, ValueError, "on TEPA/RegimeDrift-v0"),
    ({"train_seeds": 0}, ValueError, "train_seeds"),
    ({"train_seeds": [1, 1]}, ValueError, "train_seeds"),
    ({"timesteps": "many"}, TypeError, "timesteps"),
    ({"timesteps": 10}, ValueError, "timesteps"),
    ({"curve_episodes": 5}, ValueError, "curve_episodes"),
    ({"hyper": {"gamma": 2.0}}, ValueError, "hyper.gamma"),
    ({"hyper": {"lr": 0.1}}, ValueError, "hyper: unknown key"),
    ({"engine": "nope"}, ValueError, "engine"),
    ({"seeds": 3}, ValueError, "unknown key(s) seeds"),
    ({"fast_path": "yes"}, TypeError, "fast_path"),
])
def test_bad_spec_input_is_refused_naming_the_field(change, error, field):
    with pytest.raises(error) as info:
        parse_rl_spec({**TINY, **change})
    assert field in str(info.value)


def test_a_bad_spec_file_is_refused_before_anything_is_written(tmp_path, capsys):
    spec = tmp_path / "bad.toml"
    spec.write_text('agents = ["ppo"]\ntrain_seeds = 0\n')
    out = tmp_path / "never"
    assert main(["rl", str(spec), "--out", str(out), "--quiet"]) == 2
    assert "train_seeds" in capsys.readouterr().err
    assert not out.exists()


def test_dry_run_counts_the_units(tmp_path, capsys):
    spec = tmp_path / "tiny.toml"
    spec.write_text('agents = ["ppo", "ppo+lww"]\nenvs = ["TEPA/RegimeDrift-v0"]\ntrain_seeds = 5\n'
                    'timesteps = 2048\n')
    assert main(["rl", str(spec), "--dry-run", "--out", str(tmp_path / "out")]) == 0
    assert "2 agents x 1 environments x 5 training seeds = 10 units of 2,048 steps" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()


def test_a_missing_result_is_reported_not_invented(tmp_path):
    spec = parse_rl_spec(TINY)
    with Store.open(tmp_path / "rl.db") as store:
        prepare_store(store)  # nothing trained
        with pytest.raises(ValueError, match="holds no result for ppo on TEPA/RegimeDrift-v0, training seed 0"):
            read_units(store, spec)


def test_the_built_in_sizes_hold_every_agent_and_environment_of_the_issue():
    assert {"ppo", "recurrent-ppo", "ppo-framestack", "ppo+oracle-reset"} <= set(AGENTS)
    assert {"ppo+tepa", "ppo+tepa-regime", "ppo+lww", "ppo+append-only", "ppo+reactive-forgetting"} <= set(AGENTS)
    assert len(ENVS) == 4 and SIZES["default"]["train_seeds"] >= 5 and SIZES["medium"]["train_seeds"] >= 5


def test_the_fast_path_trains_the_same_policy_as_the_per_env_wrappers():
    """The native vector env with the batched memory is a speed-up only: same evaluations, step for step."""
    (job,) = [j for j in parse_rl_spec({**TINY, "train_seeds": [1]}).jobs() if j.agent.label == "ppo+tepa"]
    fast, slow = train_unit(job), train_unit(replace(job, fast_path=False))
    assert (fast.path, slow.path) == ("native", "python")
    assert fast.final.success == slow.final.success and fast.final.phase == slow.final.phase
    assert [e.success for e in fast.curve] == [e.success for e in slow.curve]


@pytest.mark.skipif(not HAVE_CONTRIB, reason="the default size includes recurrent-ppo, which needs sb3-contrib")
def test_the_shipped_spec_is_the_default_size():
    shipped = load_rl_spec(Path(__file__).resolve().parents[3] / "benchmarks" / "rl_study.toml")
    default = builtin_spec("default")
    assert shipped.settings() == default.settings() and shipped.jobs() == default.jobs()
