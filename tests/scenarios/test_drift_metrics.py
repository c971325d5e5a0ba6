"""Drift metrics: hand-computed streams with known values, and real episodes whose
decisions the recording must not change."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

from tepa_envs.agents.evaluation.analysis.drift_metrics import EpisodeTrace, changes_of, episode_metrics, pool_metrics
from tepa_envs.agents.evaluation.engine.jobs import Job
from tepa_envs.agents.evaluation.engine.runner import run_job, run_traced_job
from tepa_envs.agents.evaluation.engine.tracing import trace_episode
from tepa_envs.agents.evaluation.outputs.drift_tables import metrics_markdown
from tepa_envs.agents.readers.agent import MemoryAgent
from tepa_envs.core import Record
from tepa_envs.core.types import LifecycleState


def one_change(k: int, *, before: int = 10, after: int = 20) -> EpisodeTrace:
    """One key, A for ``before`` tasks then B; a memory that shows (and the agent chooses)
    the stale A for exactly ``k`` tasks after the change, then B."""
    correct = ["A"] * before + ["B"] * after
    shown = ["A"] * (before + k) + ["B"] * (after - k)
    return EpisodeTrace(["x"] * len(correct), correct, shown, list(shown), [])


@pytest.mark.parametrize("k", [0, 1, 3, 7])
def test_a_memory_that_detects_after_exactly_k_tasks_has_delay_k(k):
    m = episode_metrics(one_change(k))
    assert m["changes"] == 1 and m["delays"] == [k] and m["undetected"] == 0
    assert m["stale_retrievals"] == k and m["regret"] == k and m["recoveries"] == [k]
    assert m["false_revocations"] == 0 and m["false_revocation_source"] == "audit log"


def test_a_change_never_detected_is_counted_not_dropped():
    correct = ["A"] * 5 + ["B"] * 5
    m = episode_metrics(EpisodeTrace(["x"] * 10, correct, ["A"] * 10, ["A"] * 10, None))
    assert m["changes"] == 1 and m["delays"] == [] and m["undetected"] == 1
    assert m["recoveries"] == [] and m["unrecovered"] == 1 and m["stale_retrievals"] == 5 and m["regret"] == 5


def test_a_change_with_too_few_presentations_is_not_judged_for_recovery():
    correct = ["A"] * 5 + ["B"] * 4  # 4 presentations after the change, fewer than the window of 5
    m = episode_metrics(EpisodeTrace(["x"] * 9, correct, list(correct), list(correct), None))
    assert m["recoveries"] == [] and m["unjudged"] == 1 and m["unrecovered"] == 0 and m["delays"] == [0]
    m = episode_metrics(EpisodeTrace(["x"] * 9, correct, list(correct), list(correct), None), recovery_window=4)
    assert m["recoveries"] == [0] and m["unjudged"] == 0


def test_showing_nothing_after_a_change_is_no_longer_showing_the_stale_value():
    correct = ["A"] * 4 + ["B"] * 4
    shown = ["A"] * 4 + ["A", ""] + ["B"] * 2  # the stale value is dropped after 1 task, B shown 1 later
    m = episode_metrics(EpisodeTrace(["x"] * 8, correct, shown, list(correct), None))
    assert m["delays"] == [1] and m["stale_retrievals"] == 1


def test_the_oracle_has_no_regret_and_recovers_at_once():
    correct = ["A"] * 6 + ["B"] * 6 + ["A"] * 6
    m = episode_metrics(EpisodeTrace(["x"] * 18, correct, list(correct), list(correct), None))
    assert m["regret"] == 0 and m["changes"] == 2 and m["delays"] == [0, 0] and m["recoveries"] == [0, 0]
    assert m["stale_retrievals"] == 0 and m["correct_value_losses"] == 0 and m["false_revocations"] == 0


def test_a_change_is_timed_at_the_keys_next_presentation_and_ends_at_its_next_change():
    keys = ["x", "y", "y", "x", "y", "x", "x"]
    correct = ["A", "C", "C", "B", "C", "B", "A"]
    changes = changes_of(keys, correct)
    assert [(c.t, c.key, c.old, c.new, c.presentations) for c in changes] == [
        (3, "x", "A", "B", (3, 5)), (6, "x", "B", "A", (6,))]
    shown = ["A", "C", "C", "A", "C", "B", "B"]
    m = episode_metrics(EpisodeTrace(keys, correct, shown, list(shown), None))
    # change at 3 detected at 5 (2 tasks, one of them key y's); change at 6 still shows B at the end
    assert m["delays"] == [2] and m["undetected"] == 1


def test_revocations_of_a_still_correct_value_are_false_and_others_are_not():
    keys = ["x"] * 6
    correct = ["A", "A", "A", "B", "B", "B"]
    shown = ["A", "A", "A", "A", "B", "B"]
    never = episode_metrics(EpisodeTrace(keys, correct, shown, list(shown), []))
    assert never["false_revocations"] == 0  # a memory that never revokes
    revoked = [(1, "x", "A"), (3, "x", "A"), (4, "x", "B"), (2, "y", "A")]
    m = episode_metrics(EpisodeTrace(keys, correct, shown, list(shown), revoked))
    # t=1: A still correct (false); t=3: A stale (right); t=4: B correct (false); key y never presented
    assert m["false_revocations"] == 2 and m["false_revocation_source"] == "audit log"


def test_without_an_audit_log_false_revocations_are_correct_value_losses():
    keys = ["x"] * 6
    correct = ["A"] * 6
    shown = ["A", "A", "", "A", "C", "A"]  # lost at 2 and at 4 (each after a presentation showing A)
    m = episode_metrics(EpisodeTrace(keys, correct, shown, list(shown), None))
    assert m["correct_value_losses"] == 2 and m["false_revocations"] == 2
    assert m["false_revocation_source"] == "correct-value losses" and m["changes"] == 0


def test_recovery_needs_90_percent_of_the_next_presentations_right():
    correct = ["A"] * 3 + ["B"] * 12
    chosen = ["A"] * 3 + ["B", "A", "B", "B", "B", "B", "B", "A", "B", "B", "B", "B"]
    m = episode_metrics(EpisodeTrace(["x"] * 15, correct, list(correct), chosen, None), recovery_window=5)
    # from task 3: B A B B B (4/5 < 0.9); from 5: B B B B B -> 2 tasks after the change
    assert m["recoveries"] == [2]
    assert episode_metrics(EpisodeTrace(["x"] * 15, correct, list(correct), chosen, None),
                           recovery_level=0.8, recovery_window=5)["recoveries"] == [0]


def test_pooling_over_seeds():
    episodes = [episode_metrics(one_change(2)), episode_metrics(one_change(4)),
                episode_metrics(EpisodeTrace(["x"] * 20, ["A"] * 10 + ["B"] * 10, ["A"] * 20, ["A"] * 20, None))]
    pooled = pool_metrics(episodes)
    assert pooled["changes"] == 3
    assert pooled["detection_delay"] == {"mean": 3.0, "median": 3.0, "detected": 2, "undetected": 1}
    assert pooled["regret"]["mean"] == pytest.approx((2 + 4 + 10) / 3)
    assert pooled["regret"]["per_1k"] == pytest.approx(1000 * 16 / 80)
    assert pooled["stale_retrievals_per_1k"] == pytest.approx(1000 * 16 / 80)
    assert pooled["recovery"] == {"mean": 3.0, "median": 3.0, "recovered": 2, "unrecovered": 1, "unjudged": 0}
    assert pooled["false_revocation_source"] == "audit log + correct-value losses"
    json.dumps(pooled)


def test_bad_input_names_the_field():
    with pytest.raises(ValueError, match="trace.shown"):
        episode_metrics(EpisodeTrace(["x"], ["A"], [], ["A"], None))
    with pytest.raises(TypeError, match=r"trace.chosen\[0\]"):
        episode_metrics(EpisodeTrace(["x"], ["A"], ["A"], [3], None))  # type: ignore[list-item]
    with pytest.raises(ValueError, match="recovery_level"):
        episode_metrics(one_change(1), recovery_level=1.5)
    with pytest.raises(ValueError, match="recovery_window"):
        episode_metrics(one_change(1), recovery_window=0)
    with pytest.raises(TypeError, match="trace"):
        episode_metrics({"keys": []})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="episodes"):
        pool_metrics([])


# ------------------------------------------------------------------- real episodes
@pytest.mark.parametrize("env_id", ["TEPA/RegimeDrift-v0", "TEPA/RegimeDrift-Noisy-v0", "TEPA/RegimeDrift-Zipf-v0"])
@pytest.mark.parametrize("method", ["tepa", "lww", "reactive-forgetting", "no-memory", "oracle-reset"])
def test_recording_changes_no_decision(env_id, method):
    job = Job.resolve(env_id, method, 5)
    plain, traced = run_job(job), run_traced_job(job)
    assert np.array_equal(plain[0], traced[0]) and np.array_equal(plain[1], traced[1]) and plain[2] == traced[2]
    assert traced[3]["tasks"] == plain[0].size
    if env_id == "TEPA/RegimeDrift-v0":  # deterministic outcomes: a task fails exactly when the choice is wrong
        assert traced[3]["regret"] == int((~plain[0]).sum())


def test_no_memory_never_shows_a_stale_value():
    m = run_traced_job(Job.resolve("TEPA/RegimeDrift-ManyKeys-v0", "no-memory", 1))[3]
    assert m["changes"] > 0 and m["delays"] == [0] * m["changes"]
    assert m["stale_retrievals"] == m["correct_value_losses"] == 0


class StaleAfterChange:
    """Shows the value of the evidence written ``lag`` writes ago for the key: after a
    change it keeps showing the stale value for as long as the lag lasts."""

    name = "stale-after-change"

    def __init__(self, lag: int) -> None:
        self.lag = lag
        self.values: dict[str, list[str]] = {}

    def observe(self, evidence) -> None:
        if evidence.outcome:
            self.values.setdefault(evidence.key, []).append(evidence.value)

    def retrieve(self, key: str, context: str = "") -> list[Record]:
        history = self.values.get(key, [])
        if len(history) <= self.lag:
            return []
        return [Record(key, history[-1 - self.lag], 1, 0, LifecycleState.ACTIVE, 0, 0)]

    def reset(self) -> None:
        self.values = {}


def test_the_trace_reads_the_memorys_top_record_and_audit_log():
    env = gym.make("TEPA/RegimeDrift-v0")
    try:
        agent = MemoryAgent(StaleAfterChange(0), reading="direct")
        result, trace = trace_episode(env, agent, 0)
        assert trace.revocations is None and len(trace.shown) == result.success.size
        assert "retrieve" not in vars(agent.memory) and not agent.observers  # nothing patched, nothing left
        followed = [s == c for s, c in zip(trace.shown, trace.chosen) if s]
        assert np.mean(followed) > 0.85  # the reader follows the shown value 19 times in 20
        agent = MemoryAgent("tepa")
        _, trace = trace_episode(env, agent, 0)
        revoked = [e for e in agent.memory.audit_log if e.to_state.value == "revoked"]
        assert trace.revocations == [(e.t, e.key, e.value) for e in revoked] and revoked
    finally:
        env.close()


def test_the_markdown_has_a_row_per_method():
    pooled = pool_metrics([episode_metrics(one_change(2)), episode_metrics(one_change(3))])
    data = {"methods": ["m1", "m2"], "scenarios": [
        {"short": "s", "env_id": "E", "metrics": {"m1": pooled, "m2": pooled}}]}
    text = metrics_markdown(data)
    assert "| m1 | 2 | 2.5 [2] | 0 |" in text and "| m2 |" in text


def test_a_memory_that_takes_no_instance_attributes_is_traced_without_patching():
    """The trace observes the episode loop: a memory with ``__slots__`` is recorded like any other."""
    env = gym.make("TEPA/RegimeDrift-v0")
    try:
        slotted = type("SlottedOnly", (), {
            "__slots__": ("values", "lag"), "name": "slotted", "observe": StaleAfterChange.observe,
            "retrieve": StaleAfterChange.retrieve, "reset": StaleAfterChange.reset})
        memory = object.__new__(slotted)
        memory.values, memory.lag = {}, 0
        result, trace = trace_episode(env, MemoryAgent(memory), 0)
        _, plain = trace_episode(env, MemoryAgent(StaleAfterChange(0), reading="direct"), 0)
        assert trace.shown == plain.shown and trace.chosen == plain.chosen and len(trace.shown) == result.success.size
    finally:
        env.close()
