"""Exact lifecycle of TEPA precedents under the paper's defaults."""

import pytest

from tepa_envs.agents import TEPA, TEPAFull, TEPANoRev, replay_audit
from tepa_envs.core import Evidence, LifecycleState

ACTIVE, HYPOTHESIS, REVOKED = LifecycleState.ACTIVE, LifecycleState.HYPOTHESIS, LifecycleState.REVOKED
KEY = "summarize/finance/csv"


def feed(memory, outcomes, value="tool_0", key=KEY, start=0):
    for i, outcome in enumerate(outcomes):
        memory.observe(Evidence(key, value, start + i, outcome, "test"))
    return start + len(outcomes)


def transitions(memory):
    return [(e.precedent_id, e.from_state, e.to_state, e.t) for e in memory.audit_log]


def test_fresh_key_is_proposed_and_promoted_on_first_success():
    memory = TEPA()
    feed(memory, [True])
    assert transitions(memory) == [(0, None, HYPOTHESIS, 0), (0, HYPOTHESIS, ACTIVE, 0)]
    (record,) = memory.retrieve(KEY)
    assert (record.value, record.support, record.conflict, record.state) == ("tool_0", 1, 0, ACTIVE)
    assert record.score == pytest.approx(2 / 3)


def test_failures_alone_never_create_a_precedent():
    memory = TEPA()
    feed(memory, [False] * 5)
    assert memory.retrieve(KEY) == [] and memory.audit_log == ()


def test_recent_rate_revokes_after_two_failures_following_success():
    memory = TEPA()
    t = feed(memory, [True, True, True, True])
    t = feed(memory, [False], start=t)
    assert memory.retrieve(KEY)[0].state is ACTIVE  # last three: S S F -> 0.67
    feed(memory, [False], start=t)  # last three: S F F -> 0.33 < 0.34
    assert memory.retrieve(KEY) == []
    last = memory.audit_log[-1]
    assert (last.from_state, last.to_state, last.t) == (ACTIVE, REVOKED, 5)
    assert "recent success" in last.reason
    assert [r.value for r in memory.archive] == ["tool_0"]


def test_posterior_rule_revokes_below_theta_rev_after_n_min_observations():
    memory = TEPA(theta_rec=0.0)  # isolate the posterior rule
    t = feed(memory, [True])
    for expected_failures in range(1, 4):
        t = feed(memory, [False], start=t)
        assert memory.retrieve(KEY), f"revoked too early after {expected_failures} failures"
    feed(memory, [False], start=t)  # s=1, f=4: q = 2/7 = 0.286 < 0.3 with 5 observations
    assert memory.retrieve(KEY) == []
    assert "posterior" in memory.audit_log[-1].reason


def test_challenger_needs_theta_prop_supports_and_then_is_promoted():
    memory = TEPA()
    t = feed(memory, [True] * 3, value="tool_0")
    t = feed(memory, [True, True], value="tool_1", start=t)
    assert [r.value for r in memory.retrieve(KEY)] == ["tool_0"]
    assert len(memory.precedents(KEY)) == 1
    feed(memory, [True], value="tool_1", start=t)
    assert [e.to_state for e in memory.explain(KEY)][-2:] == [HYPOTHESIS, ACTIVE]
    assert {r.value for r in memory.retrieve(KEY)} == {"tool_0", "tool_1"}


def test_a_failure_discards_a_candidates_supports():
    memory = TEPA()
    t = feed(memory, [True] * 5, value="tool_0")
    t = feed(memory, [True, True, False, True, True], value="tool_1", start=t)
    assert [r.value for r in memory.retrieve(KEY)] == ["tool_0"]
    feed(memory, [True], value="tool_1", start=t)
    assert {r.value for r in memory.retrieve(KEY)} == {"tool_0", "tool_1"}


def test_conflicting_successes_can_revoke_by_posterior():
    memory = TEPA()
    t = feed(memory, [True], value="tool_0")
    feed(memory, [True] * 4, value="tool_1", start=t)  # tool_0: s=1, f=4, q=2/7 after 5 observations
    assert [r.value for r in memory.retrieve(KEY)] == ["tool_1"]
    assert memory.archive[0].value == "tool_0"


def test_revoked_value_is_repromoted_as_a_new_precedent_and_archive_stays_revoked():
    memory = TEPA()
    t = feed(memory, [True, False, False])
    assert memory.retrieve(KEY) == []
    feed(memory, [True], start=t)
    (record,) = memory.retrieve(KEY)
    assert record.created == 3
    assert [p.state for p in memory.precedents(KEY)] == [REVOKED, ACTIVE]
    assert memory.states() == {0: REVOKED, 1: ACTIVE}


def test_newer_assertion_supersedes_in_tepa_but_not_in_norev():
    rev, norev = TEPA(), TEPANoRev()
    for memory in (rev, norev):
        memory.observe(Evidence("Ann|born_in", "Paris", 1, None, "fact"))
        memory.observe(Evidence("Ann|born_in", "Rome", 7, None, "fact"))
    assert [r.value for r in rev.retrieve("Ann|born_in")] == ["Rome"]
    assert "superseded" in rev.audit_log[-3].reason
    assert [r.value for r in norev.retrieve("Ann|born_in")] == ["Paris"]


def test_norev_never_revokes():
    memory = TEPANoRev()
    t = feed(memory, [True])
    feed(memory, [False] * 50, start=t)
    (record,) = memory.retrieve(KEY)
    assert (record.support, record.conflict) == (1, 50)
    assert all(e.to_state is not REVOKED for e in memory.audit_log)


def test_audit_log_replays_to_current_states():
    memory = TEPA()
    t = 0
    for value, outcomes in [("a", [True, True]), ("a", [False, False]), ("b", [True, True, True]),
                            ("b", [False, False]), ("a", [True])]:
        t = feed(memory, outcomes, value=value, start=t)
    assert replay_audit(memory.audit_log) == memory.states()


def test_replay_rejects_an_illegal_log():
    memory = TEPA()
    feed(memory, [True, False, False])
    log = list(memory.audit_log)
    with pytest.raises(ValueError, match="illegal transition"):
        replay_audit(log + log[-1:])


def test_tepa_full_promotes_only_after_trials_and_counts_budget():
    world = {KEY: "tool_1", "other/key/x": "tool_2"}
    calls = []

    def trial(kind, key, value):
        calls.append(kind)
        return world.get(key) == value

    memory = TEPAFull()
    memory.trial = trial
    memory.observe(Evidence("other/key/x", "tool_2", 0, True, "test"))
    assert calls == ["support"]  # fresh key, nothing unrelated yet: one support trial
    t = feed(memory, [True], value="tool_0", start=1)
    assert memory.retrieve(KEY) == []  # support trial for tool_0 failed
    assert calls[-2:] == ["support", "contamination"]
    t = feed(memory, [True] * 3, value="tool_1", start=t)
    assert [r.value for r in memory.retrieve(KEY)] == ["tool_1"]
    assert memory.trial_budget_spent == len(calls)


def test_tepa_full_counterfactual_revokes_a_failing_incumbent():
    world = {KEY: "tool_1"}
    memory = TEPAFull()
    memory.trial = lambda kind, key, value: world.get(key) == value
    world[KEY] = "tool_0"
    t = feed(memory, [True], value="tool_0")
    world[KEY] = "tool_1"
    feed(memory, [True] * 3, value="tool_1", start=t)
    assert [r.value for r in memory.retrieve(KEY)] == ["tool_1"]
    assert "counterfactual" in memory.audit_log[-1].reason


def test_tepa_full_refuses_a_non_bool_trial_result():
    memory = TEPAFull()
    memory.trial = lambda kind, key, value: "yes"
    with pytest.raises(TypeError, match="trial callback must return a bool"):
        feed(memory, [True])


@pytest.mark.parametrize("kwargs", [
    {"theta_rev": 1.5}, {"theta_rec": -0.1}, {"theta_pro": float("nan")}, {"n_min": 0},
    {"n_rec": -2}, {"theta_prop": 0}, {"top_k": 0}, {"alpha": 0}, {"beta": -1},
])
def test_bad_thresholds_raise_value_error(kwargs):
    with pytest.raises(ValueError):
        TEPA(**kwargs)


def test_wrong_threshold_types_raise_type_error():
    with pytest.raises(TypeError):
        TEPA(n_min=2.5)
    with pytest.raises(TypeError):
        TEPA(revocation="no")


def test_tepa_full_failed_contamination_check_revokes_the_stale_unrelated_precedent():
    world = {KEY: "tool_0", "other/key/x": "tool_2"}
    memory = TEPAFull()
    memory.trial = lambda kind, key, value: world.get(key) == value
    memory.observe(Evidence("other/key/x", "tool_2", 0, True, "test"))
    world["other/key/x"] = "tool_1"  # the unrelated memory goes stale
    feed(memory, [True], value="tool_0", start=1)
    assert [r.value for r in memory.retrieve(KEY)] == ["tool_0"]  # judged on its own trials
    assert memory.retrieve("other/key/x") == []
    assert memory.archive[0].value == "tool_2"
    assert "contamination" in memory.explain("other/key/x")[-1].reason
    assert memory.gate.spent == {"support": 2, "contamination": 1}
