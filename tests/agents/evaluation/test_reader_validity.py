"""Results that hold beyond one simulated reader: reader profiles through every command,
reader-free view metrics recorded in the loop without changing an episode, shared
memory-blind traces, and the per-profile ranking study."""

from __future__ import annotations

import json
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

import tepa_envs  # noqa: F401
from tepa_envs.core.step_info import evidence_of
from tepa_envs.agents.evaluation import evaluate, summarize
from tepa_envs.agents.evaluation.cli import main
from tepa_envs.agents.evaluation.studies.profiles import profile_rankings, shared_traces
from tepa_envs.agents.readers.agent import EpisodeObserver, MemoryAgent, run_episode
from tepa_envs.agents.readers.evidence_reader import EvidenceReader
from tepa_envs.agents.readers.factory import make_reader, with_profile
from tepa_envs.agents.readers.profile import load_profile

SMALL = '{"phase_lengths": [6, 6, 6, 6]}'
METHODS = ["tepa", "lww", "append-only", "no-memory", "reactive-forgetting"]


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tepa_envs.agents.evaluation.cli", *args], capture_output=True,
                          text=True)


def test_recording_views_changes_no_episode():
    with_views = evaluate("TEPA/RegimeDrift-ManyKeys-v0", METHODS, range(6))
    without = evaluate("TEPA/RegimeDrift-ManyKeys-v0", METHODS, range(6), metrics=False)
    for method in METHODS:
        assert np.array_equal(with_views.runs[method].success, without.runs[method].success), method
    views = summarize(with_views).drift_metrics["tepa"]["views"]["phases"]["overall"]
    shares = [views[f"{kind}_share"] for kind in ("correct", "stale", "buried", "empty", "wrong")]
    assert sum(shares) == pytest.approx(1.0) and views["n"] > 0


def test_views_separate_a_memory_that_lets_go_from_one_that_does_not():
    """The lock-in probe: LWW keeps showing a value refuted twice, TEPA never does."""
    metrics = summarize(evaluate("TEPA/RegimeDrift-v0", ["tepa", "lww"], range(20))).drift_metrics
    assert metrics["tepa"]["views"]["phases"]["overall"]["persistence_2"] == 0.0
    assert metrics["lww"]["views"]["phases"]["overall"]["persistence_2"] > 0.5


def test_profiles_reach_the_reader_and_are_recorded():
    kwargs = with_profile({}, "never-explore")
    assert kwargs["profile"] == "never-explore" and kwargs["empty_explore_prob"] == 0.0
    reader = make_reader(kwargs)
    assert isinstance(reader, EvidenceReader) and reader.empty_explore_prob == 0.0
    assert make_reader({"profile": "ideal", "follow_prob": 0.5}).follow_prob == 0.5  # explicit kwargs win
    with pytest.raises(ValueError, match="simulated reader"):
        make_reader({"reader": "openai", "profile": "ideal"})


def test_run_with_a_profile_records_it_in_results(tmp_path):
    out = tmp_path / "out"
    assert main(["run", "TEPA/RegimeDrift-v0", "--methods", "tepa,lww", "--seeds", "2", "--workers", "1",
                 "--out", str(out), "--quiet", "--env-kwargs", SMALL, "--reader-profile", "never-explore"]) == 0
    reader = json.loads((out / "results.json").read_text())["reader_kwargs"]
    assert reader == with_profile({}, "never-explore")


def test_a_bad_profile_is_one_line_and_exit_2(tmp_path):
    result = cli("run", "TEPA/RegimeDrift-v0", "--methods", "tepa", "--seeds", "1", "--reader-profile", "optimist")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "--reader-profile" in result.stderr and "unknown reader profile" in result.stderr


def test_calibrate_command_measures_a_profile_that_runs(tmp_path):
    profile = tmp_path / "measured.toml"
    result = cli("calibrate", "--reader", "simulated", "--reader-profile", "never-explore", "--decisions", "30",
                 "--out", str(profile), "--quiet")
    assert result.returncode == 0, result.stderr
    measured = load_profile(str(profile))
    assert measured.name == "measured" and measured.empty_explore_prob < 0.3 and measured.follow_plain > 0.8
    assert len((tmp_path / "measured.jsonl").read_text().splitlines()) == 5 * 30
    out = tmp_path / "out"
    assert main(["run", "TEPA/RegimeDrift-v0", "--methods", "tepa", "--seeds", "1", "--workers", "1", "--quiet",
                 "--out", str(out), "--env-kwargs", SMALL, "--reader-profile", str(profile)]) == 0


class Evidence(EpisodeObserver):
    def __init__(self, env) -> None:
        self.stream: list[tuple] = []
        self.env = env

    def on_step(self, info_before, action, info_after) -> None:
        self.stream.append((int(action), tuple((e.key, e.value, e.outcome) for e in evidence_of(info_after, self.env))))


@pytest.mark.parametrize("env_id", ["TEPA/RegimeDrift-v0", "TEPA/RegimeDrift-ManyKeys-v0", "TEPA/PreferenceStream-v0"])
def test_memory_blind_traces_give_every_memory_the_same_evidence(env_id):
    streams = {}
    for method in METHODS + ["tepa-regime", "bocpd"]:
        env = gym.make(env_id)
        observer = Evidence(env)
        reader = make_reader(with_profile({}, "memory-blind"))
        run_episode(env, MemoryAgent(method, reader), 3, observers=[observer])
        env.close()
        streams[method] = observer.stream
    first = streams["tepa"]
    assert all(stream == first for stream in streams.values())


def test_profile_study_reports_rankings_tau_and_claims():
    result = profile_rankings("TEPA/RegimeDrift-v0", METHODS, range(30), 2,
                              env_kwargs={"phase_lengths": [10, 10, 20, 10]}, workers=1)
    assert set(result["means"]) == {"ideal", "default", "never-explore", "smollm2-135m"}
    assert result["claims"]["TEPA beats append-only"]["default"]["holds"]
    assert not result["claims"]["TEPA beats append-only"]["never-explore"]["holds"]
    assert set(result["kendall_tau"]) >= {"ideal|default", "default|never-explore"}


def test_shared_traces_rank_methods_by_what_they_show():
    closed = evaluate("TEPA/RegimeDrift-v0", METHODS, range(10), metrics=False)
    result = shared_traces("TEPA/RegimeDrift-v0", METHODS, range(10), closed, 2)
    assert result["views"]["no-memory"]["phases"]["overall"]["empty_share"] == 1.0
    assert result["view_accuracy_ranking"][-1] == "no-memory"
    assert set(result["kendall_tau_with_closed_loop"]) == {"correct_share", "stale_share", "persistence_2"}
