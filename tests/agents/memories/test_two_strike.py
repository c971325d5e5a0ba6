"""The ``two-strike`` memory: its rules, its audit log, and its headline on fresh seeds."""

import numpy as np
import pytest

import tepa_envs  # noqa: F401
from tepa_envs.agents.evaluation import evaluate
from tepa_envs.agents.memories import TwoStrike
from tepa_envs.agents.readers.profile import load_profile
from tepa_envs.core import Evidence

KEY = "summarize/finance/csv"


def shown(memory):
    return [r.value for r in memory.retrieve(KEY)]


def feed(memory, *steps):
    for value, outcome in steps:
        memory.observe(Evidence(KEY, value, memory._last_t + 1 if memory.audit_log or memory._values else 0,
                                outcome, "test"))


def test_a_value_is_let_go_at_its_second_failure_since_it_last_worked():
    memory = TwoStrike()
    feed(memory, ("a", True), ("a", False))
    assert shown(memory) == ["a"]  # one failure proves nothing
    feed(memory, ("a", True), ("a", False))
    assert shown(memory)[0] == "a"  # the success in between reset the strikes
    feed(memory, ("a", False))
    assert shown(memory) == []  # let go; nothing else known
    assert [(e.from_state, e.to_state.value) for e in memory.audit_log][-1][1] == "revoked"
    feed(memory, ("a", True))
    assert shown(memory) == ["a"] and memory.audit_log[-1].reason == "worked"


def test_the_newest_success_leads_and_elimination_proposes_a_returning_value():
    memory = TwoStrike()
    feed(memory, ("a", True), ("b", False), ("b", True))
    assert shown(memory)[0] == "b"  # last success wins (no noise seen)
    feed(memory, ("a", False), ("a", False), ("b", False), ("b", False))
    assert shown(memory) == []
    feed(memory, ("a", True), ("a", False), ("a", False))
    # b has not failed since the key last worked (a at the latest success): b is open
    assert shown(memory)[0] == "b"


def test_on_a_noisy_stream_one_lucky_outcome_does_not_unseat_an_unfailed_leader():
    memory = TwoStrike()
    feed(memory, ("a", True), ("a", False), ("a", True), ("a", False), ("a", True))
    assert memory.noisy  # a held value worked again after a failure, twice
    feed(memory, ("b", True))
    assert shown(memory)[0] == "a"
    feed(memory, ("b", True))
    assert shown(memory)[0] == "b"
    with pytest.raises(ValueError, match="guard"):
        TwoStrike(guard="sometimes")
    with pytest.raises(ValueError):
        TwoStrike(strikes=0)


def test_a_reader_that_repeats_itself_on_empty_views_is_shown_a_value_to_reject():
    memory = TwoStrike()
    for _ in range(5):  # 4 pairs of empty views, every one a repeat
        assert shown(memory) == []
        feed(memory, ("x", False))  # shown nothing, the reader takes the same value every time
    assert memory.reader_repeats_itself
    assert shown(memory) == ["x"]
    feed(memory, ("x", False))
    assert shown(memory) == ["x"]
    feed(memory, ("x", False))
    assert shown(memory) == []  # followed twice: show nothing once more


def test_headline_on_fresh_seeds():
    seeds = range(20_000, 20_040)
    default = evaluate("TEPA/RegimeDrift-v0", ["two-strike", "tepa", "lww"], seeds, metrics=True)
    success = {m: r.success.mean() for m, r in default.runs.items()}
    views = {m: np.mean([x["views"]["phases"]["overall"]["correct_share"] for x in r.metrics])
             for m, r in default.runs.items()}
    assert success["two-strike"] >= success["tepa"] - 0.01 and success["two-strike"] > success["lww"] + 0.2
    assert views["two-strike"] > views["tepa"]
    blind = {"follow_prob": 0.0, "follow_validity": 0.0, "follow_conflict": 0.0, "stated_prob": 1.0}
    free = evaluate("TEPA/RegimeDrift-v0", ["two-strike", "lww"], seeds, reader_kwargs=blind, metrics=True)
    accuracy = {m: np.mean([x["views"]["phases"]["overall"]["correct_share"] for x in r.metrics])
                for m, r in free.runs.items()}
    assert accuracy["two-strike"] >= accuracy["lww"]
    never = evaluate("TEPA/RegimeDrift-v0", ["two-strike", "lww", "tepa"], seeds,
                     reader_kwargs=load_profile("never-explore").reader_kwargs(), metrics=False)
    assert never.runs["two-strike"].success.mean() > max(never.runs[m].success.mean() for m in ("lww", "tepa"))
